#!/usr/bin/env bats
# The /dev races of CVE-2025-31133 (/dev/null, bound over the masked paths)
# and CVE-2025-52565 (/dev/console, the terminal's mount target), tried for
# real (issue 15). The sandbox's root has no /dev tmpfs (config.json's mounts
# drop it, so libcontainer sets up the devices in the root's own /dev), is
# writable and is shared with an attacker on the host side: a loop in the
# guest, outside the container, standing in for a second container sharing
# the root, swaps the root's /dev/null and /dev/console between symlinks to
# host files (core_pattern, a host target file, absolute and relative), real
# device nodes and nothing, while maka starts sandboxes on that root, with a
# terminal through a console socket and without. Inside, each sandbox writes
# to /dev/null, /dev/console and the masked /proc files (where a bind of a
# swapped /dev/null would land).
#
# Every start must have run or been refused cleanly (a non-zero exit, nothing
# left), and on the host side: the target file's checksum and core_pattern
# unchanged, no new mount in the guest's mountinfo.
#
# A root without the /dev tmpfs cannot be started twice as it is:
# libcontainer leaves its /dev symlinks (stdin, fd, ...) in the root and the
# next start fails with "error setting up /dev symlinks" (runc does the
# same). Each start here begins with the root's /dev cleared, except what
# the attacker's loop keeps there.

MAKA_POLICY=   # restricted, the default: every start names its policy
load helpers
bats_require_minimum_version 1.5.0

# Under emulation on a loaded machine a container start takes 5–20 s and the
# race test starts six: a wider hang detector.
BATS_TEST_TIMEOUT=$(( ${BATS_TEST_TIMEOUT:-240} > 600 ? ${BATS_TEST_TIMEOUT:-240} : 600 ))

HOSTDIR=/tmp/maka-devrace   # the host files the links aim at (guest's /tmp)
BASELINE=$MAKA_REPO/tests/integration/fixtures/policy-baseline.json

