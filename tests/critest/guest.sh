#!/bin/bash
# tests/critest/guest.sh WORK HANDLER...
#
# Runs in the throw-away guest (tests/critest/run.sh starts it through
# tests/vm/run.sh); it mounts a tmpfs on /var/lib/containerd, writes
# /etc/maka/policy.json and starts containerd and a registry: never run it
# anywhere else.
#
#   1. distribution's registry on 127.0.0.1:5000 (storage in the guest's
#      /tmp), and every image of WORK/images pushed there with crane, at the
#      path containerd's mirror asks for (images.txt; the digest must be the
#      one make-images.py built);
#   2. containerd (Debian's 1.6) with containerd.toml: the CRI plugin, the
#      runtime handlers runc and maka, the mirrors, the CNI bridge with
#      portmap; maka's policy is tests/critest/policy.json as
#      /etc/maka/policy.json (the file governs: containerd runs with an empty
#      environment, as on a node);
#   3. critest once per HANDLER (runc, maka) with --runtime-handler, the
#      exclusions of exclude.txt as --ginkgo.skip, one seed for both (the
#      same order); its Ginkgo JSON and JUnit reports and its output in
#      WORK/results/HANDLER.{json,xml,log}, "EXIT SECONDS" in HANDLER.status.
#      Between two runs every pod left is removed (crictl rmp -af).
#
# Environment: CRITEST_MAKA (maka), CRITEST_CRICTL (crictl, for cleaning up
# and the versions), CRITEST_FOCUS (a regex: only these specs; default all),
# CRITEST_SKIP (a regex: more specs not to run, reported as excluded
# "CRITEST_SKIP"), CRITEST_SEED (Ginkgo's seed, 1), CRITEST_TIMEOUT (one
# handler's run, Ginkgo's --timeout, 4h), CRITEST_POLICY (maka's policy file).
set -uo pipefail
work=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || { echo "critest: not a cgroup v2 host, refusing" >&2; exit 2; }
[ -e /run/vmrun/cmd ] || { echo "critest: starts containerd and mounts a tmpfs: only in the test guest (tests/vm)" >&2; exit 2; }
[ $# -gt 0 ] || set -- maka runc
export PATH=$PATH:/usr/sbin:/sbin
log() { echo "critest: $*"; }
# shellcheck source=tests/vm/cri-node.sh
. "$here/../vm/cri-node.sh"
# One handler's run: Ginkgo's --timeout, and a hard stop 10 minutes later.
timeout=${CRITEST_TIMEOUT:-4h}
[[ $timeout =~ ^([0-9]+)([hms]?)$ ]] ||
  { log "CRITEST_TIMEOUT=$timeout: whole hours, minutes or seconds (4h, 90m, 600s)"; exit 2; }
case ${BASH_REMATCH[2]} in
  h) secs=$(( BASH_REMATCH[1] * 3600 )) ;;
  m) secs=$(( BASH_REMATCH[1] * 60 )) ;;
  *) secs=${BASH_REMATCH[1]}; timeout=${secs}s ;;
esac

results=$work/results
run=/run/critest
mkdir -p "$results" "$run/bin" "$run/cni" "$run/layouts"
# Binaries from the guest's tmpfs, not the uncached 9p share.
cp "$work/bin/critest" "$work/bin/registry" "$work/bin/crane" "$run/bin/"
cp "${CRITEST_MAKA:?}" "$run/bin/maka"
cp "${CRITEST_CRICTL:?}" "$run/bin/crictl"
sock=unix:///run/containerd/containerd.sock
crictl() { timeout 300 "$run/bin/crictl" --runtime-endpoint "$sock" --image-endpoint "$sock" --timeout 240s "$@"; }

pids=()
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  done
}
trap cleanup EXIT

# 1. The registry, and the images in it.
sed "s#@STORAGE@#/tmp/critest-registry#" "$here/registry.yml" > "$run/registry.yml"
OTEL_TRACES_EXPORTER=none "$run/bin/registry" serve "$run/registry.yml" > "$results/registry.log" 2>&1 < /dev/null &
pids+=($!)
up=
for _ in $(seq 1 150); do
  if "$run/bin/crane" catalog --insecure 127.0.0.1:5000 > /dev/null 2>&1; then up=1; break; fi
  sleep 0.2
done
[ -n "$up" ] || { log "the registry did not start:"; cat "$results/registry.log"; exit 1; }
log "registry $("$run/bin/registry" --version 2>&1 | head -1) on 127.0.0.1:5000"
pushed=0
while read -r tarball path ref digest; do
  [ -n "$tarball" ] || continue
  d=$run/layouts/${tarball%.tar}
  mkdir -p "$d"
  tar -C "$d" -xf "$work/images/$tarball" || exit 1
  got=$("$run/bin/crane" push --insecure "$d" "127.0.0.1:5000/$path" 2>> "$results/push.log") ||
    { log "pushing $ref failed:"; tail -5 "$results/push.log"; exit 1; }
  [ "${got##*@}" = "$digest" ] || { log "$ref: pushed $got, built $digest"; exit 1; }
  pushed=$((pushed + 1))
