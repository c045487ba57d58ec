package monitor

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cgroupWatch follows a cgroup's event files through inotify: the kernel
// signals a modification of memory.events, pids.events and cgroup.events
// whenever one of their counters or flags changes.
type cgroupWatch struct {
	dir    string
	ifd    int
	oom    uint64 // memory.events oom_kill, as last recorded
	pidMax uint64 // pids.events max, as last recorded
}

func watchCgroup(dir string) (*cgroupWatch, error) {
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	w := &cgroupWatch{dir: dir, ifd: ifd}
	for _, f := range []string{"cgroup.events", "memory.events", "pids.events"} {
		if _, err := unix.InotifyAddWatch(ifd, filepath.Join(dir, f), unix.IN_MODIFY); err != nil && f == "cgroup.events" {
			unix.Close(ifd)
			return nil, err
		}
	}
	// The counters start at zero: the cgroup is the container's own, and
	// whatever it counted before Attach (a detached container runs while
	// its monitor starts) is the container's doing too.
	return w, nil
}

// run reports new limit events to record until the cgroup is empty or
// gone, or stop is readable.
func (w *cgroupWatch) run(stop int, record func(kind string, count uint64, limit int64)) {
	defer unix.Close(w.ifd)
	buf := make([]byte, 4096)
	fds := []unix.PollFd{{Fd: int32(w.ifd), Events: unix.POLLIN}, {Fd: int32(stop), Events: unix.POLLIN}}
	for {
		// Emptiness first, then the counters: the last check after the
		// container stopped sees every count.
		alive := populated(w.dir)
		w.check(record)
		if !alive {
			return
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		gone := false
		for {
			n, err := unix.Read(w.ifd, buf)
			if err != nil || n <= 0 {
				break
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				if ev.Mask&unix.IN_IGNORED != 0 {
					gone = true // the cgroup was removed
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
		if gone {
			w.check(record)
			return
		}
	}
}

func (w *cgroupWatch) check(record func(kind string, count uint64, limit int64)) {
	if n := eventCount(filepath.Join(w.dir, "memory.events"), "oom_kill"); n > w.oom {
		record(LimitOOMKill, n-w.oom, readInt(filepath.Join(w.dir, "memory.max")))
		w.oom = n
	}
	if n := eventCount(filepath.Join(w.dir, "pids.events"), "max"); n > w.pidMax {
		record(LimitPidsMax, n-w.pidMax, readInt(filepath.Join(w.dir, "pids.max")))
		w.pidMax = n
	}
}

// populated reads cgroup.events; a missing cgroup is not populated.
func populated(dir string) bool {
	return eventCount(filepath.Join(dir, "cgroup.events"), "populated") != 0
}

// eventCount reads the counter key from a flat-keyed cgroup file.
func eventCount(path, key string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// readInt reads a single-value cgroup file ("max" reads as 0).
func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}
