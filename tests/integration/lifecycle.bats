#!/usr/bin/env bats
# The OCI lifecycle as containerd drives it: create, start, state, kill, delete.

load helpers

@test "create, start, state, kill, delete: containerd's call sequence" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'trap "exit 0" TERM; sleep 100 & wait' 
  run maka_io create --bundle "$BATS_TEST_TMPDIR/b" --pid-file "$BATS_TEST_TMPDIR/pid" lc1
  [ "$status" -eq 0 ]
  [ -s "$BATS_TEST_TMPDIR/pid" ]
  run maka state lc1
  [ "$status" -eq 0 ]
  [ "$(jq -r .status <<<"$output")" = created ]
  [ "$(jq -r .pid <<<"$output")" = "$(cat "$BATS_TEST_TMPDIR/pid")" ]
  run maka start lc1
  [ "$status" -eq 0 ]
  wait_for_status lc1 running
  run maka kill lc1 15
  [ "$status" -eq 0 ]
  wait_for_status lc1 stopped
  run maka kill --all lc1 9
  [ "$status" -eq 0 ]
  run maka delete lc1
  [ "$status" -eq 0 ]
  run maka state lc1
  [ "$status" -eq 1 ]
  [[ "$output" == *"does not exist"* ]]
}

@test "run in the foreground returns the container's exit status" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'echo hello; exit 3'
  run maka run --bundle "$BATS_TEST_TMPDIR/b" lc2
  [ "$status" -eq 3 ]
  [ "$output" = hello ]
  run maka state lc2
  [ "$status" -eq 1 ]
}
