#!/bin/bash
# run-queue.sh WORKDIR OUT.tap: take bats files from WORKDIR/pending one at a
# time (rename is atomic, so two guests never take the same file), run each
# with bats, append the TAP to OUT.tap and echo it.  Used by run.sh, in a
# guest or directly on a cgroup v2 host.
set -uo pipefail
work=$1 out=$2
# maka runs from a tmpfs copy: in the guest the repository is a 9p share
# without a page cache, and each exec of an 11 MB binary from it reads the
# binary over 9p again (measured in one guest: `maka --version` 1.6-3.2 s
# from the share, 0.4-0.7 s from /run). Every test calls maka many times.
repo=$(cd "$(dirname "$0")/../.." && pwd)
src=${MAKA_BINARY:-$repo/maka}
if [ -x "$src" ] && [ -d /run ] && [ -w /run ]; then
  bin=$(mktemp -d /run/maka-under-test.XXXXXX)
  # Searchable by all: rootless.bats runs it as an ordinary user.
  chmod 0755 "$bin"
  cp "$src" "$bin/maka"
  trap 'rm -rf "$bin"' EXIT
  export MAKA_BINARY=$bin/maka
fi
flags=()
eval "flags=(${BATS_FLAGS:-})"
: > "$out"
mkdir -p "$work/done"
rc=0
while :; do
  token=$(ls "$work/pending" 2>/dev/null | head -n1)
  [ -n "$token" ] || break
  mv "$work/pending/$token" "$work/taken/$token" 2>/dev/null || continue
  file=$(cat "$work/taken/$token")
  echo "# $file" | tee -a "$out"
  t0=$SECONDS
  ${BATS:-bats} --formatter tap --timing --print-output-on-failure "${flags[@]}" "$file" 2>&1 \
    | tee -a "$out" || rc=1
  # The file's wall time, setup_file included (durations.sh reads it).
  echo "# duration $(basename "$file") $((SECONDS - t0))" | tee -a "$out"
  touch "$work/done/$token"
done
exit $rc
