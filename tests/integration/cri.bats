#!/usr/bin/env bats
# Kubernetes' way in: containerd 1.6's CRI plugin with the runtime handlers
# "runc" and "maka" (the runc v2 shim, BinaryName = maka), driven by crictl
# (built from the Go module proxy by `make crictl`, passed as MAKA_CRICTL) as
# the kubelet would: runp, create, start, exec, stop, inspect, inspectp, rm,
# stopp, rmp. Each phase runs for both handlers, side by side; runc's
# transcript is asserted, maka's must be the same. Under the restricted
# policy maka refuses the pod (stricter by design, asserted).
#
# The configuration comes out of docs/kubernetes.md (the block after each
# "file:" line) and the policy out of docs/clients.md.
#
# Costs (emulated guest): a crictl step takes 0.5-15 s, more under load,
# so the two pods (one per handler) and their containers are shared by the
# tests, in order. Each step's time goes to build/cri-times.txt.

load helpers
bats_require_minimum_version 1.5.0

RUNTIMES="runc maka"
# The runc v2 shim's runtime root for the CRI plugin's namespace (k8s.io).
SHIM_ROOT=/run/containerd/runc/k8s.io

# cri RUNTIME ARGS...: crictl against the guest's containerd, timed. The
# gRPC timeout is generous: a step takes tens of seconds under load.
cri() {
  local rt=$1
  shift
  timed "$rt $1" timeout 200 "$CR/bin/crictl" --config "$CR/crictl.yaml" --timeout 180s "$@"
}

# runtime_json RUNTIME ID: the container's state as the handler's own binary
# reports it under the shim's root (proves which runtime holds it).
runtime_json() {
  case $1 in
    runc) /usr/sbin/runc --root "$SHIM_ROOT" state "$2" ;;
    maka) "$CR/bin/maka" --root "$SHIM_ROOT" --state-dir /var/lib/maka state "$2" ;;
  esac
}

# runtime_state RUNTIME ID: its status there, or "absent".
runtime_state() {
  local state
  state=$(runtime_json "$1" "$2" 2>/dev/null) || { echo absent; return 0; }
  jq -r .status <<<"$state"
}

# runtime_cgroup RUNTIME ID: the cgroup (v2 path) of the container's init.
runtime_cgroup() {
  local pid
  pid=$(runtime_json "$1" "$2" | jq -r .pid) || return 1
  sed -n 's/^0:://p' "/proc/$pid/cgroup"
}

# nothing_left RUNTIME ID...: no state under the shim's root, no cgroup named
# ID; for maka also no contract record and no waiting "maka init"
# (helpers.bash's assert_nothing_left with containerd's paths).
nothing_left() {
  local rt=$1 id
  shift
  for id in "$@"; do
    case $rt in
      runc)
        [ ! -e "$SHIM_ROOT/$id" ] || { echo "runc state of $id left" >&2; return 1; }
        [ -z "$(find /sys/fs/cgroup -type d -name "$id")" ] || { echo "cgroup $id left" >&2; return 1; }
        ;;
      maka)
        MAKA_BINARY=$CR/bin/maka MAKA_ROOT=$SHIM_ROOT MAKA_STATE_DIR=/var/lib/maka \
          assert_nothing_left "$id" || return 1
        ;;
    esac
  done
}

# pod_config RUNTIME: the documented pod.json, with a name, uid, cgroup
# parent and log directory of the handler's own (two pods of one name clash).
pod_config() {
  mkdir -p "$CR/logs/$1"
  doc_block kubernetes.md pod.json | jq --arg rt "$1" --arg logs "$CR/logs/$1" \
    '.metadata.name += "-" + $rt | .metadata.uid += "-" + $rt | .log_directory = $logs
     | .linux.cgroup_parent += "-" + $rt'
}

# add_blob DIR FILE: move FILE into DIR's OCI blob store, print "DIGEST SIZE".
add_blob() {
  local sum
  sum=$(sha256sum "$2" | cut -d' ' -f1)
  mv "$2" "$1/blobs/sha256/$sum"
  echo "sha256:$sum $(stat -c %s "$1/blobs/sha256/$sum")"
}

