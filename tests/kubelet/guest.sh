#!/bin/bash
# tests/kubelet/guest.sh WORK HANDLER...
#
# Runs in the throw-away guest (tests/kubelet/run.sh starts it through
# tests/vm/run.sh); it mounts a tmpfs on /var/lib/containerd, writes
# /etc/maka/policy.json, starts containerd and a kubelet, makes cgroups: never
# run it anywhere else.
#
# Once per HANDLER (maka, runc), in this order:
#   1. containerd (Debian's 1.6) with containerd.toml, default_runtime_name
#      HANDLER (a static pod names no RuntimeClass: without an API server the
#      kubelet cannot look one up), the CNI bridge of tests/critest; the
#      images (WORK/images.tar: the pause stand-in as registry.k8s.io/pause:3.6
#      and busybox) imported once;
#   2. the kubelet (WORK/bin/kubelet) standalone with kubelet.yaml, then the
#      static pods of pods/ copied into its staticPodPath;
#   3. polling the kubelet's /pods (read-only port) until every pod is where
#      it should be (pods.py ready) or KUBELET_POD_TIMEOUT passes;
#   4. what the checks read, into WORK/results/HANDLER/: the kubelet's /pods
#      (pods.json), crictl's pods, containers and inspections (with the OCI
#      config.json containerd gave the runtime), outputs of crictl exec in the
#      containers of "shared", the namespaces of its processes, the kubelet's
#      and containerd's logs;
#   5. the manifests removed, the kubelet tears the pods down; the kubelet and
#      containerd stopped, the kubelet's directory emptied.
#
# Environment: KUBELET_MAKA (maka), KUBELET_CRICTL (crictl),
# KUBELET_POLICY (maka's policy file, default tests/kubelet/policy.json),
# KUBELET_POD_TIMEOUT (seconds for step 3, 900), KUBELET_V (the kubelet's
# log level, 3: probe successes are logged at 3).
set -uo pipefail
work=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || { echo "kubelet-test: not a cgroup v2 host, refusing" >&2; exit 2; }
[ -e /run/vmrun/cmd ] || { echo "kubelet-test: starts containerd and a kubelet: only in the test guest (tests/vm)" >&2; exit 2; }
[ $# -gt 0 ] || set -- maka runc
export PATH=$PATH:/usr/sbin:/sbin
log() { echo "kubelet-test: $(date +%T) $*"; }
pod_timeout=${KUBELET_POD_TIMEOUT:-900}
# shellcheck source=tests/vm/cri-node.sh
. "$here/../vm/cri-node.sh"

results=$work/results
run=/run/kubelet-test
mkdir -p "$results" "$run/bin" "$run/cni" "$run/manifests"
# Binaries from the guest's tmpfs, not the uncached 9p share.
cp "$work/bin/kubelet" "$run/bin/kubelet"
cp "${KUBELET_MAKA:?}" "$run/bin/maka"
cp "${KUBELET_CRICTL:?}" "$run/bin/crictl"
sock=unix:///run/containerd/containerd.sock
# crictl's own config file: without one it warns on stderr at every call
# ("/etc/crictl.yaml does not exist"), into the outputs the checks read.
printf 'runtime-endpoint: %s\nimage-endpoint: %s\ntimeout: 240\n' "$sock" "$sock" > "$run/crictl.yaml"
crictl() { timeout 300 "$run/bin/crictl" --config "$run/crictl.yaml" "$@"; }
pods_url=http://127.0.0.1:10255/pods

kubelet_pid='' containerd_pid=''
# stop PID: SIGTERM, then SIGKILL after 60 s.
stop() {
  [ -n "$1" ] || return 0
  kill "$1" 2>/dev/null
  for _ in $(seq 1 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.2; done
  kill -9 "$1" 2>/dev/null
}
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() { stop "$kubelet_pid"; stop "$containerd_pid"; }
trap cleanup EXIT

cri_node_prepare "${KUBELET_POLICY:-$here/policy.json}" "$run/cni" || exit 1
# The node's resolv.conf, which the kubelet merges into the pods' (search).
printf 'nameserver 192.0.2.53\nsearch node.example\n' > "$run/node-resolv.conf"
sed "s#@RUN@#$run#g" "$here/kubelet.yaml" > "$run/kubelet.yaml"

imported=
for h in "$@"; do
  res=$results/$h
  rm -rf "$res"
  mkdir -p "$res"
  t0=$(date +%s)
  log "$h: containerd with default_runtime_name = $h"
  sed -e "s#@DEFAULT@#$h#" -e "s#@MAKA@#$run/bin/maka#" -e "s#@RUNC@#$(command -v runc)#" \
    -e "s#@CNI_CONF_DIR@#$run/cni#" "$here/containerd.toml" > "$run/containerd.toml"
  cri_start_containerd "$run/containerd.toml" "$res/containerd.log" || exit 1
  if [ -z "$imported" ]; then
    ctr -n k8s.io image import "$work/images.tar" > "$res/import.log" 2>&1 ||
      { log "ctr image import failed"; cat "$res/import.log"; exit 1; }
    imported=1
  fi
  crictl images > "$res/images.txt" 2>&1

  log "$h: kubelet"
  rm -f "$run/manifests"/*
  env -i PATH="$PATH" HOME=/root "$run/bin/kubelet" --config "$run/kubelet.yaml" \
    --hostname-override=maka-node --v="${KUBELET_V:-3}" < /dev/null > "$res/kubelet.log" 2>&1 &
  kubelet_pid=$!
  up=
  for _ in $(seq 1 600); do
    kill -0 "$kubelet_pid" 2>/dev/null || break
    if curl -fsS "$pods_url" > /dev/null 2>&1; then up=1; break; fi
    sleep 0.5
  done
  [ -n "$up" ] || { log "$h: the kubelet did not serve /pods"; tail -30 "$res/kubelet.log"; exit 1; }
  log "$h: kubelet up after $(( $(date +%s) - t0 )) s; the static pods"
  {
    cri_versions "$run"
    echo "kubelet: $("$run/bin/kubelet" --version)"
    echo "default_runtime_name: $h"
    echo "policy (maka): $(tr -s ' \n' ' ' < /etc/maka/policy.json)"
  } > "$res/versions.txt"
  cp "$here"/pods/*.yaml "$run/manifests/"

  # 3. Until every pod is where it should be.
  t1=$(date +%s)
  ready=
  while [ $(( $(date +%s) - t1 )) -lt "$pod_timeout" ]; do
    if curl -fsS "$pods_url" -o "$res/pods.json.tmp" 2>/dev/null; then
      mv "$res/pods.json.tmp" "$res/pods.json"
      if python3 "$here/pods.py" ready "$res/pods.json" > "$res/waiting.txt" 2>&1; then ready=1; break; fi
    fi
    kill -0 "$kubelet_pid" 2>/dev/null || { log "$h: the kubelet died"; break; }
    sleep 5
  done
  echo "$ready $(( $(date +%s) - t1 ))" > "$res/ready.status"
  if [ -n "$ready" ]; then state=ready; else state="NOT ready: $(tr '\n' ' ' < "$res/waiting.txt")"; fi
  log "$h: pods $state after $(( $(date +%s) - t1 )) s"
  # A few more probe periods: the healthy probes keep succeeding, the pods
  # keep their state.
  sleep 15
  curl -fsS "$pods_url" -o "$res/pods.json" || log "$h: /pods failed"

  # 4. What the checks read.
  crictl pods -o json > "$res/cri-pods.json" 2>> "$res/crictl.err"
  crictl ps -a -o json > "$res/cri-containers.json" 2>> "$res/crictl.err"
  pod=$(crictl pods -q --name '^shared' --state ready | head -1)
  if [ -n "$pod" ]; then
    crictl inspectp "$pod" > "$res/shared-pod.json" 2>> "$res/crictl.err"
    ppid=$(jq -r .info.pid "$res/shared-pod.json")
    : > "$res/ns.txt"
    for ns in net ipc uts pid mnt; do echo "pause $ns $(readlink "/proc/$ppid/ns/$ns")" >> "$res/ns.txt"; done
    for c in writer reader; do
      cid=$(crictl ps -q --pod "$pod" --name "^$c\$" --state running | head -1)
      [ -n "$cid" ] || { log "$h: no running $c"; continue; }
      crictl inspect "$cid" > "$res/$c.json" 2>> "$res/crictl.err"
      cpid=$(jq -r .info.pid "$res/$c.json")
      for ns in net ipc uts pid mnt; do echo "$c $ns $(readlink "/proc/$cpid/ns/$ns")" >> "$res/ns.txt"; done
      # x NAME CMD...: CMD's output and "exit STATUS" in C.NAME.
      x() { local f=$res/$c.$1; shift; crictl exec "$cid" "$@" > "$f" 2>&1; echo "exit $?" >> "$f"; }
      x msg cat /data/msg
      x seen cat /data/seen-by-reader
      x hosts cat /etc/hosts
      x resolv cat /etc/resolv.conf
      x hostname hostname
      x sa-namespace cat /var/run/secrets/kubernetes.io/serviceaccount/namespace
      x sa-pod-name cat /var/run/secrets/kubernetes.io/serviceaccount/pod-name
      x sa-write touch /var/run/secrets/kubernetes.io/serviceaccount/x
      x termlog sh -c 'echo probe > /dev/termination-log && cat /dev/termination-log'
      x mountinfo cat /proc/self/mountinfo
    done
  else
    log "$h: no ready pod named shared"
  fi
  for p in liveness term; do
    id=$(crictl pods -q --name "^$p" | head -1)
    [ -z "$id" ] || crictl inspectp "$id" > "$res/$p-pod.json" 2>> "$res/crictl.err"
  done
  # The host side of each container's /dev/termination-log.
  for f in /var/lib/kubelet/pods/*/containers/*/*; do
    [ -f "$f" ] && printf '%s\t%s\n' "${f#/var/lib/kubelet/pods/}" "$(head -c 200 "$f" | tr '\n' ' ')"
  done > "$res/termination-logs.txt" 2>/dev/null
  find /sys/fs/cgroup/kubepods -name 'cgroup.procs' 2>/dev/null | sed 's#/cgroup.procs##' | sort > "$res/cgroups.txt"

  # 5. Tear down: the kubelet stops and removes what it ran.
  log "$h: removing the static pods"
  rm -f "$run/manifests"/*
  gone=
  for _ in $(seq 1 120); do
    [ -z "$(crictl ps -q 2>/dev/null)" ] && [ -z "$(crictl pods -q --state ready 2>/dev/null)" ] && { gone=1; break; }
    sleep 2
  done
  [ -n "$gone" ] || log "$h: containers or pods still running 240 s after the manifests went"
  stop "$kubelet_pid"; kubelet_pid=
  crictl rmp -af > /dev/null 2>&1 || true
  left=$(crictl pods -q 2>/dev/null | wc -l)
  [ "$left" -eq 0 ] || log "$h: $left pod(s) still listed after rmp -af"
  stop "$containerd_pid"; containerd_pid=
  # The kubelet's volumes (tmpfs of the projected volume) and directory.
  grep -o ' /var/lib/kubelet[^ ]*' /proc/self/mountinfo | sort -ru | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  rm -rf /var/lib/kubelet /var/log/pods/* /var/log/containers
  log "$h: done in $(( $(date +%s) - t0 )) s"
done
exit 0
