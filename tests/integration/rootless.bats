#!/usr/bin/env bats
# maka as an ordinary user (issue 12): in a cgroup v2 subtree delegated to
# the user (here chowned, as systemd's Delegate=yes does), with --root under
# $XDG_RUNTIME_DIR and the contract store under the user's home, the whole
# lifecycle works; a host without the pieces is refused with one line per
# missing piece; the user cannot touch root's sandboxes or place one
# outside its subtree. Runs in the guest as root, and as the user rl
# (uid 4000) through setpriv.

load helpers

RL_UID=4000
DELEG=/sys/fs/cgroup/maka-rl

setup_file() {
  maka_setup_file
  [ "$(id -u)" = 0 ] || { echo "rootless.bats sets up a user: run it as root in the guest" >&2; return 1; }
  id rl >/dev/null 2>&1 || useradd -m -u "$RL_UID" -s /bin/sh rl
  # useradd gave rl subordinate ranges: without them first (own ids).
  rm -f /etc/subuid /etc/subgid
  # The delegated subtree: rl owns the cgroup and its procs and
  # subtree_control files; maka runs in a leaf of it (shell).
  mkdir -p "$DELEG/shell"
  echo "+cpu +memory +pids" > "$DELEG/cgroup.subtree_control"
  chown rl: "$DELEG" "$DELEG"/cgroup.{procs,subtree_control,threads} \
    "$DELEG/shell" "$DELEG"/shell/cgroup.{procs,subtree_control,threads}
  mkdir -p /run/user/$RL_UID && chown rl: /run/user/$RL_UID && chmod 0700 /run/user/$RL_UID
  # The user's bundle: a copy of the rootfs in its home (root's files
  # stay root's: the sandbox reads them as nobody).
  RL_BUNDLE=/home/rl/bundle
  mkdir -p "$RL_BUNDLE"
  cp -a "$MAKA_FIXTURES/rootfs" "$RL_BUNDLE/rootfs"
  chmod o+x /home/rl "$RL_BUNDLE"
  "$MAKA_BINARY" spec --bundle "$RL_BUNDLE"
  jq --arg r "$RL_BUNDLE/rootfs" '.process.terminal = false | .process.args = ["sleep", "300"]
    | .root = {path: $r, readonly: true}' "$RL_BUNDLE/config.json" > "$RL_BUNDLE/c.json"
  mv "$RL_BUNDLE/c.json" "$RL_BUNDLE/config.json"
  chown -R rl: "$RL_BUNDLE/config.json"
  export RL_BUNDLE
}

teardown_file() {
  for id in $(as_rl list -q 2>/dev/null); do as_rl delete -f "$id" >/dev/null 2>&1 || true; done
  rm -f /etc/subuid /etc/subgid
  maka_teardown_file
}

# as_rl [--from CGROUP] MAKA_ARGS...: maka as rl, started in CGROUP (default
# the delegated subtree's leaf), with the user's environment only (and
# $RL_ENV's NAME=VALUE words).
# Its output goes through a file: a sandbox it starts inherits it, and would
# hold bats' pipe open.
as_rl() {
  local from=$DELEG/shell rc=0 log
  if [ "$1" = --from ]; then from=$2; shift 2; fi
  log=$(mktemp "${BATS_TEST_TMPDIR:-/tmp}/rl.XXXXXX")
  sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$from" \
    setpriv --reuid="$RL_UID" --regid="$RL_UID" --init-groups \
    env -i PATH="$PATH" HOME=/home/rl XDG_RUNTIME_DIR=/run/user/$RL_UID ${RL_ENV:-} "$MAKA_BINARY" "$@" \
    </dev/null >"$log" 2>&1 3>&- || rc=$?
  cat "$log"
  return $rc
}

