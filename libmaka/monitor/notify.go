package monitor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's seccomp user-notification structures (linux/seccomp.h);
// golang.org/x/sys has the ioctl numbers but not the types.
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// recvNotif blocks until the next notification on fd.
func recvNotif(fd int) (*seccompNotif, error) {
	// The kernel insists on a zeroed buffer.
	n := &seccompNotif{}
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_RECV), uintptr(unsafe.Pointer(n)))
		switch errno {
		case 0:
			return n, nil
		case unix.EINTR:
			*n = seccompNotif{}
			continue
		}
		return nil, errno
	}
}

// idValid reports whether the notification id is still pending: its
// process is still blocked in the syscall, so a pid read since names it.
func idValid(fd int, id uint64) bool {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_ID_VALID), uintptr(unsafe.Pointer(&id)))
	return errno == 0
}

// respond answers notification id: errno > 0 fails the syscall with it,
// errno == 0 lets the kernel run the syscall (FLAG_CONTINUE).
func respond(fd int, id uint64, errno unix.Errno) error {
	r := seccompNotifResp{ID: id}
	if errno != 0 {
		r.Error = -int32(errno)
	} else {
		r.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND), uintptr(unsafe.Pointer(&r)))
	if e != 0 && e != unix.ENOENT { // ENOENT: the process is gone already
		return e
	}
	return nil
}

// waitReadable waits until fd has a notification (true) or is hung up or
// stop is readable (false): stop is the read end of a pipe closed to stop.
func waitReadable(fd, stop int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || fds[1].Revents != 0 {
			return false
		}
		if fds[0].Revents&unix.POLLIN != 0 {
			return true
		}
		if fds[0].Revents != 0 { // POLLHUP: no process uses the filter any more
			return false
		}
	}
}

// procInfo is what /proc says about a host pid: its command name and its
// pid in the innermost pid namespace.
func procInfo(hostPid int) (comm string, nsPid int) {
	nsPid = hostPid
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(hostPid) + "/comm"); err == nil {
		comm = strings.TrimSpace(string(b))
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(hostPid) + "/status")
	if err != nil {
		return comm, nsPid
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if n, err := strconv.Atoi(f[len(f)-1]); err == nil {
					nsPid = n
				}
			}
		}
	}
	return comm, nsPid
}

// cgroupOf is the cgroup v2 directory of a host pid.
func cgroupOf(hostPid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(hostPid) + "/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return "/sys/fs/cgroup" + p, nil
		}
	}
	return "", fmt.Errorf("pid %d: no cgroup v2 entry", hostPid)
}

func hexArgs(a [6]uint64) []string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = "0x" + strconv.FormatUint(v, 16)
	}
	return out
}
