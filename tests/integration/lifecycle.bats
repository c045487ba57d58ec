#!/usr/bin/env bats
# The OCI lifecycle as containerd drives it: create, start, state, kill,
# delete, list, and run (foreground and detached).

load helpers

bats_require_minimum_version 1.5.0

# A container that exits 0 on SIGTERM (a pid-namespace init ignores signals
# it has no handler for).
TERMABLE='trap "exit 0" TERM; sleep 100 & wait'

teardown() {
  local id
  for id in $(maka list -q 2>/dev/null); do
    teardown_container "$id"
  done
}

# start_detached LOG ARGS...: maka ARGS with the container's stdio on LOG
# (which stays readable after maka returns, unlike maka_io's).
start_detached() {
  local log=$1; shift
  "$MAKA_BINARY" --root "$MAKA_ROOT" "$@" </dev/null >"$log" 2>&1 3>&-
}

# bg_maka LOG ARGS...: maka ARGS in the background with its stdio on LOG;
# BG_PID is maka's own pid (signals sent to it reach maka, not a subshell).
bg_maka() {
  local log=$1; shift
  (exec "$MAKA_BINARY" --root "$MAKA_ROOT" "$@" </dev/null >"$log" 2>&1 3>&-) &
  BG_PID=$!
}

# wait_for_line FILE LINE [TIMEOUT=30]: until FILE has the line LINE.
wait_for_line() {
  local f=$1 line=$2 deadline=$((SECONDS + ${3:-30}))
  until grep -qxF -- "$line" "$f" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "no line '$line' in $f after ${3:-30}s; it has:" >&2
      cat "$f" >&2 || true
      return 1
    fi
    sleep 0.1
  done
}

# gone ID PID: the container's state, cgroup and init process are all gone.
gone() {
  local id=$1 pid=$2
  [ ! -e "$MAKA_ROOT/$id" ] || { echo "state dir $MAKA_ROOT/$id left" >&2; return 1; }
  [ -z "$(find /sys/fs/cgroup -type d -name "$id" 2>/dev/null)" ] ||
    { echo "cgroup left: $(find /sys/fs/cgroup -type d -name "$id")" >&2; return 1; }
  if [ -n "$pid" ] && [ -e "/proc/$pid" ]; then
    # a recycled pid would not be our zombie-free init
    echo "process $pid still exists: $(tr '\0' ' ' <"/proc/$pid/cmdline")" >&2
    return 1
  fi
}

@test "create, start, state, kill, delete: containerd's call sequence" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c "$TERMABLE"
  run maka_io create --bundle "$BATS_TEST_TMPDIR/b" --pid-file "$BATS_TEST_TMPDIR/pid" lc1
  [ "$status" -eq 0 ]
  [ -s "$BATS_TEST_TMPDIR/pid" ]
  run maka state lc1
  [ "$status" -eq 0 ]
  [ "$(jq -r .status <<<"$output")" = created ]
  local pid
  pid=$(jq -r .pid <<<"$output")
  [ "$pid" = "$(cat "$BATS_TEST_TMPDIR/pid")" ]
  [ -d "/proc/$pid" ]
  # Its monitor is the small maka-monitor that maka carries, written once
  # into the root (`make build`; a plain `go build` runs `maka monitor`).
  local mon
  mon=$(cat "$MAKA_ROOT/lc1/monitor.pid")
  [[ "$(readlink "/proc/$mon/exe")" == "$MAKA_ROOT"/.maka-monitor-* ]]
  [ "$(stat -c %a "$(readlink "/proc/$mon/exe")")" = 500 ]
  run maka start lc1
  [ "$status" -eq 0 ]
  wait_for_status lc1 running
  [ "$(maka state lc1 | jq -r .pid)" = "$pid" ]
  run maka kill lc1 15
  [ "$status" -eq 0 ]
  wait_for_status lc1 stopped
  # a stopped container has no pid (as runc: 0)
  [ "$(maka state lc1 | jq -r .pid)" = 0 ]
  run maka kill --all lc1 9
  [ "$status" -eq 0 ]
  run maka delete lc1
  [ "$status" -eq 0 ]
  run maka state lc1
  [ "$status" -eq 1 ]
  [[ "$output" == *"container lc1 does not exist"* ]]
  gone lc1 "$pid"
}

