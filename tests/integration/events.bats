#!/usr/bin/env bats
# `maka events`: stats once (--stats), a stream every --interval, and an
# "oom" event when the kernel's OOM killer acts in the container's cgroup.
# Lines are runc's {"type","id","data"} JSON, which containerd decodes.

load helpers
bats_require_minimum_version 1.5.0

MiB=1048576

setup_file() {
  maka_setup_file
  make_bundle "$BATS_FILE_TMPDIR/b" sh -c 'trap "exit 0" TERM; sleep 1000 & wait'
  # 32 MiB and no swap: a memory hog is OOM-killed quickly.
  update_config "$BATS_FILE_TMPDIR/b" '.linux.resources += {
      memory: {limit: (32 * $mib), swap: (32 * $mib)}, pids: {limit: 50}
    }' --argjson mib "$MiB"
  maka_io run -d --bundle "$BATS_FILE_TMPDIR/b" e1
  wait_for_status e1 running
}

# start_events FILE ARGS...: `maka events ARGS...` in the background,
# stdout to FILE, stderr to FILE.err; its pid in EVENTS_PID.
start_events() {
  local out=$1; shift
  "$MAKA_BINARY" --root "$MAKA_ROOT" events "$@" </dev/null >"$out" 2>"$out.err" &
  EVENTS_PID=$!
}

# stop_events: end the background events (if still running).
stop_events() {
  [ -n "${EVENTS_PID:-}" ] || return 0
  kill "$EVENTS_PID" 2>/dev/null || true
  wait "$EVENTS_PID" 2>/dev/null || true
  EVENTS_PID=
}

teardown() {
  stop_events
}

# wait_lines FILE N [TIMEOUT=30]: until FILE has N lines.
wait_lines() {
  local deadline=$((SECONDS + ${3:-30}))
  while [ "$(wc -l <"$1")" -lt "$2" ]; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "only $(wc -l <"$1") lines in $1 after ${3:-30}s:" >&2
      cat "$1" "$1.err" >&2
      return 1
    fi
    sleep 0.1
  done
}

@test "events --stats prints one stats line: memory usage and limit, pids, cpu" {
  run --separate-stderr maka events --stats e1
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 1 ]
  echo "$output" | jq -e --argjson lim $((32 * MiB)) '
    .type == "stats" and .id == "e1"
    and .data.memory.usage.usage > 0
    and .data.memory.usage.limit == $lim
    and .data.pids.current >= 1 and .data.pids.limit == 50
    and .data.cpu.usage.total > 0'
}

@test "events --interval 1s streams a stats line every second" {
  local t0 t1
  t0=$(date +%s%N)
  start_events "$BATS_TEST_TMPDIR/ev" --interval 1s e1
  wait_lines "$BATS_TEST_TMPDIR/ev" 3 30
  t1=$(date +%s%N)
  # still streaming: the process did not exit after the first line
  kill -0 "$EVENTS_PID"
  stop_events
  # three lines need two intervals: not a burst
  [ $(((t1 - t0) / 1000000)) -ge 1500 ]
  run jq -se 'length >= 3 and all(.[]; .type == "stats" and .id == "e1" and .data.memory.usage.usage > 0)' \
    "$BATS_TEST_TMPDIR/ev"
  [ "$status" -eq 0 ]
}

@test "an OOM kill in the container gives an oom event" {
  start_events "$BATS_TEST_TMPDIR/ev" --interval 60s e1
  # the first stats line comes after the OOM watch is registered
  wait_lines "$BATS_TEST_TMPDIR/ev" 1 30
  # a string that doubles until the 32 MiB limit: the OOM killer takes it
  run maka_io exec e1 sh -c 'x=0123456789abcdef; while :; do x=$x$x; done'
  [ "$status" -eq 137 ]
  local deadline=$((SECONDS + 30))
  until grep -q '"oom"' "$BATS_TEST_TMPDIR/ev"; do
    [ "$SECONDS" -lt "$deadline" ] || { cat "$BATS_TEST_TMPDIR/ev"*; false; }
    sleep 0.2
  done
  run jq -c 'select(.type == "oom")' "$BATS_TEST_TMPDIR/ev"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -ge 1 ]
  [ "$(jq -r .id <<<"${lines[0]}")" = e1 ]
  # the container survives its hog, and the kernel counted the kill
  [ "$(maka state e1 | jq -r .status)" = running ]
  grep -Eq '^oom_kill [1-9]' "$(cgroup_dir_of e1)/memory.events"
}

@test "the event stream ends by itself when the container stops" {
  start_events "$BATS_TEST_TMPDIR/ev" --interval 1s e1
  wait_lines "$BATS_TEST_TMPDIR/ev" 1 30
  run maka kill e1 TERM
  [ "$status" -eq 0 ]
  wait_for_status e1 stopped
  local deadline=$((SECONDS + 20))
  while kill -0 "$EVENTS_PID" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "events still running after the container stopped"; false; }
    sleep 0.2
  done
  wait "$EVENTS_PID"  # its exit status: 0
  EVENTS_PID=
}

@test "the event stream ends when its container is deleted (runc's events.bats: default interval, delete -f)" {
  maka_io run -d --bundle "$BATS_FILE_TMPDIR/b" e2
  start_events "$BATS_TEST_TMPDIR/ev" e2
  wait_lines "$BATS_TEST_TMPDIR/ev" 1 30
  run maka delete -f e2
  [ "$status" -eq 0 ]
  local deadline=$((SECONDS + 15))
  while kill -0 "$EVENTS_PID" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "events still running after its container was deleted"; cat "$BATS_TEST_TMPDIR/ev.err"; false; }
    sleep 0.2
  done
  wait "$EVENTS_PID"
  EVENTS_PID=
  [[ "$(head -1 "$BATS_TEST_TMPDIR/ev")" == '{"type":"stats","id":"e2",'* ]]
}

@test "events on a stopped container fails with 'not running'" {
  wait_for_status e1 stopped
  run maka events --stats e1
  [ "$status" -eq 1 ]
  [[ "$output" == *"not running"* ]]
  run maka events e1
  [ "$status" -eq 1 ]
  [[ "$output" == *"not running"* ]]
}

@test "events of a missing container fails with 'does not exist'; a bad --interval is refused" {
  run maka events --stats no-such-ctr
  [ "$status" -eq 1 ]
  [[ "$output" == *"container no-such-ctr does not exist"* ]]
  run maka events --interval 0s e1
  [ "$status" -ne 0 ]
  [[ "$output" == *"interval"* ]]
}
