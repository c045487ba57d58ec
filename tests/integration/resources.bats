#!/usr/bin/env bats
# linux.resources in config.json land in the container's cgroup v2 files,
# with runc's conversions (OCI swap is memory+swap, cpu.shares -> cpu.weight,
# blkio weight -> io.weight).
#
# Containers are only created (their init waits for `start`): the cgroup and
# its limits exist from create on, and create is the cheapest operation.

load helpers

MiB=1048576

setup_file() {
  maka_setup_file
  require_cgroup2_file
  # A loop device of the file's own for io.max (the guest's /dev/vda is
  # shared with runc's suite).
  modprobe loop 2>/dev/null || true
  truncate -s 64M "$BATS_FILE_TMPDIR/disk"
  LOOPDEV=$(losetup -f --show "$BATS_FILE_TMPDIR/disk")
  export LOOPDEV
  local mm
  mm=$(cat "/sys/class/block/${LOOPDEV#/dev/}/dev")
  export LOOP_MAJOR=${mm%:*} LOOP_MINOR=${mm#*:}

  # r-all: every limit set at once.
  make_bundle "$BATS_FILE_TMPDIR/all" sleep 100
  update_config "$BATS_FILE_TMPDIR/all" '.linux.resources += {
      memory: {limit: (64 * $mib), swap: (64 * $mib), reservation: (32 * $mib)},
      pids: {limit: 123},
      cpu: {shares: 2048, quota: 50000, period: 100000, cpus: "1", mems: "0"},
      blockIO: {
        weight: 500,
        throttleReadBpsDevice: [{major: $maj, minor: $min, rate: 1048576}],
        throttleWriteBpsDevice: [{major: $maj, minor: $min, rate: 2097152}],
        throttleReadIOPSDevice: [{major: $maj, minor: $min, rate: 300}],
        throttleWriteIOPSDevice: [{major: $maj, minor: $min, rate: 400}]
      },
      unified: {"memory.high": ((48 * $mib) | tostring), "memory.oom.group": "1"}
    }' --argjson mib "$MiB" --argjson maj "$LOOP_MAJOR" --argjson min "$LOOP_MINOR"
  maka_io create --bundle "$BATS_FILE_TMPDIR/all" r-all

  # r-unbounded: swap -1, a period without a quota, a low cpu.shares, and
  # pids.limit 0 (one pid, as runc maps it).
  make_bundle "$BATS_FILE_TMPDIR/unbounded" sleep 100
  update_config "$BATS_FILE_TMPDIR/unbounded" '.linux.resources += {
      memory: {limit: (64 * $mib), swap: -1},
      pids: {limit: 0},
      cpu: {period: 50000, shares: 512}
    }' --argjson mib "$MiB"
  maka_io create --bundle "$BATS_FILE_TMPDIR/unbounded" r-unbounded

  # r-nopids: pids.limit -1 under a policy with no pids ceiling
  # (maxLimits.pids 0): unlimited, as runc maps it.
  make_bundle "$BATS_FILE_TMPDIR/nopids" sleep 100
  update_config "$BATS_FILE_TMPDIR/nopids" '.linux.resources += {pids: {limit: -1}}'
  echo '{"profile": "baseline", "maxLimits": {"pids": 0}}' > "$BATS_FILE_TMPDIR/nopids.json"
  maka_io --policy "$BATS_FILE_TMPDIR/nopids.json" create --bundle "$BATS_FILE_TMPDIR/nopids" r-nopids

  # r-none: config.json says nothing about limits (only the device rule).
  make_bundle "$BATS_FILE_TMPDIR/none" sleep 100
  maka_io create --bundle "$BATS_FILE_TMPDIR/none" r-none
}

teardown_file() {
  maka_teardown_file
  [ -z "${LOOPDEV:-}" ] || losetup -d "$LOOPDEV" || true
}