# image_archive OUT REF...: an OCI archive of the busybox fixture (one
# uncompressed layer, command /bin/sleep 100000, which suits a sandbox
# image) named REF... (ctr image import reads io.containerd.image.name).
# Offline and with no engine: the guest cannot pull.
image_archive() {
  local out=$1 d=$CR/oci layer config manifest arch ref sep= manifests=
  shift
  case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
  rm -rf "$d"
  mkdir -p "$d/blobs/sha256"
  tar -C "$MAKA_ROOTFS" -cf "$d/layer" .
  layer=$(add_blob "$d" "$d/layer")
  printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["/bin/sleep","100000"]},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
    "$arch" "${layer% *}" > "$d/config"
  config=$(add_blob "$d" "$d/config")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%s}]}' \
    "${config% *}" "${config#* }" "${layer% *}" "${layer#* }" > "$d/manifest"
  manifest=$(add_blob "$d" "$d/manifest")
  for ref in "$@"; do
    manifests+=$(printf '%s{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"annotations":{"io.containerd.image.name":"%s"}}' \
      "$sep" "${manifest% *}" "${manifest#* }" "$ref")
    sep=,
  done
  printf '{"schemaVersion":2,"manifests":[%s]}' "$manifests" > "$d/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' > "$d/oci-layout"
  tar -C "$d" -cf "$out" oci-layout index.json blobs
}

setup_file() {
  # Starts containerd on the default socket, mounts a tmpfs on its storage,
  # writes /etc/maka/policy.json and a CNI network: only in the test guest.
  if [ ! -e /run/vmrun/cmd ]; then
    skip "starts containerd and writes /etc/maka/policy.json: runs only in the test guest (tests/vm)"
  fi
  : "${MAKA_CRICTL:=$MAKA_REPO/build/tools/crictl}"
  # `make integration` builds crictl and installs the packages (make deps):
  # their absence is a failure, not a reason to skip.
  [ -x "$MAKA_CRICTL" ] || { echo "cri.bats: $MAKA_CRICTL missing: run 'make crictl'" >&2; return 1; }
  export PATH=$PATH:/usr/sbin:/sbin
  local c
  for c in containerd ctr containerd-shim-runc-v2 /usr/sbin/runc /usr/lib/cni/bridge; do
    command -v "$c" >/dev/null || { echo "cri.bats: $c missing: run 'make deps'" >&2; return 1; }
  done
  local setup_start
  setup_start=$(date +%s%N)
  maka_setup_file
  export CR=$BATS_FILE_TMPDIR/cri
  export MAKA_TIMES=$MAKA_REPO/build/cri-times.txt
  mkdir -p "$CR/bin" "$(dirname "$MAKA_TIMES")"
  : > "$MAKA_TIMES"
  # maka and crictl from the guest's tmpfs: the shared work tree is read over
  # uncached 9p at every exec.
  cp "$MAKA_BINARY" "$CR/bin/maka"
  cp "$MAKA_CRICTL" "$CR/bin/crictl"

  # clients.bats, if it ran before in this guest, stopped its containerd
  # without waiting for it.
  local i
  for i in $(seq 1 150); do
    pgrep -x containerd >/dev/null || break
    sleep 0.2
  done
  ! pgrep -x containerd >/dev/null || { echo "cri.bats: another containerd is still running" >&2; return 1; }
  mkdir -p /var/lib/containerd
  mountpoint -q /var/lib/containerd || mount -t tmpfs tmpfs /var/lib/containerd

  mkdir -p /etc/maka /etc/cni/net.d
  doc_block clients.md /etc/maka/policy.json > "$CR/policy.json"
  cp "$CR/policy.json" /etc/maka/policy.json
  doc_block kubernetes.md /etc/cni/net.d/10-maka.conflist > /etc/cni/net.d/10-maka.conflist
  # Debian's CNI plugins are in /usr/lib/cni; containerd looks in /opt/cni/bin.
  if [ ! -e /opt/cni/bin ]; then
    mkdir -p /opt/cni
    ln -s /usr/lib/cni /opt/cni/bin
    touch "$CR/made-opt-cni"
  fi
  modprobe bridge
  modprobe veth
  doc_block kubernetes.md /etc/crictl.yaml > "$CR/crictl.yaml"
  [ -s "$CR/crictl.yaml" ]
  doc_block kubernetes.md config.toml | sed "s#/usr/local/bin/maka#$CR/bin/maka#" > "$CR/config.toml"
  grep -q "BinaryName = \"$CR/bin/maka\"" "$CR/config.toml"
  doc_block kubernetes.md container.json > "$CR/container.json"
  [ -s "$CR/container.json" ]

  # The sandbox image containerd would pull, and the containers' image.
  local pause
  pause=$(containerd --config "$CR/config.toml" config dump | awk -F'"' '/^ *sandbox_image = / { print $2 }')
  [ -n "$pause" ]
  image_archive "$CR/images.tar" "$pause" "$(jq -r .image.image "$CR/container.json")"

  # As on a node: no MAKA_* variables, the policy file governs.
  env -i PATH="$PATH" containerd --config "$CR/config.toml" </dev/null >"$CR/containerd.log" 2>&1 3>&- &
  echo $! > "$CR/containerd.pid"
  for i in $(seq 1 150); do
    ctr version >/dev/null 2>&1 && break
    sleep 0.2
  done
  timed "ctr image import" ctr -n k8s.io image import "$CR/images.tar"
  # The CRI plugin answers (it is skipped when its config is wrong).
  cri - version
  echo "setup_file $((($(date +%s%N) - setup_start) / 1000000)) ms" >> "$MAKA_TIMES"
}

