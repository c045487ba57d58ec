#!/usr/bin/env bats
# maka's seccomp profile is an allowlist: io_uring (whose operations seccomp
# never sees) is refused, a syscall newer than the profile answers ENOSYS
# (so a libc falls back), ordinary programs run, and a config.json profile
# can only narrow it: under baseline a profile that allows everything still
# gets io_uring refused and mount watched; under restricted it is refused.
# A config.json profile older than a call answers ENOSYS for it (statx runs
# where the profile allows its older form, newfstatat), and one under which
# libcontainer's init could not statx is refused at create.

MAKA_POLICY=   # restricted, the default
load helpers
bats_require_minimum_version 1.5.0

BASELINE=$MAKA_REPO/tests/integration/fixtures/policy-baseline.json

setup_file() {
  maka_setup_file
  install_escape
  # baseline, violations denied and recorded (baseline's own default).
  jq '. + {onViolation: "deny"}' "$BASELINE" > "$BATS_FILE_TMPDIR/baseline-deny.json"
}

teardown() {
  teardown_all_containers
}

# run_stopped POLICY ID BUNDLE: run -d under POLICY ("" for restricted), the
# container's output in $BATS_TEST_TMPDIR/ID.out; wait until it stops.
run_stopped() {
  local policy=$1 id=$2 bundle=$3 p=() deadline=$((SECONDS + 60)) pid st
  [ -n "$policy" ] && p=(--policy "$policy")
  MAKA_POLICY=$policy "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" "${p[@]}" \
    run -d --bundle "$bundle" "$id" </dev/null >"$BATS_TEST_TMPDIR/$id.out" 2>&1
  # The monitor exits when its container has stopped and is done recording.
  if pid=$(cat "$MAKA_ROOT/$id/monitor.pid" 2>/dev/null); then
    while read -r _ _ st _ 2>/dev/null <"/proc/$pid/stat" && [ "$st" != Z ]; do
      [ "$SECONDS" -lt "$deadline" ] || { echo "the monitor of $id still runs" >&2; return 1; }
      sleep 0.1
    done
  fi
  wait_for_status "$id" stopped 60
}

@test "restricted: io_uring_setup is refused (EPERM) and a syscall newer than the profile answers ENOSYS" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'escape io_uring sys:1000 sys:4095; echo done'
  run_stopped "" sc-uring "$BATS_TEST_TMPDIR/b"
  out=$(cat "$BATS_TEST_TMPDIR/sc-uring.out")
  echo "$out"
  # The kernel has io_uring (6.12): without the filter, ret=3 errno=0.
  [[ "$out" =~ io_uring\ pid=[0-9]+\ ret=-1\ errno=(EPERM|ENOSYS) ]]
  [[ "$out" =~ sys:1000\ pid=[0-9]+\ ret=-1\ errno=ENOSYS ]]
  [[ "$out" =~ sys:4095\ pid=[0-9]+\ ret=-1\ errno=ENOSYS ]]
  [[ "$out" == *done* ]]
  # Refused quietly: io_uring is not watched, nothing is recorded.
  run maka violations --format json sc-uring
  [ "$status" -eq 0 ]
  jq -e 'length == 0' <<<"$output"
  maka delete sc-uring
  assert_nothing_left sc-uring
}

@test "restricted: busybox sh, ls, cat, sleep, a pipe, kill and signals work under the allowlist" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c '
    ls / | grep -c . >/tmp/n; cat /tmp/n; echo piped | cat; head -c 4096 /dev/urandom | wc -c
    sleep 30 & kill -TERM $!; wait $!; echo "killed=$?"
    trap "echo trapped" USR1; kill -USR1 $$; sleep 0.1; date +%s >/dev/null; id -u; echo ok'
  run -0 maka run --bundle "$BATS_TEST_TMPDIR/b" sc-ordinary
  echo "$output"
  [[ "$output" == *piped* ]]
  [[ "$output" == *4096* ]]
  [[ "$output" == *killed=143* ]]
  [[ "$output" == *trapped* ]]
  [[ "${lines[-1]}" == ok ]]
  assert_nothing_left sc-ordinary
}

