#!/usr/bin/env bats
# Cgroups maka owns (issue 11, item 4): a sandbox's cgroup is
# /sys/fs/cgroup/maka/<id>, or the caller's linux.cgroupsPath only strictly
# below a policy cgroupParent; maka creates it (never joins one), records its
# id (inode) and never kills or removes a cgroup with another id. Run only
# in the throw-away guest: these tests make cgroups like a host's services.

MAKA_POLICY=   # the default, restricted; baseline through the fixture
load helpers
bats_require_minimum_version 1.5.0

BASELINE=$MAKA_REPO/tests/integration/fixtures/policy-baseline.json
VICTIM=/sys/fs/cgroup/system.slice/victim.service
# A marker for the processes these tests start outside any container.
MARK=4244

setup_file() {
  maka_setup_file
  make_bundle "$BATS_FILE_TMPDIR/b" sleep 600
  export B=$BATS_FILE_TMPDIR/b
}

teardown_file() {
  pkill -f "sleep $MARK" || true
  maka_teardown_file
  rmdir "$VICTIM" /sys/fs/cgroup/kubepods/victim 2>/dev/null || true
}

# bundle_with_cgroup DIR PATH: the sleeping bundle with linux.cgroupsPath PATH.
bundle_with_cgroup() {
  make_bundle "$1" sleep 600
  update_config "$1" '.linux.cgroupsPath = $p' --arg p "$2"
}

# record_of ID: the container's contract record.
record_of() {
  local f
  f=$(find "$MAKA_STATE_DIR" -path "*/records/$1.json")
  [ -n "$f" ] || { echo "no record for $1" >&2; return 1; }
  cat "$f"
}

# empty_cgroup DIR: DIR is a cgroup that exists and holds no process.
empty_cgroup() {
  [ -d "$1" ] || { echo "cgroup $1 is gone" >&2; return 1; }
  [ -z "$(cat "$1/cgroup.procs")" ] || { echo "cgroup $1 holds $(cat "$1/cgroup.procs")" >&2; return 1; }
}

# refused POLICY ID PATH WORDS: create with linux.cgroupsPath PATH fails
# (exit 1) with an error naming linux.cgroupsPath and WORDS; nothing left.
refused() {
  local policy=$1 id=$2 path=$3 words=$4
  bundle_with_cgroup "$BATS_TEST_TMPDIR/$id" "$path"
  MAKA_POLICY=$policy run maka_io create --bundle "$BATS_TEST_TMPDIR/$id" "$id"
  echo "$output"
  [ "$status" -eq 1 ] || { echo "exit $status, want 1" >&2; return 1; }
  [[ "$output" == *"linux.cgroupsPath"* ]] || { echo "linux.cgroupsPath not named" >&2; return 1; }
  [[ "$output" == *"$words"* ]] || { echo "no '$words' in the error" >&2; return 1; }
  assert_nothing_left "$id"
}

@test "a cgroupsPath naming an existing cgroup (a host service's) is refused under restricted and baseline; the victim cgroup stays, empty, with its id" {
  mkdir -p "$VICTIM"
  local ino
  ino=$(stat -c %i "$VICTIM")
  refused "" cg-victim-r /system.slice/victim.service "not below a cgroup parent"
  refused "$BASELINE" cg-victim-b /system.slice/victim.service "not below a cgroup parent"
  empty_cgroup "$VICTIM"
  [ "$(stat -c %i "$VICTIM")" = "$ino" ]
  # Below an allowed parent, an existing cgroup is not joined either.
  mkdir -p /sys/fs/cgroup/kubepods/victim
  ino=$(stat -c %i /sys/fs/cgroup/kubepods/victim)
  refused "$BASELINE" cg-victim-k /kubepods/victim "the cgroup /kubepods/victim already exists: maka creates its sandbox's cgroup itself"
  empty_cgroup /sys/fs/cgroup/kubepods/victim
  [ "$(stat -c %i /sys/fs/cgroup/kubepods/victim)" = "$ino" ]
}