teardown_file() {
  [ -n "${CR:-}" ] || return 0
  local f start
  start=$(date +%s%N)
  # Pods a failed test left behind: rmp -f stops and removes them.
  for f in "$CR"/pod.*.id; do
    if [ -e "$f" ]; then cri - rmp -f "$(cat "$f")" >/dev/null 2>&1 || true; fi
  done
  if [ -s "$CR/containerd.pid" ]; then
    local pid i
    pid=$(cat "$CR/containerd.pid")
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
  fi
  rm -f /etc/maka/policy.json /etc/cni/net.d/10-maka.conflist
  # The pods' cgroup parents: the kubelet's to remove, not the runtime's.
  rmdir /sys/fs/cgroup/kubepods/pod-demo-uid-* /sys/fs/cgroup/kubepods 2>/dev/null || true
  [ ! -e "$CR/made-opt-cni" ] || rm -f /opt/cni/bin
  maka_teardown_file
  echo "teardown_file $((($(date +%s%N) - start) / 1000000)) ms" >> "$MAKA_TIMES"
}

teardown() {
  # A test that switches the policy gets the documented one back.
  [ -z "${CR:-}" ] || cp "$CR/policy.json" /etc/maka/policy.json
}

# side_by_side PHASE EXPECTED: run PHASE (a function printing a transcript)
# for runc, then for maka; runc's transcript must be EXPECTED and maka's the
# same. Both run even if the first fails, so one run shows both.
side_by_side() {
  local phase=$1 want=$2 rt rc out ok=0
  for rt in $RUNTIMES; do
    rc=0
    out=$($phase $rt 2>"$CR/stderr") || rc=$?
    printf -- '--- %s (exit %d):\n%s\n' "$rt" "$rc" "$out"
    [ ! -s "$CR/stderr" ] || { echo "stderr:"; cat "$CR/stderr"; }
    if [ "$rc" -ne 0 ] || [ "$out" != "$want" ]; then
      echo "--- $rt: not the expected transcript"
      ok=1
    fi
  done
  [ "$ok" -eq 0 ] || { printf -- '--- expected:\n%s\n' "$want"; return 1; }
}

@test "docs: kubernetes.md's config.toml is the one clients.md gives containerd" {
  [ -n "$(doc_block kubernetes.md config.toml)" ]
  [ "$(doc_block kubernetes.md config.toml)" = "$(doc_block clients.md config.toml)" ]
}

# phase_runp RUNTIME: runp, then inspectp's state and IP, and the state the
# handler's binary reports for the sandbox container.
phase_runp() {
  local rt=$1 pod st ip handler
  pod_config "$rt" > "$CR/pod.$rt.json"
  pod=$(cri "$rt" runp --runtime "$rt" "$CR/pod.$rt.json") || return 1
  echo "$pod" > "$CR/pod.$rt.id"
  read -r st ip handler < <(cri "$rt" inspectp -o go-template \
    --template '{{.status.state}} {{.status.network.ip}} {{.status.runtimeHandler}}' "$pod")
  echo "$ip" > "$CR/pod.$rt.ip"
  echo "runp: $st, handler ${handler/$rt/RT}"
  case $ip in 10.88.*.*) echo "ip: in 10.88.0.0/16" ;; *) echo "ip: '$ip'" ;; esac
  echo "runtime: $(runtime_state "$rt" "$pod")"
}