@test "rootless: rl creates, runs, execs, kills and deletes a sandbox in its delegated subtree, under the same limits" {
  run as_rl run -d -b "$RL_BUNDLE" r1
  [ "$status" -eq 0 ]
  # Its state under $XDG_RUNTIME_DIR, its record under the user's home.
  [ -d /run/user/$RL_UID/maka/r1 ]
  [ "$(find /home/rl/.local/share/maka -name r1.json -user rl | wc -l)" -eq 1 ]
  run as_rl state r1
  [ "$status" -eq 0 ]
  [ "$(jq -r .status <<<"$output")" = running ]
  local pid
  pid=$(jq -r .pid <<<"$output")
  # The user's own ids alone (no /etc/subuid entry): the sandbox's root is rl.
  [ "$(jq -c .uidMappings <<<"$output")" = "[{\"containerID\":0,\"hostID\":$RL_UID,\"size\":1}]" ]
  [ "$(stat -c %u "/proc/$pid")" = "$RL_UID" ]
  # In the delegated subtree, with the contract's limits.
  [ "$(sed -n 's/^0:://p' "/proc/$pid/cgroup")" = /maka-rl/r1 ]
  [ "$(cat $DELEG/r1/memory.max)" = 1073741824 ]
  [ "$(cat $DELEG/r1/pids.max)" = 256 ]
  [ "$(cat $DELEG/r1/memory.swap.max)" = 0 ]
  run as_rl exec r1 sh -c 'cat /proc/self/uid_map; id -u; echo x > /proc/sys/kernel/core_pattern || echo REFUSED; echo ok > /tmp/t && cat /tmp/t'
  [ "$status" -eq 0 ]
  [ "$(echo ${lines[0]})" = "0 $RL_UID 1" ]
  [ "${lines[1]}" = 0 ]
  [[ "$output" == *REFUSED* ]]
  [[ "$output" == *ok* ]]
  run as_rl boundary -b "$RL_BUNDLE" --format json
  [ "$status" -eq 0 ]
  [ "$(jq -r .users.source <<<"$output")" = own ]
  # What `maka spec --rootless` writes (the user's own ids) passes as it is.
  mkdir -p /home/rl/b2 && chown rl: /home/rl/b2
  run as_rl spec --rootless --bundle /home/rl/b2
  [ "$status" -eq 0 ]
  jq --arg r "$RL_BUNDLE/rootfs" '.root.path = $r' /home/rl/b2/config.json > /home/rl/b2/c.json
  mv /home/rl/b2/c.json /home/rl/b2/config.json && chown rl: /home/rl/b2/config.json
  run as_rl boundary -b /home/rl/b2 --format json
  [ "$status" -eq 0 ]
  [ "$(jq -r '.users.source, .verdict.allowed' <<<"$output" | tr '\n' ' ')" = "own true " ]
  run as_rl kill r1 KILL
  [ "$status" -eq 0 ]
  wait_for_status_rl r1 stopped
  run as_rl delete r1
  [ "$status" -eq 0 ]
  [ ! -e "$DELEG/r1" ]
  [ ! -e /run/user/$RL_UID/maka/r1 ]
  [ -z "$(find /home/rl/.local/share/maka -name r1.json)" ]
}

wait_for_status_rl() {
  local i
  for i in $(seq 100); do
    [ "$(as_rl state "$1" 2>/dev/null | jq -r .status)" = "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

@test "rootless: mount points the root lacks come from the user's scaffold, the init's violations are recorded, a crashed create is recovered" {
  local b=/home/rl/b3 rc=0
  mkdir -p "$b"
  jq '.process.args = ["sh", "-c", "unshare -U true || echo DENIED; test -d /nowhere/x && echo SCAFFOLD; sleep 300"]
    | .mounts += [{destination: "/nowhere/x", type: "tmpfs", source: "tmpfs", options: ["size=1m"]}]' \
    "$RL_BUNDLE/config.json" > "$b/config.json"
  chown -R rl: "$b"
  run as_rl boundary -b "$b"
  [ "$status" -eq 0 ]
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"mount points /nowhere/x (missing in the root: made by maka, outside it)"* ]]
  run as_rl run -d -b "$b" r6
  [ "$status" -eq 0 ]
  local i
  for i in $(seq 20); do
    run as_rl violations --format json r6
    [[ "$output" == *unshare* ]] && break
    sleep 1
  done
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$(jq -r '.[0].syscall' <<<"$output")" = unshare ]
  [ ! -e "$RL_BUNDLE/rootfs/nowhere" ]   # the user's root is not written either
  [ -n "$(find /home/rl/.local/share/maka/roots -mindepth 2 -maxdepth 2 -name r6 -user rl)" ]
  run as_rl delete -f r6
  [ "$status" -eq 0 ]
  [ -z "$(find /home/rl/.local/share/maka/roots -name r6)" ]
  # A tool sandbox: what maka exec starts goes through its agent and keeps
  # the init's filter, so an exec'd command's violation is recorded too
  # (libcontainer's exec path cannot hand a rootless exec's listener over).
  local t=/home/rl/b4
  mkdir -p "$t"
  jq '.process.args = ["/bin/sh", "-c", "while :; do sleep 3600 & wait; done"]' "$RL_BUNDLE/config.json" > "$t/config.json"
  chown -R rl: "$t"
  run as_rl run -d -b "$t" r8
  [ "$status" -eq 0 ]
  run as_rl exec r8 sh -c 'echo $PPID'
  [ "$output" = 1 ]
  [[ "$(readlink /proc/$(as_rl state r8 | jq -r .pid)/exe)" == /memfd:maka-agent* ]]
  run as_rl exec r8 unshare -U true
  [ "$status" -ne 0 ]
  for i in $(seq 20); do
    run as_rl violations --format json r8
    [[ "$output" == *unshare* ]] && break
    sleep 1
  done
  echo "$output"
  [ "$(jq -r '.[0].syscall' <<<"$output")" = unshare ]
  run as_rl delete -f r8
  [ "$status" -eq 0 ]
  # A create killed after its record is published: the user's recover
  # reaps it, leaving no cgroup, state, record or scaffold.
  RL_ENV=MAKA_TEST_CRASH_AT=create:record-published as_rl create -b "$b" r7 || rc=$?
  [ "$rc" -eq 137 ]
  [ -n "$(find /home/rl/.local/share/maka -name r7.json)" ]
  run as_rl recover
  [ "$status" -eq 0 ]
  [ -z "$(find /home/rl/.local/share/maka -name r7.json -o -name r7 -path '*roots*')" ]
  [ ! -e "$DELEG/r7" ]
  [ ! -e /run/user/$RL_UID/maka/r7 ]
}

