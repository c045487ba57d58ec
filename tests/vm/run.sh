#!/bin/bash
# tests/vm/run.sh CMD [ARGS...]
#
# Runs CMD as root in a throw-away QEMU guest that boots a stock Debian 6.12
# kernel with a pure cgroup v2 hierarchy, and exits with CMD's exit status
# (124 if the guest died or timed out before reporting one).
#
#   /             the host's / over 9p, read-only, with a tmpfs overlay on top:
#                 every host tool (go, bats, runc, crun, ...) is there, and
#                 writes vanish when the guest powers off
#   $VM_SHARE     (default: the current directory) shared read-write at the
#                 same path; CMD starts in the current directory
#   /sys/fs/cgroup  cgroup2 only, every controller enabled in the root
#   /run /tmp /dev/shm  fresh tmpfs
#
# Why a guest at all: developer and CI machines may have a cgroup v1/v2 hybrid
# owned by other software.  Never run a container, create a cgroup or unmount
# anything on such a host: run the integration tests here instead.
#
# Environment:
#   VM_MEM (4G)  VM_CPUS (nproc)  VM_SHARE ($PWD)  VM_TIMEOUT (1800 s)
#   VM_ACCEL (auto: kvm only if the CPU really has vmx/svm, else tcg)
#   VM_TCG (thread=single)  VM_CPU (max)  VM_APPEND (extra kernel args)
#   VM_KERNEL_PKG (default: what linux-image-6.12-amd64 depends on)
#   VM_CACHE (/var/cache/maka-testvm)  VM_CONSOLE (file to keep the console log in)
#   VM_ENV ("": names of extra variables to pass to CMD).  PATH, LANG, LC_ALL,
#     the GO* build variables and every variable whose name starts with MAKA_
#     or BATS_ are always passed.
#
# Pitfalls (measured; keep them solved):
# - /dev/kvm on these machines can be PVM (no vmx/svm): a stock kernel under it
#   is ~100x slower than software emulation, so "auto" picks TCG there.
# - Multi-threaded TCG (QEMU 7.2) sometimes oopses the guest ("Oops: int3")
#   when the kernel live-patches its text (first cgroup/BPF use by runc):
#   keep -accel tcg,thread=single.
# - Boot the extracted ELF vmlinux (PVH entry), not the zstd bzImage: the
#   in-guest decompressor costs seconds under emulation.
# - devtmpfs has no /dev/fd: bats needs the fd/stdin/stdout/stderr links (init.sh).
# - Overlay cannot stack on the guest's overlay root: podman and containerd need
#   a tmpfs on /var/lib/containers and /var/lib/containerd first.  Podman:
#   --cgroup-manager cgroupfs --events-backend file --network none, image from
#   `podman import` of a rootfs tar.  containerd: start `containerd &`, import
#   an OCI archive (`podman save --format oci-archive`) with `ctr image import`.
# - Build Go binaries on the host; only run tests in the guest (the guest's Go
#   cache is empty every boot and compiling under emulation is slow).
# - Boot once per suite, not once per test (~10 s per boot).
# - Times in the guest are emulated: compare only ratios measured in one run.
# - CMD has no controlling terminal: tests of a foreground run/exec with a tty
#   need one (e.g. `script -qec ... /dev/null`), or runtimes fail on /dev/tty.
# - The guest has one block device, /dev/vda: an empty 64 MiB disk, a sparse
#   file of the run's directory (runc's suite takes the first disk `lsblk -d`
#   lists for its io.max test).  stage2 loads virtio_blk, loop and bfq (no udev
#   loads them): losetup and the bfq scheduler work too.
# - A fresh guest's root cgroup has no children: probes of controller files
#   (cpu.idle, memory.swap.max, io.weight) must look in a child cgroup.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${VM_CACHE:-/var/cache/maka-testvm}
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARGS...]" >&2; exit 2; }

apt_updated=
apt_update() { # once per run, and only when needed
  [ -n "$apt_updated" ] && return 0
  echo "vm-run: apt-get update" >&2
  apt-get update -qq >&2; apt_updated=1
}
need() { # need CMD PKG...: apt-get install PKG if CMD is missing
  command -v "$1" >/dev/null && return 0
  shift
  apt-cache show "$1" >/dev/null 2>&1 || apt_update
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}
need qemu-system-x86_64 qemu-system-x86
need cpio cpio
need depmod kmod
need xz xz-utils
need zstd zstd
[ -x /bin/busybox ] || need busybox-static busybox-static

# 1. Kernel: download + unpack the Debian package into the cache (never /boot).
if [ -z "${VM_KERNEL_PKG:-}" ] &&
   ! apt-cache depends linux-image-6.12-amd64 2>/dev/null | grep -q 'Depends: linux-image-6'; then
  apt_update