@test "run in the foreground returns the container's exit status; --keep keeps it stopped, through recover, until delete" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'echo hello; exit 3'
  run maka run --bundle "$BATS_TEST_TMPDIR/b" lc2
  [ "$status" -eq 3 ]
  [ "$output" = hello ]
  run maka state lc2
  [ "$status" -eq 1 ]
  gone lc2 ""
  # runc's --keep (and --no-subreaper, accepted): the stopped container
  # stays, its owner gone is no orphan to recover, delete removes it.
  run maka run --keep --no-subreaper --bundle "$BATS_TEST_TMPDIR/b" lc2
  [ "$status" -eq 3 ]
  [ "$output" = hello ]
  [ "$(maka state lc2 | jq -r .status)" = stopped ]
  run maka recover
  [ "$status" -eq 0 ]
  [ "$(maka state lc2 | jq -r .status)" = stopped ]
  run maka delete lc2
  [ "$status" -eq 0 ]
  gone lc2 ""
  run maka run --keep -d --bundle "$BATS_TEST_TMPDIR/b" lc2
  [ "$status" -eq 1 ]
  [[ "$output" == *"--keep: only a foreground run removes its container"* ]]
  gone lc2 ""
}

@test "a foreground run whose teardown cannot kill keeps its record and id lease for recover" {
  make_bundle "$BATS_TEST_TMPDIR/b" true
  # Under restricted, so that the run leases a block of ids.
  echo '{"profile": "restricted"}' >"$BATS_TEST_TMPDIR/restricted.json"
  # MAKA_TEST_FAIL_AT=kill: every kill of this maka fails (test-only).
  MAKA_POLICY=$BATS_TEST_TMPDIR/restricted.json MAKA_TEST_FAIL_AT=kill run maka run --bundle "$BATS_TEST_TMPDIR/b" lc9
  [[ "$output" == *"MAKA_TEST_FAIL_AT=kill"* ]]
  # Nothing is given up while a process of the sandbox might live: the
  # record and the block of ids it leased stay, for recover.
  [ -n "$(find "$MAKA_STATE_DIR" -name lc9.json)" ]
  [ -n "$(find "$MAKA_STATE_DIR" -path '*/ids/*' -exec grep -l '"lc9"' {} + 2>/dev/null)" ]
  run maka recover
  [ "$status" -eq 0 ]
  assert_nothing_left lc9
  [ -z "$(find "$MAKA_STATE_DIR" -path '*/ids/*' -exec grep -l '"lc9"' {} + 2>/dev/null)" ]
}

@test "state: every OCI field (annotations from config.json, created in RFC 3339), nothing on stderr; list shows the same" {
  local b=$BATS_TEST_TMPDIR/b t0
  make_bundle "$b" sh -c "$TERMABLE"
  update_config "$b" '.annotations = {"org.example.key": "value 1", "io.maka.test": "two"}'
  t0=$(date +%s)
  run maka_io create --bundle "$b" lc-state
  [ "$status" -eq 0 ]

  run --separate-stderr maka state lc-state
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  local st=$output
  [ "$(jq -c 'keys' <<<"$st")" = '["annotations","bundle","created","id","ociVersion","owner","pid","rootfs","status"]' ]
  [ "$(jq -r .ociVersion <<<"$st")" = "$(jq -r .ociVersion "$b/config.json")" ]
  [ "$(jq -r .id <<<"$st")" = lc-state ]
  [ "$(jq -r .status <<<"$st")" = created ]
  [ "$(jq -r .bundle <<<"$st")" = "$b" ]
  [ "$(jq -r .rootfs <<<"$st")" = "$MAKA_ROOTFS" ]
  [ "$(jq -r .owner <<<"$st")" = "$(id -un)" ]
  [ "$(jq -cS .annotations <<<"$st")" = '{"io.maka.test":"two","org.example.key":"value 1"}' ]
  local pid created
  pid=$(jq -r .pid <<<"$st")
  [ "$pid" -gt 0 ]
  [ -d "/proc/$pid" ]
  created=$(jq -r .created <<<"$st")
  [[ "$created" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$ ]]
  local c
  c=$(date -d "$created" +%s)
  [ "$c" -ge $((t0 - 2)) ]
  [ "$c" -le $(($(date +%s) + 2)) ]

  # list: the table (runc's header), -q, and --format json (the states)
  run --separate-stderr maka list
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  [ "$(head -n1 <<<"$output" | tr -s ' ')" = "ID PID STATUS BUNDLE CREATED OWNER" ]
  # To a pipe: one line per container, as runc prints it (scripts, runc's
  # own suite among them, read it so), however long the bundle path.
  [ "${#lines[@]}" -eq 2 ]
  [ "$(sed -n 2p <<<"$output" | awk '{print $1, $2, $3, $4, $5, $6}')" = "lc-state $pid created $b $created $(id -un)" ]
  # On a terminal the table fits 80 columns: a long bundle path continues
  # on the next lines under its column (broken after a '/'), the rest stays
  # on the container's first line.
  run script -qec "$MAKA_BINARY --root $MAKA_ROOT --state-dir $MAKA_STATE_DIR list" /dev/null
  [ "$status" -eq 0 ]
  output=$(tr -d '\r' <<<"$output")
  echo "$output"
  [ -z "$(awk 'length > 80' <<<"$output")" ]
  [ "$(sed -n 2p <<<"$output" | awk '{print $1, $2, $3, $5, $6}')" = "lc-state $pid created $created $(id -un)" ]
  [ "$(sed -n '2,$p' <<<"$output" | awk 'NR == 1 {printf "%s", $4; next} {printf "%s", $1}')" = "$b" ]
  [ -n "$(sed -n '3,$p' <<<"$output")" ]
  [ -z "$(sed -n '3,$p' <<<"$output" | grep -v '^ ')" ]
  run --separate-stderr maka list -q
  [ "$status" -eq 0 ]
  [ "$output" = lc-state ]
  run --separate-stderr maka list --format json
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
  # one line, as runc's encoder writes it
  [ "${#lines[@]}" -eq 1 ]
  [[ "$output" == '[{"ociVersion":'* ]]
  [ "$(jq -r 'type' <<<"$output")" = array ]
  [ "$(jq -cS '.' <<<"$output")" = "$(jq -cS '[.]' <<<"$st")" ]

  # a created container is deleted without --force
  run maka delete lc-state
  [ "$status" -eq 0 ]
  gone lc-state "$pid"
  run maka list --format json
  [ "$status" -eq 0 ]
  [ "$(jq -c . <<<"$output")" = "[]" ]
  run maka list -q
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}

