#!/bin/bash
# Guest PID 1 after switch_root (the host's bash on the overlay root).
# Runs /run/vmrun/cmd on the virtio console, records its exit status, powers off.
exec </dev/hvc0 >/dev/hvc0 2>&1
stty -onlcr -echo 2>/dev/null
# No udev: the block device's driver (/dev/vda), loop devices and the bfq
# scheduler, for the io tests (a missing module is no failure). PATH is still
# the initramfs's (/bin) here: modprobe by its full path.
/sbin/modprobe -qa virtio_blk loop bfq 2>/dev/null || true
ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null || true
if [ -e /run/vmrun/tty ]; then                 # host stdout is a terminal
  setsid -w bash /run/vmrun/cmd; rc=$?
else                                           # keep the command's stdout a pipe
  setsid -w bash /run/vmrun/cmd </dev/null 2>&1 | cat; rc=${PIPESTATUS[0]}
fi
echo "$rc" > /run/vmrun/rc
sync
echo o > /proc/sysrq-trigger
sleep 10