done < "$work/images/images.txt"
rm -rf "$run/layouts"
log "$pushed images pushed ($(wc -l < "$work/images/images.txt") in images.txt)"

# 2. containerd (tests/vm/cri-node.sh).
# Containers' networks, and the port mappings (portmap: iptables nat).
cri_node_prepare "${CRITEST_POLICY:-$here/policy.json}" "$run/cni" nf_tables nft_chain_nat nft_compat \
  nf_nat xt_nat xt_MASQUERADE xt_mark xt_comment xt_addrtype xt_multiport xt_conntrack || exit 1
# AppArmor: the guest's kernel has it (critest's AppArmor specs run, and
# containerd gives every container its default profile). securityfs, which
# apparmor_parser and containerd look in; Debian's apparmor_parser and
# /etc/apparmor.d, unpacked by build.sh, on the guest's throw-away root; and
# `sudo`, which critest runs apparmor_parser with (we are root already).
mkdir -p "$run/path"
if [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ]; then
  mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
  cp -a "$work/apparmor/etc/apparmor" "$work/apparmor/etc/apparmor.d" /etc/
  # parser.conf pins the policy's feature ABI to this file.
  mkdir -p /usr/share/apparmor-features
  cp -a "$work/apparmor/usr/share/apparmor-features/." /usr/share/apparmor-features/
  # containerd 1.6 takes AppArmor as supported only if /sbin/apparmor_parser
  # exists ("apparmor is not supported" otherwise, for every profile asked).
  cp "$work/apparmor/sbin/apparmor_parser" /sbin/apparmor_parser
fi
cat > "$run/path/sudo" << 'SUDO'
#!/bin/sh
# critest runs `sudo apparmor_parser`: the guest runs it as root.
exec "$@"
SUDO
chmod 755 "$run/path/sudo"
export PATH=$run/path:$PATH
# The bridge's portmap acts (iptables nat) only for a pod that maps ports
# (critest's port mapping specs).
sed -e "s#@MAKA@#$run/bin/maka#" -e "s#@RUNC@#$(command -v runc)#" -e "s#@CNI_CONF_DIR@#$run/cni#" \
  "$here/containerd.toml" > "$run/containerd.toml"
cri_start_containerd "$run/containerd.toml" "$results/containerd.log" || exit 1
pids+=("$containerd_pid")

{
  cri_versions "$run"
  echo "critest: $("$run/bin/critest" -version 2>&1 | grep -m1 'critest version')"
  echo "registry: $("$run/bin/registry" --version 2>&1 | head -1)"
  echo "crane: $("$run/bin/crane" version 2>&1 | head -1)"
  echo "apparmor: $(cat /sys/module/apparmor/parameters/enabled 2>/dev/null), $(apparmor_parser --version 2>&1 | head -1)"
  echo "policy (maka): $(tr -s ' \n' ' ' < /etc/maka/policy.json)"
} > "$results/versions.txt"
cat "$results/versions.txt"

# 3. critest, once per handler.
skips=()
while IFS= read -r line; do
  case $line in '#'* | '') continue ;; esac
  skips+=("-ginkgo.skip=${line%% ## *}")
done < "$here/exclude.txt"
[ -z "${CRITEST_SKIP:-}" ] || skips+=("-ginkgo.skip=$CRITEST_SKIP")
focus=()
[ -z "${CRITEST_FOCUS:-}" ] || focus=("-ginkgo.focus=$CRITEST_FOCUS")
cp "$here/exclude.txt" "$results/exclude.txt"
printf '%s\n' "${CRITEST_SKIP:-}" > "$results/extra-skip.txt"
printf '%s\n' "${CRITEST_FOCUS:-}" > "$results/focus.txt"

for h in "$@"; do
  rm -f "$results/$h".*
  log "$h: critest ${focus[*]} (timeout $timeout)"
  start=$(date +%s)
  # critest makes its temporary directories (volumes, logs, seccomp
  # profiles) in TMPDIR: the guest's /tmp, which maka's policy binds.
  (cd "$run" && TMPDIR=/tmp timeout -k 60 $((secs + 600)) "$run/bin/critest" \
    -runtime-endpoint "$sock" -image-endpoint "$sock" -runtime-handler "$h" \
    -ginkgo.seed="${CRITEST_SEED:-1}" -ginkgo.timeout="$timeout" -ginkgo.no-color \
    -ginkgo.json-report="$results/$h.json" -ginkgo.junit-report="$results/$h.xml" \
    "${focus[@]}" "${skips[@]}") > "$results/$h.log" 2>&1 < /dev/null
  rc=$?
  echo "$rc $(( $(date +%s) - start ))" > "$results/$h.status"
  log "$h: exit $rc after $(( $(date +%s) - start )) s; $(grep -aE '^(Ran|FAIL|SUCCESS)' "$results/$h.log" | tr '\n' ' ')"
  # What a failed spec left must not reach the next handler's run.
  crictl rmp -af > /dev/null 2>&1 || true
  left=$(crictl pods -q 2> /dev/null | wc -l)
  [ "$left" -eq 0 ] || log "$h: $left pod(s) still listed after rmp -af"
done
crictl images > "$results/containerd-images.txt" 2>&1 || true
exit 0
