#!/usr/bin/env bats
# Proves the test guest and the shared helpers (not maka itself).

load helpers

@test "harness: cgroup v2 only, with the memory, pids, cpu and io controllers" {
  require_cgroup2
  run stat -fc %T /sys/fs/cgroup
  [ "$output" = cgroup2fs ]
  # no cgroup v1 hierarchy mounted anywhere
  run grep -c ' cgroup ' /proc/self/mounts
  [ "$output" = 0 ]
  local c
  for c in memory pids cpu io; do
    grep -qw "$c" /sys/fs/cgroup/cgroup.controllers
    grep -qw "$c" /sys/fs/cgroup/cgroup.subtree_control
  done
}

@test "harness: fixture rootfs has /bin/sh and every default mount point" {
  [ -x "$MAKA_ROOTFS/bin/sh" ]
  [ "$(stat -c %u:%a "$MAKA_ROOTFS/tmp")" = 0:1777 ]
  grep -q '^nobody:x:65534:' "$MAKA_ROOTFS/etc/passwd"
  local d
  for d in $(base_config | jq -r '.mounts[].destination') /tmp /run /maka/work; do
    [ -d "$MAKA_ROOTFS$d" ] || { echo "missing mount point $d"; false; }
  done
  run chroot "$MAKA_ROOTFS" /bin/sh -c 'echo hello from busybox'
  [ "$status" -eq 0 ]
  [ "$output" = "hello from busybox" ]
}

@test "harness: runc runs a make_bundle bundle (fallback base config)" {
  command -v runc >/dev/null || skip "runc not installed"
  require_root
  require_cgroup2
  MAKA_SPEC_FALLBACK=1 make_bundle "$BATS_TEST_TMPDIR/bundle" sh -c 'echo "hi $(cat /etc/hostname) $#"' x y z
  [ "$(jq -r .root.readonly "$BATS_TEST_TMPDIR/bundle/config.json")" = true ]
  run runc --root "$BATS_FILE_TMPDIR/runc" run -b "$BATS_TEST_TMPDIR/bundle" harness-runc
  [ "$status" -eq 0 ]
  [ "$output" = "hi maka-test 2" ]
}
