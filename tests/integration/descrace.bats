#!/usr/bin/env bats
# Descriptors, not names (issue 24): the bundle's author swaps what maka
# checked for a symlink to a host path while maka creates sandboxes from
# it. A swapper (fixtures/swapper.c) exchanges, with renameat2
# RENAME_EXCHANGE as fast as it can,
#   - a read-only bind source (a directory) with a symlink to /etc,
#   - the bundle's root with a symlink to /,
#   - an entry of the root (its etc) with a symlink to a host directory
#     holding the marker (on tmpfs, which can be idmapped): the root is
#     staged from its descriptor, but its entries are the author's to
#     rename, and the idmapped root binds each of them,
#   - the directory holding a namespace path (a bind-mounted network
#     namespace of its own) with one whose entry is a symlink to
#     /proc/1/ns/net, the guest's own,
# while `maka run` starts sandboxes on that bundle one after another. Each
# run must either run on what was checked or be refused: a marker file in
# the guest's / and /etc is never readable inside, and no sandbox is in
# the guest's network namespace. Each test prints its counts (ran,
# refused, exchanges made) on fd 3.
#
# make test runs MAKA_DESCRACE_N (100) sandboxes with the root, a bind
# source and the namespace path swapped at once, and MAKA_DESCRACE_ENTRY_N
# (5) with the root's entry swapped (restricted); the soak tag runs
# MAKA_DESCRACE_SOAK_N (100) per swap, each swap alone. The swapper pauses MAKA_DESCRACE_PAUSE_US
# (200) after each exchange: flat out, it starves an emulated guest (30
# runs took 20 minutes).

load helpers
bats_require_minimum_version 1.5.0

BATS_TEST_TIMEOUT=$(( ${BATS_TEST_TIMEOUT:-240} > 1200 ? ${BATS_TEST_TIMEOUT:-240} : 1200 ))

MARKER=maka-descrace-marker

setup_file() {
  require_root
  maka_setup_file
  local m
  m="descrace-$$-$RANDOM$RANDOM"
  echo "$m" > "$BATS_FILE_TMPDIR/marker"
  echo "$m" > "/$MARKER"
  echo "$m" > "/etc/$MARKER"
  chmod 0644 "/$MARKER" "/etc/$MARKER"
  local sw=$MAKA_FIXTURES/swapper
  if [ ! -x "$sw" ] || [ "$sw" -ot "$MAKA_REPO/tests/integration/fixtures/swapper.c" ]; then
    sw=$BATS_FILE_TMPDIR/swapper
    gcc -static -O2 -o "$sw" "$MAKA_REPO/tests/integration/fixtures/swapper.c"
  fi
  cp "$sw" "$BATS_FILE_TMPDIR/swapper.bin"
  readlink /proc/1/ns/net > "$BATS_FILE_TMPDIR/hostnet"
}

teardown_file() {
  stop_swapper
  rm -f "/$MARKER" "/etc/$MARKER"
  rm -rf /run/maka-descrace-host
  # The network namespaces bound on files (netns_race: ns/, all_race:
  # nsall/; the swapper may have left either directory's entry in the
  # other): bats cannot remove its directory while one is mounted
  # (CI-X: "rm: cannot remove .../nsall/cur/net: Device or resource
  # busy", the file's status 1 with every test passed). A symlink is the
  # guest's own namespace's name, never unmounted.
  local f
  for f in "$BATS_FILE_TMPDIR"/ns/*/net "$BATS_FILE_TMPDIR"/nsall/*/net; do
    [ -L "$f" ] || umount "$f" 2>/dev/null || true
  done
  maka_teardown_file
}

teardown() {
  stop_swapper
  # The stage test's sandbox, if it failed half way (its own store).
  if [ -d /run/maka-stagemode-state ]; then
    MAKA_STATE_DIR=/run/maka-stagemode-state maka delete --force dr-stagemode >/dev/null 2>&1 || true
    rm -rf /run/maka-stagemode-state
  fi
}

