#!/usr/bin/env bats
# `maka update`: the single-value flags and --resources FILE|- change the
# running container's cgroup v2 files, and only what is given changes; every
# value is held to the ceilings of the policy the container was created
# under (refused with BOUNDARY_REJECTED, nothing changed), and an accepted
# update republishes the contract's limits.

load helpers

MiB=1048576

setup_file() {
  maka_setup_file
  # restricted (4 GiB, 1024 pids, 4 CPUs), plus up to 1 GiB of swap: u1 is
  # held to this policy by update, whatever --policy update is given.
  echo '{"profile": "restricted", "maxLimits": {"swap": 1073741824}}' > "$BATS_FILE_TMPDIR/policy.json"
  # (alive as long as its lifetime: a busy host's guest runs this file
  # for more than 1000 s)
  make_bundle "$BATS_FILE_TMPDIR/b" sh -c 'trap "exit 0" TERM; sleep 3600 & wait'
  # a lifetime longer than this file (restricted's default is 180 s)
  update_config "$BATS_FILE_TMPDIR/b" '.annotations["org.maka.timeout"] = "3600"'
  update_config "$BATS_FILE_TMPDIR/b" '.linux.resources += {
      memory: {limit: (128 * $mib), swap: (128 * $mib)},
      pids: {limit: 100},
      cpu: {shares: 1024, quota: 50000, period: 100000, cpus: "0-1"}
    }' --argjson mib "$MiB"
  maka_io --policy "$BATS_FILE_TMPDIR/policy.json" run -d --bundle "$BATS_FILE_TMPDIR/b" u1
  wait_for_status u1 running
  # The cgroup directory does not move: look it up once.
  export U1_CGROUP
  U1_CGROUP=$(cgroup_dir_of u1)
}

# cg FILE: the file's content in u1's cgroup.
cg() {
  cat "$U1_CGROUP/$1"
}

# expect FILE WANT
expect() {
  local got
  got=$(cg "$1") || return 1
  if [ "$got" != "$2" ]; then
    echo "$1: got '$got', want '$2'" >&2
    return 1
  fi
}

# snapshot: every limit this file touches, one "file=value" per line, and
# the limits of u1's contract record.
snapshot() {
  local f
  for f in memory.max memory.swap.max memory.low memory.high pids.max cpu.max cpu.max.burst cpu.rt_runtime_us cpu.weight cpuset.cpus io.weight; do
    echo "$f=$(cg "$f" 2>/dev/null | tr '\n' ' ')"
  done
  echo "record=$(record_limits)"
}

# record_limits: the limits of u1's contract (the record in the store).
record_limits() {
  local rec
  rec=$(find "$MAKA_STATE_DIR" -name u1.json -path '*/records/*')
  [ -n "$rec" ] || { echo "no record of u1 under $MAKA_STATE_DIR" >&2; return 1; }
  jq -c .boundary.limits "$rec"
}

# refused ARGS...: `maka update ARGS u1` is refused with BOUNDARY_REJECTED
# (naming $want, default the first argument). Call `base=$(snapshot)` first;
# `[ "$(snapshot)" = "$base" ]` at the end shows no cgroup file and not the
# record changed (one snapshot per test: the guest is slow).
refused() {
  run maka update "$@" u1
  echo "update $*: status $status: $output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"BOUNDARY_REJECTED"* ]]
  [[ "$output" == *"${want:-$1}"* ]]
}

@test "the container starts with the limits of its config.json" {
  expect memory.max $((128 * MiB))
  expect memory.swap.max 0
  expect pids.max 100
  expect cpu.max "50000 100000"
  expect cpu.weight 100
  expect cpuset.cpus 0-1
}

@test "update --memory alone keeps the contract's swap (none): memory.swap.max stays 0" {
  run maka update --memory $((64 * MiB)) u1
  [ "$status" -eq 0 ]
  expect memory.max $((64 * MiB))
  expect memory.swap.max 0
  [ "$(record_limits | jq .memory)" = $((64 * MiB)) ]
  [ "$(record_limits | jq .swap)" = 0 ]
}

