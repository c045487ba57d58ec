#!/bin/bash
# tests/runc-suite/guest.sh WORK FILE.bats...
#
# Runs in the throw-away guest (tests/runc-suite/run.sh starts it through
# tests/vm/run.sh): bats on each of runc's files in WORK/runc/tests/integration,
# one bats process per file, its TAP in WORK/tap/FILE.tap.  Never run it on a
# host whose cgroups belong to other software.
set -uo pipefail
work=$1; shift
if [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] || [ ! -e /run/maka-vm-guest ] && [ -z "${MAKA_RUNC_SUITE_HOST_OK:-}" ]; then
  # tests/vm/init.sh does not leave a marker we rely on; the cgroup v2 check is
  # the one that matters.
  [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || { echo "runc-suite: not a cgroup v2 host, refusing" >&2; exit 2; }
fi
suite=$work/runc/tests/integration
export RUNC=$work/bin/maka-runc
export BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-300}
file_timeout=${MAKA_RUNC_SUITE_FILE_TIMEOUT:-1800}
mkdir -p "$work/tap"
# The suite's `requires cgroups_cpu_burst`, `cgroups_cpu_idle` and `freezer`
# look for the file in any cgroup up to two levels below the root: a host
# always has some (systemd's system.slice), the fresh guest none until a
# container made one, so whether those tests ran depended on the files run
# before. One empty sibling cgroup, as a host has, makes them run.
mkdir -p /sys/fs/cgroup/runc-suite.slice
echo "runc-suite: guest $(uname -r), $(nproc) CPU(s), bats $(bats --version | awk '{print $2}'), BATS_TEST_TIMEOUT=$BATS_TEST_TIMEOUT"
"$RUNC" --version | head -2
for f in "$@"; do
  name=${f%.bats}
  start=$(date +%s)
  # bats' own per-test timeout, and a per-file one in case bats itself hangs
  # (teardown_file, a stuck background process holding its output).
  # bats 1.8 (Debian's) keeps BATS_TEST_TIMEOUT with a background sleep in
  # the test's own shell: a test's bare `wait` (events.bats waits for its
  # two subshells so) waits for that sleep too, and every such test "times
  # out" whatever the runtime (runc's CI sets no BATS_TEST_TIMEOUT). Those
  # files run under the per-file timeout alone.
  per_test=(env BATS_TEST_TIMEOUT="$BATS_TEST_TIMEOUT")
  grep -qE '^[[:space:]]*wait([[:space:]]*(#.*)?)?$' "$suite/$f" && per_test=(env -u BATS_TEST_TIMEOUT)
  timeout -k 30 "$file_timeout" "${per_test[@]}" bats --tap ${MAKA_RUNC_SUITE_FILTER:+--filter "$MAKA_RUNC_SUITE_FILTER"} "$suite/$f" > "$work/tap/$name.tap" 2>&1 < /dev/null
  rc=$?
  end=$(date +%s)
  echo "$((end - start))" > "$work/tap/$name.secs"
  ok=$(grep -cE '^ok ' "$work/tap/$name.tap")
  nok=$(grep -cE '^not ok ' "$work/tap/$name.tap")
  echo "runc-suite: $f: bats exit $rc, $ok ok, $nok not ok, $((end - start)) s"
  [ "$rc" -ne 124 ] || echo "runc-suite: $f: stopped after ${file_timeout}s" | tee -a "$work/tap/$name.tap"
  # Whatever a test left behind must not leak into the next file.
  for ct in $("$RUNC" list -q 2>/dev/null); do "$RUNC" delete -f "$ct" >/dev/null 2>&1; done
done