# start_swapper [-g USEC] A B [A2 B2 ...]: exchange each pair until
# stop_swapper (-g: the checked state lasts USEC, the swapped one
# MAKA_DESCRACE_PAUSE_US; see swapper.c).
start_swapper() {
  local good=()
  if [ "$1" = -g ]; then good=(-g "$2"); shift 2; fi
  rm -f "$BATS_FILE_TMPDIR/stop"
  "$BATS_FILE_TMPDIR/swapper.bin" -p "${MAKA_DESCRACE_PAUSE_US:-200}" "${good[@]}" "$BATS_FILE_TMPDIR/stop" "$@" \
    > "$BATS_FILE_TMPDIR/swapper.out" 2>&1 3>&- &
  echo $! > "$BATS_FILE_TMPDIR/swapper.pid"
}

stop_swapper() {
  local pid
  pid=$(cat "$BATS_FILE_TMPDIR/swapper.pid" 2>/dev/null) || return 0
  touch "$BATS_FILE_TMPDIR/stop"
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$BATS_FILE_TMPDIR/swapper.pid"
}

# race NAME BUNDLE N CHECK: N `maka run`s of BUNDLE while the swapper runs,
# and more (up to 4 N) until one has run: a run passes maka's checks only
# when it meets every swapped name in its checked state, which is chance
# (5 runs of a bind race once all met a swapped name). CHECK OUTPUT_FILE
# fails when a run saw the host. Prints the counts.
race() {
  local name=$1 bundle=$2 n=$3 check=$4 i ran=0 refused=0 breached=0 out
  for i in $(seq 1 $((4 * n))); do
    [ "$i" -le "$n" ] || [ "$ran" -eq 0 ] || break
    out=$BATS_TEST_TMPDIR/run.$i
    if maka run --bundle "$bundle" "dr-$name-$i" > "$out" 2>&1; then
      ran=$((ran + 1))
    else
      refused=$((refused + 1))
      # Refused cleanly: nothing left behind (a refusal at the check, the
      # common case, leaves no state to delete: no second maka start).
      if [ -e "$MAKA_ROOT/dr-$name-$i" ] || [ -n "$(find "$MAKA_STATE_DIR" -name "dr-$name-$i.json" 2>/dev/null)" ]; then
        maka delete --force "dr-$name-$i" >/dev/null 2>&1 || true
      fi
    fi
    if ! "$check" "$out"; then
      breached=$((breached + 1))
      echo "# run $i saw the host:" >&3
      sed 's/^/#   /' "$out" >&3
    fi
  done
  stop_swapper
  n=$((ran + refused))
  echo "# $name: $n runs, $ran ran, $refused refused, $breached saw the host" >&3
  sed 's/^/#   swapper: /' "$BATS_FILE_TMPDIR/swapper.out" >&3
  grep -q ' exchanges' "$BATS_FILE_TMPDIR/swapper.out"
  # Some runs must have run on what was checked: a test where every run
  # is refused proves nothing.
  [ "$ran" -gt 0 ]
  [ "$breached" -eq 0 ]
  assert_nothing_left "dr-$name-$n"
  # No staged mount outlives its sandbox.
  ! grep -F "$MAKA_STATE_DIR/stage" /proc/self/mountinfo
  [ -z "$(find "$MAKA_STATE_DIR/stage" -mindepth 2 2>/dev/null)" ]
}

# no_marker FILE: the run's output shows no marker.
no_marker() {
  ! grep -qF -- "$(cat "$BATS_FILE_TMPDIR/marker")" "$1"
}

# own_netns FILE: the run's output shows no namespace but its own.
own_netns() {
  ! grep -qxF -- "$(cat "$BATS_FILE_TMPDIR/hostnet")" "$1"
}

probe() {
  # shellcheck disable=SC2016
  echo 'cat /'$MARKER' /etc/'$MARKER' /src/'$MARKER' 2>/dev/null; readlink /proc/self/ns/net; echo RAN-OK'
}

