#!/usr/bin/env bats
# The Go API (libmaka/sandbox): its tests that launch real sandboxes
# (guest_test.go, built by `make fixtures` into sandbox.test) and the
# example program, run here in the guest.

MAKA_POLICY=   # no --policy: the built-in default, restricted
load helpers
bats_require_minimum_version 1.5.0

@test "Go API: launch, bounded commands (output cap, deadlines, queue), Wait for the exit status, detached children killed, violations typed, relaunch under today's policy, nothing left" {
  run env MAKA_GUEST_TESTS=1 MAKA_ROOTFS="$MAKA_ROOTFS" MAKA_BINARY="$MAKA_BINARY" "$MAKA_FIXTURES/sandbox.test" -test.v -test.run Guest -test.timeout 600s
  echo "$output"
  [ "$status" -eq 0 ]
  # every guest test ran: none skipped, none missing
  [ "$(grep -c '^--- PASS: TestGuest' <<<"$output")" -eq 10 ]
  ! grep -q '^--- SKIP' <<<"$output"
}

@test "examples/toolsandbox runs a command in a sandbox and removes it" {
  # Its defaults are /run/maka and /var/lib/maka: the guest's are throw-away.
  run "$MAKA_FIXTURES/toolsandbox" "$MAKA_ROOTFS"
  echo "$output"
  [ "$status" -eq 0 ]
  [ "$output" = "Linux
exit 0: done" ]
  # nothing of tool-1 is left: no state, no record, no scaffold, no cgroup
  # (the guest's /var/lib/maka also holds what earlier files kept)
  MAKA_ROOT=/run/maka MAKA_STATE_DIR=/var/lib/maka assert_nothing_left tool-1
  # What is kept of it (its peak) outlives it until pruned.
  [ -n "$(find /var/lib/maka -path '*/history/tool-1/*' -name peak.json)" ]
  run "$MAKA_BINARY" --root /run/maka --state-dir /var/lib/maka violations --prune --older-than 0s
  [ "$status" -eq 0 ]
  run find /var/lib/maka -path '*/history/tool-1*'
  echo "kept: $output"
  [ -z "$output" ]
}

@test "maka exec --timeout/--output-limit: bounded commands from the CLI (cwd, children killed, cap, maximum, deadline kills the sandbox)" {
  make_bundle "$BATS_TEST_TMPDIR/b" /bin/sh -c 'while :; do sleep 3600 & wait; done'
  # restricted, with a longest command deadline of 2 minutes (default 3)
  echo '{"profile": "restricted", "maxCommandTimeout": 120}' > "$BATS_TEST_TMPDIR/policy.json"
  MAKA_POLICY=$BATS_TEST_TMPDIR/policy.json maka_io run -d --bundle "$BATS_TEST_TMPDIR/b" cli-bounded
  # Runs in /maka/work, a relative --cwd below it; a detached child is
  # killed before maka returns (seen from the host: no such process).
  run maka exec --timeout 60s cli-bounded -- sh -c 'mkdir -p job'
  [ "$status" -eq 0 ]
  run --separate-stderr maka exec --timeout 60s --cwd job cli-bounded -- sh -c 'pwd; echo err >&2; sleep 1000 </dev/null >/dev/null 2>&1 & echo bg; exit 4'
  echo "$output / $stderr"
  [ "$status" -eq 4 ]
  [ "$output" = "/maka/work/job
bg" ]
  [ "$stderr" = "err" ]
  [ -z "$(pgrep -fx 'sleep 1000' || true)" ]
  [ -z "$(find "$(cgroup_dir_of cli-bounded)" -mindepth 1 -type d -name 'maka-cmd-*')" ]
  # A relative --cwd may not leave /maka/work.
  run maka exec --timeout 60s --cwd ../.. cli-bounded -- pwd
  [ "$status" -eq 255 ]
  [[ "$output" == *"--cwd"*"below /maka/work"* ]]
  # Over the cap: exit 255 and an explicit error, never truncated output.
  run --separate-stderr maka exec --output-limit 1KiB cli-bounded -- head -c 5000 /dev/zero
  [ "$status" -eq 255 ]
  [ -z "$output" ]
  [[ "$stderr" == *"output over the limit"*"1024 bytes"* ]]
  # A timeout above the maximum (the sandbox's policy's) is refused before
  # anything runs.
  run maka exec --timeout 121s cli-bounded -- touch /maka/work/ran
  [ "$status" -eq 255 ]
  [[ "$output" == *"timeout above the maximum of 2m0s (the policy's maxCommandTimeout)"* ]]
  run maka exec cli-bounded test -e /maka/work/ran
  [ "$status" -eq 1 ]
  # Past its deadline after dispatch the whole sandbox is killed.
  run maka exec --timeout 3s cli-bounded -- sleep 100
  [ "$status" -eq 255 ]
  [[ "$output" == *"the sandbox was destroyed"*"deadline"* ]]
  wait_for_status cli-bounded stopped
  maka delete cli-bounded
  assert_nothing_left cli-bounded
}

@test "maka spec --tool: maka's agent is the init, maka exec starts commands through it (status, stdio, signals, --detach, --pid-file, bounded), other users take libcontainer's path, no command ends it, maka kill does" {
  local b=$BATS_TEST_TMPDIR/tool pid cpid mpid rc=0
  mkdir -p "$b"
  run "$MAKA_BINARY" spec --tool --bundle "$b"
  [ "$status" -eq 0 ]
  jq -e '.process.args == ["/bin/sh", "-c", "while :; do sleep 3600 & wait; done"] and (.process.terminal // false) == false' "$b/config.json"
  update_config "$b" '.root.path = $r' --arg r "$MAKA_ROOTFS"
  maka_io run -d --bundle "$b" tool1
  pid=$(container_pid tool1)
  # The init runs the agent from its sealed memfd (libcontainer's init
  # execs it once run has let it go); its socket for maka exec is root's
  # alone, in the state dir.
  for i in $(seq 100); do [[ "$(readlink /proc/$pid/exe)" == /memfd:maka-agent* ]] && break; sleep 0.1; done
  [[ "$(readlink /proc/$pid/exe)" == /memfd:maka-agent* ]]
  [ "$(stat -c %a "$MAKA_ROOT/tool1/agent.sock")" = 600 ]
  # Exit status, stdout and stderr as they are; the command's parent is
  # the agent (pid 1 inside), in the sandbox's cgroup, as the init's user.
  run --separate-stderr maka exec tool1 sh -c 'echo "$PPID $(id -u)"; echo err >&2; exit 7'
  [ "$status" -eq 7 ]
  [ "$output" = "1 0" ]
  [ "$stderr" = err ]
  echo in | maka exec tool1 cat > "$BATS_TEST_TMPDIR/cat.out"
  [ "$(cat "$BATS_TEST_TMPDIR/cat.out")" = in ]
  # --detach with --pid-file: the host pid is the agent's child, running.
  # (Its stdio is maka's, as runc's detached exec's: not bats' pipe.)
  maka exec --detach --pid-file "$BATS_TEST_TMPDIR/pid" tool1 sleep 300 </dev/null >/dev/null 2>&1
  cpid=$(cat "$BATS_TEST_TMPDIR/pid")
  [ "$(ps -o ppid= -p "$cpid" | tr -d ' ')" = "$pid" ]
  [ "$(cat /proc/$cpid/comm)" = sleep ]
  [ "$(sed -n 's/^0:://p' /proc/$cpid/cgroup)" = "$(sed -n 's/^0:://p' /proc/$pid/cgroup)" ]
  kill "$cpid"
  # A signal to maka exec reaches the command.
  "$MAKA_BINARY" --root "$MAKA_ROOT" --state-dir "$MAKA_STATE_DIR" exec tool1 \
    sh -c 'trap "echo got TERM; exit 3" TERM; echo ready; while :; do sleep 1; done' > "$BATS_TEST_TMPDIR/sig.out" &
  mpid=$!
  for i in $(seq 60); do grep -q ready "$BATS_TEST_TMPDIR/sig.out" && break; sleep 0.5; done
  kill -TERM "$mpid"
  wait "$mpid" || rc=$?
  [ "$rc" -eq 3 ]
  grep -q "got TERM" "$BATS_TEST_TMPDIR/sig.out"
  # Bounded: in a child cgroup of its own, through the agent too.
  run maka exec --timeout 60s tool1 sh -c 'echo $PPID; cat /proc/self/cgroup'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1 ]
  [[ "${lines[1]}" == *"/maka-cmd-"* ]]
  # Another user than the init's is not the agent's to give: libcontainer's
  # path (its process is not the agent's child).
  run maka exec --user 1000:1000 tool1 sh -c 'id -u; echo $PPID'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 1000 ]
  [ "${lines[1]}" = 0 ]
  # No command ends the sandbox by signalling its init.
  run maka exec tool1 sh -c 'kill -TERM 1; kill -INT 1; kill -HUP 1; kill -KILL 1; kill -STOP 1; sleep 1; echo sent'
  [ "$output" = sent ]
  [ "$(maka state tool1 | jq -r .status)" = running ]
  # maka kill's SIGTERM, from outside, does.
  maka kill tool1
  wait_for_status tool1 stopped
  maka delete tool1
  assert_nothing_left tool1
}

