#!/usr/bin/env bats
# maka pause / resume: the cgroup v2 freezer.

load helpers

teardown() {
  teardown_container pz
}

# start_counter: container "pz" whose init bumps /dev/shm/counter every 0.1 s.
start_counter() {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c \
    'i=0; while :; do i=$((i+1)); echo $i > /dev/shm/counter; sleep 0.1; done'
  maka_io run -d --bundle "$BATS_TEST_TMPDIR/b" pz
  wait_for_status pz running
  counter_file=/proc/$(container_pid pz)/root/dev/shm/counter
  # Seen once, then done: the shell truncates the file before each write,
  # so a second look can fall between the two (CI: "not ok", with the file
  # then holding 3 bytes).
  local i seen=
  for i in $(seq 300); do [ -s "$counter_file" ] && { seen=1; break; }; sleep 0.1; done
  [ -n "$seen" ] || { maka state pz; ls -l "$counter_file"; return 1; }
}

@test "pause freezes the cgroup and the processes; resume thaws them" {
  start_counter
  [ "$(cgroup_file pz cgroup.freeze)" = 0 ]
  run maka pause pz
  [ "$status" -eq 0 ]
  [ "$(maka state pz | jq -r .status)" = paused ]
  [ "$(cgroup_file pz cgroup.freeze)" = 1 ]
  grep -qx 'frozen 1' <(cgroup_file pz cgroup.events)
  run maka list --format json
  [ "$(jq -r '.[] | select(.id == "pz") | .status' <<<"$output")" = paused ]
  # Frozen: the counter does not move.
  local a b
  a=$(cat "$counter_file")
  sleep 2
  b=$(cat "$counter_file")
  [ "$a" = "$b" ]

  run maka resume pz
  [ "$status" -eq 0 ]
  [ "$(maka state pz | jq -r .status)" = running ]
  [ "$(cgroup_file pz cgroup.freeze)" = 0 ]
  grep -qx 'frozen 0' <(cgroup_file pz cgroup.events)
  local i
  for i in $(seq 100); do [ "$(cat "$counter_file")" != "$b" ] && break; sleep 0.1; done
  [ "$(cat "$counter_file")" != "$b" ]
}

@test "resume of a running container fails with \"not paused\"" {
  start_counter
  run maka resume pz
  [ "$status" -ne 0 ]
  [[ "$output" == *"not paused"* ]]
  [ "$(maka state pz | jq -r .status)" = running ]
}

@test "pause of a stopped container fails with \"not running\"" {
  make_bundle "$BATS_TEST_TMPDIR/b" true
  maka_io run -d --bundle "$BATS_TEST_TMPDIR/b" pz
  wait_for_status pz stopped
  run maka pause pz
  [ "$status" -ne 0 ]
  [[ "$output" == *"not running"* ]]
  [ "$(maka state pz | jq -r .status)" = stopped ]
}

@test "pause and resume of a missing container fail with \"does not exist\"" {
  run maka pause no-such-ctr
  [ "$status" -eq 1 ]
  [[ "$output" == *"container no-such-ctr does not exist"* ]]
  run maka resume no-such-ctr
  [ "$status" -eq 1 ]
  [[ "$output" == *"container no-such-ctr does not exist"* ]]
}

@test "delete --force of a paused container removes it and its cgroup" {
  start_counter
  local cg pid
  cg=$(cgroup_dir_of pz)
  pid=$(container_pid pz)
  maka pause pz
  [ "$(maka state pz | jq -r .status)" = paused ]
  run maka delete pz
  [ "$status" -ne 0 ]
  run maka delete --force pz
  [ "$status" -eq 0 ]
  run maka state pz
  [ "$status" -eq 1 ]
  [[ "$output" == *"does not exist"* ]]
  [ ! -e "$cg" ]
  ! kill -0 "$pid" 2>/dev/null
}

@test "kill KILL of a paused container stops it" {
  start_counter
  maka pause pz
  run maka kill pz KILL
  [ "$status" -eq 0 ]
  wait_for_status pz stopped
  run maka delete pz
  [ "$status" -eq 0 ]
}
