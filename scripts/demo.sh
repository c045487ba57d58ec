#!/bin/bash
# demo.sh: one real sandbox end to end with maka on the busybox fixture
# rootfs, in four steps: the contract `maka spec` writes (`maka boundary`),
# a run that shows what the sandbox sees from inside, a config.json the
# policy refuses (with its reasons, and nothing created), and an escape
# attempt that is recorded (`maka violations`). Needs root on a cgroup v2
# host (make demo runs it in the test guest otherwise). Everything it makes
# lives in one temporary directory, removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
maka=${MAKA_BINARY:-$here/maka}
rootfs=${MAKA_FIXTURES:-$here/build/fixtures}/rootfs
work=$(mktemp -d /tmp/maka-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
# mktemp makes the directory 0700: the sandbox's root user is an unprivileged
# host user in its own user namespace, and must be able to reach rootfs/.
chmod 755 "$work"
cp -a "$rootfs" "$work/rootfs"
cd "$work"
unset MAKA_POLICY MAKA_STATE_DIR  # the demo shows the default policy, in its own directories
m() { "$maka" --root "$work/state" --state-dir "$work/store" "$@"; }
step() { printf '\n=== %s\n' "$*"; }

step "1. the contract: maka spec writes a config.json that the restricted profile allows as it is"
m spec
jq '.process.terminal = false
  | .process.args = ["sh", "-c", "echo \"hello from a maka sandbox: $(uname -n), pid $$, uid_map: $(cat /proc/self/uid_map | tr -s \" \")\"; echo \"memory.max: $(cat /sys/fs/cgroup/memory.max)\"; echo \"processes visible: $(ls -d /proc/[0-9]* | wc -l)\"; touch /x 2>&1 || echo \"the root filesystem is read-only\"; echo scratch > /tmp/s && echo \"/tmp is a bounded tmpfs: $(df -h /tmp | tail -1 | tr -s \" \" | cut -d\" \" -f2)\""]
  | .linux.resources.memory.limit = 268435456' config.json > config.new
mv config.new config.json
(set -x; m boundary)

step "2. a run"
(set -x; m run demo)

step "3. a refusal: the same config.json asking for CAP_SYS_ADMIN and the host's network"
jq --arg root "$work/rootfs" '.root.path = $root | .process.capabilities.bounding += ["CAP_SYS_ADMIN"] | .process.capabilities.effective += ["CAP_SYS_ADMIN"]
  | .linux.namespaces |= map(select(.type != "network"))' config.json > refused.json
mkdir refused && mv refused.json refused/config.json
rc=0; (set -x; m boundary --bundle refused) || rc=$?
echo "(maka boundary exited $rc: 1 means refused)"
[ "$rc" -eq 1 ]
rc=0; (set -x; m run --bundle refused demo-refused) || rc=$?
echo "(maka run exited $rc; nothing was created:)"
[ "$rc" -ne 0 ]
(set -x; m list)

step "4. a violation: the sandbox tries to make a user namespace; restricted ends it and records it"
jq '.process.args = ["sh", "-c", "echo trying unshare; unshare -U true; echo not reached"]' config.json > config.new
mv config.new config.json
rc=0; (set -x; m run demo-escape) || rc=$?
echo "(maka run exited $rc)"
[ "$rc" -ne 0 ]
(set -x; m violations demo-escape)
m violations --format json demo-escape | jq -e '.[0].syscall == "unshare"' >/dev/null
echo
echo "demo: done (the contract, a run, a refusal, a recorded violation)"
