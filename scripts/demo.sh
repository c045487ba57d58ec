#!/bin/bash
# demo.sh: run one real container end to end with maka on the busybox
# fixture rootfs: `maka spec`, then `maka run` of a shell command that
# shows what it sees from inside. Needs root on a cgroup v2 host (make demo
# runs it in the test guest otherwise).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
maka=${MAKA_BINARY:-$here/maka}
rootfs=${MAKA_FIXTURES:-$here/build/fixtures}/rootfs
work=$(mktemp -d /tmp/maka-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -a "$rootfs" "$work/rootfs"
cd "$work"
"$maka" spec
jq '.process.terminal = false
  | .process.args = ["sh", "-c", "echo \"hello from a maka container: $(uname -n), pid $$\"; echo \"memory.max: $(cat /sys/fs/cgroup/memory.max)\"; echo \"processes visible: $(ls -d /proc/[0-9]* | wc -l)\"; touch /x 2>&1 || echo \"the root filesystem is read-only\""]
  | .linux.resources.memory.limit = 268435456' config.json > config.new
mv config.new config.json
set -x
"$maka" --root "$work/state" run demo