@test "update refuses lifting or exceeding the memory and swap ceilings: BOUNDARY_REJECTED, nothing changes" {
  base=$(snapshot)
  want="--memory: unlimited memory is not allowed by profile restricted (largest: 4 GiB)" refused --memory -1
  want="--memory: 5 GiB exceeds the largest memory allowed by profile restricted (4 GiB)" refused --memory 5g
  # a cpuset list create refuses (update took it before the one checker)
  want='--cpuset-cpus: "0-" is not a list such as 0-3,5' refused --cpuset-cpus 0-
  want="--memory-swap" refused --memory-swap -1
  # 2 GiB of memory+swap with 64 MiB of memory: 1984 MiB of swap > 1 GiB
  want="--memory-swap" refused --memory-swap 2g
  want="--memory-swap" refused --memory $((64 * MiB)) --memory-swap $((32 * MiB))
  refused --memory-reservation $((512 * MiB))
  [ "$(snapshot)" = "$base" ]
}

@test "update refuses lifting or exceeding the pids and CPU ceilings, and what maka does not model" {
  base=$(snapshot)
  want="--pids-limit: unlimited pids are not allowed by profile restricted (largest: 1024)" refused --pids-limit -1
  want="--pids-limit: unlimited pids are not allowed" refused --pids-limit -9
  refused --pids-limit 2000
  want="--cpu-quota: an unlimited CPU quota is not allowed by profile restricted (largest: 4 CPUs)" refused --cpu-quota -1
  refused --cpu-quota 500000
  refused --cpu-period 1
  # 50000 us per 10000 us: 5 CPUs
  want="--cpu-period: 5 CPUs exceed" refused --cpu-period 10000
  refused --cpu-rt-period 1000000
  refused --cpu-rt-runtime 950000
  want="--cpu-burst: the burst (60000 µs) is above the quota (50000 µs)" refused --cpu-burst 60000
  want="--cpu-burst: quota and burst make 4.2 CPUs" refused --cpu-quota 390000 --cpu-burst 30000
  [ "$(snapshot)" = "$base" ]
}

@test "update --resources is held to the same ceilings: cgroup files by name as their fields, and unmodelled values are refused" {
  local doc
  base=$(snapshot)
  want='--resources unified["memory.max"]: unlimited memory' refused -r - <<<'{"unified": {"memory.max": "max"}}'
  want='--resources unified["memory.min"]: 4294967296 is above the memory limit' refused -r - <<<'{"unified": {"memory.min": "4294967296"}}'
  for doc in '{"unified": {"pids.max": "max", "cpu.max": "max 100000"}}' '{"unified": {"io.latency": "8:0 target=10"}}' \
      '{"unified": {"cpu.weight": "0"}}' '{"unified": {"memory.high": "0"}}' \
      '{"cpu": {"realtimeRuntime": 1000}}' '{"hugepageLimits": [{"pageSize": "2MB", "limit": 1073741824}]}' \
      '{"blockIO": {"throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 0}]}}' '{"unified": {"io.max": "8:0 rbps=0"}}' \
      '{"blockIO": {"leafWeight": 500}}' '{"cpu": {"mems": "0,x"}}' \
      '{"unified": {"cpuset.cpus": "0-"}}'; do
    want="--resources" refused --resources - <<<"$doc"
  done
  [ "$(snapshot)" = "$base" ]
}

@test "update --resources: negative, zero, huge values and swap below memory are refused" {
  local doc
  base=$(snapshot)
  for doc in '{"memory": {"limit": -1}}' '{"memory": {"limit": -5}}' '{"memory": {"limit": 9223372036854775807}}' \
      '{"memory": {"limit": 67108864, "swap": 33554432}}' '{"memory": {"swap": -7}}' '{"unified": {"memory.max": "0"}}' \
      '{"pids": {"limit": -1}}' '{"pids": {"limit": -7}}' \
      '{"cpu": {"quota": 1000000000000}}' '{"cpu": {"quota": -1}}' '{"cpu": {"period": 1}}'; do
    want="--resources" refused --resources - <<<"$doc"
  done
  [ "$(snapshot)" = "$base" ]
}