@test "crictl runp: the pod sandbox is ready, held by the handler's runtime, with an IP from the CNI bridge; runc and maka alike" {
  side_by_side phase_runp "runp: SANDBOX_READY, handler RT
ip: in 10.88.0.0/16
runtime: running"
}

# phase_create_start RUNTIME: create, inspect, start, inspect, and where the
# handler's runtime holds the container.
phase_create_start() {
  local rt=$1 pod cid cg
  pod=$(cat "$CR/pod.$rt.id") || return 1
  cid=$(cri "$rt" create "$pod" "$CR/container.json" "$CR/pod.$rt.json") || return 1
  echo "$cid" > "$CR/ctr.$rt.id"
  echo "create: $(cri "$rt" inspect -o go-template --template '{{.status.state}}' "$cid")"
  # The CRI plugin makes the runtime's container (the task) at start.
  echo "runtime: $(runtime_state "$rt" "$cid")"
  cri "$rt" start "$cid" >/dev/null || return 1
  echo "start: $(cri "$rt" inspect -o go-template --template '{{.status.state}}' "$cid")"
  echo "runtime: $(runtime_state "$rt" "$cid")"
  cg=$(runtime_cgroup "$rt" "$cid")
  cg=${cg//$cid/CID}
  echo "cgroup: ${cg//$rt/RT}"
}

@test "crictl create and start: the container is created, then running, held by the handler's runtime in a cgroup under the pod's cgroup_parent; runc and maka alike" {
  side_by_side phase_create_start "create: CONTAINER_CREATED
runtime: absent
start: CONTAINER_RUNNING
runtime: running
cgroup: /kubepods/pod-demo-uid-RT/CID"
}

# phase_exec RUNTIME: exec (streamed, as kubectl exec) printing what the
# container sees, with the pod's IP replaced by POD-IP; exec --sync's status.
phase_exec() {
  local rt=$1 cid ip out
  cid=$(cat "$CR/ctr.$rt.id") || return 1
  ip=$(cat "$CR/pod.$rt.ip")
  out=$(cri "$rt" exec "$cid" sh -c 'echo exec-ok; hostname
    cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/cpu.max
    ip -4 -o addr show dev eth0 | awk "{ print \$2, \$4 }"') || return 1
  echo "${out//$ip\//POD-IP/}"
  # A non-zero status: crictl fails and names it, with the command's stderr.
  out=$(cri "$rt" exec --sync "$cid" sh -c 'echo to-stderr >&2; exit 3' 2>&1)
  echo "exec-sync: crictl status $?, $(grep -o 'exited with [0-9]*: .*' <<<"$out")"
}

@test "crictl exec: the output comes back, eth0 holds the pod's IP, the hostname is the pod's, resources are in the cgroup files, exec --sync reports the exit status and stderr; runc and maka alike" {
  side_by_side phase_exec "exec-ok
demo
67108864
50000 100000
eth0 POD-IP/16
exec-sync: crictl status 1, exited with 3: to-stderr"
}

# phase_stop RUNTIME: stop with a grace period (SIGTERM, which the container
# traps), inspect, and the container's line in the CRI log file.
phase_stop() {
  local rt=$1 cid
  cid=$(cat "$CR/ctr.$rt.id") || return 1
  cri "$rt" stop --timeout 30 "$cid" >/dev/null || return 1
  echo "stop: $(cri "$rt" inspect -o go-template --template '{{.status.state}} {{.status.exitCode}} {{.status.reason}}' "$cid")"
  echo "log: $(sed -n 's/^[^ ]* stdout F //p' "$CR/logs/$rt/job.log")"
}

@test "crictl stop: SIGTERM ends the container with exit code 0, its output is in the CRI log; runc and maka alike" {
  side_by_side phase_stop "stop: CONTAINER_EXITED 0 Completed
log: started"
}

# phase_remove RUNTIME: rm, stopp, inspectp, rmp, the lists, and what the
# runtime left behind.
phase_remove() {
  local rt=$1 pod cid
  pod=$(cat "$CR/pod.$rt.id") || return 1
  cid=$(cat "$CR/ctr.$rt.id") || return 1
  cri "$rt" rm "$cid" >/dev/null || return 1
  echo "rm: $(cri "$rt" ps -a -q --id "$cid" | wc -l) container(s) listed"
  cri "$rt" stopp "$pod" >/dev/null || return 1
  echo "stopp: $(cri "$rt" inspectp -o go-template --template '{{.status.state}}' "$pod")"
  cri "$rt" rmp "$pod" >/dev/null || return 1
  rm -f "$CR/pod.$rt.id"
  echo "rmp: $(cri "$rt" pods -q --id "$pod" | wc -l) pod(s) listed"
  nothing_left "$rt" "$pod" "$cid" && echo "left: nothing"
}

@test "crictl rm, stopp and rmp: container and pod are gone, nothing of the runtime's is left; runc and maka alike" {
  side_by_side phase_remove "rm: 0 container(s) listed
stopp: SANDBOX_NOTREADY
rmp: 0 pod(s) listed
left: nothing"
  # and the shim's root holds no container of either runtime
  [ -z "$(/usr/sbin/runc --root "$SHIM_ROOT" list -q)" ]
  [ -z "$("$CR/bin/maka" --root "$SHIM_ROOT" --state-dir /var/lib/maka list -q)" ]
}

@test "containerd logged no error while the CRI plugin drove runc and maka" {
  # Not counted: containerd's start-up sweep of a namespace's task
  # directory that an earlier file's containerd (same guest) never made
  # (seen once: 'cleanup working directory in namespace ... k8s.io: no
  # such file or directory'); it is about no runtime.
  grep 'level=error' "$CR/containerd.log" || true
  run bash -c 'grep "level=error" "$1" | grep -v "msg=\"cleanup working directory in namespace\""' _ "$CR/containerd.log"
  [ "$status" -eq 1 ]
}

@test "crictl runp under the restricted policy: maka's BOUNDARY_REJECTED and its reasons reach crictl's output, nothing is left (runc, which reads no maka policy, ran the same pod: stricter by design)" {
  echo '{"profile": "restricted"}' > /etc/maka/policy.json
  pod_config maka-restricted > "$CR/pod.restricted.json"
  # maka's records, owners and scaffolds now (the pods above left history;
  # lock files are kept by design: docs/security.md)
  local before after
  before=$(find /var/lib/maka -not -path '*/history*' -not -name '*.lock' 2>/dev/null | sort)
  run cri maka runp --runtime maka "$CR/pod.restricted.json"
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"BOUNDARY_REJECTED: "[0-9]*" items refused by profile restricted: "* ]]
  [[ "$output" != *"unexpected end of input"* ]]
  [[ "$output" == *"process.capabilities: CAP_"*" (bounding"*") is not allowed by profile restricted"* ]]
  [[ "$output" == *"linux.namespaces["*"].path: joining the network namespace /var/run/netns/cni-"*"is not allowed by profile restricted"* ]]
  # containerd removed the failed sandbox; maka kept nothing.
  [ -z "$(cri maka pods -q --name demo-maka-restricted)" ]
  [ -z "$("$CR/bin/maka" --root "$SHIM_ROOT" --state-dir /var/lib/maka list -q)" ]
  after=$(find /var/lib/maka -not -path '*/history*' -not -name '*.lock' 2>/dev/null | sort)
  diff <(echo "$before") <(echo "$after")
  [ -z "$(pgrep -fx -- "$CR/bin/maka init")" ]
}

