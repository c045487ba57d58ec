package monitor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// PeakFile holds the container's peak usage, written when it stops.
const PeakFile = "peak.json"

// Peak is the peak usage of a container's cgroup over its life, and what
// its writable tmpfs mounts held when it stopped (the kernel keeps no peak
// per mount).
type Peak struct {
	Time   time.Time `json:"time"`
	Memory int64     `json:"memory"` // bytes (memory.peak)
	Pids   int64     `json:"pids"`   // pids.peak
	// TmpfsUsed: bytes in use in each writable tmpfs at the stop.
	TmpfsUsed map[string]int64 `json:"tmpfsUsed,omitempty"`
}

// tmpfsMount is a writable tmpfs of the container, held open (O_PATH) so
// that its use can still be read once the container's processes, and with
// them its mount namespace, are gone.
type tmpfsMount struct {
	path string
	fd   int
}

// holdTmpfs opens the container's tmpfs mounts, resolved in its root.
func holdTmpfs(initPid int, paths []string) []tmpfsMount {
	if initPid <= 0 || len(paths) == 0 {
		return nil
	}
	root, err := unix.Open("/proc/"+strconv.Itoa(initPid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	var out []tmpfsMount
	for _, p := range paths {
		fd, err := unix.Openat2(root, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if err == nil {
			out = append(out, tmpfsMount{path: p, fd: fd})
		}
	}
	return out
}

func writePeak(stateDir, cgroupDir string, tmpfs []tmpfsMount) error {
	if _, err := os.Stat(cgroupDir); err != nil {
		return err
	}
	p := Peak{
		Time:   time.Now().UTC(),
		Memory: readInt(filepath.Join(cgroupDir, "memory.peak")),
		Pids:   readInt(filepath.Join(cgroupDir, "pids.peak")),
	}
	for _, t := range tmpfs {
		var st unix.Statfs_t
		if unix.Fstatfs(t.fd, &st) == nil {
			if p.TmpfsUsed == nil {
				p.TmpfsUsed = map[string]int64{}
			}
			p.TmpfsUsed[t.path] = int64(st.Blocks-st.Bfree) * st.Bsize
		}
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp := filepath.Join(stateDir, PeakFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(stateDir, PeakFile))
}
