#!/usr/bin/env bats
# maka ps: the container's processes, as ps(1) shows them or as JSON pids.

load helpers

# One running container ("psc"): an init shell and two sleeps.
setup_file() {
  maka_setup_file
  make_bundle "$BATS_FILE_TMPDIR/psc" sh -c 'sleep 100001 & sleep 100002 & wait'
  maka_io run -d --bundle "$BATS_FILE_TMPDIR/psc" psc
  wait_for_status psc running
  # Wait until both sleeps are in the cgroup.
  local i
  for i in $(seq 100); do
    [ "$(cgroup_file psc cgroup.procs | wc -l)" -ge 3 ] && break
    sleep 0.1
  done
}

teardown_file() {
  maka delete --force psc >/dev/null 2>&1 || true
  maka_teardown_file
}

# procs: the container's pids from its cgroup, sorted numerically.
procs() {
  cgroup_file psc cgroup.procs | sort -n
}

@test "ps --format json prints the array of host pids in the container's cgroup" {
  run maka ps --format json psc
  [ "$status" -eq 0 ]
  [ "$(jq -r 'type' <<<"$output")" = array ]
  [ "$(jq -r '.[]' <<<"$output" | sort -n)" = "$(procs)" ]
  [ "$(procs | wc -l)" -eq 3 ]
  # The init's host pid is one of them.
  jq -e --argjson p "$(container_pid psc)" 'index($p) != null' <<<"$output"
  run maka ps -f json psc
  [ "$status" -eq 0 ]
  [ "$(jq -r '.[]' <<<"$output" | sort -n)" = "$(procs)" ]
}

@test "ps prints ps -ef's header and the container's processes, nothing else" {
  run maka ps psc
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ UID\ +PID\ +PPID\ +C\ +STIME\ +TTY\ +TIME\ +CMD ]]
  [ "${#lines[@]}" -eq 4 ]
  [ "$(printf '%s\n' "${lines[@]:1}" | awk '{print $2}' | sort -n)" = "$(procs)" ]
  [[ "$output" == *"sleep 100001"* ]]
  [[ "$output" == *"sleep 100002"* ]]
  [[ "$output" != *bats* ]]
}

@test "ps passes the options after -- to ps(1)" {
  run maka ps psc -- -o pid,comm
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^\ *PID\ +COMMAND$ ]]
  [ "${#lines[@]}" -eq 4 ]
  [ "$(printf '%s\n' "${lines[@]:1}" | awk '{print $1}' | sort -n)" = "$(procs)" ]
  [ "$(printf '%s\n' "${lines[@]:1}" | awk '{print $2}' | sort | tr '\n' ' ')" = "sh sleep sleep " ]
  # runc's form: the options straight after the id.
  run maka ps psc -o pid,args
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" =~ ^\ *PID\ +COMMAND$ ]]
  [ "${#lines[@]}" -eq 4 ]
  [[ "$output" == *"sleep 100002"* ]]
}

@test "ps refuses an output without a PID column and an unknown format" {
  run maka ps psc -- -o comm
  [ "$status" -ne 0 ]
  [[ "$output" == *PID* ]]
  run maka ps --format yaml psc
  [ "$status" -ne 0 ]
  [[ "$output" == *format* ]]
}

@test "ps of a missing container fails with \"does not exist\"" {
  run maka ps no-such-ctr
  [ "$status" -eq 1 ]
  [[ "$output" == *"container no-such-ctr does not exist"* ]]
  run maka ps --format json no-such-ctr
  [ "$status" -eq 1 ]
  [[ "$output" == *"does not exist"* ]]
}

@test "ps of a stopped container succeeds with no processes" {
  make_bundle "$BATS_TEST_TMPDIR/b" true
  maka_io run -d --bundle "$BATS_TEST_TMPDIR/b" psstop
  wait_for_status psstop stopped
  run maka ps --format json psstop
  [ "$status" -eq 0 ]
  [ "$(jq -r 'length' <<<"$output")" -eq 0 ]
  run maka ps psstop
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *PID* ]]
  [ "${#lines[@]}" -eq 1 ]
  maka delete psstop
}