@test "update --memory and --memory-swap set memory.max and memory.swap.max (swap minus memory)" {
  run maka update --memory $((100 * MiB)) --memory-swap $((200 * MiB)) u1
  [ "$status" -eq 0 ]
  expect memory.max $((100 * MiB))
  expect memory.swap.max $((100 * MiB))
}

@test "update memory flags take runc's unit suffixes (96M, 1g)" {
  run maka update --memory 96M --memory-swap 1g u1
  [ "$status" -eq 0 ]
  expect memory.max $((96 * MiB))
  expect memory.swap.max $((1024 * MiB - 96 * MiB))
}

@test "update --memory-reservation sets memory.low" {
  run maka update --memory-reservation $((16 * MiB)) u1
  [ "$status" -eq 0 ]
  expect memory.low $((16 * MiB))
  expect memory.max $((96 * MiB))
}

@test "update --pids-limit sets pids.max; flags after the id count as runc counts them" {
  run maka update --pids-limit 42 u1
  [ "$status" -eq 0 ]
  expect pids.max 42
  # runc's CLI moves a command's flags written after its arguments to the
  # front (runc's own update.bats writes `update test_update --cpuset-cpus 1`).
  run maka update u1 --pids-limit 43
  [ "$status" -eq 0 ]
  expect pids.max 43
  # 0 as runc maps it: one pid (pids.max 1), in the cgroup and the contract.
  run maka update --pids-limit 0 u1
  [ "$status" -eq 0 ]
  expect pids.max 1
  record_limits | jq -e '.pids == 1'
  run maka update --pids-limit 43 u1
  [ "$status" -eq 0 ]
  run maka events u1 --stats
  [ "$status" -eq 0 ]
  [ "$(jq -r .type <<<"$output")" = stats ]
  run maka violations u1 --format json
  [ "$status" -eq 0 ]
  [ "$output" = "[]" ]
}

@test "update --cpu-quota and --cpu-period set cpu.max; one alone keeps the other" {
  run maka update --cpu-quota 20000 --cpu-period 50000 u1
  [ "$status" -eq 0 ]
  expect cpu.max "20000 50000"
  run maka update --cpu-quota 30000 u1
  [ "$status" -eq 0 ]
  expect cpu.max "30000 50000"
  run maka update --cpu-period 200000 u1
  [ "$status" -eq 0 ]
  expect cpu.max "30000 200000"
}

@test "update --cpu-share sets cpu.weight with runc's conversion (512 -> 59)" {
  run maka update --cpu-share 512 u1
  [ "$status" -eq 0 ]
  expect cpu.weight 59
}

@test "update --cpuset-cpus sets cpuset.cpus" {
  run maka update --cpuset-cpus 1 u1
  [ "$status" -eq 0 ]
  expect cpuset.cpus 1
  run maka update --cpuset-cpus 0 u1
  [ "$status" -eq 0 ]
  expect cpuset.cpus 0
}

@test "update --blkio-weight sets io.weight (converted to 1-10000)" {
  [ -e "$U1_CGROUP/io.weight" ] || skip "no io.weight (io controller or iocost missing)"
  run maka update --blkio-weight 500 u1
  [ "$status" -eq 0 ]
  if [ -e "$U1_CGROUP/io.bfq.weight" ]; then
    expect io.bfq.weight "default 500"
  else
    expect io.weight "default 4950"
  fi
}