@test "start refuses a running and a stopped container; kill of a stopped one says 'container not running' unless --all; kill 0 checks" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c "$TERMABLE"
  run maka_io create -b "$BATS_TEST_TMPDIR/b" lc-start
  [ "$status" -eq 0 ]
  run maka start lc-start
  [ "$status" -eq 0 ]
  wait_for_status lc-start running
  run maka start lc-start
  [ "$status" -eq 1 ]
  [[ "$output" == *"running"* ]]
  [ "$(maka state lc-start | jq -r .status)" = running ]
  # Signal 0: an existence check, as runc's (nothing is sent).
  run maka kill lc-start 0
  [ "$status" -eq 0 ]
  [ "$(maka state lc-start | jq -r .status)" = running ]

  run maka kill lc-start
  [ "$status" -eq 0 ]
  wait_for_status lc-start stopped
  run maka kill lc-start 0
  [ "$status" -eq 1 ]
  [[ "$output" == *"container not running"* ]]
  run maka start lc-start
  [ "$status" -eq 1 ]
  [[ "$output" == *"stopped"* ]]
  run maka kill lc-start KILL
  [ "$status" -eq 1 ]
  [[ "$output" == *"container not running"* ]]
  run maka kill --all lc-start KILL
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  run maka delete lc-start
  [ "$status" -eq 0 ]
  gone lc-start ""
}

@test "kill takes a signal number, a name, a name without SIG, and lowercase; default is SIGTERM" {
  local log=$BATS_TEST_TMPDIR/out
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c '
    for s in USR1 USR2 HUP INT; do trap "echo got $s" $s; done
    trap "echo got TERM; exit 0" TERM
    echo ready
    while :; do sleep 100 & wait; done'
  start_detached "$log" run -d -b "$BATS_TEST_TMPDIR/b" lc-kill
  wait_for_line "$log" ready
  run maka kill lc-kill 10
  [ "$status" -eq 0 ]
  wait_for_line "$log" "got USR1"
  run maka kill lc-kill SIGUSR2
  [ "$status" -eq 0 ]
  wait_for_line "$log" "got USR2"
  run maka kill lc-kill HUP
  [ "$status" -eq 0 ]
  wait_for_line "$log" "got HUP"
  run maka kill lc-kill int
  [ "$status" -eq 0 ]
  wait_for_line "$log" "got INT"
  run maka kill lc-kill NOSUCHSIG
  [ "$status" -eq 1 ]
  [[ "$output" == *NOSUCHSIG* ]]
  [ "$(maka state lc-kill | jq -r .status)" = running ]
  run maka kill lc-kill
  [ "$status" -eq 0 ]
  wait_for_line "$log" "got TERM"
  wait_for_status lc-kill stopped
  [ "$(grep -c '^got ' "$log")" -eq 5 ]
}

