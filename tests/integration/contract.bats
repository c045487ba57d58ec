#!/usr/bin/env bats
# The contract is the sandbox: what `maka boundary` shows is what the kernel
# gets. Each config.json bypass an outside try found is tried here for real:
# either it is refused (with its field, by `boundary` and by `create`, which
# leaves nothing behind), or the container runs and the host's view (cgroup
# files, sysctls, /sys settings, mountinfo) shows it had no effect.
#
# Runs under the tests' baseline policy (fixtures/policy-baseline.json: it
# may bind /tmp rw) unless a test says otherwise: baseline is the looser
# profile, so a bypass closed there is closed under restricted too.

load helpers

MiB=1048576

setup_file() {
  maka_setup_file
  require_cgroup2_file
  echo '{"profile": "restricted"}' > "$BATS_FILE_TMPDIR/restricted.json"
  ln -s /etc "$BATS_FILE_TMPDIR/etc-link"
}

require_cgroup2_file() {
  [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || {
    echo "contract.bats needs a cgroup v2 host (run it in the guest)" >&2
    return 1
  }
}

# refused FIELD JQ_FILTER [JQ_OPTIONS...]: a bundle changed by the filter is
# refused by `maka boundary` (exit 1, the item naming FIELD) and its JSON
# verdict lists FIELD.
refused() {
  local field=$1 filter=$2 b
  shift 2
  b=$(mktemp -d "$BATS_TEST_TMPDIR/b.XXXXXX")
  make_bundle "$b" /bin/true
  update_config "$b" "$filter" "$@"
  run maka boundary --bundle "$b" --format json
  [ "$status" -eq 1 ] || { echo "boundary allowed $filter (exit $status): $output" >&2; return 1; }
  jq -e --arg f "$field" '.verdict.allowed == false and any(.verdict.items[]; .field == $f)' <<<"$output" >/dev/null ||
    { echo "no item for $field after $filter: $(jq -c .verdict <<<"$output")" >&2; return 1; }
}

# make_bundle_dir NAME JQ_FILTER: a bundle of /bin/true changed by the
# filter; prints its directory.
make_bundle_dir() {
  local b=$BATS_TEST_TMPDIR/$1
  make_bundle "$b" /bin/true >&2
  update_config "$b" "$2" >&2
  echo "$b"
}

@test "fields maka does not model are refused with their path, never passed through" {
  refused linux.netDevices '.linux.netDevices = {"lo": {}}'
  refused linux.intelRdt '.linux.intelRdt = {closID: "x"}'
  refused linux.personality '.linux.personality = {domain: "LINUX32"}'
  refused linux.timeOffsets '.linux.timeOffsets = {monotonic: {secs: 10}}'
  refused linux.resources.memory.kernel '.linux.resources.memory.kernel = 1000000'
  refused linux.resources.cpu.realtimeRuntime '.linux.resources.cpu.realtimeRuntime = 950000'
  refused process.commandLine '.process.commandLine = "sh"'
  refused windows '.windows = {layerFolders: ["x"]}'
  local n
  n=$(jq '.linux.namespaces | length' "$BATS_FILE_TMPDIR/maka-spec-base.json")
  refused "linux.namespaces[$n].type" '.linux.namespaces += [{type: "bogus"}]'
}

@test "a time namespace with offsets: maka boundary shows them, the sandbox's boottime and monotonic clocks carry them (run and exec), the host's do not; offsets the kernel would refuse are refused" {
  refused linux.timeOffsets.monotonic.secs '.linux.namespaces += [{type: "time"}] | .linux.timeOffsets = {monotonic: {secs: -1000000000}}'
  refused linux.timeOffsets.realtime '.linux.namespaces += [{type: "time"}] | .linux.timeOffsets = {realtime: {secs: 10}}'
  local b=$BATS_TEST_TMPDIR/tns
  make_bundle "$b" sh -c 'cut -d" " -f1 /proc/uptime; sleep 100'
  update_config "$b" '.linux.namespaces += [{type: "time"}] | .linux.timeOffsets = {boottime: {secs: 5000000}, monotonic: {secs: 7000000, nanosecs: 5}}'
  run maka boundary --bundle "$b"
  echo "$output"
  [ "$status" -eq 0 ]
  # (the table wraps long rows)
  [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"time (boottime +5000000s, monotonic +7000000s +5ns)"* ]]
  run maka boundary --bundle "$b" --format json
  jq -e '.timeOffsets.boottime.secs == 5000000 and any(.namespaces[]; .type == "time")' <<<"$output"
  maka run -d -b "$b" c-tns >/dev/null
  local up
  up=$(cut -d' ' -f1 /proc/uptime)
  [ "${up%.*}" -lt 5000000 ]
  # the init's and an exec'd process's uptime (boottime) and monotonic clock
  run maka exec c-tns cut -d" " -f1 /proc/uptime
  echo "exec: $output"
  [ "$status" -eq 0 ]
  [ "${output%.*}" -ge 5000000 ]
  run maka exec c-tns cat /proc/self/timens_offsets
  echo "$output"
  grep -E '^monotonic +7000000 +5$' <<<"$output"
  grep -E '^boottime +5000000 +0$' <<<"$output"
  maka delete --force c-tns
}