setup_file() {
  maka_setup_file
  rm -rf "$HOSTDIR"
  mkdir -p "$HOSTDIR"
  echo "host target $$ $RANDOM" > "$HOSTDIR/target"
  chmod 0666 "$HOSTDIR/target"   # writable by anyone who reaches it
  # A host sysctl with a value no default has: a write from inside would change it.
  cat /proc/sys/kernel/core_pattern > "$BATS_FILE_TMPDIR/core_pattern.saved"
  echo "core-maka-devrace-$$" > /proc/sys/kernel/core_pattern
  sha256sum "$HOSTDIR/target" | cut -d' ' -f1 > "$BATS_FILE_TMPDIR/target.sum"
  cat /proc/sys/kernel/core_pattern > "$BATS_FILE_TMPDIR/core.want"
  mounts > "$BATS_FILE_TMPDIR/mounts.before"
  # The shared root: a writable copy of the fixture root, on the guest's
  # /tmp (a tmpfs without nodev: the device nodes libcontainer makes there
  # must open).
  local r=$BATS_FILE_TMPDIR/shared
  cp -a "$MAKA_ROOTFS" "$r"
  chmod 0755 "$r"
  mkdir -p "$r/dev/pts" "$r/dev/shm" "$r/dev/mqueue"
  # What every sandbox does: say it ran, then write where a swapped
  # /dev/null or /dev/console would have been bound (the masked files), and
  # show the mounts of the targets it sees.
  # shellcheck disable=SC2016
  local probe='echo RAN-OK; tty
    for f in /dev/null /dev/console /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug /proc/latency_stats /proc/timer_stats /proc/acpi /proc/scsi; do
      echo devrace-pwned 2>/dev/null > $f && echo "wrote $f"; done
    grep -E "core_pattern|maka-devrace| /dev/(null|console) " /proc/self/mountinfo | sed "s/^/MOUNT /"; exit 0'
  local b
  for b in plain tty; do
    make_bundle "$BATS_FILE_TMPDIR/$b" sh -c "$probe"
    update_config "$BATS_FILE_TMPDIR/$b" '.root = {path: $r, readonly: false}
        | .mounts |= map(select(.destination != "/dev"))' --arg r "$r"
  done
  update_config "$BATS_FILE_TMPDIR/tty" '.process.terminal = true'
  echo '{"profile": "restricted"}' > "$BATS_FILE_TMPDIR/restricted.json"
  # The attacker: swaps the root's /dev/null and /dev/console (each renamed
  # into place, so a name is never missing but when "nothing" is its turn)
  # until the stop file appears, then writes how many rounds it made.
  cat > "$BATS_FILE_TMPDIR/swap.py" <<'PY'
import os, stat, sys, time
dev, stop, target = sys.argv[1:4]
links = ["/proc/sys/kernel/core_pattern", target,
         "../../../../../../../.." + target, "../proc/sys/kernel/core_pattern"]
nodes = {"null": (1, 3), "console": (5, 1)}
n = 0
while not os.path.exists(stop):
    for name, (major, minor) in nodes.items():
        p = os.path.join(dev, name)
        tmp = p + ".swap"
        k = (n + len(name)) % (len(links) + 2)   # the two names out of step
        try:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            if k < len(links):
                os.symlink(links[k], tmp)
            elif k == len(links):
                os.mknod(tmp, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
            else:
                os.unlink(p)
                continue
            os.rename(tmp, p)
        except OSError:
            pass
    n += 1
    time.sleep(0.01)
with open(stop + ".rounds", "w") as f:
    f.write("%d\n" % n)
PY
}

teardown_file() {
  stop_swapper
  cat "$BATS_FILE_TMPDIR/core_pattern.saved" > /proc/sys/kernel/core_pattern 2>/dev/null || true
  rm -rf "$HOSTDIR"
  maka_teardown_file
}

teardown() {
  stop_swapper
  local p
  for p in $(cat "$BATS_FILE_TMPDIR/recvtty.pids" 2>/dev/null); do
    kill "$p" 2>/dev/null || true
  done
  rm -f "$BATS_FILE_TMPDIR/recvtty.pids"
  teardown_all_containers
}

# mounts: the guest's mount points (its init's and this shell's view).
mounts() {
  awk '{print $5}' /proc/1/mountinfo | sort
  echo --
  awk '{print $5}' /proc/self/mountinfo | sort
}

# assert_host_unchanged: the target file, core_pattern and the guest's
# mounts as setup_file saw them; no mount of a target anywhere in the guest.
assert_host_unchanged() {
  [ "$(sha256sum "$HOSTDIR/target" | cut -d' ' -f1)" = "$(cat "$BATS_FILE_TMPDIR/target.sum")" ] ||
    { echo "host target changed: $(cat "$HOSTDIR/target")"; return 1; }
  [ "$(cat /proc/sys/kernel/core_pattern)" = "$(cat "$BATS_FILE_TMPDIR/core.want")" ] ||
    { echo "core_pattern changed: $(cat /proc/sys/kernel/core_pattern)"; return 1; }
  diff "$BATS_FILE_TMPDIR/mounts.before" <(mounts) || { echo "the guest's mounts changed"; return 1; }
  ! grep -E "core_pattern|maka-devrace" /proc/1/mountinfo /proc/self/mountinfo || false
}

# clear_dev [KEEP_SWAPPED]: empty the shared root's /dev but for the mount
# points (pts, shm, mqueue) and, with KEEP_SWAPPED=1, what the attacker
# keeps there (null, console and their temporary names).
clear_dev() {
  local keep=()
  [ "${1:-0}" = 1 ] && keep=(! -name 'null*' ! -name 'console*')
  find "$BATS_FILE_TMPDIR/shared/dev" -mindepth 1 -maxdepth 1 \
    ! -name pts ! -name shm ! -name mqueue "${keep[@]}" -exec rm -rf -- {} +
}

start_swapper() {
  rm -f "$BATS_FILE_TMPDIR/swap.stop" "$BATS_FILE_TMPDIR/swap.stop.rounds"
  python3 "$BATS_FILE_TMPDIR/swap.py" "$BATS_FILE_TMPDIR/shared/dev" "$BATS_FILE_TMPDIR/swap.stop" \
    "$HOSTDIR/target" </dev/null >"$BATS_FILE_TMPDIR/swap.log" 2>&1 3>&- &
  echo $! > "$BATS_FILE_TMPDIR/swap.pid"
}

# stop_swapper: the stop file, then at most 20 s for the loop to end; killed
# after that.
stop_swapper() {
  local pid i
  pid=$(cat "$BATS_FILE_TMPDIR/swap.pid" 2>/dev/null) || return 0
  touch "$BATS_FILE_TMPDIR/swap.stop"
  for i in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$BATS_FILE_TMPDIR/swap.pid"
}

# start MODE ID: one sandbox on the shared root under baseline: MODE plain,
# a foreground run; MODE tty, run -d with process.terminal, its terminal
# through a console socket, waited for and deleted. Sets $status (maka's
# exit) and $output (maka's output, then the terminal's), and checks the
# outcome: it ran (exit 0, the probe's output seen, deleted, nothing left)
# or was refused cleanly (a non-zero exit that is not a timeout, nothing
# left). Echoes the outcome to the TAP.
start() {
  local mode=$1 id=$2 log=$BATS_TEST_TMPDIR/$2.log term= t0=$SECONDS PH=
  local mk=(timeout -k 5 180 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" --policy "$BASELINE")
  status=0
  if [ "$mode" = plain ]; then
    "${mk[@]}" run --bundle "$BATS_FILE_TMPDIR/plain" "$id" </dev/null >"$log" 2>&1 3>&- || status=$?
  else
    local sock=$BATS_TEST_TMPDIR/$id.sock rpid i
    term=$BATS_TEST_TMPDIR/$id.term
    python3 "$BATS_TEST_DIRNAME/fixtures/recvtty.py" "$sock" "$term" \
      </dev/null >"$BATS_TEST_TMPDIR/$id.recvtty" 2>&1 3>&- &
    rpid=$!
    echo "$rpid" >> "$BATS_FILE_TMPDIR/recvtty.pids"
    for i in $(seq 300); do [ -S "$sock" ] && break; sleep 0.1; done
    [ -S "$sock" ] || { echo "recvtty did not listen"; return 1; }
    PH="listen $((SECONDS - t0))"
    "${mk[@]}" run -d --console-socket "$sock" --bundle "$BATS_FILE_TMPDIR/tty" "$id" \
      </dev/null >"$log" 2>&1 3>&- || status=$?
    PH+=" run $((SECONDS - t0))"
    if [ "$status" -eq 0 ]; then
      wait_for_status "$id" stopped 120 || { cat "$log"; maka state "$id"; return 1; }
      PH+=" stopped $((SECONDS - t0))"
      timeout 60 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" delete "$id" 3>&- ||
        { echo "delete $id failed"; return 1; }
      PH+=" deleted $((SECONDS - t0))"
      # recvtty ends at the terminal's EOF, once the sandbox is gone.
      for i in $(seq 300); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
      PH+=" eof $((SECONDS - t0))"
    fi
    kill "$rpid" 2>/dev/null || true
    wait "$rpid" 2>/dev/null || true
  fi
  output=$(cat "$log"; [ -z "$term" ] || { echo "-- terminal:"; [ ! -f "$term" ] || tr -d '\r' < "$term"; })
  echo "$id ($mode): exit $status"
  echo "$output"
  if [ "$status" -eq 0 ]; then
    echo "# $id ($mode): ran in $((SECONDS - t0)) s ${PH:-}" >&3
    [[ "$output" == *RAN-OK* ]] || { echo "exit 0, but the sandbox's output is missing"; return 1; }
  else
    echo "# $id ($mode): refused in $((SECONDS - t0)) s ${PH:-}, exit $status: $(grep -v '^--' <<<"$output" | head -n1 | cut -c1-200)" >&3
    [ "$status" -ne 124 ] && [ "$status" -ne 137 ] || { echo "maka timed out"; return 1; }
  fi
  assert_nothing_left "$id"
}

@test "a root without the /dev tmpfs, writable, runs under baseline with a terminal and without when nobody swaps its /dev; under restricted its writable view refuses the root's device nodes (nodev) and the root is not written" {
  clear_dev
  start plain dr-ctl-plain
  [ "$status" -eq 0 ]
  [[ "$output" == *"not a tty"* ]]
  assert_host_unchanged
  clear_dev
  start tty dr-ctl-tty
  [ "$status" -eq 0 ]
  [[ "$output" =~ /dev/pts/[0-9]+ ]]
  assert_host_unchanged
  # restricted: the writable root is a view (an overlay whose writes land
  # in the sandbox's own tmpfs, nodev). Its /dev holds the device nodes the
  # baseline runs made, which libcontainer opens to bind the host's over
  # them: on a nodev mount it may not, and the start fails cleanly, naming
  # /dev/null. The shared root is as it was either way.
  local before
  before=$(find "$BATS_FILE_TMPDIR/shared" -printf '%p %y %s %m %T@\n' | sort | sha256sum)
  run maka_io --policy "$BATS_FILE_TMPDIR/restricted.json" run --bundle "$BATS_FILE_TMPDIR/plain" dr-ctl-restricted
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"/dev/null"* ]]
  [[ "$output" != *RAN-OK* ]]
  [ "$(find "$BATS_FILE_TMPDIR/shared" -printf '%p %y %s %m %T@\n' | sort | sha256sum)" = "$before" ]
  assert_host_unchanged
  assert_nothing_left dr-ctl-restricted
}

@test "CVE-2025-31133, CVE-2025-52565: /dev/null and /dev/console of a shared writable root swapped for links to core_pattern and a host file while sandboxes start (3 with a terminal, 3 without): each runs or is refused cleanly, nothing left; host target, core_pattern and the guest's mounts unchanged" {
  local i mode ran=0 refused=0 rounds
  clear_dev
  start_swapper
  for i in 1 2 3 4 5 6; do
    mode=plain
    [ $((i % 2)) -eq 1 ] || mode=tty
    clear_dev 1
    start "$mode" "dr-race-$i"
    if [ "$status" -eq 0 ]; then ran=$((ran + 1)); else refused=$((refused + 1)); fi
    assert_host_unchanged
  done
  stop_swapper
  rounds=$(cat "$BATS_FILE_TMPDIR/swap.stop.rounds")
  echo "# $ran ran, $refused refused; the attacker made $rounds rounds of swaps" >&3
  cat "$BATS_FILE_TMPDIR/swap.log"
  # The attacker did swap all along (a round every few ms when it has the CPU).
  [ "$rounds" -ge 100 ]
  assert_host_unchanged
}
