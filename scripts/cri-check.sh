#!/bin/bash
# scripts/cri-check.sh: the CRI path by hand, in the throw-away guest only:
#
#   GOBIN=$PWD/build/tools go install sigs.k8s.io/cri-tools/cmd/crictl@v1.34.0
#   make build fixtures
#   tests/vm/run.sh scripts/cri-check.sh
#
# Starts containerd with the CRI plugin, a runtime handler "maka" (runc v2 shim,
# BinaryName = ./maka) beside "runc", a CNI bridge network (10.88.0.0/16, the
# host's /usr/lib/cni plugins) and a stand-in sandbox ("pause") image made from
# the busybox fixture (no registry in the guest), then for each handler:
# crictl runp, create, start, exec, stop, inspect, inspectp, rm, stopp, rmp.
# Prints each step's time and status. Not part of `make test`: crictl is not a
# Debian package here and is built from the Go module proxy.
set -u
W=$(cd "$(dirname "$0")/.." && pwd)
[ -e /run/vmrun/cmd ] || { echo "cri-check: run it in the guest: tests/vm/run.sh $0" >&2; exit 2; }
export PATH=$PATH:/usr/sbin:/sbin
CRICTL="${CRICTL:-$W/build/tools/crictl} --timeout 60s"
t() { local s=$(date +%s%N); timeout 120 "$@"; local rc=$?; echo "## $(( ($(date +%s%N)-s)/1000000 )) ms rc=$rc: $*" >&2; return $rc; }
mkdir -p /var/lib/containers /var/lib/containerd
mount -t tmpfs tmpfs /var/lib/containers; mount -t tmpfs tmpfs /var/lib/containerd
mkdir -p /etc/maka; echo '{"profile": "baseline"}' > /etc/maka/policy.json
unset MAKA_POLICY
tmp=$(mktemp -d); cp $W/maka $tmp/maka
modprobe bridge; modprobe veth; modprobe br_netfilter 2>&1
mkdir -p /etc/cni/net.d
cat > /etc/cni/net.d/10-maka-test.conflist <<C
{"cniVersion": "0.4.0", "name": "maka-test", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "loopback"}]}
C
cat > $tmp/config.toml <<C
version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:maka"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.maka]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.maka.options]
    BinaryName = "$tmp/maka"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
C
tar -C $W/build/fixtures/rootfs -cf $tmp/rootfs.tar .
t podman import -q --change 'ENTRYPOINT ["/bin/sleep", "100000"]' $tmp/rootfs.tar localhost/pause:maka
t podman import -q $tmp/rootfs.tar localhost/busybox:latest
t podman save -q --format oci-archive -o $tmp/pause.tar localhost/pause:maka
t podman save -q --format oci-archive -o $tmp/busybox.tar localhost/busybox:latest
containerd --config $tmp/config.toml > $tmp/containerd.log 2>&1 &
CPID=$!
trap 'kill $CPID; sleep 1' EXIT
trap 'exit 1' TERM
for i in $(seq 50); do ctr version >/dev/null 2>&1 && break; sleep 0.2; done
t ctr -n k8s.io image import $tmp/pause.tar
t ctr -n k8s.io image import $tmp/busybox.tar
export CONTAINER_RUNTIME_ENDPOINT=unix:///run/containerd/containerd.sock IMAGE_SERVICE_ENDPOINT=unix:///run/containerd/containerd.sock
t $CRICTL version
grep -iE "cri|error|warn" $tmp/containerd.log | grep -v "level=info msg=\"loading plugin" | cut -c1-400 | head -30
$CRICTL version || { echo "cri-check: the CRI plugin does not answer"; exit 1; }
t $CRICTL images
cat > $tmp/pod.json <<C
{"metadata": {"name": "p1", "namespace": "default", "uid": "u1", "attempt": 0},
 "log_directory": "$tmp/logs", "linux": {}}
C
cat > $tmp/ctr.json <<C
{"metadata": {"name": "c1"}, "image": {"image": "localhost/busybox:latest"},
 "command": ["sh", "-c", "trap 'exit 0' TERM; echo started; sleep 100 & wait"], "log_path": "c1.log", "linux": {}}
C
mkdir -p $tmp/logs
for RT in ${CRI_RUNTIMES:-maka runc}; do
  echo "=========== crictl $RT"
  POD=$(t $CRICTL runp --runtime $RT $tmp/pod.json); echo "pod=$POD"
  CID=$(t $CRICTL create $POD $tmp/ctr.json $tmp/pod.json); echo "ctr=$CID"
  t $CRICTL start $CID
  t $CRICTL exec $CID sh -c 'echo exec-ok; hostname; ip addr 2>/dev/null | grep inet'
  t $CRICTL stop $CID
  t $CRICTL inspect $CID | grep -E '"state"|exitCode'
  t $CRICTL inspectp $POD | grep -E '"state"|"ip"'
  t $CRICTL rm $CID
  t $CRICTL stopp $POD
  t $CRICTL rmp $POD
  cat $tmp/logs/c1.log 2>/dev/null
  rm -rf $tmp/logs/*
done
echo "=========== containerd log"; grep -v 'level=info' $tmp/containerd.log | tail -40