@test "update --resources FILE sets every limit the linux.resources JSON names" {
  cat > "$BATS_TEST_TMPDIR/r.json" <<EOF
{
  "memory": {"limit": $((80 * MiB)), "swap": $((80 * MiB))},
  "pids": {"limit": 55},
  "cpu": {"quota": 40000, "period": 100000, "shares": 2048}
}
EOF
  run maka update --resources "$BATS_TEST_TMPDIR/r.json" u1
  [ "$status" -eq 0 ]
  expect memory.max $((80 * MiB))
  expect memory.swap.max 0
  expect pids.max 55
  expect cpu.max "40000 100000"
  expect cpu.weight 174
}

@test "update --resources - reads the JSON from stdin" {
  run maka update --resources - u1 <<<'{"pids": {"limit": 66}, "memory": {"limit": 94371840, "swap": 94371840}}'
  [ "$status" -eq 0 ]
  expect pids.max 66
  expect memory.max 94371840
  run maka update -r - u1 <<<'{"cpu": {"quota": 25000}}'
  [ "$status" -eq 0 ]
  expect cpu.max "25000 100000"
}

@test "update changes only the given values: every other limit stays" {
  local before after
  before=$(snapshot)
  run maka update --pids-limit 77 u1
  [ "$status" -eq 0 ]
  after=$(snapshot)
  diff <(grep -v '^pids.max=\|^record=' <<<"$before") <(grep -v '^pids.max=\|^record=' <<<"$after")
  expect pids.max 77

  before=$after
  run maka update --memory $((88 * MiB)) --memory-swap $((88 * MiB)) u1
  [ "$status" -eq 0 ]
  after=$(snapshot)
  diff <(grep -v '^memory.max=\|^record=' <<<"$before") <(grep -v '^memory.max=\|^record=' <<<"$after")
  expect memory.max $((88 * MiB))

  # an empty document changes nothing at all
  before=$after
  run maka update --resources - u1 <<<'{}'
  [ "$status" -eq 0 ]
  [ "$(snapshot)" = "$before" ]
}