fi
kpkg=${VM_KERNEL_PKG:-$(apt-cache depends linux-image-6.12-amd64 | awk '/Depends: linux-image-6/ {print $2; exit}')}
[ -n "$kpkg" ] || { echo "vm-run: cannot find the linux-image-6.12-amd64 package" >&2; exit 125; }
kver=${kpkg#linux-image-}
kdir=$cache/$kpkg
mkdir -p "$cache"; exec 9>"$cache/.lock"; flock 9   # one builder at a time
if [ ! -e "$kdir/.done" ]; then
  echo "vm-run: preparing $kpkg in $kdir" >&2
  rm -rf "$kdir"; mkdir -p "$kdir/dl"
  (cd "$kdir/dl" && apt-get download -q "$kpkg" 2>&1 | grep -v unsandboxed >&2 || true)
  ls "$kdir"/dl/*.deb >/dev/null 2>&1 || { echo "vm-run: apt-get download $kpkg failed" >&2; exit 125; }
  dpkg -x "$kdir"/dl/*.deb "$kdir/root"
  rm -rf "$kdir/dl"
  [ -d "$kdir/root/lib/modules" ] || ln -s usr/lib "$kdir/root/lib"
  depmod -b "$kdir/root" "$kver"
  # Uncompressed ELF vmlinux: QEMU boots it through the PVH entry point,
  # skipping the real-mode setup and the in-guest decompressor.
  vmlinuz=$kdir/root/boot/vmlinuz-$kver
  off=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$vmlinuz" | head -1 | cut -d: -f1 || true)
  if [ -n "$off" ]; then
    tail -c+$((off + 1)) "$vmlinuz" | zstd -dcq > "$kdir/vmlinux" 2>/dev/null || true
  fi
  # Keep it only if it really is an ELF file.
  [ "$(head -c4 "$kdir/vmlinux" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] || rm -f "$kdir/vmlinux"
  # initramfs: static busybox, /init, and the modules needed to mount the root.
  ird=$kdir/initramfs; mkdir -p "$ird"/{bin,lib/modules,proc,sys,dev}
  cp /bin/busybox "$ird/bin/busybox"
  for m in netfs 9pnet 9pnet_virtio 9p overlay; do
    f=$(find "$kdir/root" -name "$m.ko*" | head -1)
    [ -n "$f" ] || { echo "vm-run: module $m not found in $kpkg" >&2; exit 125; }
    case $f in *.xz) xz -dc "$f";; *.zst) zstd -dcq "$f";; *) cat "$f";; esac > "$ird/lib/modules/$m.ko"
  done
  touch "$kdir/.done"
fi
install -m 755 "$here/init.sh" "$kdir/initramfs/init"
kernel=$kdir/vmlinux; [ -s "$kernel" ] || kernel=$kdir/root/boot/vmlinuz-$kver

# 2. Per-run directory shared with the guest: command, env, exit status, console log.
run=$(mktemp -d /tmp/maka-vm.XXXXXX)
trap 'rm -rf "$run"' EXIT
share=$(cd "${VM_SHARE:-$PWD}" && pwd -P)
echo "$share" > "$run/share"
echo "$kdir/root/lib/modules" > "$run/kmods"
install -m 755 "$here/stage2.sh" "$run/stage2"
truncate -s 64M "$run/disk.img"   # sparse: /dev/vda in the guest
(cd "$kdir/initramfs" && find . | cpio -o -H newc --quiet) > "$run/initrd.img"   # ~0.1 s
flock -u 9
[ ! -t 1 ] || touch "$run/tty"
{
  names=(PATH LANG LC_ALL GOPATH GOROOT GOFLAGS GOCACHE GOMODCACHE ${VM_ENV:-})
  while IFS= read -r v; do names+=("$v"); done < <(compgen -v | grep -E '^(MAKA|BATS)_' || true)
  for v in "${names[@]}"; do
    if [ -n "${!v+x}" ]; then printf 'export %s=%q\n' "$v" "${!v}"; fi
  done
  printf 'export TERM=dumb HOME=%q\ncd %q || exit 125\n' "${HOME:-/root}" "$PWD"
  printf '%q ' "$@"; echo
} > "$run/cmd"

accel=${VM_ACCEL:-auto}
if [ "$accel" = auto ]; then
  if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=kvm; else accel=tcg; fi
fi
case $accel in
  kvm) acc=(-accel kvm -cpu host) ;;
  *)   acc=(-accel "tcg,${VM_TCG:-thread=single}" -cpu "${VM_CPU:-max}") ;;
esac

p9=security_model=none,multidevs=remap
rc=0
timeout "${VM_TIMEOUT:-1800}" qemu-system-x86_64 "${acc[@]}" \
  -m "${VM_MEM:-4G}" -smp "${VM_CPUS:-$(nproc)}" \
  -nodefaults -no-user-config -no-reboot -display none \
  -kernel "$kernel" -initrd "$run/initrd.img" \
  -append "console=ttyS0 quiet panic=-1 mitigations=off rdinit=/init ${VM_APPEND:-}" \
  -serial "file:$run/console.log" \
  -device virtio-serial-pci -chardev stdio,id=out,signal=off -device virtconsole,chardev=out \
  -device virtio-rng-pci \
  -drive "file=$run/disk.img,format=raw,if=virtio,cache=unsafe" \
  -virtfs "local,path=/,mount_tag=hostroot,readonly=on,$p9" \
  -virtfs "local,path=$run,mount_tag=vmrun,$p9" \
  -virtfs "local,path=$share,mount_tag=share,$p9" || rc=$?
[ -z "${VM_CONSOLE:-}" ] || cp "$run/console.log" "$VM_CONSOLE"
if [ -s "$run/rc" ]; then exit "$(cat "$run/rc")"; fi
echo "vm-run: guest did not report an exit status (qemu rc=$rc); console log:" >&2
tail -n 60 "$run/console.log" >&2 || true
exit 124