# setup_file cannot skip; fail loudly instead of creating v1 cgroups.
require_cgroup2_file() {
  [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || {
    echo "resources.bats needs a cgroup v2 host (run it in tests/vm/run.sh)" >&2
    return 1
  }
}

# expect_file DIR FILE WANT: the cgroup file's content is WANT.
expect_file() {
  local got
  got=$(cat "$1/$2") || return 1
  if [ "$got" != "$3" ]; then
    echo "$2: got '$got', want '$3'" >&2
    return 1
  fi
}

@test "memory limit, swap and reservation land in memory.max, memory.swap.max (swap minus limit) and memory.low" {
  d=$(cgroup_dir_of r-all)
  expect_file "$d" memory.max $((64 * MiB))
  # OCI swap is memory+swap: swap == limit means no swap at all.
  expect_file "$d" memory.swap.max 0
  expect_file "$d" memory.low $((32 * MiB))
}

@test "pids.limit lands in pids.max" {
  d=$(cgroup_dir_of r-all)
  expect_file "$d" pids.max 123
}

@test "cpu quota/period, shares and cpus land in cpu.max, cpu.weight (runc's conversion) and cpuset.cpus" {
  d=$(cgroup_dir_of r-all)
  expect_file "$d" cpu.max "50000 100000"
  # cgroups v0.1.0 ConvertCPUSharesToCgroupV2Value: 2048 -> 174 (1024 -> 100).
  expect_file "$d" cpu.weight 174
  expect_file "$d" cpuset.cpus 1
  expect_file "$d" cpuset.mems 0
}

@test "blockIO throttles for a block device land in io.max" {
  d=$(cgroup_dir_of r-all)
  expect_file "$d" io.max "$LOOP_MAJOR:$LOOP_MINOR rbps=1048576 wbps=2097152 riops=300 wiops=400"
}

@test "blockIO.weight lands in io.weight converted to 1-10000 (io.bfq.weight as is with BFQ)" {
  d=$(cgroup_dir_of r-all)
  if [ -e "$d/io.bfq.weight" ]; then
    # libcontainer prefers BFQ's file, which takes the blkio value unchanged.
    expect_file "$d" io.bfq.weight "default 500"
  else
    # 1 + (500 - 10) * 9999 / 990 = 4950
    expect_file "$d" io.weight "default 4950"
  fi
}

@test "linux.resources.unified writes memory.high and memory.oom.group (as a kubelet >= 1.32 sets it); a memory.oom.group other than 0 or 1 is refused at create, naming the key, nothing left" {
  d=$(cgroup_dir_of r-all)
  expect_file "$d" memory.high $((48 * MiB))
  expect_file "$d" memory.oom.group 1
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  local v
  # (Surrounding blanks are trimmed, as the kernel trims what is written.)
  for v in 2 -1 $'1\n0' "1 1" "01" "0x1" "true" ""; do
    update_config "$BATS_TEST_TMPDIR/b" '.linux.resources.unified = {"memory.oom.group": $v}' --arg v "$v"
    run maka_io create --bundle "$BATS_TEST_TMPDIR/b" r-oomgroup
    echo "$v: $output"
    [ "$status" -ne 0 ]
    [[ "$output" == *'linux.resources.unified["memory.oom.group"]'*"is not 0 or 1"* ]]
    [ ! -e "$MAKA_ROOT/r-oomgroup" ]
    run find /sys/fs/cgroup -type d -name r-oomgroup
    [ -z "$output" ]
  done
}

@test "swap -1 gives memory.swap.max max; a period without a quota gets the default 2 CPUs of that period; pids.limit 0 is pids.max 1, as runc writes it" {
  d=$(cgroup_dir_of r-unbounded)
  expect_file "$d" pids.max 1
  expect_file "$d" memory.max $((64 * MiB))
  expect_file "$d" memory.swap.max max
  expect_file "$d" cpu.max "100000 50000"
  expect_file "$d" cpu.weight 59
}

@test "pids.limit -1 under a policy without a pids ceiling is pids.max max, as runc writes it" {
  d=$(cgroup_dir_of r-nopids)
  expect_file "$d" pids.max max
  # and the contract says so: no pids limit (0)
  [ "$(cd "$BATS_FILE_TMPDIR/nopids" && maka --policy "$BATS_FILE_TMPDIR/nopids.json" boundary --format json | jq -r '.limits.pids // 0')" = 0 ]
  # the same -1 under baseline's ceiling (32768) is refused, naming the field
  run maka --policy "$MAKA_REPO/tests/integration/fixtures/policy-baseline.json" create --bundle "$BATS_FILE_TMPDIR/nopids" r-nopids2
  [ "$status" -ne 0 ]
  [[ "$output" == *"linux.resources.pids.limit: unlimited pids are not allowed"* ]]
  # nothing of it exists (the file's other containers live on)
  [ ! -e "$MAKA_ROOT/r-nopids2" ]
  run maka state r-nopids2
  [ "$status" -ne 0 ]
  [ -z "$(find /sys/fs/cgroup -name r-nopids2)" ]
}

@test "a container without limits gets the contract's defaults: 1 GiB, no swap, 256 pids, 2 CPUs" {
  d=$(cgroup_dir_of r-none)
  expect_file "$d" memory.max $((1024 * MiB))
  expect_file "$d" memory.swap.max 0
  expect_file "$d" memory.high max
  expect_file "$d" memory.low 0
  expect_file "$d" pids.max 256
  expect_file "$d" cpu.max "200000 100000"
  expect_file "$d" cpu.weight 100
  expect_file "$d" io.max ""
}

@test "each container's limits are in its own cgroup, under the container's id" {
  local a n
  a=$(cgroup_path_of r-all)
  n=$(cgroup_path_of r-none)
  [ "$a" != "$n" ]
  [ "$(basename "$a")" = r-all ]
  [ "$(basename "$n")" = r-none ]
}

@test "swap below the memory limit is refused and leaves no container behind" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  update_config "$BATS_TEST_TMPDIR/b" '.linux.resources.memory = {limit: 67108864, swap: 33554432}'
  run maka_io create --bundle "$BATS_TEST_TMPDIR/b" r-badswap
  [ "$status" -ne 0 ]
  [[ "$output" == *"BOUNDARY_REJECTED"*"linux.resources.memory.swap: 33554432 is less than the memory limit 67108864"* ]]
  run maka state r-badswap
  [ "$status" -eq 1 ]
  [[ "$output" == *"does not exist"* ]]
  [ ! -e "$MAKA_ROOT/r-badswap" ]
  # no cgroup named after it is left either
  run find /sys/fs/cgroup -type d -name r-badswap
  [ -z "$output" ]
}

@test "a unified key naming a file the kernel lacks is refused, naming the key" {
  make_bundle "$BATS_TEST_TMPDIR/b" sleep 100
  update_config "$BATS_TEST_TMPDIR/b" '.linux.resources.unified = {"memory.bogus": "1"}'
  run maka_io create --bundle "$BATS_TEST_TMPDIR/b" r-badkey
  [ "$status" -ne 0 ]
  [[ "$output" == *"memory.bogus"* ]]
  [ ! -e "$MAKA_ROOT/r-badkey" ]
  run find /sys/fs/cgroup -type d -name r-badkey
  [ -z "$output" ]
}
