#!/usr/bin/env bats
# Podman's and containerd's default config.json, as the real programs wrote
# them (fixtures/specs/, captured by capture.sh): refused by restricted with
# the policy line that would allow each item, run under baseline with only
# root.path and process.args replaced, and every baseline default seen from
# inside the container and from its cgroup.

MAKA_POLICY=   # the default, restricted; baseline through --policy
# Podman's real 64-character container id is the maka id here (baseline binds
# only that container's own files): under bats' long temporary directory the
# monitor's socket path would pass the 107-byte limit of a unix socket.
: "${MAKA_ROOT:=/run/maka-profiles}"

load helpers
bats_require_minimum_version 1.5.0

SPECS=$BATS_TEST_DIRNAME/fixtures/specs
MiB=1048576

setup_file() {
  maka_setup_file
  echo '{"profile": "baseline"}' > "$BATS_FILE_TMPDIR/baseline.json"
}

teardown_file() {
  maka_teardown_file
  remove_host_side
}

# baseline ARGS...: maka under the built-in baseline profile.
baseline() {
  maka --policy "$BATS_FILE_TMPDIR/baseline.json" "$@"
}

# fixture_bundle NAME DIR ARGS...: DIR/config.json is fixtures/specs/NAME.json
# with root.path on the per-file rootfs copy and process.args = ARGS (with
# a full path: containerd's spec has no PATH);
# everything else as the engine wrote it.
fixture_bundle() {
  local name=$1 dir=$2; shift 2
  setup_rootfs
  mkdir -p "$dir"
  # Each argument a named string: jq would take a "-c" among --args as its own.
  local a i=0 named=()
  for a in "$@"; do named+=(--arg "a$i" "$a"); i=$((i + 1)); done
  # `ctr oci spec` says cgroupsPath "/default" (the namespace); containerd
  # itself runs each container in /<namespace>/<id>, and a shared /default
  # may hold other tests' cgroups (clients.bats runs containerd).
  jq --tab "${named[@]}" --argjson n "$#" --arg rootfs "$MAKA_ROOTFS" --arg name "$name" \
    '.root.path = $rootfs | .process.args = [range(0; $n) as $i | $ARGS.named["a\($i)"]]
     | if .linux.cgroupsPath == "/default" then .linux.cgroupsPath = "/default/maka-test-\($name)" else . end' \
    "$SPECS/$name.json" > "$dir/config.json"
}

# provide_host_side NAME: what the engine prepares on the host before it
# calls the runtime, at the paths its spec names: the files it binds (a
# 64 MiB tmpfs for /dev/shm, as Podman mounts it) and the network namespace
# it joins (ip netns add). Recorded for remove_host_side.
provide_host_side() {
  local spec=$SPECS/$1.json dst src top ns
  # Once per file: the tests share what it made (removed in teardown_file).
  [ ! -e "$BATS_FILE_TMPDIR/host-side.$1" ] || return 0
  touch "$BATS_FILE_TMPDIR/host-side.$1"
  while IFS=$'\t' read -r dst src; do
    top=$src
    while [ ! -e "$(dirname "$top")" ]; do top=$(dirname "$top"); done
    [ -e "$top" ] || echo "rm $top" >> "$BATS_FILE_TMPDIR/host-side"
    if [ "$dst" = /dev/shm ]; then
      mkdir -p "$src"
      mount -t tmpfs -o nosuid,nodev,noexec,mode=1777,size=65536k shm "$src"
      echo "umount $src" >> "$BATS_FILE_TMPDIR/host-side"
    else
      mkdir -p "$(dirname "$src")"
      case $dst in
        /etc/hostname) jq -r '.hostname' "$spec" > "$src" ;;
        /etc/hosts) echo "127.0.0.1 localhost" > "$src" ;;
        *) : > "$src" ;;
      esac
    fi
  done < <(jq -r '.mounts[] | select(.type == "bind") | [.destination, .source] | @tsv' "$spec")
  for ns in $(jq -r '.linux.namespaces[] | select(.type == "network" and .path != null) | .path' "$spec"); do
    [ "$(dirname "$ns")" = /run/netns ] || { echo "cannot provide $ns" >&2; return 1; }
    ip netns add "$(basename "$ns")"
    echo "netns $(basename "$ns")" >> "$BATS_FILE_TMPDIR/host-side"
  done
}

