# shellcheck shell=bash
# tests/vm/cri-node.sh: what a CRI node in the throw-away guest needs, shared
# by tests/critest/guest.sh and tests/kubelet/guest.sh (sourced, after they
# define log and crictl): containerd's storage, maka's policy, the CNI
# bridge, and containerd started and waited for. Never run it anywhere else.

cri_node_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# cri_node_prepare POLICY CNI_DIR [MODULE...]: no other containerd, its
# storage on a tmpfs (overlay cannot stack on the guest's overlay root, as
# in cri.bats), POLICY as /etc/maka/policy.json, the CNI bridge of
# tests/critest (docs/kubernetes.md's, ipMasq off) in CNI_DIR, and the
# kernel modules a pod's network needs (and MODULE...).
cri_node_prepare() {
  local policy=$1 cni=$2 _
  shift 2
  for _ in $(seq 1 150); do pgrep -x containerd > /dev/null || break; sleep 0.2; done
  ! pgrep -x containerd > /dev/null || { log "another containerd is running"; return 1; }
  mkdir -p /var/lib/containerd /etc/maka /var/log/pods "$cni"
  mountpoint -q /var/lib/containerd || mount -t tmpfs tmpfs /var/lib/containerd
  cp "$policy" /etc/maka/policy.json
  cp "$cri_node_dir/../critest/10-critest.conflist" "$cni/"
  modprobe -qa bridge veth br_netfilter "$@" 2> /dev/null || true
  sysctl -qw net.ipv4.ip_forward=1 || true
}

# cri_start_containerd CONFIG LOG: containerd with CONFIG and an empty
# environment (as on a node: no MAKA_* variable, the policy file governs),
# its output in LOG; its pid in containerd_pid; returns once its CRI plugin
# answers (1 after a minute without).
cri_start_containerd() {
  local _
  env -i PATH="$PATH" containerd --config "$1" < /dev/null > "$2" 2>&1 &
  # shellcheck disable=SC2034  # the caller's
  containerd_pid=$!
  for _ in $(seq 1 300); do
    crictl version > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  log "containerd's CRI plugin did not answer:"
  tail -20 "$2"
  return 1
}

# cri_versions RUN: the lines every run's versions.txt starts with (maka
# and crictl as copied into RUN/bin).
cri_versions() {
  echo "guest: $(uname -r), $(nproc) CPU(s)"
  echo "containerd: $(containerd --version)"
  echo "runc: $(runc --version | head -1)"
  echo "maka: $("$1/bin/maka" --version | head -1)"
  echo "crictl: $("$1/bin/crictl" --version)"
}