@test "limits hold: unified cannot undo them, swap is written as shown, tmpfs options are bounded" {
  refused 'linux.resources.unified["memory.max"]' '.linux.resources.unified = {"memory.max": "max"}'
  refused 'linux.resources.unified["pids.max"]' '.linux.resources.unified = {"pids.max": "max"}'
  refused 'linux.resources.unified["cpu.max"]' '.linux.resources.unified = {"cpu.max": "max 100000"}'
  refused 'linux.resources.unified["io.max"]' '.linux.resources.unified = {"io.max": "8:0 rbps=0"}'
  refused 'linux.resources.unified["io.latency"]' '.linux.resources.unified = {"io.latency": "8:0 target=10"}'
  refused 'linux.resources.unified["memory.min"]' '.linux.resources.unified = {"memory.min": "2147483648"}'
  refused 'linux.resources.unified["cpu.weight"]' '.linux.resources.unified = {"cpu.weight": "0"}'
  refused linux.resources.cpu.burst '.linux.resources.cpu = {quota: 100000, period: 100000, burst: 100001}'
  # quota and burst together within the CPU ceiling (4 CPUs under restricted)
  run maka --policy "$BATS_FILE_TMPDIR/restricted.json" boundary --bundle "$(make_bundle_dir cpu.burst '.linux.resources.cpu = {quota: 400000, period: 100000, burst: 1000}')"
  [ "$status" -eq 1 ]
  [[ "$output" == *"linux.resources.cpu.burst: quota and burst make 4.01 CPUs in one"* ]]
  refused 'mounts[10].options[1]' '.mounts += [{destination: "/big", type: "tmpfs", source: "tmpfs", options: ["size=1m", "nr_blocks=100000000"]}]'
  refused 'mounts[10].options[0]' '.mounts += [{destination: "/big", type: "tmpfs", source: "tmpfs", options: ["nr_inodes=0"]}]'

  # What unified may say is read as the field it is, checked, and written
  # from the contract: swap 0 is memory.swap.max 0, not "not set". As runc's
  # cgroups.bats "resources.unified override": a weight by name overrides
  # shares; memory.min is kept by name, memory.low is the reservation.
  make_bundle "$BATS_TEST_TMPDIR/lim" sleep 100
  update_config "$BATS_TEST_TMPDIR/lim" '.linux.resources.memory = {limit: (256 * $mib), swap: 0}
    | .linux.resources.cpu = {shares: 3333, burst: 20000}
    | .linux.resources.unified = {"pids.max": "100", "cpu.max": "50000 100000", "cpu.weight": "42",
        "memory.min": "131072", "memory.low": "524288", "cpuset.cpus": "0"}
    | .mounts |= map(if .destination == "/tmp" then .options = ["size=1m", "nr_blocks=512"] else . end)' \
    --argjson mib "$MiB"
  run maka boundary --bundle "$BATS_TEST_TMPDIR/lim" --format json
  [ "$status" -eq 0 ]
  jq -e '.limits.memory == 268435456 and .limits.swap == 0 and .limits.pids == 100 and .limits.cpus == 0.5' <<<"$output"
  jq -e 'any(.writable[]; .path == "/tmp" and .size == 2097152)' <<<"$output"
  jq -e '.cgroup | .cpuWeight == 42 and .cpuShares == null and .cpuBurst == 20000 and .memoryMin == 131072
         and .memoryReservation == 524288 and .cpus == "0"' <<<"$output"
  run maka boundary --bundle "$BATS_TEST_TMPDIR/lim"
  [[ "$output" == *"cgroup also   cpu.weight 42, cpu.max.burst 20000 µs, cpuset.cpus 0"* ]]
  # The document libcontainer is handed says the same; by name only what
  # no field can say.
  run maka boundary --bundle "$BATS_TEST_TMPDIR/lim" --format oci
  [ "$status" -eq 0 ]
  jq -e '.linux.resources | .memory.limit == 268435456 and .memory.swap == 268435456
         and .pids.limit == 100 and .cpu.quota == 50000 and .cpu.shares == null and .cpu.burst == 20000
         and .unified == {"cpu.weight": "42", "memory.min": "131072"}' <<<"$output"
  maka_io create --bundle "$BATS_TEST_TMPDIR/lim" c-lim
  [ "$(cgroup_file c-lim memory.max)" = 268435456 ]
  [ "$(cgroup_file c-lim memory.swap.max)" = 0 ]
  [ "$(cgroup_file c-lim pids.max)" = 100 ]
  [ "$(cgroup_file c-lim cpu.max)" = "50000 100000" ]
  [ "$(cgroup_file c-lim cpu.max.burst)" = 20000 ]
  [ "$(cgroup_file c-lim cpu.weight)" = 42 ]
  [ "$(cgroup_file c-lim memory.min)" = 131072 ]
  [ "$(cgroup_file c-lim memory.low)" = 524288 ]
  [ "$(cgroup_file c-lim cpuset.cpus)" = 0 ]
  maka delete --force c-lim
}