@test "rootless: without delegation or user namespaces, maka refuses with one line per missing piece and leaves nothing; maka check says the same" {
  local old
  old=$(cat /proc/sys/user/max_user_namespaces)
  echo 0 > /proc/sys/user/max_user_namespaces
  mkdir -p /sys/fs/cgroup/not-delegated
  run as_rl --from /sys/fs/cgroup/not-delegated run -d -b "$RL_BUNDLE" r2
  # As root too: maka check says so, boundary warns on stderr, create
  # under restricted (which needs a user namespace) refuses with that line.
  local chk bnd
  chk=$(maka check; echo "rc=$?")
  make_bundle "$BATS_TEST_TMPDIR/b" true
  bnd=$(MAKA_POLICY= maka boundary -b "$BATS_TEST_TMPDIR/b" 2>&1 >/dev/null; echo "rc=$?")
  local crt
  crt=$(MAKA_POLICY= maka_io run -b "$BATS_TEST_TMPDIR/b" nouserns; echo "rc=$?")
  echo "$old" > /proc/sys/user/max_user_namespaces
  echo "$chk"; echo "$bnd"; echo "$crt"
  [[ "$chk" == *"missing  user namespaces: user.max_user_namespaces is 0"* ]] && [[ "$chk" == *"rc=1" ]]
  [[ "$bnd" == "warning: maka cannot run sandboxes on this host (see maka check):"*"user namespaces: user.max_user_namespaces is 0"*"rc=0" ]]
  [[ "$crt" == *"maka cannot run sandboxes on this host (see maka check):"*"user namespaces: user.max_user_namespaces is 0"*"rc=1" ]]
  assert_nothing_left nouserns
  [ "$status" -ne 0 ]
  [[ "$output" == *"rootless: maka cannot run sandboxes here as uid $RL_UID:"* ]]
  [[ "$output" == *"user namespaces: user.max_user_namespaces is 0"* ]]
  [[ "$output" == *"cgroup delegation: / is not delegated"* || "$output" == *"directly below the cgroup root"* ]]
  [ ! -e /run/user/$RL_UID/maka/r2 ]
  [ -z "$(find /sys/fs/cgroup -name r2 -type d)" ]
  # Restored: every line holds, exit 0.
  run maka check
  [ "$status" -eq 0 ]
  [ "$(grep -c '^ok  ' <<<"$output")" -eq 7 ]
}

