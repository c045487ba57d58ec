#!/usr/bin/env bats
# The boundary watched while it runs: every watched syscall class, every
# limit and (with file audit) every write aimed at the read-only root is
# recorded with its syscall and pid in `maka violations`, answered EPERM
# under onViolation deny, and destroys the sandbox under kill (restricted's
# default) with a SANDBOX_BOUNDARY_VIOLATION error from `maka run`. An
# ordinary busybox workload records nothing.

MAKA_POLICY=   # restricted, the default: onViolation kill
load helpers
bats_require_minimum_version 1.5.0

MiB=1048576

setup_file() {
  maka_setup_file
  # The escape attempts (tests/integration/fixtures/escape.c), static.
  install_escape
  # restricted, but violations denied and recorded instead of fatal.
  echo '{"profile": "restricted", "onViolation": "deny"}' > "$BATS_FILE_TMPDIR/deny.json"
  echo '{"profile": "restricted", "onViolation": "deny", "audit": "files"}' > "$BATS_FILE_TMPDIR/audit.json"
  echo '{"profile": "restricted", "audit": "files"}' > "$BATS_FILE_TMPDIR/audit-kill.json"
}

# run_detached POLICY ID BUNDLE: run -d under POLICY ("" for the default),
# the container's output in $BATS_TEST_TMPDIR/ID.out; wait until it stops
# and its monitor has written peak.json.
run_detached() {
  local policy=$1 id=$2 bundle=$3 p=()
  [ -n "$policy" ] && p=(--policy "$policy")
  "$MAKA_BINARY" --root "$MAKA_ROOT" "${p[@]}" run -d --bundle "$bundle" "$id" \
    </dev/null >"$BATS_TEST_TMPDIR/$id.out" 2>&1
  wait_for_monitor "$id" 60
  wait_for_status "$id" stopped 60
}

# wait_for_monitor ID TIMEOUT: wait until the container's monitor exits (its
# container stopped; peak.json is written). It polls /proc only: polling
# `maka state` would start a Go process and jq ten times a second, which
# under emulation takes the CPU from the monitor being measured.
wait_for_monitor() {
  local pid st deadline=$((SECONDS + $2))
  pid=$(cat "$MAKA_ROOT/$1/monitor.pid") || return 1
  while read -r _ _ st _ 2>/dev/null <"/proc/$pid/stat" && [ "$st" != Z ]; do
    [ "$SECONDS" -lt "$deadline" ] || {
      echo "the monitor of $1 still runs after $2 s" >&2
      monitor_diag "$1" "$pid" >&2 || true
      return 1
    }
    sleep 0.1
  done
}

# monitor_diag ID PID: what there is to know about container ID's monitor
# (pid PID) that did not end, for a failed test's output (bats prints it
# with --print-output-on-failure): the monitor's and its threads' state,
# wchan, syscall and kernel stack, its cgroup's (CPU throttling, memory),
# the sandbox's cgroup and `maka state`, the state directory, the journal's
# tail, and monitor.log's (its stderr). Called only once the wait has
# failed, so it changes no outcome; last, it sends the monitor SIGQUIT (Go
# then writes every goroutine's stack to monitor.log and exits; the guard
# then kills the sandbox) and prints monitor.log's tail again.
monitor_diag() {
  local id=$1 pid=$2 dir=$MAKA_ROOT/$1 t cg rec mcg p f
  echo "=== monitor_diag $id: monitor pid $pid, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ -d "/proc/$pid" ]; then
    echo "--- /proc/$pid/status"
    grep -E '^(Name|State|PPid|Threads|VmRSS|SigPnd|ShdPnd|SigBlk|SigCgt|voluntary_ctxt_switches|nonvoluntary_ctxt_switches):' "/proc/$pid/status"
    echo "--- /proc/$pid/cmdline: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
    echo "--- /proc/$pid/cgroup: $(cat "/proc/$pid/cgroup" 2>/dev/null)"
    echo "--- /proc/$pid/stack"
    cat "/proc/$pid/stack" 2>&1
    for t in /proc/"$pid"/task/*; do
      echo "--- thread ${t##*/}: $(cut -d' ' -f2-3 "$t/stat" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cat "$t/syscall" 2>/dev/null)"
      head -n 12 "$t/stack" 2>/dev/null
    done
  else
    echo "--- /proc/$pid is gone"
  fi
  echo "--- maka state $id"
  timeout 20 "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" state "$id" 2>&1
  echo "--- $dir"
  ls -la "$dir" 2>&1
  rec=$(find "$MAKA_STATE_DIR" -path "*/records/$id.json" 2>/dev/null | head -n 1)
  cg=$([ -n "$rec" ] && jq -r '.cgroupPath // empty' "$rec" 2>/dev/null)
  mcg=$(cat "$dir/monitor.cgroup" 2>/dev/null)
  [ -n "$mcg" ] || mcg=$([ -n "$rec" ] && jq -r '.monitorCgroup // empty' "$rec" 2>/dev/null)
  for c in "sandbox:$cg" "monitor:$mcg"; do
    p=${c#*:}
    echo "--- ${c%%:*}'s cgroup: ${p:-(not recorded)}"
    [ -n "$p" ] && [ -d "$p" ] || { [ -z "$p" ] || echo "(gone)"; continue; }
    for f in cgroup.procs cgroup.events cgroup.freeze pids.current memory.current memory.events cpu.stat cpu.max; do
      [ -r "$p/$f" ] && echo "$f: $(tr '\n' ' ' <"$p/$f")"
    done
    # each process there: pid, comm, state, wchan
    while read -r t; do
      [ -n "$t" ] && echo "  $t: $(cut -d' ' -f2-3 "/proc/$t/stat" 2>/dev/null) wchan=$(cat "/proc/$t/wchan" 2>/dev/null)"
    done < <(head -n 20 "$p/cgroup.procs" 2>/dev/null)
  done
  echo "--- journal: $(wc -lc 2>/dev/null <"$dir/violations.jsonl") (lines, bytes); its tail"
  tail -n 5 "$dir/violations.jsonl" 2>&1 | cut -c1-300
  echo "--- monitor.log's tail"
  tail -n 40 "$dir/monitor.log" 2>&1
  if [ -d "/proc/$pid" ]; then
    echo "--- SIGQUIT to $pid: its goroutines (monitor.log)"
    kill -QUIT "$pid" 2>&1
    for _ in $(seq 1 30); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    tail -n 200 "$dir/monitor.log" 2>&1
  fi
  echo "=== end of monitor_diag $id"
}