@test "process priorities: real-time scheduling, a low oomScoreAdj and real-time rlimits are refused" {
  refused process.scheduler.policy '.process.scheduler = {policy: "SCHED_FIFO", priority: 99}'
  refused process.scheduler.nice '.process.scheduler = {policy: "SCHED_OTHER", nice: -20}'
  refused process.oomScoreAdj '.process.oomScoreAdj = -1000'
  refused process.ioPriority.class '.process.ioPriority = {class: "IOPRIO_CLASS_RT", priority: 0}'
  refused 'process.rlimits[1]' '.process.rlimits += [{type: "RLIMIT_RTPRIO", hard: 99, soft: 99}]'
}

@test "address-space rlimits (RLIMIT_AS 1 GiB soft, 2 GiB hard; RLIMIT_DATA): the sandbox starts, its process has them from the start, the host sees them on the parked init (runtime-tools process_rlimits)" {
  local b=$BATS_TEST_TMPDIR/as
  make_bundle "$b" sh -c 'grep -E "^Max (address space|data size)" /proc/self/limits'
  update_config "$b" '.process.rlimits += [{type: "RLIMIT_AS", soft: 1073741824, hard: 2147483648}, {type: "RLIMIT_DATA", soft: 1610612736, hard: 2147483648}]'
  run maka_io create -b "$b" c-as
  echo "$output"
  [ "$status" -eq 0 ]
  # the init, parked before the user's program: libcontainer's work done
  local pid
  pid=$(container_pid c-as)
  grep -E '^Max address space +1073741824 +2147483648 ' "/proc/$pid/limits"
  grep -E '^Max data size +1610612736 +2147483648 ' "/proc/$pid/limits"
  maka delete --force c-as
  run maka_io run -b "$b" c-as2
  echo "$output"
  [ "$status" -eq 0 ]
  grep -E '^Max address space +1073741824 +2147483648 ' <<<"$output"
  grep -E '^Max data size +1610612736 +2147483648 ' <<<"$output"
}

@test "SELinux labels on a host without SELinux: the contract shows them, the sandbox runs unlabelled, tmpfs included (runtime-tools linux_mount_label; crun does the same)" {
  [ ! -d /sys/fs/selinux ] || skip "this host has SELinux"
  local b=$BATS_TEST_TMPDIR/label
  make_bundle "$b" sh -c 'grep " /dev " /proc/self/mountinfo; echo labelled-ok'
  update_config "$b" '.linux.mountLabel = "system_u:object_r:svirt_sandbox_file_t:s0:c715,c811" | .process.selinuxLabel = "system_u:system_r:svirt_lxc_net_t:s0:c715,c811"'
  run maka boundary -b "$b" --format json
  [ "$status" -eq 0 ]
  [ "$(jq -r .mountLabel <<<"$output")" = "system_u:object_r:svirt_sandbox_file_t:s0:c715,c811" ]
  [ "$(jq -r .process.selinuxLabel <<<"$output")" = "system_u:system_r:svirt_lxc_net_t:s0:c715,c811" ]
  run maka_io run -b "$b" c-label
  echo "$output"
  [ "$status" -eq 0 ]
  grep -F labelled-ok <<<"$output"
  ! grep -F 'context=' <<<"$output"
}