bind_race() {
  local d=$BATS_FILE_TMPDIR/bind
  rm -rf "$d" && mkdir -p "$d/src"
  echo safe > "$d/src/file"
  ln -s /etc "$d/evil"
  make_bundle "$d" sh -c "$(probe)"
  update_config "$d" '.mounts += [{destination: "/src", type: "bind", source: $s, options: ["rbind", "ro"]}]' --arg s "$d/src"
  start_swapper "$d/src" "$d/evil"
  race bind "$d" "$1" no_marker
}

root_race() {
  local d=$BATS_FILE_TMPDIR/root
  rm -rf "$d" && mkdir -p "$d"
  cp -a "$MAKA_ROOTFS" "$d/rootfs"
  ln -s / "$d/evil"
  make_bundle "$d" sh -c "$(probe)"
  update_config "$d" '.root.path = $r' --arg r "$d/rootfs"
  start_swapper "$d/rootfs" "$d/evil"
  race root "$d" "$1" no_marker
}

entry_race() {
  # Restricted, the built-in default: a user namespace and an idmapped
  # root, which maka assembles from the root's entries.
  local -x MAKA_POLICY=
  local d=$BATS_FILE_TMPDIR/entry
  rm -rf "$d" && mkdir -p "$d"
  cp -a "$MAKA_ROOTFS" "$d/rootfs"
  mkdir -p "$d/rootfs/etc"
  # The link points at a host directory on tmpfs holding the marker: the
  # guest's own /etc is on an overlay of 9p, which cannot be idmapped, so
  # a bind of it fails where a real host's ext4 /etc would be bound.
  local host=/run/maka-descrace-host
  mkdir -p "$host" && cp "$BATS_FILE_TMPDIR/marker" "$host/$MARKER" && chmod 0644 "$host/$MARKER"
  ln -s "$host" "$d/evil"
  make_bundle "$d" sh -c "$(probe)"
  update_config "$d" '.root.path = $r' --arg r "$d/rootfs"
  # The root is the idmapped one maka builds from the root's entries.
  run --separate-stderr maka boundary --bundle "$d" --format json
  jq -c .rootfs <<<"$output"
  [ "$status" -eq 0 ]
  [ "$(jq -r '.rootfs.idmapped' <<<"$output")" = true ]
  start_swapper "$d/rootfs/etc" "$d/evil"
  race entry "$d" "$1" no_marker
}

netns_race() {
  require_binary unshare
  local d=$BATS_FILE_TMPDIR/netns ns=$BATS_FILE_TMPDIR/ns
  rm -rf "$d" && mkdir -p "$d" "$ns/cur" "$ns/evil"
  # A network namespace of its own, bound on a file (as ip netns and CNI
  # do); the other directory's entry of that name is the guest's own.
  touch "$ns/cur/net"
  unshare --net="$ns/cur/net" true
  ln -s /proc/1/ns/net "$ns/evil/net"
  make_bundle "$d" sh -c "$(probe)"
  update_config "$d" '.linux.namespaces |= map(if .type == "network" then .path = $p else . end)' --arg p "$ns/cur/net"
  # The namespace as checked, without the swapper: it runs.
  run maka run --bundle "$d" dr-netns-0
  [ "$status" -eq 0 ]
  [[ "$output" == *RAN-OK* ]]
  own_netns <(echo "$output")
  start_swapper "$ns/cur" "$ns/evil"
  race netns "$d" "$1" own_netns
}