@test "baseline: a config.json profile with defaultAction SCMP_ACT_ALLOW still gets io_uring refused and mount watched" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'escape io_uring mount sys:1000; echo done'
  update_config "$BATS_TEST_TMPDIR/b" '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW"}'
  run_stopped "$BATS_FILE_TMPDIR/baseline-deny.json" sc-allow "$BATS_TEST_TMPDIR/b"
  out=$(cat "$BATS_TEST_TMPDIR/sc-allow.out")
  echo "$out"
  [[ "$out" =~ io_uring\ pid=[0-9]+\ ret=-1\ errno=(EPERM|ENOSYS) ]]
  [[ "$out" =~ mount\ pid=[0-9]+\ ret=-1\ errno=EPERM ]]
  [[ "$out" =~ sys:1000\ pid=[0-9]+\ ret=-1\ errno=ENOSYS ]]
  [[ "$out" == *done* ]]
  # mount reached the monitor: recorded with its syscall and the pid.
  pid=$(sed -n 's/^mount pid=\([0-9]*\) .*/\1/p' <<<"$out")
  run maka violations --format json sc-allow
  echo "$output"
  [ "$status" -eq 0 ]
  jq -e --argjson pid "$pid" '[.[] | select(.type == "syscall")] | length == 1
      and .[0].syscall == "mount" and .[0].pid == $pid and .[0].errno == "EPERM"' <<<"$output"
  maka delete sc-allow
  assert_nothing_left sc-allow
}

@test "restricted: a config.json profile that would allow more than maka's only narrows maka's, and maka boundary says how much it asked for beyond" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'escape io_uring; echo done'
  update_config "$BATS_TEST_TMPDIR/b" '.linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW"}'
  run maka boundary --bundle "$BATS_TEST_TMPDIR/b" --format json
  [ "$status" -eq 0 ]
  jq -e '.syscalls.profile == "config" and .syscalls.narrowed >= 1 and .syscalls.defaultAction != "SCMP_ACT_ALLOW"
         and .seccomp.defaultAction != "SCMP_ACT_ALLOW"' <<<"$output"
  run maka boundary --bundle "$BATS_TEST_TMPDIR/b"
  # (the row wraps at 80 columns: joined again)
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"maka's allowlist narrowed by config.json's"*"asked for more, not given"* ]]
  run maka run --bundle "$BATS_TEST_TMPDIR/b" sc-wide
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" =~ io_uring\ pid=[0-9]+\ ret=-1\ errno=(EPERM|ENOSYS) ]]
  [[ "$output" == *done* ]]
  assert_nothing_left sc-wide
}

@test "restricted: maka's own profile handed back as config.json's (maka boundary --format oci) narrows to itself: the sandbox forks" {
  make_bundle "$BATS_TEST_TMPDIR/g" sh -c 'echo x | cat; sleep 0 & wait'
  (cd "$BATS_TEST_TMPDIR/g" && maka boundary --format oci 2>/dev/null) |
    jq 'del(.linux.uidMappings, .linux.gidMappings)' > "$BATS_TEST_TMPDIR/oci.json"
  mkdir -p "$BATS_TEST_TMPDIR/o"
  mv "$BATS_TEST_TMPDIR/oci.json" "$BATS_TEST_TMPDIR/o/config.json"
  jq -e '[.linux.seccomp.syscalls[] | select(.names == ["clone"] and .action == "SCMP_ACT_ALLOW")] | length == 1' "$BATS_TEST_TMPDIR/o/config.json"
  # Narrowing once dropped "clone without namespace flags": can't fork (EPERM).
  run maka_io run --bundle "$BATS_TEST_TMPDIR/o" sc-own
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "x" ]
  # and a namespace flag is still watched: restricted ends the sandbox.
  update_config "$BATS_TEST_TMPDIR/o" '.process.args = ["unshare", "-n", "true"]'
  run maka_io run --bundle "$BATS_TEST_TMPDIR/o" sc-own2
  echo "$output"
  [ "$status" -eq 137 ]
  [[ "$output" == *SANDBOX_BOUNDARY_VIOLATION* ]]
  assert_nothing_left sc-own
  assert_nothing_left sc-own2
}