@test "delete refuses a running container without --force ('not stopped'); --force removes running, created, paused and missing ones" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 1000
  run maka_io run -d -b "$BATS_TEST_TMPDIR/b" lc-run
  [ "$status" -eq 0 ]
  run maka_io create -b "$BATS_TEST_TMPDIR/b" lc-created
  [ "$status" -eq 0 ]
  run maka_io run -d -b "$BATS_TEST_TMPDIR/b" lc-paused
  [ "$status" -eq 0 ]
  run maka pause lc-paused
  [ "$status" -eq 0 ]
  wait_for_status lc-paused paused
  local p_run p_created p_paused
  p_run=$(container_pid lc-run)
  p_created=$(container_pid lc-created)
  p_paused=$(container_pid lc-paused)

  run maka delete lc-run
  [ "$status" -eq 1 ]
  [[ "$output" == *"not stopped"* ]]
  [ "$(maka state lc-run | jq -r .status)" = running ]
  run maka delete lc-paused
  [ "$status" -eq 1 ]
  # Paused, as the record and the cgroup's freezer say (libmaka/initstatus.go).
  [[ "$output" == *"not stopped: paused"* ]]
  [ "$(maka state lc-paused | jq -r .status)" = paused ]

  run maka delete --force lc-run
  [ "$status" -eq 0 ]
  gone lc-run "$p_run"
  run maka delete -f lc-created
  [ "$status" -eq 0 ]
  gone lc-created "$p_created"
  run maka delete --force lc-paused
  [ "$status" -eq 0 ]
  gone lc-paused "$p_paused"
  run maka delete --force lc-never-existed
  [ "$status" -eq 0 ]
  [ -z "$output" ]
  run maka list -q
  [ -z "$output" ]
}

@test "run --detach returns once the process runs and leaves the container running" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'echo started; exec sleep 1000'
  local log=$BATS_TEST_TMPDIR/out
  run start_detached "$log" run --detach -b "$BATS_TEST_TMPDIR/b" --pid-file "$BATS_TEST_TMPDIR/pid" lc-detach
  [ "$status" -eq 0 ]
  run maka state lc-detach
  [ "$status" -eq 0 ]
  [ "$(jq -r .status <<<"$output")" = running ]
  local pid
  pid=$(jq -r .pid <<<"$output")
  [ "$pid" = "$(cat "$BATS_TEST_TMPDIR/pid")" ]
  wait_for_line "$log" started
  # the user process itself, not maka's init, has the pid
  local i
  for i in $(seq 50); do
    [ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "sleep 1000 " ] && break
    sleep 0.1
  done
  [ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "sleep 1000 " ]
  run maka delete --force lc-detach
  [ "$status" -eq 0 ]
  gone lc-detach "$pid"
}

@test "run in the foreground exits 128+N when its process is killed by signal N, and removes the container" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'echo ready; exec sleep 1000'
  local log=$BATS_TEST_TMPDIR/out mpid rc=0
  bg_maka "$log" run -b "$BATS_TEST_TMPDIR/b" lc-sig
  mpid=$BG_PID
  wait_for_line "$log" ready
  [ "$(tr '\0' ' ' <"/proc/$mpid/cmdline")" = "$MAKA_BINARY --root $MAKA_ROOT run -b $BATS_TEST_TMPDIR/b lc-sig " ]
  wait_for_status lc-sig running
  local pid
  pid=$(container_pid lc-sig)
  run maka kill lc-sig KILL
  [ "$status" -eq 0 ]
  wait "$mpid" || rc=$?
  [ "$rc" -eq 137 ]
  gone lc-sig "$pid"
}

@test "run in the foreground forwards the signals it receives (SIGUSR1, SIGTERM) to the container" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c '
    trap "echo got USR1" USR1
    trap "echo got TERM; exit 7" TERM
    echo ready
    while :; do sleep 100 & wait; done'
  local log=$BATS_TEST_TMPDIR/out mpid rc=0
  bg_maka "$log" run -b "$BATS_TEST_TMPDIR/b" lc-fwd
  mpid=$BG_PID
  wait_for_line "$log" ready
  [ "$(tr '\0' ' ' <"/proc/$mpid/cmdline")" = "$MAKA_BINARY --root $MAKA_ROOT run -b $BATS_TEST_TMPDIR/b lc-fwd " ]
  kill -USR1 "$mpid"
  wait_for_line "$log" "got USR1"
  [ "$(maka state lc-fwd | jq -r .status)" = running ]
  kill -TERM "$mpid"
  wait "$mpid" || rc=$?
  grep -qxF "got TERM" "$log"
  [ "$rc" -eq 7 ]
  gone lc-fwd ""
}