@test "maka purge --scope: a live owner's sandbox is busy and kept, a dead owner's is destroyed, nothing is left; another scope is not touched" {
  local out=$BATS_TEST_TMPDIR/owner.out pid i
  # An agent (the package's test binary) launches an owned sandbox on the
  # CLI's state directories and lives on.
  MAKA_GUEST_TESTS=1 MAKA_ROOTFS="$MAKA_ROOTFS" MAKA_OWNER_SCOPE=ws-cli MAKA_OWNER_ID=own-cli \
    MAKA_OWNER_ROOT="$MAKA_ROOT" MAKA_OWNER_STATE_DIR="$MAKA_STATE_DIR" \
    "$MAKA_FIXTURES/sandbox.test" -test.run '^TestOwnerProcess$' -test.timeout 0 >"$out" 2>&1 3>&- &
  pid=$!
  for i in $(seq 120); do
    grep -q '^launched own-cli' "$out" && break
    kill -0 "$pid" 2>/dev/null || { cat "$out"; false; }
    sleep 0.5
  done
  grep -q '^launched own-cli' "$out"
  run maka list -q
  [[ "$output" == *own-cli* ]]
  # Its owner lives: busy, kept (exit 0: nothing failed).
  run maka purge --scope ws-cli --format json
  echo "$output"
  [ "$status" -eq 0 ]
  jq -e 'length == 1 and .[0].id == "own-cli" and .[0].result == "busy" and .[0].owner.scope == "ws-cli" and .[0].owner.call == "c1"' <<<"$output"
  run maka exec own-cli true
  [ "$status" -eq 0 ]
  # Another scope purges nothing.
  run maka purge --scope ws-other --format json
  [ "$status" -eq 0 ]
  [ "$output" = "[]" ]
  # The owner dies (SIGKILL: no Destroy); purge destroys its sandbox.
  kill -9 "$pid"
  wait "$pid" || true
  run --separate-stderr maka purge --scope ws-cli
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$(sed -n 2p <<<"$output")" == "own-cli"*"ws-cli/"*"purged"* ]]
  assert_nothing_left own-cli
  run maka purge --scope ws-cli --format json
  [ "$output" = "[]" ]
  # A scope is required.
  run maka purge
  [ "$status" -ne 0 ]
  [[ "$output" == *"scope"* ]]
}