@test "an existing cgroup with processes, or frozen, is refused in runc's words too (container's cgroup is not empty / unexpectedly frozen); it is left as it was" {
  local cg=/sys/fs/cgroup/kubepods/busy pid
  mkdir -p "$cg"
  sleep $MARK &
  pid=$!
  echo "$pid" > "$cg/cgroup.procs"
  # Refused at the check now, before anything exists (baseline: a
  # cgroupsPath never inside a cgroup that holds processes): maka's reason,
  # then runc's words, which runc's own suite looks for (cgroups.bats' "run/
  # create should error for a non-empty cgroup"), by create and run alike.
  refused "$BASELINE" cg-busy /kubepods/busy "linux.cgroupsPath: /kubepods/busy already holds 1 process(es): a sandbox gets a cgroup of its own (container's cgroup is not empty)"
  MAKA_POLICY=$BASELINE run maka_io run -d --bundle "$BATS_TEST_TMPDIR/cg-busy" cg-busy-run
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"linux.cgroupsPath: /kubepods/busy already holds 1 process(es)"*"(container's cgroup is not empty)"* ]]
  assert_nothing_left cg-busy-run
  [ "$(cat "$cg/cgroup.procs")" = "$pid" ]
  [ -z "$(find "$cg" -mindepth 1 -type d)" ]   # no cgroup made inside it
  kill "$pid"; wait "$pid" 2>/dev/null || true
  echo 1 > "$cg/cgroup.freeze"
  refused "$BASELINE" cg-frozen /kubepods/busy "container's cgroup unexpectedly frozen"
  [ "$(cat "$cg/cgroup.freeze")" = 1 ]
  rmdir "$cg"
}

@test "cgroupsPath values that would leave the allowed parents are refused: '..', relative, systemd's slice:prefix:name, nested in maka's own" {
  refused "" cg-dotdot /maka/../system.slice/x '".." component'
  [ ! -e /sys/fs/cgroup/system.slice/x ]
  refused "" cg-rel relative "not an absolute path"
  refused "$BASELINE" cg-systemd machine.slice:libpod:cg-systemd "systemd cgroup path (slice:prefix:name)"
  [ -z "$(find /sys/fs/cgroup -name '*:*' 2>/dev/null)" ]
  refused "" cg-nested /maka/other/nested "one level deep"
}

@test "without cgroupsPath the sandbox lands in /sys/fs/cgroup/maka/<id>, whose id (inode) the contract records; delete removes it" {
  maka_io create --bundle "$B" cg-default
  [ "$(cgroup_path_of cg-default)" = /maka/cg-default ]
  [ "$(record_of cg-default | jq -r .cgroupPath)" = /sys/fs/cgroup/maka/cg-default ]
  [ "$(record_of cg-default | jq -r .cgroupID)" = "$(stat -c %i /sys/fs/cgroup/maka/cg-default)" ]
  maka delete --force cg-default
  [ ! -e /sys/fs/cgroup/maka/cg-default ]
  assert_nothing_left cg-default
}

@test "a cgroupsPath below an allowed parent is used as given (baseline: /kubepods/...)" {
  bundle_with_cgroup "$BATS_TEST_TMPDIR/k" /kubepods/pod-cg/cg-kube
  MAKA_POLICY=$BASELINE maka_io create --bundle "$BATS_TEST_TMPDIR/k" cg-kube
  [ "$(cgroup_path_of cg-kube)" = /kubepods/pod-cg/cg-kube ]
  MAKA_POLICY=$BASELINE maka delete --force cg-kube
  [ ! -e /sys/fs/cgroup/kubepods/pod-cg/cg-kube ]
  rmdir /sys/fs/cgroup/kubepods/pod-cg
}

# swap_cgroup ID: kill the container's processes, remove its cgroup and make
# another at the same path, holding a process of ours; prints the new cgroup.
swap_cgroup() {
  local cg n=0
  cg=$(cgroup_dir_of "$1")
  echo 1 >"$cg/cgroup.kill"
  while ! grep -qx "populated 0" "$cg/cgroup.events" && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
  rmdir "$cg"
  mkdir "$cg"
  sleep "$MARK" </dev/null >/dev/null 2>&1 3>&- &
  echo $! >"$cg/cgroup.procs"
  echo "$cg"
}