# violations ID: the container's records as a JSON array.
violations() {
  maka violations --format json "$1"
}

# within_a_second WHAT MS: MS, the time the monitor measured from a
# violation's arrival to the killed sandbox's empty cgroup, was recorded and
# is at most KILL_BOUND_MS. Printed (fd 3) for docs/dev/status.md.
#
# The bound: typically 13–191 ms here, but a host that stalls the emulated
# guest (seen: a 2 s write to cgroup.kill at host load 4.8) can stretch any
# figure, and a timed test must not flake; so the suite fails a kill that
# takes more than 5 s (a hang, not a slow host) and `make bench` measures
# the figure the issue asks about (≤ 1 s) over many rounds.
KILL_BOUND_MS=${MAKA_KILL_BOUND_MS:-5000}
within_a_second() {
  [ -n "$2" ] && [ "$2" != null ] || { echo "$1: no time to empty recorded" >&2; return 1; }
  echo "# $1: empty after $2 ms" >&3
  awk -v ms="$2" -v bound="$KILL_BOUND_MS" 'BEGIN { exit !(ms >= 0 && ms <= bound) }'
}

# emptied_within_a_second WHAT ERR: run's error ERR ends with the time the
# sandbox took to empty, within KILL_BOUND_MS.
emptied_within_a_second() {
  within_a_second "$1" "$(sed -n 's/.* (empty after \([0-9.]*\) ms)$/\1/p' <<<"$2")"
}

# assert_sandbox_gone ID: from outside, while the stopped container's
# cgroup still exists: no process in it (nor the record's violator).
assert_sandbox_gone() {
  local cg
  cg=$(find /sys/fs/cgroup -type d -name "$1")
  [ -n "$cg" ] && [ "$(wc -l <<<"$cg")" -eq 1 ]
  grep -qx 'populated 0' "$cg/cgroup.events"
  [ -z "$(cat "$cg/cgroup.procs")" ]
}

@test "under deny each watched syscall class is refused with EPERM and recorded once with its syscall and pid" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'escape mount unshare clone ptrace bpf module; echo done'
  run_detached "$BATS_FILE_TMPDIR/deny.json" vd-sys "$BATS_TEST_TMPDIR/b"
  out=$(cat "$BATS_TEST_TMPDIR/vd-sys.out")
  echo "$out"
  [ "$(grep -c 'ret=-1 errno=EPERM' <<<"$out")" -eq 6 ]
  [[ "$out" == *done* ]]
  pid=$(sed -n 's/^mount pid=\([0-9]*\) .*/\1/p' <<<"$out")
  [ "$pid" -gt 1 ]   # escape, a child of the sandbox's sh
  run violations vd-sys
  echo "$output"
  [ "$status" -eq 0 ]
  jq -e --argjson pid "$pid" '
      [.[] | .syscall] == ["mount", "unshare", "clone", "ptrace", "bpf", "finit_module"]
      and all(.[]; .type == "syscall" and .action == "deny" and .errno == "EPERM"
                   and .pid == $pid and .comm == "escape" and .hostPid > 0)
      and (.[1].args == ["0x10000000"])
      and .[2].args[0] == "0x20011"
      and .[3].args[0] == "0x10" and .[3].args[1] == "0x1"' <<<"$output"   # CLONE_NEWNS|SIGCHLD; PTRACE_ATTACH of pid 1, its parent
  run maka violations vd-sys
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == TIME*TYPE*ACTION*PID*COMM*WHAT ]]
  # The table fits 80 columns: WHAT continues on the next line, under its
  # column, where it would pass them.
  [ -z "$(awk 'length > 80' <<<"$output")" ]
  [[ "$(grep -F 'unshare(0x10000000)' <<<"$output")" == *"syscall  deny    $pid  "*"escape  unshare(0x10000000)"* ]]
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"escape unshare(0x10000000) = EPERM "* ]]
  [ "$(grep -c '^[0-9]' <<<"$output")" -eq 6 ]
  # state keeps runc's fields, plus the user namespace's mappings
  # (restricted: every sandbox has one).
  run maka state vd-sys
  jq -e '(keys - ["annotations"]) == ["bundle", "created", "gidMappings", "id", "ociVersion", "owner", "pid", "rootfs", "status", "uidMappings"]' <<<"$output"
  maka delete vd-sys
  assert_nothing_left vd-sys
  run pgrep -f -- "monitor .* vd-sys\$"
  [ "$status" -eq 1 ]   # the monitor went with the container
  # The records outlive the container, kept in the contract store.
  run violations vd-sys
  [ "$status" -eq 0 ]
  jq -e '[.[] | .syscall] == ["mount", "unshare", "clone", "ptrace", "bpf", "finit_module"]' <<<"$output"
}

