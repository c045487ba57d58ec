#!/usr/bin/env bats
# The two images runc's own integration suite runs on, as it uses them
# (issue 14): busybox as docker's image has it and Debian (bookworm minbase),
# both built offline by tests/runc-suite/make-images.sh (`make images`), each
# extracted as runc's setup_bundle does (`tar --exclude './dev/*'`), under the
# config.json `maka spec` writes, changed only in the process it runs, and the
# default policy (restricted). Neither image has /maka/work, and busybox has
# no /run: maka provides those mount points outside the root. The root is a
# read-only bind of the extracted tree, and its checksum (every path, mode,
# owner and content) is the same after the run.

MAKA_POLICY=   # restricted, the default
load helpers

setup_file() {
  maka_setup_file
  [ -s "$MAKA_FIXTURES/images/images.env" ] ||
    { echo "no images: make images (tests/runc-suite/make-images.sh)" >&2; return 1; }
}

# tree_sum DIR: every path of DIR with its type, mode, owner and content's
# checksum: equal before and after means nothing was written.
tree_sum() {
  (cd "$1" && find . -printf '%p %y %m %U %G %s %l\n' | sort && find . -type f -exec sha256sum {} + | sort) | sha256sum
}

# image_bundle NAME TAR: BATS_TEST_TMPDIR/NAME/{rootfs,ro,config.json}: the
# image extracted as runc's suite does, bound read-only on ro, and `maka
# spec`'s config with root.path the read-only bind.
image_bundle() {
  local b=$BATS_TEST_TMPDIR/$1
  mkdir -p "$b/rootfs" "$b/ro"
  tar --exclude './dev/*' -C "$b/rootfs" -xf "$2"
  (cd "$b" && "$MAKA_BINARY" spec)
  mount --bind "$b/rootfs" "$b/ro"
  mount -o remount,bind,ro "$b/ro"
  update_config "$b" '.root.path = "ro" | .process.terminal = false'
}

# The probe: what a first container shows, and what it may not do.
# shellcheck disable=SC2016
PROBE='id -u; pwd; stat -c "owner %u" /etc
  for d in /run /maka/work /tmp /dev/shm; do [ -d $d ] && echo "dir $d"; done
  echo written > /maka/work/f && cat /maka/work/f
  echo written > /tmp/f && cat /tmp/f
  for f in /pwn /etc/pwn /bin/pwn /usr/pwn; do touch $f 2>/dev/null || echo "refused $f"; done
  head -n1 /etc/os-release 2>/dev/null; busybox 2>/dev/null | head -n1 | cut -d" " -f1,2
  awk "{print \"uid_map\", \$1, \$3}" /proc/self/uid_map'

@test "runc's suite images (busybox, Debian bookworm) under maka spec's config and restricted, the root a read-only bind: they run as they are, maka makes /maka/work and /run outside the root, the root's tree is unchanged, nothing left" {
  local img sum name out
  eval "$(cat "$MAKA_FIXTURES/images/images.env")"
  for name in busybox debian; do
    if [ $name = busybox ]; then img=$BUSYBOX_IMAGE; else img=$DEBIAN_IMAGE; fi
    image_bundle $name "$img"
    local b=$BATS_TEST_TMPDIR/$name
    # The images as they are: no /maka/work (and busybox has no /run).
    [ ! -e "$b/rootfs/maka" ]
    sum=$(tree_sum "$b/rootfs")
    update_config "$b" '.process.args = ["sh", "-c", $p]' --arg p "$PROBE"
    run maka boundary --bundle "$b"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$(tr -s ' \n' ' ' <<<"$output")" == *"/maka/work"*"(missing in the root: made by maka, outside it)"* ]]
    run maka run --bundle "$b" "img-$name"
    umount "$b/ro" || true
    echo "$output"
    [ "$status" -eq 0 ]
    out=$output
    # Root inside (idmapped root: the image's files are root's), the
    # declared cwd, the mount points the contract declares, writable tmpfs,
    # a root that refuses every write, the image's own userland, and a user
    # namespace mapping 0 to an unprivileged host id.
    [ "${lines[0]}" = 0 ]
    [ "${lines[1]}" = / ]
    [ "${lines[2]}" = "owner 0" ]
    for d in /run /maka/work /tmp /dev/shm; do [[ "$out" == *"dir $d"* ]]; done
    [ "$(grep -c '^written$' <<<"$out")" -eq 2 ]
    [ "$(grep -c '^refused ' <<<"$out")" -eq 4 ]
    if [ $name = debian ]; then
      [[ "$out" == *'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"'* ]]
    else
      [[ "$out" == *"BusyBox v"* ]]
    fi
    [[ "$out" =~ uid_map\ 0\ 65536 ]]
    [[ ! "$out" =~ uid_map\ 0\ 0 ]]
    [ "$(tree_sum "$b/rootfs")" = "$sum" ]
    [ ! -e "$b/rootfs/maka" ]
    assert_nothing_left "img-$name"
  done
}

@test "runc's busybox image on a read-only filesystem (ramfs, remounted ro) under maka spec's config runs as it is; its tree is unchanged" {
  local r=$BATS_TEST_TMPDIR/ramfs d sum
  eval "$(cat "$MAKA_FIXTURES/images/images.env")"
  mkdir -p "$r" "$BATS_TEST_TMPDIR/rb"
  mount -t ramfs -o mode=0755 ramfs "$r"
  tar --exclude './dev/*' -C "$r" -xf "$BUSYBOX_IMAGE"
  mount -o remount,ro "$r"
  d=$(dirname "$r")
  while [ "$d" != / ]; do chmod o+x "$d"; d=$(dirname "$d"); done
  sum=$(tree_sum "$r")
  (cd "$BATS_TEST_TMPDIR/rb" && "$MAKA_BINARY" spec)
  update_config "$BATS_TEST_TMPDIR/rb" '.root.path = $r | .process.terminal = false
    | .process.args = ["sh", "-c", $p]' --arg r "$r" --arg p "$PROBE"
  run maka run --bundle "$BATS_TEST_TMPDIR/rb" img-ramfs
  echo "$output"
  local after
  after=$(tree_sum "$r")
  umount "$r"
  [ "$status" -eq 0 ]
  # Not idmapped (ramfs): the image's root-owned files show as nobody.
  [ "${lines[0]}" = 0 ]
  [ "${lines[2]}" = "owner 65534" ]
  [ "$(grep -c '^written$' <<<"$output")" -eq 2 ]
  [ "$(grep -c '^refused ' <<<"$output")" -eq 4 ]
  [[ "$output" == *"BusyBox v"* ]]
  [ "$after" = "$sum" ]
  assert_nothing_left img-ramfs
}
