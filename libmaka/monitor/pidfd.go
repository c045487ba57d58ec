package monitor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A detached monitor is named by its pid (PidFile) and its start time
// (StartFile: the 22nd field of /proc/PID/stat, in clock ticks since
// boot): a pid alone may have been reused by any process since. maka
// acts on it only through a pidfd opened on the pid and then verified
// against the start time: a pidfd keeps naming the process it was opened
// on, so once the process at that pid is seen to have the recorded start
// time (after the open), the pidfd is the monitor's, and a signal sent
// through it (pidfd_send_signal) can reach no other process.

// MonitorState is what a state directory's pid file says of its monitor.
type MonitorState int

const (
	// MonitorNone: no detached monitor was recorded (a foreground run's
	// monitor lives in maka run; or the launch failed before it).
	MonitorNone MonitorState = iota
	// MonitorAlive: the recorded monitor runs.
	MonitorAlive
	// MonitorDead: the recorded monitor is gone (exited, killed; its pid
	// may be another process's now).
	MonitorDead
	// MonitorUnknown: the pid file cannot be read or verified (a pid
	// file without a start time, from an older maka).
	MonitorUnknown
)

func (s MonitorState) String() string {
	switch s {
	case MonitorNone:
		return "none"
	case MonitorAlive:
		return "alive"
	case MonitorDead:
		return "dead"
	}
	return "unknown"
}

// startTime is the start time of process pid (clock ticks since boot),
// and an error if it is gone or a zombie (it has exited).
func startTime(pid int) (uint64, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (the state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d has exited", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// writePidFile records pid, with its start time, as the monitor of the
// state directory dir. pid must be a child not yet reaped (it cannot be
// reused meanwhile).
func writePidFile(dir string, pid int) error {
	start, err := startTime(pid)
	if err != nil {
		return err
	}
	// The start time first: a pid file always has its start time.
	if err := os.WriteFile(filepath.Join(dir, StartFile), []byte(strconv.FormatUint(start, 10)+"\n"), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, PidFile), []byte(strconv.Itoa(pid)), 0o600)
}

// StartFile, in the container's state directory, holds the start time of
// the process PidFile names.
const StartFile = "monitor.start"

// errUnverifiable: a pid file without a start time (an older maka's).
var errUnverifiable = errors.New("the monitor's pid file has no start time: it cannot be verified")

// readPidFile reads dir's pid file: the pid and its start time.
func readPidFile(dir string) (pid int, start uint64, err error) {
	data, err := os.ReadFile(filepath.Join(dir, PidFile))
	if err != nil {
		return 0, 0, err
	}
	p := strings.TrimSpace(string(data))
	if pid, err = strconv.Atoi(p); err != nil || pid <= 0 {
		return 0, 0, fmt.Errorf("%s: %q is not a pid", PidFile, p)
	}
	data, err = os.ReadFile(filepath.Join(dir, StartFile))
	if errors.Is(err, os.ErrNotExist) {
		return pid, 0, errUnverifiable
	}
	if err != nil {
		return 0, 0, err
	}
	p = strings.TrimSpace(string(data))
	if start, err = strconv.ParseUint(p, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("%s: %q is not a start time", StartFile, p)
	}
	return pid, start, nil
}

// openMonitor opens a pidfd on dir's recorded monitor, verified: st is
// MonitorAlive with the pidfd (the caller closes it), else the state and
// -1.
func openMonitor(dir string) (pidfd int, st MonitorState) {
	pid, start, err := readPidFile(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return -1, MonitorNone
	case err != nil:
		return -1, MonitorUnknown
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return -1, MonitorDead
		}
		return -1, MonitorUnknown
	}
	// After the open: the process at pid now is the monitor only if it
	// has the recorded start time, and then the pidfd names it.
	now, err := startTime(pid)
	if err != nil || now != start {
		unix.Close(fd)
		return -1, MonitorDead
	}
	return fd, MonitorAlive
}

// MonitorStatus says whether the detached monitor recorded in the state
// directory dir runs.
func MonitorStatus(dir string) MonitorState {
	fd, st := openMonitor(dir)
	if fd >= 0 {
		unix.Close(fd)
	}
	return st
}

// Stop stops a detached container's monitor before the container's state
// goes (it records the peak usage while the cgroup still exists) and waits
// for it to exit, up to two seconds. It signals only the recorded, verified
// process, through a pidfd; a monitor it cannot verify is left alone (it
// exits by itself when its container's cgroup empties).
func Stop(stateDir string) {
	fd, st := openMonitor(stateDir)
	if st != MonitorAlive {
		return
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil {
		return
	}
	waitPidfd(fd, 2*time.Second)
}

// waitPidfd waits until the process of pidfd has exited (it is readable
// then), at most limit.
func waitPidfd(pidfd int, limit time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	deadline := time.Now().Add(limit)
	for left := limit; left > 0; left = time.Until(deadline) {
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
	}
	return false
}
