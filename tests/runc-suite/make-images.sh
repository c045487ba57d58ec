#!/bin/bash
# tests/runc-suite/make-images.sh CACHE_DIR
#
# Builds, offline from Debian packages, the two images runc's integration
# suite downloads with get-images.sh, and prints the variables helpers.bash
# evals (BUSYBOX_IMAGE=..., DEBIAN_IMAGE=...):
#   busybox.tar  docker's busybox image as near as Debian makes it: the static
#                busybox of busybox-static, every applet a link in /bin (as
#                docker's image has), /etc/passwd and /etc/group with docker's
#                busybox entries, /tmp 1777, /root 700;
#   debian.tar   `debootstrap --variant=minbase bookworm` (runc's is Debian 10
#                slim; no core file uses it, the other files do).
# Each is built once and kept in CACHE_DIR (default /var/cache/maka-runc-suite),
# outside the repository; delete a tarball to rebuild it.
set -euo pipefail
cache=${1:-/var/cache/maka-runc-suite}
mkdir -p "$cache"
exec 9>"$cache/.lock"; flock 9
log() { echo "runc-suite: $*" >&2; }

busybox_tar=$cache/busybox.tar
if [ ! -s "$busybox_tar" ]; then
  tmp=$(mktemp -d "$cache/busybox.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  # Debian's busybox-static, by apt-get download (no install needed).
  ( cd "$tmp" && apt-get download -q busybox-static >&2 ) ||
    { apt-get update -qq >&2 && ( cd "$tmp" && apt-get download -q busybox-static >&2 ); }
  dpkg -x "$tmp"/busybox-static_*.deb "$tmp/pkg"
  bb=$tmp/pkg/bin/busybox
  [ -x "$bb" ] || { log "no bin/busybox in busybox-static"; exit 1; }
  r=$tmp/root
  umask 022
  # No /proc or /sys, as docker's image: runc's mask.bats plants a symlink there.
  mkdir -p "$r"/{bin,dev,etc,home,root,tmp,usr/sbin,var/spool/mail,var/www}
  chmod 1777 "$r/tmp"; chmod 700 "$r/root"
  install -m 755 "$bb" "$r/bin/busybox"
  # busybox --install -s DIR: every applet as a symlink in DIR (docker's
  # image has them all in /bin, as hard links).
  "$r/bin/busybox" --install -s "$r/bin"
  # --install links to the absolute path it ran from: make them relative.
  for l in "$r"/bin/*; do
    [ -L "$l" ] && ln -sfn busybox "$l"
  done
  [ -e "$r/bin/sh" ] || { log "busybox has no sh applet"; exit 1; }
  cat > "$r/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
P
  cat > "$r/etc/group" <<'G'
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
lock:x:54:
netdev:x:82:
users:x:100:
nogroup:x:65534:
G
  : > "$r/etc/shadow"; chmod 600 "$r/etc/shadow"
  tar -C "$r" --numeric-owner --owner=0 --group=0 -cf "$busybox_tar.tmp" .
  mv "$busybox_tar.tmp" "$busybox_tar"
  rm -rf "$tmp"; trap - EXIT
  log "built $busybox_tar"
fi

debian_tar=$cache/debian.tar
if [ ! -s "$debian_tar" ] && [ -z "${RUNC_SUITE_NO_DEBIAN:-}" ]; then
  command -v debootstrap >/dev/null || {
    log "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2
  }
  tmp=$(mktemp -d "$cache/debian.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "debootstrap --variant=minbase bookworm (once; a few minutes)"
  debootstrap --variant=minbase bookworm "$tmp/root" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
    { log "debootstrap failed: see $cache/debootstrap.log"; exit 1; }
  rm -rf "$tmp"/root/var/cache/apt/archives/*.deb "$tmp"/root/var/lib/apt/lists/* "$tmp"/root/dev/*
  tar -C "$tmp/root" --numeric-owner -cf "$debian_tar.tmp" .
  mv "$debian_tar.tmp" "$debian_tar"
  rm -rf "$tmp"; trap - EXIT
  log "built $debian_tar"
fi

echo "BUSYBOX_IMAGE=$busybox_tar"
[ ! -s "$debian_tar" ] || echo "DEBIAN_IMAGE=$debian_tar"
