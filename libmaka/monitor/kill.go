package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// KillWait is how long the monitor waits for a killed sandbox's cgroup to
// empty before it stops measuring (and reports it as not empty).
const KillWait = 5 * time.Second

// waitEmpty waits until the cgroup dir has no process left (cgroup.events
// "populated 0") or is gone, for at most limit. It is woken by inotify: the
// kernel signals a modification of cgroup.events when the flag changes
// (at most every 10 ms; a change within that is signalled when it ends).
// It returns when it saw the cgroup empty, and whether it did.
func waitEmpty(dir string, limit time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(limit)
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return time.Time{}, false
	}
	defer unix.Close(ifd)
	// The watch first, then the flag: a change after the read wakes us.
	if _, err := unix.InotifyAddWatch(ifd, filepath.Join(dir, "cgroup.events"), unix.IN_MODIFY); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return time.Now().UTC(), true // the cgroup is gone: empty
		}
		return time.Time{}, false
	}
	buf := make([]byte, 1024)
	fds := []unix.PollFd{{Fd: int32(ifd), Events: unix.POLLIN}}
	for {
		if !populated(dir) {
			return time.Now().UTC(), true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return time.Time{}, false
		}
		fds[0].Revents = 0
		ms := int(left/time.Millisecond) + 1
		if _, err := unix.Poll(fds, ms); err != nil && !errors.Is(err, unix.EINTR) {
			return time.Time{}, false
		}
		for {
			if n, err := unix.Read(ifd, buf); err != nil || n <= 0 {
				break
			}
		}
	}
}

// Warm runs, once and without effect, the code a violation under kill
// runs until the sandbox is dead: reading the caller from /proc, naming
// the syscall, writing a cgroup file, watching cgroup.events, answering
// the notification, encoding the record. The detached monitor drops the
// pages of its binary after start-up (they are clean: the kernel reads
// them again when needed); without this the first kill would wait for
// those page faults, one function at a time (measured under emulation,
// with the binary on 9p: up to a second).
func (m *Monitor) Warm() {
	self := os.Getpid()
	_, _ = procInfo(self)
	_, _ = cgroupOf(self)
	_ = idValid(-1, 0)
	_ = respond(-1, 0, unix.EPERM)
	r := Record{Time: time.Now().UTC(), Type: TypeSyscall, Action: ActionKill, Syscall: SyscallName(nativeArch, unix.SYS_MOUNT), Args: syscallArgs("mount", [6]uint64{})}
	_ = r.Summary()
	_, _ = json.Marshal(r)
	_ = os.WriteFile(os.DevNull, []byte("1"), 0)
	m.mu.Lock()
	cg := m.cgroup
	m.mu.Unlock()
	if cg != "" {
		_, _ = waitEmpty(cg, 0)
	}
}

// killAt writes cgroup.kill in the cgroup directory open as dirfd. A
// cgroup that is gone has nothing left to kill (nil); any other failure is
// returned: the sandbox may still run, and whoever killed it must say so.
func killAt(dirfd int) error {
	fd, err := unix.Openat(dirfd, "cgroup.kill", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cgroup.kill: %w", err)
	}
	defer unix.Close(fd)
	for {
		_, err = unix.Write(fd, []byte("1"))
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("cgroup.kill: %w", err)
	}
	return nil
}