@test "rootless: rl cannot place a sandbox outside its subtree nor touch root's sandboxes" {
  # Outside the delegated subtree: refused by the policy as rl has it.
  cp "$RL_BUNDLE/config.json" "$BATS_TEST_TMPDIR/c.json"
  jq '.linux.cgroupsPath = "/maka/evil"' "$BATS_TEST_TMPDIR/c.json" > "$RL_BUNDLE/config.json"
  run as_rl run -d -b "$RL_BUNDLE" r3
  cp "$BATS_TEST_TMPDIR/c.json" "$RL_BUNDLE/config.json"
  [ "$status" -ne 0 ]
  [[ "$output" == *"linux.cgroupsPath: \"/maka/evil\" is not below a cgroup parent"*"/maka-rl"* ]]
  [ ! -e /sys/fs/cgroup/maka/evil ]
  # Root's sandbox: rl can neither kill nor delete it.
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  run maka_io run -d -b "$BATS_TEST_TMPDIR/b" rootbox
  [ "$status" -eq 0 ]
  run as_rl --from $DELEG/shell --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" kill rootbox KILL
  [ "$status" -ne 0 ]
  run as_rl --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" delete -f rootbox
  [ "$status" -ne 0 ]
  [ "$(maka state rootbox | jq -r .status)" = running ]
  maka delete -f rootbox
}

@test "rootless with /etc/subuid: each sandbox gets a leased block of the user's range through newuidmap" {
  command -v newuidmap >/dev/null || skip "newuidmap (uidmap) not installed"
  echo "rl:300000:131072" > /etc/subuid
  echo "rl:500000:131072" > /etc/subgid
  run as_rl run -d -b "$RL_BUNDLE" r4
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  run as_rl run -d -b "$RL_BUNDLE" r5
  [ "$status" -eq 0 ]
  # Container id 0 is rl (runc's rootless layout), ids 1..65535 a block.
  run as_rl exec --user 1000:1000 r4 sh -c 'cat /proc/self/uid_map /proc/self/gid_map; id -u'
  [ "$status" -eq 0 ]
  [ "$(echo ${lines[0]})" = "0 $RL_UID 1" ]
  [ "$(echo ${lines[1]})" = "1 300000 65535" ]
  [ "$(echo ${lines[2]})" = "0 $RL_UID 1" ]
  [ "$(echo ${lines[3]})" = "1 500000 65535" ]
  [ "${lines[4]}" = 1000 ]
  run as_rl state r5
  [ "$(jq -c .uidMappings <<<"$output")" = "[{\"containerID\":0,\"hostID\":$RL_UID,\"size\":1},{\"containerID\":1,\"hostID\":365535,\"size\":65535}]" ]
  # A lease file names its range: <first id>-<size>.
  [ "$(ls /home/rl/.local/share/maka/ids | sort | tr '\n' ' ')" = "300000-65535 365535-65535 " ]
  as_rl delete -f r4
  as_rl delete -f r5
  [ -z "$(ls /home/rl/.local/share/maka/ids 2>/dev/null)" ]
  rm -f /etc/subuid /etc/subgid
}

@test "rootless: egress through the proxy with no privilege (the listener made in the sandbox's namespaces, the proxy served by the user's own process)" {
  "$MAKA_FIXTURES/egresstool" serve 127.0.0.1 > "$BATS_TEST_TMPDIR/serve.log" 2>&1 &
  local spid=$! i
  install -m 755 "$MAKA_FIXTURES/egresstool" "$RL_BUNDLE/rootfs/usr/bin/egresstool"
  mkdir -p /home/rl/eg
  jq -n '{profile: "restricted", egress: ["127.0.0.1:7000"]}' > /home/rl/eg-policy.json
  jq '.process.args = ["sh", "-c", "egresstool connect 127.0.0.1:3128 127.0.0.1:7000; egresstool connect 127.0.0.1:3128 127.0.0.1:80; true"]
    | .annotations["org.maka.egress"] = "[\"127.0.0.1:7000\"]"' "$RL_BUNDLE/config.json" > /home/rl/eg/config.json
  chown -R rl: /home/rl/eg /home/rl/eg-policy.json
  for i in $(seq 100); do { : < /dev/tcp/127.0.0.1/7000; } 2>/dev/null && break; sleep 0.2; done
  RL_ENV=MAKA_POLICY=/home/rl/eg-policy.json run as_rl run -b /home/rl/eg rle
  kill "$spid"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"echo ok"* ]]
  [[ "$output" == *"403 Forbidden maka egress refused: raw-ip 127.0.0.1:80"* ]]
  run as_rl violations --format json rle
  [ "$status" -eq 0 ]
  [ "$(jq -r '[.[] | select(.type == "network") | "\(.reason) \(.host):\(.port)"] | join(",")' <<< "$output")" = "raw-ip 127.0.0.1:80" ]
}