remove_host_side() {
  local what path
  [ -f "$BATS_FILE_TMPDIR/host-side" ] || return 0
  # Mounts and namespaces first, then the directories that held them.
  tac "$BATS_FILE_TMPDIR/host-side" | while read -r what path; do
    case $what in
      umount) umount "$path" || true ;;
      netns) ip netns del "$path" || true ;;
    esac
  done
  while read -r what path; do
    [ "$what" = rm ] && rm -rf "$path"
  done < "$BATS_FILE_TMPDIR/host-side"
  rm -f "$BATS_FILE_TMPDIR/host-side"
}

# refused_by_restricted NAME ID: `maka boundary` says restricted refuses the
# spec and baseline allows it; `maka create` under restricted fails with
# BOUNDARY_REJECTED, every item naming its field and the policy line that
# would allow it, and leaves nothing behind.
refused_by_restricted() {
  local name=$1 id=$2 b=$BATS_TEST_TMPDIR/b cg n items joined
  # What the engine prepares on the host: `maka boundary` checks the bind
  # sources and namespace paths there, as create does.
  provide_host_side "$name"
  fixture_bundle "$name" "$b" /bin/true
  run maka boundary --bundle "$b"
  [ "$status" -eq 1 ]
  [[ "$output" == *"REJECTED by profile restricted"* ]]
  # One item per field; the table wraps them at 80 columns (joined again here).
  [ -z "$(awk 'length > 80' <<<"$output")" ]
  joined=$(tr -s ' \n' ' ' <<<"$output")
  [[ "$joined" == *'process.capabilities.bounding[0]: CAP_CHOWN is not allowed by profile restricted (policy: "capabilities": [..., "CAP_CHOWN"])'* ]]
  # The engine's writable root is not refused: restricted shows it a
  # writable view of the read-only root.
  [[ "$joined" != *'root.readonly:'* ]]
  if [ "$(jq -r '.root.readonly // false' "$b/config.json")" = false ]; then
    [[ "$joined" == *'(read-only, seen writable: writes land in a tmpfs of '* ]]
  fi
  run --separate-stderr baseline boundary --bundle "$b" --format json
  [ "$status" -eq 0 ]
  jq -e '.profile == "baseline" and .verdict.allowed == true and .verdict.items == []' <<<"$output"
  run --separate-stderr maka boundary --bundle "$b" --format json
  [ "$status" -eq 1 ]
  items=$(jq '.verdict.items | length' <<<"$output")

  run maka_io create --bundle "$b" "$id"
  echo "$output"
  [ "$status" -eq 1 ]
  # The first line: the count and the first reasons, short enough for
  # conmon and the shims to pass on whole.
  [[ "${lines[0]}" =~ ^BOUNDARY_REJECTED:\ ([0-9]+)\ items\ refused\ by\ profile\ restricted:\ .+$ ]]
  n=${BASH_REMATCH[1]}
  [ "$n" -eq "$items" ]
  [ "${#lines[0]}" -le 200 ]
  # Then one line per capability (naming its sets) or other item: fewer
  # lines than items, as each capability is in several sets.
  [ "${#lines[@]}" -le $((n + 1)) ]
  # Every line: its field, what is wrong, the policy line that allows it.
  for line in "${lines[@]:1}"; do
    [[ "$line" =~ ^\ \ [a-z][a-zA-Z.]*(\[[^]]+\])?(\.[a-z]+)?:\ .+\ \(policy:\ \"[a-zA-Z]+\":\ .+\)$ ]] ||
      { echo "item without field or policy line: $line" >&2; return 1; }
    [[ "$line" != *"process.capabilities.bounding["* ]] ||
      { echo "a line per capability set: $line" >&2; return 1; }
  done
  assert_nothing_left "$id"
  cg=$(jq -r '.linux.cgroupsPath // empty' "$b/config.json")
  [ -z "$cg" ] || [ ! -e "/sys/fs/cgroup/$cg" ]
}

# The probe: everything a baseline container shows from inside, in one run.
PROBE='
echo env-begin; tr "\0" "\n" < /proc/1/environ; echo env-end
export PATH=/usr/bin:/bin
grep -E "^(CapEff|CapBnd|NoNewPrivs):" /proc/self/status
if touch /.maka-probe 2>/dev/null; then echo "root: writable"; rm -f /.maka-probe
else echo "root: $(touch /.maka-probe 2>&1)"; fi
df -k | sed "s/^/df: /"
echo "ifaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")"
echo "netns: $(readlink /proc/self/ns/net)"
u=$(unshare -U true 2>&1); echo "unshare: $? $u"
if mknod /.maka-node b 7 0 2>/dev/null; then echo "mknod: made"; rm -f /.maka-node; else echo "mknod: refused"; fi
echo probe-end
'

# probe_under_baseline NAME ID: creates the container under baseline, reads
# its cgroup (CGROUP: memory.max memory.swap.max pids.max cpu.max), starts
# it and collects the probe's output (PROBE_OUT). The end of the probe is
# watched in its output: polling `maka state` costs seconds per round here.
probe_under_baseline() {
  local name=$1 id=$2 b=$BATS_TEST_TMPDIR/b out=$BATS_TEST_TMPDIR/probe.out d i
  fixture_bundle "$name" "$b" /bin/sh -c "$PROBE"
  "$MAKA_BINARY" --root "$MAKA_ROOT" --policy "$BATS_FILE_TMPDIR/baseline.json" \
    create --bundle "$b" "$id" </dev/null >"$out" 2>&1 || { cat "$out"; return 1; }
  d=$(cgroup_dir_of "$id")
  CGROUP="$(cat "$d/memory.max") $(cat "$d/memory.swap.max") $(cat "$d/pids.max") $(cat "$d/cpu.max")"
  baseline start "$id"
  for ((i = 0; i < 600; i++)); do
    grep -qx probe-end "$out" && break
    sleep 0.2
  done
  PROBE_OUT=$(cat "$out")
  baseline delete --force "$id"
  echo "$PROBE_OUT"
  echo "cgroup: $CGROUP"
  [[ "$PROBE_OUT" == *probe-end* ]]
}

CAP_NAMES=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
  LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER
  SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE
  SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP
  MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
  CHECKPOINT_RESTORE)

