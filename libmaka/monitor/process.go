package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Info is what a detached monitor learns, on its info pipe, once the
// container's init runs. An empty pipe means the create failed.
type Info struct {
	Cgroup  string   `json:"cgroup"`
	InitPid int      `json:"initPid"`
	Tmpfs   []string `json:"tmpfs"`
	// Egress: the sandbox's egress, whose listener comes with Info.
	Egress *EgressConfig `json:"egress,omitempty"`
	// Agent: the sandbox's init is maka's agent, whose holder end comes
	// with Info (after the egress listener): the monitor holds it for the
	// sandbox's life and serves AgentSocketFile.
	Agent bool `json:"agent,omitempty"`
}

// infoFiles sorts the descriptors that came with in: exactly one per
// thing in says comes with it, or none is kept.
func infoFiles(in Info, files []*os.File) (egressLn, agentEnd *os.File, err error) {
	want := 0
	if in.Egress != nil {
		want++
	}
	if in.Agent {
		want++
	}
	if len(files) != want {
		for _, f := range files {
			f.Close()
		}
		return nil, nil, fmt.Errorf("%d descriptors with Info, want %d", len(files), want)
	}
	if in.Egress != nil {
		egressLn, files = files[0], files[1:]
	}
	if in.Agent {
		agentEnd = files[0]
	}
	return egressLn, agentEnd, nil
}

// dropPagesAfter is how long after its launcher's exit the detached monitor
// drops its binary's pages.
const dropPagesAfter = 3 * time.Second

// RunDetached is the whole life of a detached container's monitor process
// (`maka monitor`, or the small maka-monitor binary): it serves the seccomp
// listener from the start, attaches once create sends Info, answers on ack
// when it is attached (it then holds the container's tmpfs mounts, and only
// then may the user's process run), and returns when the container is gone
// or on SIGTERM/SIGINT (delete). It takes ownership of the three files.
func RunDetached(cfg Config, listener, info, ack *os.File) error {
	defer ack.Close()
	// It lives as long as the container: keep it small.
	debug.SetGCPercent(25)
	debug.SetMemoryLimit(4 << 20)
	ln, err := net.FileListener(listener)
	listener.Close()
	if err != nil {
		info.Close()
		return fmt.Errorf("monitor %s: %w", cfg.ID, err)
	}
	m, err := New(cfg)
	if err != nil {
		ln.Close()
		info.Close()
		return err
	}
	defer m.Close()
	m.Serve(ln.(*net.UnixListener))
	data, files, _ := recvInfo(info)
	info.Close()
	var in Info
	if json.Unmarshal(data, &in) != nil || in.Cgroup == "" {
		for _, f := range files {
			f.Close()
		}
		return nil // create failed: nothing to watch
	}
	egressLn, agentEnd, err := infoFiles(in, files)
	if err != nil {
		return fmt.Errorf("monitor %s: %w", cfg.ID, err) // create fails
	}
	if egressLn != nil {
		if err := m.ServeEgress(egressLn, *in.Egress); err != nil {
			if agentEnd != nil {
				agentEnd.Close()
			}
			return err
		}
	}
	if agentEnd != nil {
		if err := m.ServeAgent(agentEnd); err != nil {
			return err
		}
	}
	if err := m.Attach(in.Cgroup, in.InitPid, in.Tmpfs); err != nil {
		return err // create/run reads EOF on ack: it fails
	}
	// The launcher waits for our answer: it is alive until then.
	launcher, _ := unix.PidfdOpen(os.Getppid(), 0)
	// The garbage goes before the user's process runs: a violation must not
	// find the monitor busy collecting or paging (measured under emulation:
	// a kill delayed by up to 2 s).
	debug.FreeOSMemory()
	code := fileMappings()
	m.Warm()
	if _, err := ack.Write([]byte{1}); err != nil {
		return err // the launcher is gone: its create fails and removes the sandbox
	}
	ack.Close()
	// The guard: from here on the sandbox dies with this process, however
	// it dies. Started right after the answer rather than before it, so
	// that its start is not on the create's path; it guards from the
	// moment it exists (it holds the pipe's read end: a monitor that dies
	// before the guard reads it still leaves it end-of-file), and the
	// user's process runs only once the launcher, which got the answer
	// first, starts it. Should it fail to start, maka's commands fail the
	// sandbox closed (libmaka.FailClosed).
	var g *guard
	m.mu.Lock()
	cgfd := m.cgroupFD
	m.mu.Unlock()
	select {
	case <-m.Done():
		cgfd = -1 // the sandbox is gone already: nothing to guard
	default:
	}
	if cgfd >= 0 {
		if g, err = startGuard(filepath.Dir(cfg.StateDir), cfg, cgfd); err != nil {
			fmt.Fprintf(os.Stderr, "maka monitor %s: %v\n", cfg.ID, err)
		}
	}
	// Every return below is an end in order (the sandbox stopped, or
	// SIGTERM: delete): the guard stands down. Only a death that skips
	// them (SIGKILL, a crash) fails the sandbox closed.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT)
	// The binary's pages can be dropped only once no other process maps
	// them: after the launcher has exited. Not at once: a sandbox often
	// crosses its boundary first thing, and the kill would wait for the
	// pages it needs (measured under emulation, the binary on 9p: 1.5 s).
	waitExit(launcher, 10*time.Second)
	select {
	case <-m.Done():
		g.disarm()
		return nil
	case <-sigs:
		g.disarm()
		return nil
	case <-time.After(dropPagesAfter):
	}
	dropPages(code)
	m.Warm()
	select {
	case <-m.Done():
	case <-sigs:
	}
	g.disarm()
	return nil
}

// The monitor gives back what its start-up touched and its loops never
// touch again: the garbage of the set-up (debug.FreeOSMemory), and the pages
// of the binary's code and data read from the file (clean: the kernel reads
// them again if they are ever needed; dropPages). It then holds about its
// own working set for the rest of the container's life.

// fileMappings lists the read-only file-backed mappings of this process:
// the binary's code and constant data.
func fileMappings() [][2]uintptr {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil
	}
	var out [][2]uintptr
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		// Only file-backed mappings (a path) that are not writable.
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") || f[1][1] == 'w' {
			continue
		}
		var start, end uintptr
		if _, err := fmt.Sscanf(f[0], "%x-%x", &start, &end); err != nil || end <= start {
			continue
		}
		out = append(out, [2]uintptr{start, end})
	}
	return out
}

// dropPages asks the kernel to page out the mappings' pages that only this
// process maps (MADV_PAGEOUT skips shared ones).
func dropPages(mappings [][2]uintptr) {
	for _, r := range mappings {
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_PAGEOUT)
	}
}

// waitExit waits until the process of pidfd has exited, at most limit,
// and closes pidfd (a negative pidfd: no wait).
func waitExit(pidfd int, limit time.Duration) {
	if pidfd < 0 {
		return
	}
	defer unix.Close(pidfd)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	deadline := time.Now().Add(limit)
	for left := limit; left > 0; left = time.Until(deadline) {
		if n, err := unix.Poll(fds, int(left/time.Millisecond)+1); n > 0 || (err != nil && !errors.Is(err, unix.EINTR)) {
			return
		}
	}
}
