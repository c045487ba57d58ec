#!/bin/busybox sh
# PID 1 of the guest initramfs (busybox), installed by tests/vm/run.sh.
# Builds the guest root and hands over to /run/vmrun/stage2 (the host's bash):
#   /            overlay: lower = host / via 9p (read-only), upper = tmpfs
#   /proc /sys /dev /dev/pts /dev/shm /run /tmp   fresh guest mounts
#   /sys/fs/cgroup  cgroup2 only (nsdelegate), every controller enabled for children
#   $VM_SHARE    host directory shared read-write at the same path (9p "share")
#   /run/vmrun   per-run host directory (9p "vmrun"): command, rc
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in netfs 9pnet 9pnet_virtio 9p overlay; do insmod /lib/modules/$m.ko; done

p9="trans=virtio,version=9p2000.L,msize=512000"
mkdir -p /lower /upper /newroot
mount -t 9p -o ro,cache=loose,$p9 hostroot /lower
mount -t tmpfs -o mode=755 tmpfs /upper
mkdir -p /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w overlay /newroot

r=/newroot
mount -t proc proc $r/proc
mount -t sysfs sysfs $r/sys
mount -t devtmpfs devtmpfs $r/dev
mkdir -p $r/dev/pts $r/dev/shm $r/dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666,gid=5,mode=620 devpts $r/dev/pts
ln -sf pts/ptmx $r/dev/ptmx
ln -sf /proc/self/fd $r/dev/fd
ln -sf /proc/self/fd/0 $r/dev/stdin
ln -sf /proc/self/fd/1 $r/dev/stdout
ln -sf /proc/self/fd/2 $r/dev/stderr
mount -t tmpfs -o mode=1777 tmpfs $r/dev/shm
mount -t mqueue mqueue $r/dev/mqueue 2>/dev/null
mount -t tmpfs -o mode=755 tmpfs $r/run
mount -t tmpfs -o mode=1777 tmpfs $r/tmp
mount -t cgroup2 -o nsdelegate cgroup2 $r/sys/fs/cgroup
for c in $(cat $r/sys/fs/cgroup/cgroup.controllers); do
  echo "+$c" > $r/sys/fs/cgroup/cgroup.subtree_control
done
mkdir -p $r/run/vmrun
mount -t 9p -o $p9 vmrun $r/run/vmrun
share=$(cat $r/run/vmrun/share 2>/dev/null)
if [ -n "$share" ]; then
  mkdir -p "$r$share"
  mount -t 9p -o $p9 share "$r$share"
fi
# Kernel modules of the guest kernel (for modprobe veth, br_netfilter, ...).
kmods=$(cat $r/run/vmrun/kmods 2>/dev/null)
if [ -n "$kmods" ]; then
  mkdir -p $r/usr/lib/modules
  mount --bind "$r$kmods" $r/usr/lib/modules
fi
# A machine id (systemd-style tools and some runtimes read it); the host's
# one is reused if it has one, else a fresh one goes into the tmpfs overlay.
if [ ! -s $r/etc/machine-id ]; then
  rm -f $r/etc/machine-id
  tr -d '-' < /proc/sys/kernel/random/uuid > $r/etc/machine-id
fi
hostname vm
ip link set lo up
exec switch_root $r /bin/bash /run/vmrun/stage2