@test "host paths: root.path and bind sources are checked resolved; maka's own state is never reachable" {
  refused root.path '.root.path = "/"'
  refused root.path '.root.path = "/etc"'
  refused root.path '.root.path = $r' --arg r "$MAKA_ROOT"
  refused root.path '.root.path = $r' --arg r "$BATS_FILE_TMPDIR/etc-link"
  # /tmp may be bound rw under the tests' policy, but not maka's --root or
  # state dir below it, nor /etc through a link.
  refused 'mounts[10].source' '.mounts += [{destination: "/mnt", type: "bind", source: $r, options: ["rbind"]}]' --arg r "$MAKA_ROOT"
  refused 'mounts[10].source' '.mounts += [{destination: "/mnt", type: "bind", source: $r, options: ["rbind"]}]' --arg r "$MAKA_STATE_DIR"
  refused 'mounts[10].source' '.mounts += [{destination: "/mnt", type: "bind", source: $r, options: ["rbind", "ro"]}]' --arg r "$BATS_FILE_TMPDIR/etc-link"
  refused 'mounts[10].destination' '.mounts += [{destination: "/mnt", type: "proc", source: "proc"}]'
  refused 'mounts[10].destination' '.mounts += [{destination: "/mnt", type: "sysfs", source: "sysfs"}]'
  refused 'linux.namespaces[0].path' '.linux.namespaces[0].path = "/proc/1/ns/pid"'
  refused linux.rootfsPropagation '.linux.rootfsPropagation = "shared"'
  refused 'linux.resources.devices[1]' '.linux.resources.devices += [{allow: true, type: "b", major: 8, minor: 0, access: "rwm"}]'
  refused linux.cgroupsPath '.linux.cgroupsPath = "/system.slice/victim.service"'

  # create refuses the same, and leaves nothing behind.
  make_bundle "$BATS_TEST_TMPDIR/host" /bin/true
  update_config "$BATS_TEST_TMPDIR/host" '.root.path = "/"'
  run maka_io create --bundle "$BATS_TEST_TMPDIR/host" c-host
  [ "$status" -ne 0 ]
  [[ "$output" == *"BOUNDARY_REJECTED"*"root.path: / may not be a sandbox's root"* ]]
  assert_nothing_left c-host
}

@test "floors: without masked or read-only paths, with /sys and the cgroup mount rw, the host's kernel settings are untouched" {
  local cp thp printk
  cp=$(cat /proc/sys/kernel/core_pattern)
  thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled)
  printk=$(cat /sys/module/printk/parameters/time)
  make_bundle "$BATS_TEST_TMPDIR/floor" sh -c '
    echo "|/tmp/pwn %p" > /proc/sys/kernel/core_pattern && echo WROTE core_pattern
    echo never > /sys/kernel/mm/transparent_hugepage/enabled && echo WROTE thp
    echo Y > /sys/module/printk/parameters/time && echo WROTE printk
    mkdir /sys/fs/cgroup/pwn && echo WROTE cgroup
    head -c 16 /proc/kcore | wc -c | sed "s/^/kcore /"
    grep -E " /sys(/fs/cgroup)? " /proc/self/mountinfo'
  # baseline's default capabilities, the masked and read-only lists dropped,
  # /sys and /sys/fs/cgroup asked for read-write.
  update_config "$BATS_TEST_TMPDIR/floor" 'del(.linux.maskedPaths, .linux.readonlyPaths)
    | .process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}
    | .mounts |= map(if .destination == "/sys" or .destination == "/sys/fs/cgroup"
                     then .options = ((.options // []) - ["ro"] + ["rw"]) else . end)' \
    --argjson caps '["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FOWNER","CAP_SETUID","CAP_SETGID"]'
  run maka boundary --bundle "$BATS_TEST_TMPDIR/floor" --format json
  [ "$status" -eq 0 ]
  jq -e '(.readonlyPaths | index("/proc/sys")) and (.maskedPaths | index("/proc/kcore"))
         and all(.mounts[] | select(.type == "sysfs" or .type == "cgroup"); .options | index("ro"))' <<<"$output"
  run maka_io run --bundle "$BATS_TEST_TMPDIR/floor" c-floor
  echo "$output"
  [[ "$output" != *WROTE* ]]
  [[ "$output" == *"kcore 0"* ]]
  # Both system mounts are read-only in the container's mountinfo.
  [ "$(grep -cE ' /sys(/fs/cgroup)? ro[, ]' <<<"$output")" -eq 2 ]
  [ "$(cat /proc/sys/kernel/core_pattern)" = "$cp" ]
  [ "$(cat /sys/kernel/mm/transparent_hugepage/enabled)" = "$thp" ]
  [ "$(cat /sys/module/printk/parameters/time)" = "$printk" ]
}

@test "the cgroup is maka's: a default sandbox lands under /maka/ID" {
  make_bundle "$BATS_TEST_TMPDIR/cg" sleep 100
  update_config "$BATS_TEST_TMPDIR/cg" 'del(.linux.cgroupsPath)'
  maka_io create --bundle "$BATS_TEST_TMPDIR/cg" c-cg
  [ "$(cgroup_path_of c-cg)" = /maka/c-cg ]
  maka delete --force c-cg
  assert_nothing_left c-cg
}