# decode_caps HEX: the capability names of a /proc/PID/status mask, sorted.
decode_caps() {
  local v=$((16#$1)) i
  for ((i = 0; i < 64; i++)); do
    ((v >> i & 1)) || continue
    if [ "$i" -lt "${#CAP_NAMES[@]}" ]; then echo "CAP_${CAP_NAMES[$i]}"; else echo "CAP_#$i"; fi
  done | LC_ALL=C sort | tr '\n' ' '
}

# status_field NAME: the value of NAME: in the probe's /proc/self/status lines.
status_field() {
  sed -n "s/^$1:[[:space:]]*//p" <<<"$PROBE_OUT"
}

# to_kib SIZE: a tmpfs size= value in KiB.
to_kib() {
  local v=$1
  case $v in
    *k|*K) echo "${v%?}" ;;
    *m|*M) echo $((${v%?} * 1024)) ;;
    *g|*G) echo $((${v%?} * 1024 * 1024)) ;;
    *) echo $((v / 1024)) ;;
  esac
}

# expect NAME: what the spec NAME declares, and baseline's defaults where it
# is silent, as KEY=VALUE lines (one jq run: each costs ~1 s here).
expect() {
  jq -r '
    "capeff=" + (.process.capabilities.effective | sort | map(. + " ") | add),
    "capbnd=" + (.process.capabilities.bounding | sort | map(. + " ") | add),
    "nnp=" + (if .process.noNewPrivileges then "1" else "0" end),
    "readonly=" + (.root.readonly // false | tostring),
    "netns=" + ([.linux.namespaces[] | select(.type == "network") | .path // ""] | first),
    (.linux.resources // {}) as $r | ($r.memory.limit // 1073741824) as $m
    | "cgroup=\($m) \(if $r.memory.swap == null then 0 elif $r.memory.swap < 0 then "max" else $r.memory.swap - $m end)"
      + " \($r.pids.limit // 256)"
      + " \(if $r.cpu.quota == null then "200000 100000" else "\($r.cpu.quota) \($r.cpu.period // 100000)" end)",
    (.mounts[] | select(.type == "tmpfs" and .destination != "/dev")
      | "tmpfs=" + .destination + " " + (.options[] | select(startswith("size=")) | ltrimstr("size="))),
    ((.process.env // []) + (if any(.process.env[]?; startswith("HOME=")) then [] else ["HOME=/root"] end)
      | .[] | "env=" + .)' "$SPECS/$1.json"
}

# expected KEY: the value(s) of KEY in EXPECT.
expected() {
  sed -n "s/^$1=//p" <<<"$EXPECT"
}

# assert_baseline_defaults NAME: PROBE_OUT and CGROUP show what the spec
# NAME declares, and baseline's defaults where it is silent.
assert_baseline_defaults() {
  local got dst size
  EXPECT=$(expect "$1")
  # Capabilities: exactly the spec's sets.
  got=$(decode_caps "$(status_field CapEff)")
  [ "$got" = "$(expected capeff)" ] || { echo "CapEff: $got, want $(expected capeff)" >&2; return 1; }
  [ "$(decode_caps "$(status_field CapBnd)")" = "$(expected capbnd)" ]
  # no_new_privs as the spec says.
  [ "$(status_field NoNewPrivs)" = "$(expected nnp)" ]
  # The root is writable only if the spec asks.
  if [ "$(expected readonly)" = true ]; then
    [[ "$PROBE_OUT" == *"root: touch: /.maka-probe: Read-only file system"* ]]
  else
    [[ "$PROBE_OUT" == *"root: writable"* ]]
  fi
  # Each tmpfs the spec declares has its size; baseline adds none.
  while read -r dst size; do
    grep -qE "^df: [^ ]+ +$(to_kib "$size") .* $dst\$" <<<"$PROBE_OUT" ||
      { echo "no tmpfs of $size at $dst" >&2; return 1; }
  done < <(expected tmpfs)
  ! grep -qE '^df: .* /(tmp|maka/work)$' <<<"$PROBE_OUT"
  # Network: a namespace of its own or the declared one; only loopback.
  [[ "$PROBE_OUT" == *"ifaces: lo "* ]]
  # Environment, as the runtime exec'd the process (/proc/1/environ, before
  # sh adds its own): what process.env declares, and libcontainer's HOME
  # where the spec has none.
  got=$(sed -n '/^env-begin$/,/^env-end$/p' <<<"$PROBE_OUT" | sed '1d;$d' | LC_ALL=C sort)
  [ "$got" = "$(expected env | LC_ALL=C sort)" ] || { echo "env: got [$got], want [$(expected env)]" >&2; return 1; }
  # No nested user namespaces.
  [[ "$PROBE_OUT" =~ unshare:\ [1-9] ]]
  # No device node made inside, even with CAP_MKNOD: runc's implicit
  # "mknod any device" rule is not in the device cgroup (specconv). A loop
  # device (b 7:0): c 1:3 would pass, as /dev/null's own rwm rule allows m.
  [[ "$PROBE_OUT" == *"mknod: refused"* ]]
  # The cgroup: the spec's limits, else 1 GiB, no swap, 256 pids, 2 CPUs.
  [ "$CGROUP" = "$(expected cgroup)" ] || { echo "cgroup: got $CGROUP, want $(expected cgroup)" >&2; return 1; }
}

@test "containerd's default spec: maka boundary refuses it under restricted with the policy lines that allow it, allows it under baseline; create leaves nothing" {
  refused_by_restricted containerd pf-ctr-rej
}

@test "podman's default spec: maka boundary refuses it under restricted with the policy lines that allow it, allows it under baseline; create leaves nothing" {
  refused_by_restricted podman pf-pod-rej
  [[ "$output" == *'(policy: "networkModes": [..., "netns"])'* ]]
  [[ "$output" == *'linux.sysctl["net.ipv4.ping_group_range"]: the sysctl net.ipv4.ping_group_range is not allowed by profile restricted (policy: "sysctls": [..., "net.ipv4.ping_group_range"])'* ]]
  [[ "$output" == *'linux.resources.pids.limit: 2048 pids exceed the largest allowed by profile restricted (1024) (policy: "maxLimits": {"pids": 2048})'* ]]
  [[ "$output" =~ mounts\[5\]\.source:\ binding\ the\ host\ path\ /run/containers/.*\(policy:\ \"bindPaths\" ]]
}

@test "containerd's default spec runs under baseline: its capabilities, no_new_privs, writable root, 64 MiB tmpfs, closed network, declared env, no user namespaces, default limits in the cgroup" {
  probe_under_baseline containerd pf-ctr
  assert_baseline_defaults containerd
  # A network namespace of its own, not the host's.
  [ -z "$(expected netns)" ]
  [[ "$PROBE_OUT" =~ netns:\ net:\[([0-9]+)\] ]]
  [ "${BASH_REMATCH[1]}" != "$(stat -L -c %i /proc/self/ns/net)" ]
  [ "$CGROUP" = "$((1024 * MiB)) 0 256 200000 100000" ]
}

# podman_id: the id of the container podman's spec was written for (its
# cgroup is libpod-<id>): its files are bound from that container's userdata.
podman_id() {
  jq -r '.linux.cgroupsPath | sub(".*/libpod-"; "")' "$SPECS/podman.json"
}

@test "podman's default spec runs under baseline: it joins the declared network namespace, with its capabilities, binds, pids limit and the default memory, swap and cpu limits" {
  provide_host_side podman
  probe_under_baseline podman "$(podman_id)"
  assert_baseline_defaults podman
  # The network namespace is the one at the declared path.
  ns=$(expected netns)
  [ -n "$ns" ]
  [[ "$PROBE_OUT" =~ netns:\ net:\[([0-9]+)\] ]]
  [ "${BASH_REMATCH[1]}" = "$(stat -L -c %i "$ns")" ]
  # /dev/shm is the 64 MiB tmpfs Podman binds there.
  grep -qE '^df: [^ ]+ +65536 .* /dev/shm$' <<<"$PROBE_OUT"
  [ "$CGROUP" = "$((1024 * MiB)) 0 2048 200000 100000" ]
}

@test "baseline binds only this container's own files: podman's userdata of another container id is refused at create, naming each bind; nothing left" {
  provide_host_side podman
  local b=$BATS_TEST_TMPDIR/b
  fixture_bundle podman "$b" /bin/true
  # The id is not the one podman's files belong to.
  run baseline create --bundle "$b" pf-pod-other
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *BOUNDARY_REJECTED* ]]
  [[ "$output" == *"mounts[5].source: binding the host path /run/containers/storage/overlay-containers/$(podman_id)/userdata/resolv.conf is not allowed by profile baseline for container pf-pod-other"* ]]
  [[ "$output" == *"mounts[7].source: binding the host path /var/lib/containers/storage/overlay-containers/$(podman_id)/userdata/shm"* ]]
  assert_nothing_left pf-pod-other
}

@test "baseline refuses other pods' volumes, other tasks' roots, shim sockets, snapshots and runtime state; binds its own pod's files (maka boundary)" {
  local b=$BATS_TEST_TMPDIR/b src i=0 filter=
  local srcs=(
    /var/lib/kubelet/pods/pod-victim/volumes/kubernetes.io~secret/token
    /run/containerd/io.containerd.runtime.v2.task/k8s.io/victim/rootfs
    /run/containerd/s/maka-test-shim
    /run/containerd/runc/k8s.io/victim
    /var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs
    /var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/sb-victim/hosts
    /var/lib/kubelet/pods/pod-mine/volumes/kubernetes.io~empty-dir/cache
    /var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/sb-mine/hosts
  )
  for src in "${srcs[@]}"; do
    [ -e "$src" ] || { mkdir -p "$(dirname "$src")"; : >"$src"; echo "$src" >>"$BATS_TEST_TMPDIR/made"; }
    filter+=" | .mounts += [{destination: \"/m$i\", type: \"bind\", source: \"$src\", options: [\"rbind\", \"rw\"]}]"
    i=$((i + 1))
  done
  fixture_bundle containerd "$b" /bin/true
  update_config "$b" '.annotations = {"io.kubernetes.cri.sandbox-id": "sb-mine", "io.kubernetes.cri.sandbox-uid": "pod-mine"}'"$filter"
  run --separate-stderr baseline boundary --bundle "$b" --format json
  xargs rm -f <"$BATS_TEST_TMPDIR/made"
  echo "$output"
  [ "$status" -eq 1 ]
  n=$(jq '.mounts | length' "$b/config.json")
  # The six foreign sources are refused, each by its field; the pod's own two are not.
  for i in 0 1 2 3 4 5; do
    jq -e --arg f "mounts[$((n - 8 + i))].source" '[.verdict.items[] | select(.field == $f)] | length == 1' <<<"$output"
  done
  for i in 6 7; do
    jq -e --arg f "mounts[$((n - 8 + i))].source" '[.verdict.items[] | select(.field == $f)] | length == 0' <<<"$output"
  done
  jq -e '.verdict.items | length == 6' <<<"$output"
}

@test "/dev/console (c 5:1) is not a standard device: a linux.devices entry is refused under both profiles; containerd's rwm rule for it is dropped, never given (mknod c 5:1 refused inside); nothing left" {
  local b=$BATS_TEST_TMPDIR/b
  fixture_bundle containerd "$b" /bin/true
  update_config "$b" '.linux.devices = [{path: "/dev/console", type: "c", major: 5, minor: 1}]'
  for pol in baseline restricted; do
    if [ $pol = baseline ]; then run baseline create --bundle "$b" pf-console; else run maka create --bundle "$b" pf-console; fi
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"linux.devices[0]: the device /dev/console is not allowed by profile $pol"* ]]
    assert_nothing_left pf-console
  done
  # containerd's default rules allow c 5:1 rwm: the container runs, the
  # Boundary shows the rule dropped, and the device cgroup refuses to
  # make the node (the null device's rule, given, lets mknod work).
  fixture_bundle containerd "$b" /bin/sh -c 'mknod /dev/shm/n c 1 3 && echo NULL-MADE; mknod /dev/shm/c c 5 1 && echo CONSOLE-MADE; echo done'
  update_config "$b" '.linux.resources.devices += [{allow: true, type: "c", major: 5, minor: 1, access: "rwm"}]'
  run --separate-stderr baseline boundary --bundle "$b" --format json
  [ "$status" -eq 0 ]
  jq -e '[.cgroup.devicesDropped[] | select(.type == "c" and .major == 5 and .minor == 1)] | length > 0' <<<"$output"
  jq -e '[.cgroup.devices[] | select(.allow and .type == "c" and .major == 5 and (.minor == 1 or .minor == null))] | length == 0' <<<"$output"
  run baseline run --bundle "$b" pf-console
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *NULL-MADE* ]]
  [[ "$output" != *CONSOLE-MADE* ]]
  [[ "$output" == *done* ]]
  assert_nothing_left pf-console
}

@test "cgroupsPath never inside a cgroup that holds processes: a second sandbox inside the first's cgroup is refused at create; beside it, allowed" {
  local b=$BATS_TEST_TMPDIR/b cg
  fixture_bundle containerd "$b" /bin/sleep 100
  cg=$(jq -r .linux.cgroupsPath "$b/config.json")
  baseline create --bundle "$b" pf-cg-a
  update_config "$b" '.linux.cgroupsPath = $cg' --arg cg "$cg/inside"
  run baseline create --bundle "$b" pf-cg-b
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"linux.cgroupsPath: $cg/inside is inside $cg, which holds "*" process(es)"* ]]
  [ ! -e "/sys/fs/cgroup$cg/inside" ]
  # (assert_nothing_left counts every waiting maka init: pf-cg-a's first.)
  baseline delete --force pf-cg-a
  assert_nothing_left pf-cg-b
  update_config "$b" '.linux.cgroupsPath = $cg' --arg cg "${cg}-beside"
  baseline create --bundle "$b" pf-cg-c
  baseline delete --force pf-cg-c
}