@test "update with a bad value fails naming the flag and changes nothing" {
  local before flag val
  before=$(snapshot)
  for pair in memory=abc memory-swap=1.5x memory-reservation=lots pids-limit=many \
      cpu-quota=1.5 cpu-period=-1 cpu-share=-5 blkio-weight=5000 blkio-weight=5 cpu-idle=x; do
    flag=${pair%%=*} val=${pair#*=}
    run maka update "--$flag" "$val" u1
    echo "--$flag $val: status $status: $output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"$flag"* ]]
  done
  echo '{"pids": ' > "$BATS_TEST_TMPDIR/bad.json"
  run maka update --resources "$BATS_TEST_TMPDIR/bad.json" u1
  [ "$status" -ne 0 ]
  [[ "$output" == *"--resources"* ]]
  run maka update --resources - u1 <<<'{"blockIO": {"weight": 5}}'
  [ "$status" -ne 0 ]
  [[ "$output" == *"blockIO.weight"* ]]
  run maka update --resources "$BATS_TEST_TMPDIR/missing.json" u1
  [ "$status" -ne 0 ]
  [[ "$output" == *"missing.json"* ]]
  [ "$(snapshot)" = "$before" ]
}

@test "an accepted update changes the cgroup files and republishes the contract's limits" {
  run maka update --memory $((200 * MiB)) --memory-swap $((300 * MiB)) --pids-limit 300 --cpu-quota 150000 --cpu-period 100000 u1
  [ "$status" -eq 0 ]
  expect memory.max $((200 * MiB))
  expect memory.swap.max $((100 * MiB))
  expect pids.max 300
  expect cpu.max "150000 100000"
  record_limits | jq -e --argjson mib "$MiB" '.memory == 200 * $mib and .swap == 100 * $mib and .pids == 300 and .cpus == 1.5'
  # a relaunch is built from the boundary alone: its limits above and the
  # cgroup's CPU period
  jq -e '.boundary.cgroup.cpuPeriod == 100000' "$(find "$MAKA_STATE_DIR" -name u1.json -path '*/records/*')"
  # The whole contract is republished: the record and the container's
  # maka.json (exec's base) hold the same limits and cgroup values.
  local rec=$(find "$MAKA_STATE_DIR" -name u1.json -path '*/records/*')
  diff <(jq -S '.boundary | {limits, cgroup}' "$rec") <(jq -S '.boundary | {limits, cgroup}' "$MAKA_ROOT/u1/maka.json")
  jq -e --argjson mib "$MiB" '.boundary.limits | .memory == 200 * $mib and .pids == 300' "$MAKA_ROOT/u1/maka.json"
  # the container is still owned as before (update does not take it over)
  run maka state u1
  [ "$status" -eq 0 ]
  jq -e '.status == "running" and (has("orphaned") | not)' <<<"$output"
}

@test "update of a missing container fails with 'does not exist'" {
  run maka update --pids-limit 10 no-such-ctr
  [ "$status" -eq 1 ]
  [[ "$output" == *"container no-such-ctr does not exist"* ]]
}

@test "update of a stopped container fails with 'not running'" {
  make_bundle "$BATS_TEST_TMPDIR/s" /bin/true
  run maka_io run -d --bundle "$BATS_TEST_TMPDIR/s" u-stopped
  [ "$status" -eq 0 ]
  wait_for_status u-stopped stopped
  run maka update --pids-limit 10 u-stopped
  [ "$status" -eq 1 ]
  [[ "$output" == *"not running"* ]]
  teardown_container u-stopped
}

@test "as runc under a policy without ceilings: --memory -1 after a swap limit lifts both; memory.checkBeforeUpdate refuses a limit below the usage; cpu.idle alone on a container with shares does not write cpu.weight (the kernel refuses it on an idle cgroup)" {
  echo '{"profile": "baseline", "maxLimits": {"memory": 0, "swap": -1, "pids": 0, "cpus": 0}}' > "$BATS_TEST_TMPDIR/free.json"
  make_bundle "$BATS_TEST_TMPDIR/f" sh -c 'trap "exit 0" TERM; sleep 1000 & wait'
  update_config "$BATS_TEST_TMPDIR/f" '.linux.resources += {memory: {limit: (32 * $mib)}, cpu: {shares: 100}}' --argjson mib "$MiB"
  maka_io --policy "$BATS_TEST_TMPDIR/free.json" run -d --bundle "$BATS_TEST_TMPDIR/f" u-free
  wait_for_status u-free running
  local d
  d=$(cgroup_dir_of u-free)
  run maka update u-free --memory 52428800 --memory-swap 96468992
  [ "$status" -eq 0 ]
  [ "$(cat "$d/memory.swap.max")" = $((96468992 - 52428800)) ]
  run maka update u-free --memory -1
  [ "$status" -eq 0 ]
  [ "$(cat "$d/memory.max")" = max ]
  [ "$(cat "$d/memory.swap.max")" = max ]
  # memory.checkBeforeUpdate: a limit below the usage is refused, not
  # applied (the container runs on, memory.max unchanged).
  run maka update -r - u-free <<<'{"memory": {"limit": 1024, "checkBeforeUpdate": true}}'
  echo "$output"
  [ "$status" -ne 0 ]
  [[ "$output" == *"rejecting memory limit"* ]]
  [ "$(cat "$d/memory.max")" = max ]
  [ "$(maka state u-free | jq -r .status)" = running ]
  local v
  for v in 1 0 1; do
    run maka update -r - u-free <<<"{\"cpu\": {\"idle\": $v}}"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(cat "$d/cpu.idle")" = "$v" ]
  done
  teardown_container u-free
}

@test "update -r with cgroup files by name, as runc's update.bats: each is written, held like its field and shown in the contract; --cpu-burst" {
  local rec
  rec=$(find "$MAKA_STATE_DIR" -name u1.json -path '*/records/*')
  run maka update -r - u1 <<<'{"unified": {"cpu.max": "100000 100000", "cpu.weight": "16", "pids.max": "10", "cpuset.cpus": "1",
    "memory.min": "1048576", "memory.low": "2097152", "memory.high": "104857600"}}'
  echo "$output"
  [ "$status" -eq 0 ]
  expect cpu.max "100000 100000"
  expect cpu.weight 16
  expect pids.max 10
  expect cpuset.cpus 1
  expect memory.min 1048576
  expect memory.low 2097152
  expect memory.high 104857600
  jq -e '.boundary | .limits.pids == 10 and .limits.cpus == 1 and .cgroup.cpuWeight == 16 and .cgroup.cpuShares == null
         and .cgroup.memoryMin == 1048576 and .cgroup.memoryReservation == 2097152 and .cgroup.memoryHigh == 104857600
         and .cgroup.cpus == "1"' "$rec"
  # Shares given later replace the weight by name (which the cgroup
  # manager would otherwise write again, last).
  run maka update --cpu-share 512 u1
  [ "$status" -eq 0 ]
  expect cpu.weight 59
  jq -e '.boundary.cgroup | .cpuShares == 512 and .cpuWeight == null' "$rec"
  run maka update --pids-limit 11 u1
  [ "$status" -eq 0 ]
  expect cpu.weight 59
  # A burst: written, kept by later updates, held to the quota and to the
  # CPU ceiling with the quota (4 CPUs under this policy), cleared by 0.
  run maka update --cpu-burst 50000 u1
  [ "$status" -eq 0 ]
  expect cpu.max.burst 50000
  jq -e '.boundary.cgroup.cpuBurst == 50000' "$rec"
  run maka update --memory 120M u1
  [ "$status" -eq 0 ]
  expect cpu.max.burst 50000
  base=$(snapshot)
  want="--cpu-quota: the burst (50000 µs) is above the quota (40000 µs)" refused --cpu-quota 40000
  want="--cpu-quota: quota and burst make 4.3 CPUs" refused --cpu-quota 380000
  [ "$(snapshot)" = "$base" ]
  run maka update --cpu-burst 0 u1
  [ "$status" -eq 0 ]
  expect cpu.max.burst 0
  jq -e '.boundary.cgroup.cpuBurst == null' "$rec"
  run maka update --cpuset-cpus 0-1 u1
  [ "$status" -eq 0 ]
}

