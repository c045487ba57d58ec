#!/bin/bash
# tests/integration/run.sh [FILE.bats|DIR]...
#
# Runs the bats suite and prints "integration: N passed, N failed, N skipped".
# On a cgroup v2 host bats runs directly; otherwise the files are spread over
# MAKA_GUESTS throw-away QEMU guests (tests/vm/run.sh) running side by side.
#
# Why several guests: the guest is emulated with single-threaded TCG, so one
# guest keeps one host core busy and the suite is CPU-bound; two guests on a
# two-core machine halve the wall time.  Guests take whole files from a shared
# queue (largest first), so a slow file never waits behind a fast one and no
# file's setup_file/teardown_file is split across guests.
#
# Environment: MAKA_GUESTS (default: the host's core count, at most the number
# of files), BATS_FLAGS (extra bats flags, shell-quoted), BATS (bats binary),
# MAKA_INTEGRATION_LOG (build/integration.tap: every guest's TAP, concatenated).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
log=${MAKA_INTEGRATION_LOG:-$repo/build/integration.tap}
[ $# -gt 0 ] || set -- "$here"

files=()
for a in "$@"; do
  if [ -d "$a" ]; then files+=("$a"/*.bats); else files+=("$a"); fi
done
[ ${#files[@]} -gt 0 ] || { echo "integration: no bats files in $*" >&2; exit 1; }

work=$repo/build/integration
rm -rf "$work"; mkdir -p "$work/pending" "$work/taken"
# Queue: one token per file, named so that `ls` yields the longest first.
# A file's cost is its seconds in durations.txt (measured: a full run's TAP,
# summed per file by durations.sh), else 10 s per @test line; longest first
# keeps one long file from running alone at the end.
i=0
for f in "${files[@]}"; do
  n=$(awk -v f="$(basename "$f")" '$1 == f { print $2; exit }' "$here/durations.txt" 2>/dev/null || true)
  [ -n "$n" ] || n=$(( $(grep -c '^@test' "$f" || true) * 10 ))
  i=$((i + 1))
  printf '%s\n' "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" \
    > "$work/pending/$(printf '%06d-%04d' $((999999 - n)) $i)"
done

if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  echo "integration: cgroup v2 host, running bats directly"
  guests=0
else
  guests=${MAKA_GUESTS:-$(nproc)}
  [ "$guests" -ge 1 ] || guests=1
  [ "$guests" -le ${#files[@]} ] || guests=${#files[@]}
  echo "integration: cgroup v1/hybrid host, running bats in $guests QEMU guest(s)"
fi

rc=0
if [ "$guests" -eq 0 ]; then
  "$here/run-queue.sh" "$work" "$work/1.tap" || rc=$?
else
  pids=()
  for g in $(seq 1 "$guests"); do
    ( cd "$repo" && "$repo/tests/vm/run.sh" "$here/run-queue.sh" "$work" "$work/$g.tap" ) \
      2>&1 | sed -u "s/^/[guest $g] /" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  # A guest that died leaves its file in taken/ without a result line.
fi

cat "$work"/*.tap > "$log" 2>/dev/null || : > "$log"
pass=$(grep -cE '^ok ' "$log" || true)
skip=$(grep -cE '^ok .* # skip' "$log" || true)
fail=$(grep -cE '^not ok ' "$log" || true)
left=$(ls "$work/pending" | wc -l)
unfinished=$(comm -23 <(ls "$work/taken" | sort) <(ls "$work/done" 2>/dev/null | sort) | wc -l)
# The failures again, last, with their output: CI keeps only the tail of a log.
if [ "$fail" -gt 0 ]; then
  echo "integration: the failed tests, each with its file and output:"
  awk '/^# \/.*\.bats$/ { file = $2; show = 0; next }
       /^not ok / { show = 1; n = 0; print "--- " file; print; next }
       /^ok / { show = 0 }
       show && n++ < 80 { print }' "$work"/*.tap
fi
echo "integration: $((pass - skip)) passed, $fail failed, $skip skipped"
if [ "$left" -gt 0 ] || [ "$unfinished" -gt 0 ]; then
  echo "integration: $left file(s) never started, $unfinished file(s) never finished" >&2
  rc=1
fi
if [ $((pass + fail)) -eq 0 ]; then echo "integration: no test ran" >&2; rc=1; fi
[ "$fail" -eq 0 ] || rc=1
exit $rc