# ia32_abi: whether this kernel runs 32-bit calls at all (int $0x80 from
# 64-bit code): escape's ia32-getpid, run here in the guest outside any
# sandbox (the rootfs copy install_escape made; static), answers its own pid
# where it does. Without CONFIG_IA32_EMULATION, or with ia32_emulation=0,
# int $0x80 gives SIGSEGV or ENOSYS, and the test of that ABI is skipped;
# $ia32_probe holds escape's line for the reason.
ia32_abi() {
  ia32_probe=$("$MAKA_ROOTFS/usr/bin/escape" ia32-getpid 2>&1) || true
  [[ "$ia32_probe" =~ ^ia32-getpid\ pid=([0-9]+)\ ret=([0-9]+)\ errno=0$ ]] &&
    [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]
}

@test "the 32-bit ABI meets the same filter: unshare through int 0x80 is refused with EPERM and recorded, the sandbox has no new user namespace (x86_64 with IA32 emulation)" {
  [ "$(uname -m)" = x86_64 ] || skip "x86_64's compatibility ABIs"
  ia32_abi || skip "this kernel has no 32-bit ABI (IA32_EMULATION off or ia32_emulation=0): escape ia32-getpid said '$ia32_probe'"
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'readlink /proc/self/ns/user; escape ia32-unshare; readlink /proc/self/ns/user; echo done'
  run_detached "$BATS_FILE_TMPDIR/deny.json" vd-ia32 "$BATS_TEST_TMPDIR/b"
  out=$(cat "$BATS_TEST_TMPDIR/vd-ia32.out")
  echo "$out"
  [[ "$out" == *done* ]]
  grep -q '^ia32-unshare pid=[0-9]* ret=-1 errno=EPERM' <<<"$out"
  # the same user namespace before and after
  [ "$(grep -c '^user:' <<<"$out")" -eq 2 ]
  [ "$(grep '^user:' <<<"$out" | sort -u | wc -l)" -eq 1 ]
  run violations vd-ia32
  echo "$output"
  [ "$status" -eq 0 ]
  # Recorded once, denied; a call of another ABI is named by its number
  # and architecture, never by the native table's name for it.
  jq -e 'length == 1 and all(.[]; .type == "syscall" and .action == "deny" and .errno == "EPERM" and .comm == "escape")
      and .[0].syscall == "syscall_310/arch_0x40000003"' <<<"$output"
  maka delete vd-ia32
  assert_nothing_left vd-ia32
}

# (x32 needs no probe: the filter answers an x32 call before the kernel
# looks its number up, so a kernel without CONFIG_X86_X32_ABI, which would
# answer ENOSYS, gives the same EPERM here.)
@test "the x32 ABI meets the same filter: unshare with the x32 bit is refused with EPERM and recorded, the sandbox has no new user namespace (x86_64)" {
  [ "$(uname -m)" = x86_64 ] || skip "x86_64's compatibility ABIs"
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'readlink /proc/self/ns/user; escape x32-unshare; readlink /proc/self/ns/user; echo done'
  run_detached "$BATS_FILE_TMPDIR/deny.json" vd-x32 "$BATS_TEST_TMPDIR/b"
  out=$(cat "$BATS_TEST_TMPDIR/vd-x32.out")
  echo "$out"
  [[ "$out" == *done* ]]
  grep -q '^x32-unshare pid=[0-9]* ret=-1 errno=EPERM' <<<"$out"
  [ "$(grep -c '^user:' <<<"$out")" -eq 2 ]
  [ "$(grep '^user:' <<<"$out" | sort -u | wc -l)" -eq 1 ]
  run violations vd-x32
  echo "$output"
  [ "$status" -eq 0 ]
  jq -e 'length == 1 and all(.[]; .type == "syscall" and .action == "deny" and .errno == "EPERM" and .comm == "escape")' <<<"$output"
  maka delete vd-x32
  assert_nothing_left vd-x32
}

@test "a foreground run under deny says what was denied when it exits; its records outlive it until pruned" {
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'escape unshare mount unshare; echo done'
  run --separate-stderr maka --policy "$BATS_FILE_TMPDIR/deny.json" run --bundle "$BATS_TEST_TMPDIR/b" vd-fg
  echo "$output / $stderr"
  [ "$status" -eq 0 ]
  [[ "$output" == *done* ]]
  [ "$(tail -1 <<<"$stderr")" = "maka: run vd-fg: 3 call(s) denied: unshare x2, mount x1 (maka violations vd-fg)" ]
  assert_nothing_left vd-fg
  run violations vd-fg
  [ "$status" -eq 0 ]
  # The second unshare folds into the first: one record, repeat 2.
  jq -e '[.[] | .syscall] == ["unshare", "mount"] and .[0].repeat == 2 and .[0].last >= .[0].time' <<<"$output"
  # Pruning: kept a week by default; --older-than 0s removes it now.
  run maka violations --prune
  [ "$status" -eq 0 ]
  violations vd-fg
  run maka violations --prune --older-than 0s
  [ "$status" -eq 0 ]
  [[ "$output" == *"pruned "[1-9]* ]]
  run maka violations vd-fg
  [ "$status" -ne 0 ]
  [[ "$output" == *"vd-fg"*"does not exist"* ]]
}