@test "update changes per-device block IO as runc's update.bats does: throttles by device, io.max by name, shown in the contract" {
  local dev major minor rec
  dev=$(cat /sys/block/vda/dev 2>/dev/null) || skip "no block device /dev/vda (tests/vm/run.sh gives the guest one)"
  [ -e "$U1_CGROUP/io.max" ] || skip "no io.max (io controller missing)"
  major=${dev%:*} minor=${dev#*:}
  rec=$(find "$MAKA_STATE_DIR" -name u1.json -path '*/records/*')
  run maka update -r - u1 <<EOF
{"blockIO": {
  "throttleReadBpsDevice": [{"major": $major, "minor": $minor, "rate": 10485760}],
  "throttleWriteBpsDevice": [{"major": $major, "minor": $minor, "rate": 9437184}],
  "throttleReadIOPSDevice": [{"major": $major, "minor": $minor, "rate": 1000}],
  "throttleWriteIOPSDevice": [{"major": $major, "minor": $minor, "rate": 900}]}}
EOF
  echo "$output"
  [ "$status" -eq 0 ]
  expect io.max "$dev rbps=10485760 wbps=9437184 riops=1000 wiops=900"
  # By name: the device's entries are replaced, the others stay.
  run maka update -r - u1 <<<"{\"unified\": {\"io.max\": \"$dev riops=333 wiops=max\"}}"
  echo "$output"
  [ "$status" -eq 0 ]
  expect io.max "$dev rbps=10485760 wbps=9437184 riops=333 wiops=max"
  jq -e --argjson ma "$major" --argjson mi "$minor" '.boundary.cgroup.blockIO |
      .throttleReadBpsDevice == [{major: $ma, minor: $mi, rate: 10485760}] and
      .throttleReadIOPSDevice == [{major: $ma, minor: $mi, rate: 333}]' "$rec"
}
