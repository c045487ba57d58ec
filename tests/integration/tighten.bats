#!/usr/bin/env bats
# The org.maka.profile annotation only tightens (issue 24): under a policy
# file stricter than restricted in some item, `org.maka.profile:
# restricted` keeps the file's item. It once loosened maxCommandTimeout
# (30 -> 180) and reset oomScoreAdjMin.

load helpers

@test "org.maka.profile=restricted under a baseline file with maxCommandTimeout 30 and oomScoreAdjMin 500: exec --timeout 100s is refused, and the file's items are the record's" {
  echo '{"profile": "baseline", "maxCommandTimeout": 30, "oomScoreAdjMin": 500}' > "$BATS_TEST_TMPDIR/policy.json"
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 300
  update_config "$BATS_TEST_TMPDIR/b" '.annotations["org.maka.profile"] = "restricted" | .process.oomScoreAdj = 500'
  maka_io --policy "$BATS_TEST_TMPDIR/policy.json" run -d --bundle "$BATS_TEST_TMPDIR/b" t1
  wait_for_status t1 running
  run maka exec --timeout 100s t1 true
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"--timeout 1m40s"*"30s (the policy's maxCommandTimeout)"* ]]
  run maka exec --timeout 20s t1 true
  [ "$status" -eq 0 ]
  # The policy the record keeps: restricted, with the file's stricter items.
  jq -e '.policy | .profile == "restricted" and .maxCommandTimeout == 30 and .oomScoreAdjMin == 500' \
    "$(find "$MAKA_STATE_DIR" -name t1.json -path '*/records/*')"
  # A process asking for less than the file's oomScoreAdjMin is refused.
  update_config "$BATS_TEST_TMPDIR/b" '.process.oomScoreAdj = 100'
  run maka_io --policy "$BATS_TEST_TMPDIR/policy.json" create --bundle "$BATS_TEST_TMPDIR/b" t2
  [ "$status" -ne 0 ]
  [[ "$output" == *"process.oomScoreAdj: 100 is outside 500..1000"* ]]
  assert_nothing_left t2
  teardown_container t1
}