# runtime-tools v0.9.0's default seccomp profile (generate/seccomp, as its
# validation programs write it into every config.json on amd64: util.
# GetDefaultGenerator's capabilities, so chroot is allowed; default action
# SCMP_ACT_ERRNO without an errno). It is from 2019 and names no call above
# copy_file_range (326 on x86_64). The numbers below are x86_64's: statx
# 332, openat2 437, membarrier 324 (maka allows it, the profile leaves it
# out, and it is of the profile's era), sysinfo 99.
V090=$MAKA_REPO/tests/integration/fixtures/seccomp-runtime-tools-v0.9.0.json

# libcontainer's init calls statx after loading the filter (the overmount
# check of its procfs handle when it reopens the exec fifo) and, having
# probed it before, does not fall back: ENOSYS ends it as EPERM would
# ("could not get mount id: function not implemented", seen here before
# maka refused such profiles). v0.9.0's profile predates statx but allows
# its older form, newfstatat (and i386's fstatat64), with any arguments:
# statx runs as newfstatat would (specconv/seccomp_era.go), and the
# container starts as published. The calls newer than the profile without
# an older form it allows (openat2) answer ENOSYS, one of its era it
# leaves out (membarrier) its default.
@test "restricted: runtime-tools v0.9.0's seccomp profile as published runs: statx runs (the profile allows newfstatat), openat2 answers ENOSYS, membarrier EPERM" {
  [ "$(uname -m)" = x86_64 ] || skip "syscall numbers are x86_64's"
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'escape sys:332 sys:437 sys:324; echo done'
  update_config "$BATS_TEST_TMPDIR/b" '.linux.seccomp = $p[0]' --slurpfile p "$V090"
  jq -e '[.linux.seccomp.syscalls[].names[] | select(. == "statx")] == []' "$BATS_TEST_TMPDIR/b/config.json"
  run maka_io run --bundle "$BATS_TEST_TMPDIR/b" sc-v090
  echo "$output"
  [ "$status" -eq 0 ]
  # statx(0, NULL, ...) runs: the kernel answers EFAULT.
  [[ "$output" =~ sys:332\ pid=[0-9]+\ ret=-1\ errno=EFAULT ]]
  [[ "$output" =~ sys:437\ pid=[0-9]+\ ret=-1\ errno=ENOSYS ]]
  [[ "$output" =~ sys:324\ pid=[0-9]+\ ret=-1\ errno=EPERM ]]
  [[ "$output" == *done* ]]
  assert_nothing_left sc-v090
}

# Without newfstatat the profile says nothing about the metadata statx
# reads: statx keeps ENOSYS, the init would fail after the container
# exists, and the profile is refused at create, naming the field, before
# anything exists.
@test "restricted: v0.9.0's seccomp profile without newfstatat is refused at create, naming linux.seccomp.defaultAction, nothing left behind" {
  [ "$(uname -m)" = x86_64 ] || skip "syscall numbers are x86_64's"
  make_bundle "$BATS_TEST_TMPDIR/b" true
  update_config "$BATS_TEST_TMPDIR/b" '.linux.seccomp = ($p[0] | .syscalls[].names -= ["newfstatat"])' --slurpfile p "$V090"
  jq -e '[.linux.seccomp.syscalls[].names[] | select(. == "newfstatat" or . == "statx")] == []' "$BATS_TEST_TMPDIR/b/config.json"
  run maka_io create --bundle "$BATS_TEST_TMPDIR/b" sc-v090n
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == "BOUNDARY_REJECTED: "* ]]
  [[ "$output" == *"linux.seccomp.defaultAction: the profile refuses statx (ENOSYS: the profile predates it), which the runtime's init calls after the filter is loaded (allow statx in the profile)"* ]]
  assert_nothing_left sc-v090n
}