@test "crictl under baseline: a container's own pod files are bound (above), another sandbox's are refused at start, naming the mount; nothing is left" {
  local victim=/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/maka-test-victim pod cid
  mkdir -p "$victim"
  echo "10.0.0.1 victim" > "$victim/hosts"
  pod_config maka-own > "$CR/pod.own.json"
  pod=$(cri maka runp --runtime maka "$CR/pod.own.json")
  jq --arg v "$victim" '.metadata.name = "intruder" | .mounts = [{container_path: "/v", host_path: $v}]' \
    "$CR/container.json" > "$CR/container.own.json"
  cid=$(cri maka create "$pod" "$CR/container.own.json" "$CR/pod.own.json")
  run cri maka start "$cid"
  echo "$output"
  cri maka rm -f "$cid" >/dev/null || true
  cri maka stopp "$pod" >/dev/null
  cri maka rmp "$pod" >/dev/null
  rm -rf "$victim"
  [ "$status" -ne 0 ]
  [[ "$output" == *"BOUNDARY_REJECTED"* ]]
  [[ "$output" == *"binding the host path $victim is not allowed by profile baseline"* ]]
  [ -z "$("$CR/bin/maka" --root "$SHIM_ROOT" --state-dir /var/lib/maka list -q)" ]
  [ -z "$(pgrep -fx -- "$CR/bin/maka init")" ]
}