@test "an embedding program with a warm pool crashes: recover reaps its pool and its sandbox, nothing is left (issue 26 item 8)" {
  local out=$BATS_TEST_TMPDIR/owner.out pid i id pool
  MAKA_GUEST_TESTS=1 MAKA_ROOTFS="$MAKA_ROOTFS" MAKA_OWNER_SCOPE=ws-pool MAKA_OWNER_ID=own-pool \
    MAKA_OWNER_PREWARM=2 MAKA_OWNER_ROOT="$MAKA_ROOT" MAKA_OWNER_STATE_DIR="$MAKA_STATE_DIR" \
    "$MAKA_FIXTURES/sandbox.test" -test.run '^TestOwnerProcess$' -test.timeout 0 >"$out" 2>&1 3>&- &
  pid=$!
  for i in $(seq 240); do
    grep -q '^prewarmed 2' "$out" && break
    kill -0 "$pid" 2>/dev/null || { cat "$out"; false; }
    sleep 0.5
  done
  grep -q '^prewarmed 2' "$out"
  pool=$(maka list -q | grep '^pool-' || true)
  echo "pool: $pool"
  [ "$(wc -w <<<"$pool")" -eq 2 ]
  # The pool's idle sandboxes answer: they are live sandboxes, not records.
  for id in $pool; do
    run maka exec "$id" true
    [ "$status" -eq 0 ]
  done
  # The embedding program dies without Close (SIGKILL).
  kill -9 "$pid"
  wait "$pid" || true
  run --separate-stderr maka recover --format json
  echo "$output"
  echo "$stderr"
  [ "$status" -eq 0 ]
  for id in own-pool $pool; do
    jq -e --arg id "$id" 'any(.[]; .id == $id)' <<<"$output"
    assert_nothing_left "$id"
  done
  [ -z "$(maka list -q)" ]
}