# all_race N: the root, a bind source and the namespace path swapped at
# once (three exchangers) while N sandboxes run one after another.
all_race() {
  require_binary unshare
  local d=$BATS_FILE_TMPDIR/all ns=$BATS_FILE_TMPDIR/nsall
  rm -rf "$d" && mkdir -p "$d/src" "$ns/cur" "$ns/evil"
  cp -a "$MAKA_ROOTFS" "$d/rootfs"
  echo safe > "$d/src/file"
  ln -s / "$d/evil-root"
  ln -s /etc "$d/evil-src"
  touch "$ns/cur/net"
  unshare --net="$ns/cur/net" true
  ln -s /proc/1/ns/net "$ns/evil/net"
  make_bundle "$d" sh -c "$(probe)"
  update_config "$d" '.root.path = $r
      | .mounts += [{destination: "/src", type: "bind", source: $s, options: ["rbind", "ro"]}]
      | .linux.namespaces |= map(if .type == "network" then .path = $p else . end)' \
    --arg r "$d/rootfs" --arg s "$d/src" --arg p "$ns/cur/net"
  # Three pairs at once: the checked state of each lasts 3 ms, the
  # swapped one 0.2 ms. At 1 ms against 0.2 (85 % checked), 3 runs in 100
  # met every name in its checked state and ran: a run resolves these
  # names some twenty times (0.85^20 = 0.04) before it holds descriptors.
  start_swapper -g 3000 "$d/rootfs" "$d/evil-root" "$d/src" "$d/evil-src" "$ns/cur" "$ns/evil"
  race all "$d" "$1" seen_nothing
}

# seen_nothing FILE: neither a marker nor the host's network namespace.
seen_nothing() { no_marker "$1" && own_netns "$1"; }

@test "the root, a bind source and a namespace path swapped for host paths at once while MAKA_DESCRACE_N (100) sandboxes are created: none sees a host file or joins the host's network namespace" {
  all_race "${MAKA_DESCRACE_N:-100}"
}

@test "an entry of the root swapped for a symlink to a host directory during create: no sandbox reads it" {
  entry_race "${MAKA_DESCRACE_ENTRY_N:-5}"
}

@test "a staged bind source is reachable by no other local user: its stage directory is root's, searchable only by the sandbox's own group" {
  local d=$BATS_FILE_TMPDIR/stagemode
  rm -rf "$d" && mkdir -p "$d/private/src"
  echo secret > "$d/private/src/file"
  chmod 0700 "$d/private"
  chmod 0755 "$d/private/src"
  # A store whose parents every user may search (/run), so that only
  # the stage directory's own mode stands between nobody and the mount.
  local MAKA_STATE_DIR=/run/maka-stagemode-state
  make_bundle "$d" sh -c 'cat /src/file; sleep 1000'
  update_config "$d" '.mounts += [{destination: "/src", type: "bind", source: $s, options: ["rbind", "ro"]}]' --arg s "$d/private/src"
  maka run -d --bundle "$d" dr-stagemode
  local stage
  stage=$(find "$MAKA_STATE_DIR/stage" -mindepth 2 -maxdepth 2 -type d -name dr-stagemode)
  [ -n "$stage" ]
  # The sandbox read its bind through the staged mount.
  run maka exec dr-stagemode cat /src/file
  [ "$status" -eq 0 ]
  [ "$output" = secret ]
  stat -c '%a %u' "$stage"
  [[ "$(stat -c '%a %u' "$stage")" =~ ^(700|710)\ 0$ ]]
  # A local user (nobody) cannot reach the staged source, as it could
  # not reach the original behind its 0700 parent.
  run setpriv --reuid=65534 --regid=65534 --clear-groups cat "$d/private/src/file"
  [ "$status" -ne 0 ]
  setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$(dirname "$stage")"
  local n
  for n in "$stage"/*; do
    run setpriv --reuid=65534 --regid=65534 --clear-groups cat "$n/file"
    [ "$status" -ne 0 ]
    [[ "$output" != *secret* ]]
  done
  maka delete --force dr-stagemode
  assert_nothing_left dr-stagemode
  rm -rf "$MAKA_STATE_DIR"
}

# bats test_tags=soak
@test "soak: MAKA_DESCRACE_SOAK_N sandboxes per swap, each swap alone (bind source, root, root entry, namespace path): none sees the host" {
  bind_race "${MAKA_DESCRACE_SOAK_N:-100}"
  root_race "${MAKA_DESCRACE_SOAK_N:-100}"
  entry_race "${MAKA_DESCRACE_SOAK_N:-100}"
  netns_race "${MAKA_DESCRACE_SOAK_N:-100}"
}