@test "under kill (restricted) each watched syscall destroys the sandbox and run fails with SANDBOX_BOUNDARY_VIOLATION" {
  # One sandbox per class, run side by side (each one ends at its first violation).
  local attempts="mount:mount unshare:unshare clone:clone ptrace:ptrace bpf:bpf module:finit_module" a pids=()
  for a in $attempts; do
    make_bundle "$BATS_TEST_TMPDIR/${a%%:*}" sh -c "echo before; escape ${a%%:*}; echo after"
    "$MAKA_BINARY" --root "$MAKA_ROOT" run --bundle "$BATS_TEST_TMPDIR/${a%%:*}" "vk-${a%%:*}" \
      </dev/null >"$BATS_TEST_TMPDIR/${a%%:*}.out" 2>"$BATS_TEST_TMPDIR/${a%%:*}.err" &
    pids+=($!)
  done
  local i=0 rc
  for a in $attempts; do
    rc=0; wait "${pids[$i]}" || rc=$?; i=$((i + 1))
    echo "$a: $rc: $(cat "$BATS_TEST_TMPDIR/${a%%:*}.out") / $(cat "$BATS_TEST_TMPDIR/${a%%:*}.err")"
    [ "$rc" -eq 137 ]
    [ "$(cat "$BATS_TEST_TMPDIR/${a%%:*}.out")" = before ]
    [[ "$(cat "$BATS_TEST_TMPDIR/${a%%:*}.err")" == "SANDBOX_BOUNDARY_VIOLATION: container vk-${a%%:*} was killed: syscall ${a#*:}("*") by pid "[0-9]*" (escape), sandbox killed (empty after "*" ms)" ]]
    emptied_within_a_second "vk-${a%%:*}" "$(cat "$BATS_TEST_TMPDIR/${a%%:*}.err")"
    assert_nothing_left "vk-${a%%:*}"
  done
}

@test "kill with --log-format json: code, details and the time to empty; the detached sandbox is gone within a second (measured)" {
  # A second process (sleep 1001) in the background when the kill comes.
  make_bundle "$BATS_TEST_TMPDIR/k" sh -c 'sleep 1001 >/dev/null & escape unshare; sleep 100'
  run -137 --separate-stderr maka --log-format json run --bundle "$BATS_TEST_TMPDIR/k" vk-json
  line=$(grep '"level":"error"' <<<"$stderr" | tail -n 1)
  echo "$line"
  jq -e '.code == "SANDBOX_BOUNDARY_VIOLATION" and .details.syscall == "unshare" and .details.action == "kill"
      and .details.comm == "escape" and (.details.pid > 1) and (.msg | startswith("SANDBOX_BOUNDARY_VIOLATION: "))
      and (.msg | endswith(" ms)"))' <<<"$line"
  within_a_second vk-json "$(jq .emptyAfterMs <<<"$line")"
  # Detached: the sandbox (sh, both sleeps and all) is destroyed, the record
  # stays until delete; peak.json says how fast it emptied.
  run_detached "" vk-det "$BATS_TEST_TMPDIR/k"
  run violations vk-det
  echo "$output"
  jq -e 'length == 1 and .[0].syscall == "unshare" and .[0].action == "kill"' <<<"$output"
  violator=$(jq '.[0].hostPid' <<<"$output")
  cat "$MAKA_ROOT/vk-det/peak.json"
  jq -e --argjson v "$output" '.killed.violation == $v[0].time' "$MAKA_ROOT/vk-det/peak.json"
  within_a_second vk-det "$(jq .killed.emptyAfterMs "$MAKA_ROOT/vk-det/peak.json")"
  # From outside, before delete: nothing left in its cgroup, no violator, no sleep.
  assert_sandbox_gone vk-det
  [ ! -e "/proc/$violator" ]
  run pgrep -fx 'sleep 1001'
  [ "$status" -eq 1 ]
  maka delete vk-det
  assert_nothing_left vk-det
}

@test "limits under deny: a fork bomb and a memory hog are recorded as limit events; peak memory and pids, each tmpfs's peak and use when it stops" {
  # /tmp: 4 MiB held for 3 tmpfs samples' time, then all but 256 KiB removed.
  make_bundle "$BATS_TEST_TMPDIR/b" sh -c 'head -c 3000000 /dev/zero > /maka/work/blob; escape forkbomb memhog
    head -c 4194304 /dev/zero > /tmp/big; sleep 3; head -c 262144 /tmp/big > /tmp/rest; rm /tmp/big; echo done'
  update_config "$BATS_TEST_TMPDIR/b" '.linux.resources += {memory: {limit: (32 * $mib), swap: (32 * $mib)}, pids: {limit: 32}}' --argjson mib "$MiB"
  run_detached "$BATS_FILE_TMPDIR/deny.json" vd-lim "$BATS_TEST_TMPDIR/b"
  out=$(cat "$BATS_TEST_TMPDIR/vd-lim.out")
  echo "$out"
  [[ "$out" =~ forkbomb\ pid=[0-9]+\ forks=[0-9]+\ errno=EAGAIN ]]
  [[ "$out" =~ memhog\ pid=[0-9]+\ child=[0-9]+\ signal=9 ]]
  [[ "$out" == *done* ]]
  run violations vd-lim
  echo "$output"
  jq -e --argjson mib "$MiB" '
      ([.[] | select(.type == "limit" and .kind == "pids.max" and .count >= 1 and .limit == 32 and .action == "audit")] | length) >= 1
      and ([.[] | select(.type == "limit" and .kind == "oom_kill" and .count >= 1 and .limit == 32 * $mib)] | length) >= 1
      and all(.[]; .type == "limit")' <<<"$output"
  cat "$MAKA_ROOT/vd-lim/peak.json"
  jq -e --argjson mib "$MiB" '.pids == 32 and .memory > 16 * $mib and .memory <= 32 * $mib
      and ([.tmpfs[].path] | sort) == ["/dev", "/dev/shm", "/maka/work", "/run", "/tmp"]
      and all(.tmpfs[]; .size == (if .path == "/dev/shm" or .path == "/dev" then 64 else 128 end) * $mib and .samples >= 2 and .peak >= .used)
      and (.tmpfs[] | select(.path == "/maka/work") | .used >= 3000000 and .used < 3000000 + 65536 and .peak == .used)
      and (.tmpfs[] | select(.path == "/tmp") | .peak >= 4194304 and .peak < 5 * $mib
                                               and .used >= 262144 and .used < 262144 + 65536 and .samples >= 4)
      and (.tmpfs[] | select(.path == "/run") | .peak < $mib)
      and (has("killed") | not)' "$MAKA_ROOT/vd-lim/peak.json"
  maka delete vd-lim
}