@test "a cgroup replaced after create (same path, new id) is neither killed nor removed by delete --force or recover, which say why" {
  maka_io create --bundle "$B" cg-swap
  local cg old
  old=$(record_of cg-swap | jq -r .cgroupID)
  cg=$(swap_cgroup cg-swap)
  [ "$(stat -c %i "$cg")" != "$old" ]

  run maka delete --force cg-swap
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"cgroup $cg changed since maka created it (id $old, now $(stat -c %i "$cg")): not touching it"* ]]
  [ -d "$cg" ]
  pgrep -fx "sleep $MARK"
  grep -qx "populated 1" "$cg/cgroup.events"

  # Its runtime state lost (a reboot's tmpfs): recover reaps the record,
  # and still does not touch the new cgroup.
  rm -rf "${MAKA_ROOT:?}/cg-swap"
  run maka recover --format json
  echo "$output"
  [ "$status" -eq 1 ] # a record it could not reap
  [ "$(jq -r '.[] | select(.id == "cg-swap") | .result' <<<"$output")" = failed ]
  [[ "$(jq -r '.[] | select(.id == "cg-swap") | .error' <<<"$output")" == *"changed since maka created it"* ]]
  [ -d "$cg" ]
  pgrep -fx "sleep $MARK"

  # Once the stranger's cgroup is gone, the record goes too.
  pkill -fx "sleep $MARK"
  local n=0
  while ! grep -qx "populated 0" "$cg/cgroup.events" && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
  rmdir "$cg"
  run maka recover --format json
  [ "$(jq -r '.[] | select(.id == "cg-swap") | .result' <<<"$output")" = recovered ]
  assert_nothing_left cg-swap
}

# crash_at STAGE ARGS...: maka ARGS... killed (SIGKILL) at STAGE.
crash_at() {
  local stage=$1 rc=0 log; shift
  log=$(mktemp "$BATS_TEST_TMPDIR/crash.XXXXXX")
  MAKA_TEST_CRASH_AT="$stage" "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" "$@" \
    </dev/null >"$log" 2>&1 3>&- || rc=$?
  cat "$log"
  [ "$rc" -eq 137 ] || { echo "maka $* exited $rc, not 137 (SIGKILL) at $stage" >&2; return 1; }
}

@test "a create killed between making the cgroup and recording its id: recover removes the empty cgroup" {
  crash_at create:cgroup-made create --bundle "$B" cg-crash
  [ "$(record_of cg-crash | jq -r '.cgroupID // 0')" = 0 ]
  [ -d /sys/fs/cgroup/maka/cg-crash ]
  run maka recover --format json
  echo "$output"
  [ "$(jq -r '.[] | select(.id == "cg-crash") | .result' <<<"$output")" = recovered ]
  assert_nothing_left cg-crash
}

@test "a create killed before making its cgroup: a cgroup someone made since at its path, with a process, is not touched" {
  crash_at create:record-published create --bundle "$B" cg-crash2
  mkdir -p /sys/fs/cgroup/maka/cg-crash2
  sleep "$MARK" </dev/null >/dev/null 2>&1 3>&- &
  echo $! >/sys/fs/cgroup/maka/cg-crash2/cgroup.procs
  run maka recover --format json
  echo "$output"
  [ "$(jq -r '.[] | select(.id == "cg-crash2") | .result' <<<"$output")" = failed ]
  [[ "$(jq -r '.[] | select(.id == "cg-crash2") | .error' <<<"$output")" == *"did not record its id"*"not empty"* ]]
  pgrep -fx "sleep $MARK"
  pkill -fx "sleep $MARK"
  local n=0
  while ! grep -qx "populated 0" /sys/fs/cgroup/maka/cg-crash2/cgroup.events && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
  rmdir /sys/fs/cgroup/maka/cg-crash2
  run maka recover --format json
  [ "$(jq -r '.[] | select(.id == "cg-crash2") | .result' <<<"$output")" = recovered ]
  assert_nothing_left cg-crash2
}