# With statx allowed (runtime-tools added it after v0.9.0, in its #744) the
# container runs: the calls newer than the profile (openat2, above statx)
# answer ENOSYS, one of its era it leaves out (membarrier) its default, and
# one it refuses by name its own errno.
@test "restricted: v0.9.0's profile with statx allowed and sysinfo refused by name: statx runs, a refusal by name keeps its errno, openat2 answers ENOSYS" {
  [ "$(uname -m)" = x86_64 ] || skip "syscall numbers are x86_64's"
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'escape sys:332 sys:99 sys:437 sys:324; echo done'
  update_config "$BATS_TEST_TMPDIR/b" '.linux.seccomp = ($p[0]
      | .syscalls[0].names = (.syscalls[0].names - ["sysinfo"] + ["statx"])
      | .syscalls += [{names: ["sysinfo"], action: "SCMP_ACT_ERRNO", errnoRet: 13}])' --slurpfile p "$V090"
  run maka_io run --bundle "$BATS_TEST_TMPDIR/b" sc-v090s
  echo "$output"
  [ "$status" -eq 0 ]
  # statx(0, NULL, ...) runs: the kernel answers EFAULT.
  [[ "$output" =~ sys:332\ pid=[0-9]+\ ret=-1\ errno=EFAULT ]]
  [[ "$output" =~ sys:99\ pid=[0-9]+\ ret=-1\ errno=EACCES ]]
  [[ "$output" =~ sys:437\ pid=[0-9]+\ ret=-1\ errno=ENOSYS ]]
  [[ "$output" =~ sys:324\ pid=[0-9]+\ ret=-1\ errno=EPERM ]]
  [[ "$output" == *done* ]]
  assert_nothing_left sc-v090s
}

@test "baseline, no_new_privs off: a profile refusing getcwd runs (the init's own cwd check passes through the monitor); the user's getcwd gets the profile's errno, foreground and detached, and no violation is recorded" {
  [ "$(uname -m)" = x86_64 ] || skip "syscall numbers are x86_64's"
  # getcwd(NULL, 0): ERANGE where it runs, the profile's errno where not.
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'escape sys:79; echo done'
  update_config "$BATS_TEST_TMPDIR/b" '.process.noNewPrivileges = false
      | .linux.seccomp = {defaultAction: "SCMP_ACT_ALLOW", syscalls: [{names: ["getcwd"], action: "SCMP_ACT_ERRNO", errnoRet: 13}]}'
  run maka --policy "$BATS_FILE_TMPDIR/baseline-deny.json" boundary --bundle "$BATS_TEST_TMPDIR/b"
  echo "$output"
  [ "$status" -eq 0 ]
  grep -F "getcwd through the monitor: the init's own cwd check runs" <<<"$output"
  MAKA_POLICY=$BATS_FILE_TMPDIR/baseline-deny.json run maka_io run --bundle "$BATS_TEST_TMPDIR/b" sc-cwd
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" =~ sys:79\ pid=[0-9]+\ ret=-1\ errno=EACCES ]]
  [[ "$output" == *done* ]]
  assert_nothing_left sc-cwd
  # Detached: the monitor process is told the errno on its command line.
  update_config "$BATS_TEST_TMPDIR/b" 'del(.linux.seccomp.syscalls[0].errnoRet)'
  run_stopped "$BATS_FILE_TMPDIR/baseline-deny.json" sc-cwd-d "$BATS_TEST_TMPDIR/b"
  out=$(cat "$BATS_TEST_TMPDIR/sc-cwd-d.out")
  echo "$out"
  [[ "$out" =~ sys:79\ pid=[0-9]+\ ret=-1\ errno=EPERM ]]
  [[ "$out" == *done* ]]
  run maka violations --format json sc-cwd-d
  echo "$output"
  jq -e '[.[] | select(.type == "syscall")] | length == 0' <<<"$output"
  maka delete sc-cwd-d
  assert_nothing_left sc-cwd-d
  # Refused another way, it is refused at create: the init would die.
  update_config "$BATS_TEST_TMPDIR/b" '.linux.seccomp.syscalls[0].action = "SCMP_ACT_KILL_PROCESS"'
  MAKA_POLICY=$BATS_FILE_TMPDIR/baseline-deny.json run maka_io run --bundle "$BATS_TEST_TMPDIR/b" sc-cwd-k
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"linux.seccomp.syscalls[0].names[0]: the profile refuses getcwd (SCMP_ACT_KILL_PROCESS)"* ]]
  assert_nothing_left sc-cwd-k
}