@test "limits under kill: a fork bomb destroys the sandbox with SANDBOX_BOUNDARY_VIOLATION" {
  # A limit is seen once the kernel has counted it: the sandbox goes
  # moments later (not before the next instruction, as for a syscall).
  make_bundle "$BATS_TEST_TMPDIR/k" sh -c 'escape forkbomb; sleep 5; echo after'
  update_config "$BATS_TEST_TMPDIR/k" '.linux.resources += {pids: {limit: 32}}'
  run -137 --separate-stderr maka run --bundle "$BATS_TEST_TMPDIR/k" vk-fork
  echo "$output / $stderr"
  [[ "$stderr" == "SANDBOX_BOUNDARY_VIOLATION: container vk-fork was killed: limit pids.max"*"(limit 32), sandbox killed (empty after "*" ms)" ]]
  emptied_within_a_second vk-fork "$stderr"
  [[ "$output" != *after* ]]
  assert_nothing_left vk-fork
  make_bundle "$BATS_TEST_TMPDIR/m" sh -c 'escape memhog; sleep 5; echo after'
  update_config "$BATS_TEST_TMPDIR/m" '.linux.resources += {memory: {limit: (32 * $mib), swap: (32 * $mib)}}' --argjson mib "$MiB"
  run -137 --separate-stderr maka run --bundle "$BATS_TEST_TMPDIR/m" vk-oom
  echo "$output / $stderr"
  [[ "$stderr" == "SANDBOX_BOUNDARY_VIOLATION: container vk-oom was killed: limit oom_kill"*", sandbox killed (empty after "*" ms)" ]]
  emptied_within_a_second vk-oom "$stderr"
  [[ "$output" != *after* ]]
  assert_nothing_left vk-oom
}

@test "the timeout (org.maka.timeout) destroys the sandbox: run fails with SANDBOX_TIMEOUT, a detached one records it" {
  make_bundle "$BATS_TEST_TMPDIR/t" sh -c 'sleep 1002 >/dev/null & exec sleep 100'
  update_config "$BATS_TEST_TMPDIR/t" '.annotations = {"org.maka.timeout": "2"}'
  SECONDS=0
  run -137 --separate-stderr maka run --bundle "$BATS_TEST_TMPDIR/t" vt
  [[ "$stderr" == "SANDBOX_TIMEOUT: container vt ran longer than its timeout of 2 s and was killed (empty after "*" ms)" ]]
  emptied_within_a_second vt "$stderr"
  [ "$SECONDS" -lt 60 ]
  assert_nothing_left vt
  # Under deny too: the timeout is never just recorded. (8 s: the lifetime
  # counts from create, and `run -d` itself must end before it does: with
  # 2 s it once did not, in an emulated guest. Suspected, not measured: the
  # monitor's start, held to half a CPU in its own cgroup.)
  update_config "$BATS_TEST_TMPDIR/t" '.annotations = {"org.maka.timeout": "8"}'
  run_detached "$BATS_FILE_TMPDIR/deny.json" vt-det "$BATS_TEST_TMPDIR/t"
  run violations vt-det
  jq -e 'length == 1 and .[0].type == "limit" and .[0].kind == "timeout" and .[0].limit == 8 and .[0].action == "kill"' <<<"$output"
  jq -e --argjson v "$output" '.killed.violation == $v[0].time' "$MAKA_ROOT/vt-det/peak.json"
  within_a_second vt-det "$(jq .killed.emptyAfterMs "$MAKA_ROOT/vt-det/peak.json")"
  assert_sandbox_gone vt-det
  run pgrep -fx 'sleep 1002'
  [ "$status" -eq 1 ]
  maka delete vt-det
  assert_nothing_left vt-det
}

