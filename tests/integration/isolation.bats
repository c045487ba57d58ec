#!/usr/bin/env bats
# Isolation between neighbours (issue 15): one sandbox running a fork bomb,
# a memory hog, a tmpfs filler and CPU spinners at once leaves a
# neighbouring sandbox usable and the host's memory within the first one's
# limits. Latency is asserted with wide margins (the guest is emulated and
# shares its host): the figures are printed for docs/security.md.

MAKA_POLICY=   # restricted
load helpers
bats_require_minimum_version 1.5.0

MiB=1048576

setup_file() {
  maka_setup_file
  install_escape
  # restricted, with limit hits recorded instead of fatal: the hostile
  # sandbox must keep up the pressure.
  # Both live past restricted's 180 s lifetime: under a loaded guest the
  # test alone can take longer than that (196 s once), and a neighbour
  # killed by its lifetime is not a neighbour starved by the hostile one.
  echo '{"profile": "restricted", "onViolation": "deny", "defaultLimits": {"timeout": 3600}}' > "$BATS_FILE_TMPDIR/deny.json"
  echo '{"profile": "restricted", "defaultLimits": {"timeout": 3600}}' > "$BATS_FILE_TMPDIR/long.json"
}

# exec_ms ID: the wall time of `maka exec ID true`, in ms.
exec_ms() {
  local t0 t1
  t0=$(date +%s%N)
  maka exec "$1" true >/dev/null || return 1
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 ))
}

# median3 ID: the median of three exec_ms.
median3() {
  local a b c
  a=$(exec_ms "$1") && b=$(exec_ms "$1") && c=$(exec_ms "$1") || return 1
  printf '%s\n' "$a" "$b" "$c" | sort -n | sed -n 2p
}

mem_available_kib() { awk '/^MemAvailable:/ {print $2}' /proc/meminfo; }

@test "a fork bomb, a memory hog, a tmpfs filler and CPU spinners in one sandbox: the neighbour stays usable, host memory stays within the hostile one's limits" {
  make_bundle "$BATS_TEST_TMPDIR/n" /bin/sh -c 'while :; do sleep 3600 & wait; done'
  maka_io --policy "$BATS_FILE_TMPDIR/long.json" run -d --bundle "$BATS_TEST_TMPDIR/n" iso-neighbour
  local quiet mem_before
  quiet=$(median3 iso-neighbour)
  mem_before=$(mem_available_kib)

  # The hostile one: 256 MiB, 64 pids, half a CPU, /tmp a 128 MiB tmpfs.
  make_bundle "$BATS_TEST_TMPDIR/h" /bin/sh -c '
    head -c 200000000 /dev/zero > /tmp/fill 2>/dev/null; touch /maka/work/filled
    (while :; do :; done) & (while :; do :; done) &
    (while :; do escape forkbomb >/dev/null; done) &
    (while :; do escape memhog >/dev/null; done) &
    while :; do sleep 3600 & wait; done'
  update_config "$BATS_TEST_TMPDIR/h" '.linux.resources += {memory: {limit: (256 * $mib), swap: (256 * $mib)},
      pids: {limit: 64}, cpu: {quota: 50000, period: 100000}}' --argjson mib "$MiB"
  maka_io --policy "$BATS_FILE_TMPDIR/deny.json" run -d --bundle "$BATS_TEST_TMPDIR/h" iso-hostile
  # Until the pressure is at its limits (read from the host, which costs
  # the guest nothing): /tmp full, an OOM kill, a pids.max hit.
  local pid cg i
  pid=$(container_pid iso-hostile)
  cg=$(cgroup_dir_of iso-hostile)
  for i in $(seq 300); do
    [ -e "/proc/$pid/root/maka/work/filled" ] && grep -q '^oom_kill [1-9]' "$cg/memory.events" &&
      grep -q '^max [1-9]' "$cg/pids.events" && break
    sleep 0.5
  done
  cat "$cg/memory.events" "$cg/pids.events"
  [ -e "/proc/$pid/root/maka/work/filled" ]
  grep -q '^oom_kill [1-9]' "$cg/memory.events"
  grep -q '^max [1-9]' "$cg/pids.events"
  sleep 3   # the spinners and the loops go on

  local loaded mem_during tmp_used
  loaded=$(median3 iso-neighbour)
  mem_during=$(mem_available_kib)
  # (statfs: df lists only the mounts of its own mount namespace)
  tmp_used=$(stat -f -c '%b %f %S' "/proc/$pid/root/tmp" | awk '{print int(($1 - $2) * $3 / 1024)}')
  echo "# isolation: neighbour exec median ${quiet} ms quiet, ${loaded} ms beside the hostile sandbox;" \
       "host MemAvailable $((mem_before / 1024)) MiB before, $((mem_during / 1024)) MiB during;" \
       "hostile pids.peak $(cat "$cg/pids.peak"), memory.peak $(( $(cat "$cg/memory.peak") / MiB )) MiB," \
       "/tmp $((tmp_used / 1024)) MiB of 128" >&3
  # The hostile sandbox is at its limits, and never past them.
  [ "$(cat "$cg/pids.peak")" -le 64 ]
  [ "$(cat "$cg/memory.peak")" -le $((256 * MiB)) ]
  [ "$tmp_used" -ge $((127 * 1024)) ]
  [ "$tmp_used" -le $((128 * 1024)) ]
  # The neighbour: still answering, within 10x its quiet latency (or 20 s,
  # for a host that stalls the emulated guest).
  [ "$loaded" -le $(( quiet * 10 > 20000 ? quiet * 10 : 20000 )) ]
  # The host: at most the hostile sandbox's memory limit (its tmpfs is
  # charged to it) and 128 MiB of slack is gone.
  [ "$mem_during" -ge $(( mem_before - (256 + 128) * 1024 )) ]
  # Its limit hits were recorded, not fatal (deny).
  run maka violations --format json iso-hostile
  jq -e '[.[] | select(.type == "limit")] | length > 0' <<<"$output"
  maka delete --force iso-hostile
  maka delete --force iso-neighbour
  assert_nothing_left iso-hostile
  assert_nothing_left iso-neighbour
}
