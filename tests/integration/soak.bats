#!/usr/bin/env bats
# Soak (issue 15, item 5; `make soak` only): MAKA_SOAK_N full lifecycles
# (create, start, exec, kill, delete; default 1000) one after the other,
# then MAKA_SOAK_N more as MAKA_SOAK_PAR parallel loops (default 20), next
# to a long-lived sandbox. Afterwards: zero leaked cgroups, mounts,
# processes, state entries, contract records and id leases, and the
# long-lived sandbox's monitor holds exactly the descriptors it held before.
# Each test prints its N, its wall time and what it found.

load helpers

# 1,000 lifecycles take hours under emulation: no hang detector below 12 h.
BATS_TEST_TIMEOUT=$(( ${BATS_TEST_TIMEOUT:-240} > 43200 ? ${BATS_TEST_TIMEOUT:-240} : 43200 ))

MARK=4247   # the sandboxes' process: "sleep 4247", used by no other file

setup_file() {
  maka_setup_file
  export B=$BATS_FILE_TMPDIR/b
  make_bundle "$B" sleep "$MARK"
  maka_io run -d -b "$B" sk-keep >&2
}

teardown_file() { maka_teardown_file; }

monitor_fds() {
  local pid
  pid=$(cat "$MAKA_ROOT/$1/monitor.pid") || return 1
  ls "/proc/$pid/fd" | wc -l
}

# world: what exists besides the test's own short-lived sandboxes. The
# history directory itself (kept violations and peaks of deleted sandboxes,
# by design: `maka violations --prune` empties it) is not counted; what is
# in it is, once pruned (check_world).
world() {
  echo "state: $(find "$MAKA_ROOT" "$MAKA_STATE_DIR" -mindepth 1 2>/dev/null | grep -v '/\.maka-monitor-' | grep -v '\.lock$' | grep -v '/history$' | sort | tr '\n' ' ')"
  echo "cgroups: $(find /sys/fs/cgroup -type d -path '*maka*' | sort | tr '\n' ' ')"
  echo "mounts: $(wc -l </proc/self/mountinfo)"
  echo "sandbox processes: $(pgrep -fx "sleep $MARK" | wc -l)"
  echo "maka processes: $(pgrep -f -- "$MAKA_BINARY" | wc -l)"
  echo "monitor fds: $(monitor_fds sk-keep)"
}

# lifecycle ID: create, start, exec, kill, delete; any failure is printed.
lifecycle() {
  local id=$1 out
  out=$(maka_io create -b "$B" "$id") || { echo "$id create: $out"; return 1; }
  out=$(maka start "$id" 2>&1) || { echo "$id start: $out"; return 1; }
  out=$(maka exec "$id" true 2>&1 </dev/null) || { echo "$id exec: $out"; return 1; }
  out=$(maka kill "$id" KILL 2>&1) || { echo "$id kill: $out"; return 1; }
  out=$(maka delete --force "$id" 2>&1) || { echo "$id delete: $out"; return 1; }
}

check_world() { # BEFORE N PREFIX
  local after kept ids
  # Each deleted sandbox keeps one instance (its peaks) until pruned: exactly
  # one per lifecycle, then none.
  kept=$(find "$MAKA_STATE_DIR" -path "*/history/$3*" -name peak.json | wc -l)
  ids=$(find "$MAKA_STATE_DIR" -mindepth 3 -maxdepth 3 -type d -path "*/history/$3*" | wc -l)
  echo "# kept: $kept instances of $ids ids" | tee /dev/fd/3
  [ "$kept" -eq "$2" ] && [ "$ids" -eq "$2" ]
  maka violations --prune --older-than 1ms
  [ -z "$(find "$MAKA_STATE_DIR" -path "*/history/$3*")" ]
  after=$(world)
  echo "after:"; echo "$after"
  echo "$after" | sed 's/^/# after: /' >&3
  [ "$after" = "$1" ] || { diff <(echo "$1") <(echo "$after"); false; }
  [ "$(maka list -q)" = sk-keep ]
  [ "$(maka state sk-keep | jq -r .status)" = running ]
}

# bats test_tags=soak
@test "soak: MAKA_SOAK_N sequential lifecycles leak nothing" {
  local n=${MAKA_SOAK_N:-1000} i fails=0 before start
  before=$(world); echo "before:"; echo "$before"
  start=$SECONDS
  for i in $(seq 1 "$n"); do
    lifecycle "sk-s$i" || fails=$((fails + 1))
  done
  echo "# sequential: N=$n lifecycles in $((SECONDS - start)) s, $fails failed" | tee /dev/fd/3
  [ "$fails" -eq 0 ]
  check_world "$before" "$n" sk-s
}

# bats test_tags=soak
@test "soak: MAKA_SOAK_N lifecycles as MAKA_SOAK_PAR parallel loops leak nothing" {
  local n=${MAKA_SOAK_N:-1000} par=${MAKA_SOAK_PAR:-20} w before start pids=()
  before=$(world); echo "before:"; echo "$before"
  start=$SECONDS
  for w in $(seq 1 "$par"); do
    (
      local i f=0
      for i in $(seq "$w" "$par" "$n"); do lifecycle "sk-p$i" || f=$((f + 1)); done
      echo "$f" >"$BATS_TEST_TMPDIR/w$w.fails"
    ) >"$BATS_TEST_TMPDIR/w$w.log" 2>&1 &
    pids+=($!)
  done
  # The loops' pids, never a bare wait: bats keeps BATS_TEST_TIMEOUT as a
  # background sleep in this shell (12 h here), and a bare wait waited for
  # it (this test "hung" so in sessions 9 and 11).
  wait "${pids[@]}"
  cat "$BATS_TEST_TMPDIR"/w*.log
  local fails
  fails=$(awk '{s += $1} END {print s + 0}' "$BATS_TEST_TMPDIR"/w*.fails)
  echo "# parallel: N=$n lifecycles in $par loops in $((SECONDS - start)) s, $fails failed" | tee /dev/fd/3
  [ "$fails" -eq 0 ]
  check_world "$before" "$n" sk-p
}