@test "file audit: writes aimed at the read-only root are recorded with their path and pid, the kernel answers EROFS, tmpfs writes are not" {
  make_bundle "$BATS_TEST_TMPDIR/a" sh -c 'escape write:/etc/passwd write:/newfile write:/tmp/ok; cd /etc && escape write:relative; echo x > /tmp/y; cat /etc/passwd >/dev/null; echo done'
  run_detached "$BATS_FILE_TMPDIR/audit.json" va "$BATS_TEST_TMPDIR/a"
  out=$(cat "$BATS_TEST_TMPDIR/va.out")
  echo "$out"
  [[ "$out" == *"write:/etc/passwd pid="*" ret=-1 errno=EROFS"* ]]
  [[ "$out" == *"write:/newfile pid="*" ret=-1 errno=EROFS"* ]]
  [[ "$out" == *"write:/tmp/ok pid="*" errno=0"* ]]
  [[ "$out" == *done* ]]
  pid=$(sed -n 's|^write:/etc/passwd pid=\([0-9]*\) .*|\1|p' <<<"$out")
  run violations va
  echo "$output"
  jq -e --argjson pid "$pid" '
      [.[] | .path] == ["/etc/passwd", "/newfile", "/etc/relative"]
      and all(.[]; .type == "file" and .action == "audit" and .comm == "escape" and .flags == "O_WRONLY|O_CREAT")
      and .[0].pid == $pid and .[1].pid == $pid' <<<"$output"
  maka delete va
  # Under kill, an audited write is a violation like any other.
  make_bundle "$BATS_TEST_TMPDIR/ak" sh -c 'echo before; touch /etc/x; echo after'
  run -137 --separate-stderr maka --policy "$BATS_FILE_TMPDIR/audit-kill.json" run --bundle "$BATS_TEST_TMPDIR/ak" vak
  [ "$output" = before ]
  [[ "$stderr" == "SANDBOX_BOUNDARY_VIOLATION: container vak was killed: "*" of /etc/x (O_"*") by pid "*" (touch)"*", sandbox killed (empty after "*" ms)" ]]
  emptied_within_a_second vak "$stderr"
  assert_nothing_left vak
}

@test "a well-behaved busybox workload records nothing, under kill and with file audit on" {
  script='for i in $(seq 1 10); do echo $i > /tmp/f$i; cat /tmp/f$i >/dev/null; ls -l / >/dev/null; done
    (sleep 0.1 &) ; wait; ps >/dev/null; grep -c root /etc/passwd; wc -l /proc/self/status >/dev/null
    mkdir -p /run/d && cp /etc/passwd /run/d/p && sort /run/d/p | head -n 1 >/dev/null; echo ok'
  make_bundle "$BATS_TEST_TMPDIR/w" sh -c "$script"
  for policy in "" "$BATS_FILE_TMPDIR/audit-kill.json"; do
    run_detached "$policy" vw "$BATS_TEST_TMPDIR/w"
    [[ "$(cat "$BATS_TEST_TMPDIR/vw.out")" == *ok* ]]
    run violations vw
    [ "$output" = "[]" ]
    maka delete vw
  done
}

# flood SECONDS [RECORDS BYTES RATE BURST]: under deny, three processes
# loop on unshare (identical records: they fold) and a fourth with a new
# process name each time (no two alike: the rate limit and the cap drop
# them) for SECONDS, the journal bounded by the given limits (default:
# maka's own, 4096 records, 1 MiB, 100/s after 1000). The journal stays
# within its caps, every attempt is either in it (folded: its repeats) or
# counted as suppressed, `maka violations` says so (JSON and table), and
# the copy kept at delete is as bounded (issue 24: a 4-process flood left
# 26,432 unfolded records, 4.6 MB, twice).
flood() {
  local secs=$1 records=${2:-4096} bytes=${3:-$MiB} rate=${4:-100} burst=${5:-1000} id=vflood
  make_bundle "$BATS_TEST_TMPDIR/f" sh -c "for i in 1 2 3; do escape flood:$secs & done; escape flood-names:$secs & wait; echo done"
  export MAKA_JOURNAL_LIMITS="records=$records,bytes=$bytes,rate=$rate,burst=$burst"
  run_detached "$BATS_FILE_TMPDIR/deny.json" "$id" "$BATS_TEST_TMPDIR/f"
  out=$(cat "$BATS_TEST_TMPDIR/$id.out")
  echo "$out"
  [[ "$out" == *done* ]]
  [ "$(grep -c '^flood pid=' <<<"$out")" -eq 4 ]
  local attempts refused named size lines
  attempts=$(sed -n 's/^flood .* n=\([0-9]*\) .*/\1/p' <<<"$out" | awk '{ s += $1 } END { print s }')
  refused=$(sed -n 's/^flood .* eperm=\([0-9]*\)$/\1/p' <<<"$out" | awk '{ s += $1 } END { print s }')
  named=$(sed -n 's/^flood .* names=1 n=\([0-9]*\) .*/\1/p' <<<"$out")
  size=$(stat -c %s "$MAKA_ROOT/$id/violations.jsonl")
  lines=$(wc -l <"$MAKA_ROOT/$id/violations.jsonl")
  echo "# flood ${secs}s: $attempts attempts ($named renamed); journal: $lines lines, $size bytes ($MAKA_JOURNAL_LIMITS)" >&3
  [ "$refused" -eq "$attempts" ]   # deny: every one refused, none slipped through
  [ "$size" -le "$bytes" ]
  [ "$lines" -le "$records" ]
  run violations "$id"
  [ "$status" -eq 0 ]
  # The three named escape fold into one record with a count; every
  # attempt is in a record's count or in the suppressed count.
  jq -e --argjson n "$attempts" '
      ([.[] | select(.comm == "escape" and .syscall == "unshare")] | length == 1 and .[0].repeat > 3 and .[0].last > .[0].time)
      and ([.[] | select(.type == "syscall") | (.repeat // 1)] | add) + ([.[] | select(.type == "suppressed") | .count] | add // 0) == $n' <<<"$output"
  # More renamed attempts than the burst and the rate allow: some were
  # suppressed, and said so.
  if [ "$named" -gt $(( burst + rate * secs * 2 )) ]; then
    jq -e '[.[] | select(.type == "suppressed")] | length == 1 and .[0].count > 0 and (.[0].detail | test("rate limit"))' <<<"$output"
    run maka violations "$id"
    [ "$status" -eq 0 ]
    grep -E '^[0-9T:.Z-]+ +suppressed +drop +- +[0-9]+ record' <<<"$output"
  fi
  run maka violations "$id"
  [ "$status" -eq 0 ]
  # (WHAT continues on the next line past 80 columns)
  tr -s ' \n' ' ' <<<"$output" | grep -E 'escape unshare\(0x10000000\) = EPERM x[0-9]+ \(last '
  maka delete "$id"
  assert_nothing_left "$id"
  # The kept copy: as bounded, and the same count.
  local kept
  # (the store is <state-dir>/<key of the root>/history/ID/<created>/)
  kept=$(find "$MAKA_STATE_DIR" -path "*/history/$id/*" -name violations.jsonl | sort | tail -n 1)
  [ -n "$kept" ]
  [ "$(stat -c %s "$kept")" -le "$bytes" ]
  run violations "$id"
  [ "$status" -eq 0 ]
  jq -e --argjson n "$attempts" '([.[] | select(.type == "syscall") | (.repeat // 1)] | add) + ([.[] | select(.type == "suppressed") | .count] | add // 0) == $n' <<<"$output"
  rm -rf "$(dirname "$(dirname "$kept")")"
  unset MAKA_JOURNAL_LIMITS
}

@test "under deny, a 15 s unshare flood from four processes leaves a bounded, folded journal; suppressed records are counted; the kept copy is bounded" {
  # Small limits (MAKA_JOURNAL_LIMITS): an emulated guest floods slowly.
  flood 15 60 16384 2 10
}

# bats test_tags=soak
@test "soak: a 60 s unshare flood under deny, maka's own limits, leaves a journal under 1 MiB" {
  flood 60
}

@test "maka events streams violations as they happen, next to the stats" {
  make_bundle "$BATS_TEST_TMPDIR/e" sh -c 'sleep 2; escape bpf; sleep 100'
  maka_io --policy "$BATS_FILE_TMPDIR/deny.json" create --bundle "$BATS_TEST_TMPDIR/e" ve
  "$MAKA_BINARY" --root "$MAKA_ROOT" events --interval 60s ve </dev/null >"$BATS_TEST_TMPDIR/ev" 2>&1 &
  epid=$!
  maka start ve
  for _ in $(seq 1 100); do
    grep -q '"type":"violation"' "$BATS_TEST_TMPDIR/ev" && break
    sleep 0.2
  done
  kill "$epid"; wait "$epid" || true
  cat "$BATS_TEST_TMPDIR/ev"
  grep '"type":"violation"' "$BATS_TEST_TMPDIR/ev" | jq -e '.id == "ve" and .data.syscall == "bpf" and .data.errno == "EPERM"'
  [ "$(head -n 1 "$BATS_TEST_TMPDIR/ev" | jq -r .type)" = stats ]
  maka delete --force ve
  assert_nothing_left ve
}

# kill_monitor ID: SIGKILL the sandbox's monitor and wait until it is gone.
kill_monitor() {
  local mon
  mon=$(cat "$MAKA_ROOT/$1/monitor.pid")
  [ -n "$(cat "$MAKA_ROOT/$1/monitor.start")" ]
  kill -KILL "$mon"
  while [ -e "/proc/$mon" ] && [ "$(awk '{ print $3 }' "/proc/$mon/stat" 2>/dev/null)" != Z ]; do sleep 0.1; done
}

# wait_empty ID SECONDS: wait until the sandbox's cgroup has no process,
# reading the cgroup only (no maka command).
wait_empty() {
  local cg deadline=$((SECONDS + $2))
  cg=$(find /sys/fs/cgroup -type d -name "$1")
  until grep -qx 'populated 0' "$cg/cgroup.events"; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "$1 still has processes $2 s after its monitor died" >&2; return 1; }
    sleep 0.1
  done
}

# guard_of MON: the pid of monitor MON's guard (its one child), once it
# runs: the monitor starts it right after it answers the create.
guard_of() {
  local i g
  for i in $(seq 1 100); do
    g=$(pgrep -P "$1") && { echo "$g"; return 0; }
    sleep 0.1
  done
  return 1
}

@test "fail closed: a detached sandbox dies with its monitor (SIGKILL), without any maka command; exec is refused, state says stopped, the record says why" {
  make_bundle "$BATS_TEST_TMPDIR/m" sh -c 'sleep 1000'
  maka_io --policy "$BATS_FILE_TMPDIR/deny.json" run -d --bundle "$BATS_TEST_TMPDIR/m" vguard
  local mon guard
  mon=$(cat "$MAKA_ROOT/vguard/monitor.pid")
  guard=$(guard_of "$mon")
  [ -n "$guard" ]
  # The monitor and its guard run in a cgroup of maka's own with limits of
  # their own, never in the caller's (issue 24 item 4).
  local moncg
  moncg=$(cat "$MAKA_ROOT/vguard/monitor.cgroup")
  [[ "$moncg" == /sys/fs/cgroup/maka.monitors/vguard-* ]]
  [ "/sys/fs/cgroup$(cut -d: -f3 "/proc/$mon/cgroup")" = "$moncg" ]
  [ "/sys/fs/cgroup$(cut -d: -f3 "/proc/$guard/cgroup")" = "$moncg" ]
  [ "$(cat "$moncg/memory.max")" = 67108864 ]
  [ "$(cat "$moncg/pids.max")" = 64 ]
  [ "$(cat "$moncg/cpu.max")" = "50000 100000" ]
  kill_monitor vguard
  wait_empty vguard 30
  assert_sandbox_gone vguard
  [ ! -e "/proc/$guard" ] || [ "$(awk '{ print $3 }' "/proc/$guard/stat")" = Z ]
  run --separate-stderr maka exec vguard echo ran
  echo "$output / $stderr"
  [ "$status" -ne 0 ]
  [[ "$output" != *ran* ]]
  run maka state vguard
  jq -e '.status == "stopped"' <<<"$output"
  run violations vguard
  echo "$output"
  jq -e '.[-1].type == "limit" and .[-1].kind == "monitor_lost" and .[-1].action == "kill"' <<<"$output"
  maka delete vguard
  assert_nothing_left vguard
  [ ! -e "$moncg" ]
}

@test "fail closed: with its guard killed too, the next command that meets the sandbox kills it: exec refused, cgroup empty, state stopped; recover does the same" {
  make_bundle "$BATS_TEST_TMPDIR/m" sh -c 'sleep 1000'
  local id mon cg
  for id in vmon vmon2; do
    maka_io --policy "$BATS_FILE_TMPDIR/deny.json" run -d --bundle "$BATS_TEST_TMPDIR/m" "$id"
    mon=$(cat "$MAKA_ROOT/$id/monitor.pid")
    local guard
    guard=$(guard_of "$mon")
    [ -n "$guard" ]
    kill -KILL "$guard"   # the guard first: it cannot act
    kill_monitor "$id"
  done
  # The sandbox still runs: nothing but a maka command can see it.
  cg=$(find /sys/fs/cgroup -type d -name vmon)
  [ -n "$(cat "$cg/cgroup.procs")" ]
  run --separate-stderr maka exec vmon echo ran
  echo "$output / $stderr"
  [ "$status" -ne 0 ]
  [[ "$output" != *ran* ]]
  [[ "$stderr" == *"container vmon: its monitor is gone"*"killed (fail closed)"* ]]
  assert_sandbox_gone vmon
  run maka state vmon
  [ "$status" -eq 0 ]
  jq -e '.status == "stopped"' <<<"$output"
  run violations vmon
  echo "$output"
  jq -e '.[-1].type == "limit" and .[-1].kind == "monitor_lost" and .[-1].action == "kill"' <<<"$output"
  maka delete vmon
  assert_nothing_left vmon
  # recover: the same check, for every sandbox.
  cg=$(find /sys/fs/cgroup -type d -name vmon2)
  [ -n "$(cat "$cg/cgroup.procs")" ]
  run maka recover --format json
  echo "$output"
  jq -e '.[] | select(.id == "vmon2") | .result == "recovered" and (.reason | test("monitor is gone"))' <<<"$output"
  assert_sandbox_gone vmon2
  run maka state vmon2
  jq -e '.status == "stopped"' <<<"$output"
  maka delete vmon2
  assert_nothing_left vmon2
}

# no_raw_controls TEXT: TEXT holds no control byte (but newline and tab),
# no DEL and no U+202E (a bidi override) that a terminal would act on.
no_raw_controls() {
  ! LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]|\xe2\x80\xae' <<<"$1"
}

# table_column NAME [NEXT]: the cells of column NAME (up to column NEXT) in
# the table on stdin, spaces removed, joined.
table_column() {
  awk -v name="$1" -v next_="${2:-}" '
    NR == 1 { s = index($0, name); e = next_ == "" ? 0 : index($0, next_); next }
    { c = e ? substr($0, s, e - s) : substr($0, s); gsub(/ /, "", c); printf "%s", c }'
}

@test "a process named with escape sequences: violations, its JSON and run's error show the name escaped, never a raw ESC" {
  # comm (15 bytes at most) is the executable's name: an OSC that retitles
  # the terminal, BEL, a CSI that clears it, a bidi override.
  local name=$'\e]0;pwn\a\e[2J\u202e'
  install -m 755 "$MAKA_ROOTFS/usr/bin/escape" "$MAKA_ROOTFS/usr/bin/$name"
  make_bundle "$BATS_TEST_TMPDIR/b"
  update_config "$BATS_TEST_TMPDIR/b" '.process.args = [$n, "unshare"]' --arg n "/usr/bin/$name"
  run_detached "$BATS_FILE_TMPDIR/deny.json" vd-esc "$BATS_TEST_TMPDIR/b"
  run maka violations vd-esc
  echo "$output" | od -c | head -20
  [ "$status" -eq 0 ]
  # (The table wraps long cells under their column: join the pieces.)
  [ "$(table_column COMM WHAT <<<"$output")" = '\x1b]0;pwn\x07\x1b[2J\u{202e}' ]
  [ "$(table_column WHAT <<<"$output")" = 'unshare(0x10000000)=EPERM' ]
  no_raw_controls "$output"
  # JSON stays JSON: the name decodes exactly, escaped as \u in the text.
  run maka violations --format json vd-esc
  [ "$status" -eq 0 ]
  jq -e --arg n "$name" '.[0].comm == $n' <<<"$output"
  no_raw_controls "$output"
  maka delete vd-esc
  # Under kill, run's SANDBOX_BOUNDARY_VIOLATION error names it escaped.
  run "$MAKA_BINARY" --root "$MAKA_ROOT" run --bundle "$BATS_TEST_TMPDIR/b" vk-esc </dev/null
  rm -f "$MAKA_ROOTFS/usr/bin/$name"
  echo "$output" | od -c | head -20
  [ "$status" -eq 137 ]
  [[ "$output" == "SANDBOX_BOUNDARY_VIOLATION: container vk-esc was killed: syscall unshare(0x10000000) by pid "[0-9]*' (\x1b]0;pwn\x07\x1b[2J\u{202e}), sandbox killed'* ]]
  no_raw_controls "$output"
  assert_nothing_left vk-esc
}
