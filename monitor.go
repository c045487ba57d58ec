package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// monitorPidFile holds the pid of a detached container's monitor process.
const monitorPidFile = "monitor.pid"

// The detached monitor's inherited fds: its listening socket, the pipe on
// which create/run sends what it needs once the init runs, and the pipe on
// which it answers once it is attached (it holds the container's tmpfs
// mounts before the user's process may run).
const (
	monitorListenerFd = 3
	monitorInfoFd     = 4
	monitorAckFd      = 5
)

// dropPagesAfter is how long after its launcher's exit the detached monitor
// drops its binary's pages.
const dropPagesAfter = 3 * time.Second

// monitorAttachWait bounds how long create/run waits for the detached
// monitor to attach (an emulated, loaded machine is slow to start it).
const monitorAttachWait = 30 * time.Second

// monitorInfo is what the monitor learns once the container's init runs.
type monitorInfo struct {
	Cgroup  string   `json:"cgroup"`
	InitPid int      `json:"initPid"`
	Tmpfs   []string `json:"tmpfs"`
}

// monitorCommand is the per-container monitor of a detached container
// (create, run --detach): started by maka itself, never by people.
var monitorCommand = &cli.Command{
	Name:      "monitor",
	Hidden:    true,
	Usage:     "watch one container's boundary (started by create and run --detach)",
	ArgsUsage: "<container-id>",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "on-violation", Value: "deny", Usage: "deny or kill"},
		&cli.DurationFlag{Name: "timeout", Usage: "how long the sandbox may live (0: no limit)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		// It lives as long as the container: keep it small (and
		// without transparent huge pages: see startWatch).
		debug.SetGCPercent(25)
		debug.SetMemoryLimit(4 << 20)
		rt, err := runtimeOf(c)
		if err != nil {
			return err
		}
		id := c.Args().First()
		lf := os.NewFile(monitorListenerFd, "monitor-listener")
		ln, err := net.FileListener(lf)
		lf.Close()
		if err != nil {
			return fmt.Errorf("monitor %s: %w", id, err)
		}
		m, err := monitor.New(monitor.Config{
			ID: id, StateDir: filepath.Join(rt.Root, id),
			OnViolation: c.String("on-violation"), Timeout: c.Duration("timeout"),
		})
		if err != nil {
			ln.Close()
			return err
		}
		defer m.Close()
		m.Serve(ln.(*net.UnixListener))
		ack := os.NewFile(monitorAckFd, "monitor-ack")
		defer ack.Close()
		data, _ := io.ReadAll(os.NewFile(monitorInfoFd, "monitor-info"))
		var info monitorInfo
		if json.Unmarshal(data, &info) != nil || info.Cgroup == "" {
			return nil // create failed: nothing to watch
		}
		if err := m.Attach(info.Cgroup, info.InitPid, info.Tmpfs); err != nil {
			return err // create/run reads EOF: it fails
		}
		// The launcher waits for our answer: it is alive until then.
		launcher, _ := unix.PidfdOpen(os.Getppid(), 0)
		// The garbage goes before the user's process runs: a violation
		// must not find the monitor busy collecting or paging (measured
		// under emulation: a kill delayed by up to 2 s).
		debug.FreeOSMemory()
		code := fileMappings()
		m.Warm()
		if _, err := ack.Write([]byte{1}); err != nil {
			return err
		}
		ack.Close()
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, unix.SIGTERM, unix.SIGINT)
		// The binary's pages can be dropped only once no other process
		// maps them: after the launcher has exited. Not at once: a
		// sandbox often crosses its boundary first thing, and the kill
		// would wait for the pages it needs (measured under emulation,
		// the binary on 9p: 1.5 s).
		waitExit(launcher, 10*time.Second)
		select {
		case <-m.Done():
			return nil
		case <-sigs:
			return nil
		case <-time.After(dropPagesAfter):
		}
		dropPages(code)
		m.Warm()
		select {
		case <-m.Done():
		case <-sigs:
		}
		return nil
	},
}

// sandboxWatch is the monitor of one container being launched: in this
// process (foreground run) or in a `maka monitor` process (detached).
type sandboxWatch struct {
	id    string
	tmpfs []string         // the container paths of its writable tmpfs mounts
	mon   *monitor.Monitor // foreground
	// detached: the pipes to and from the monitor process
	info, ack *os.File
}

// watchListenerPath points libcontainer at the monitor's socket when the
// seccomp profile notifies any syscall. Call it before Create: the path is
// part of the container's configuration.
func watchListenerPath(rt *libmaka.Runtime, id string, cfg *configs.Config) {
	if specconv.UsesNotify(cfg.Seccomp) {
		// Always maka's: a listenerPath from config.json is a host socket
		// the sandbox's author would have maka dial.
		cfg.Seccomp.ListenerPath = filepath.Join(rt.Root, id, monitor.SocketFile)
		cfg.Seccomp.ListenerMetadata = ""
	}
}

// startWatch starts the container's monitor, listening, before its init
// starts. A detached container gets its own monitor process.
func startWatch(rt *libmaka.Runtime, ctr *libmaka.Container, policy *libmaka.Policy, b *libmaka.Boundary, detach bool) (*sandboxWatch, error) {
	id := ctr.ID()
	stateDir := filepath.Join(rt.Root, id)
	onViolation := policy.OnViolation
	timeout := time.Duration(b.Limits.Timeout) * time.Second
	ln, err := monitor.Listen(stateDir)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	// The journal exists from the start: `maka events` follows it.
	j, err := monitor.OpenJournal(filepath.Join(stateDir, monitor.JournalFile))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	j.Close()
	w := &sandboxWatch{id: id}
	for _, wm := range b.Writable {
		if wm.Kind == "tmpfs" {
			w.tmpfs = append(w.tmpfs, wm.Path)
		}
	}
	if !detach {
		m, err := monitor.New(monitor.Config{ID: id, StateDir: stateDir, OnViolation: onViolation, Timeout: timeout})
		if err != nil {
			ln.Close()
			return nil, err
		}
		m.Serve(ln)
		w.mon = m
		return w, nil
	}
	// The monitor process serves the socket: closing our copy must not
	// remove it.
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	lf, err := ln.File()
	if err != nil {
		return nil, fmt.Errorf("create %s: monitor: %w", id, err)
	}
	defer lf.Close()
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create %s: monitor: %w", id, err)
	}
	defer infoR.Close()
	ackR, ackW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		return nil, fmt.Errorf("create %s: monitor: %w", id, err)
	}
	defer ackW.Close()
	exe, err := os.Executable()
	if err != nil {
		infoW.Close()
		ackR.Close()
		return nil, fmt.Errorf("create %s: monitor: %w", id, err)
	}
	cmd := exec.Command(exe, "--root", rt.Root, "monitor", "--on-violation", onViolation, "--timeout", timeout.String(), id)
	cmd.ExtraFiles = []*os.File{lf, infoR, ackW}
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	// Its own session: no terminal's signals, no caller's process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Only the three fds above: an inherited fd (bats' fd 3, a caller's
	// LISTEN_FDS) must not be held open for the container's whole life.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	// No transparent huge pages in the monitor, from its first page on
	// (the flag is inherited across fork and exec): one would make a few
	// KiB of its heap a resident 2 MiB. Ours (which the container's init
	// inherits) is restored at once.
	thpWas, _ := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
	_ = unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0)
	err = cmd.Start()
	_ = unix.Prctl(unix.PR_SET_THP_DISABLE, uintptr(thpWas), 0, 0, 0)
	if err != nil {
		infoW.Close()
		ackR.Close()
		return nil, fmt.Errorf("create %s: monitor: %w", id, err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	if err := os.WriteFile(filepath.Join(stateDir, monitorPidFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
		infoW.Close()
		ackR.Close()
		return nil, fmt.Errorf("create %s: monitor: %w", id, err)
	}
	w.info, w.ack = infoW, ackR
	return w, nil
}

// attach tells the monitor the init is running (its cgroup now exists,
// its mounts are set up) and waits until the monitor is attached: it then
// holds the container's tmpfs mounts, and only then may the user's process
// run (and end, and its init be reaped).
func (w *sandboxWatch) attach(ctr *libmaka.Container, initPid int) error {
	if w == nil {
		return nil
	}
	cg := ctr.CgroupPath()
	if w.mon != nil {
		if cg == "" {
			return nil
		}
		return w.mon.Attach(cg, initPid, w.tmpfs)
	}
	data, _ := json.Marshal(monitorInfo{Cgroup: cg, InitPid: initPid, Tmpfs: w.tmpfs})
	_, err := w.info.Write(data)
	w.info.Close()
	w.info = nil
	if err != nil {
		return fmt.Errorf("container %s: monitor: %w", w.id, err)
	}
	defer func() {
		w.ack.Close()
		w.ack = nil
	}()
	_ = w.ack.SetReadDeadline(time.Now().Add(monitorAttachWait))
	if n, err := w.ack.Read(make([]byte, 1)); n != 1 {
		return fmt.Errorf("container %s: the monitor did not attach: %v", w.id, err)
	}
	return nil
}

// abort gives up on a launch that failed: the monitor stops.
func (w *sandboxWatch) abort() {
	if w == nil {
		return
	}
	if w.mon != nil {
		w.mon.Close()
	}
	if w.info != nil {
		w.info.Close()
	}
	if w.ack != nil {
		w.ack.Close()
	}
}

// finish stops a foreground run's monitor once the container has exited
// (before its cgroup goes) and returns why it killed the sandbox, if it did.
func (w *sandboxWatch) finish() error {
	if w == nil || w.mon == nil {
		return nil
	}
	w.mon.Close()
	return w.mon.Err()
}

// stopMonitor stops a detached container's monitor before the container's
// state goes (it records the peak usage while the cgroup still exists) and
// waits for it, up to two seconds.
func stopMonitor(stateDir string) {
	data, err := os.ReadFile(filepath.Join(stateDir, monitorPidFile))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 || !isMonitor(pid) {
		return
	}
	_ = unix.Kill(pid, unix.SIGTERM)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !isMonitor(pid) {
			return
		}
	}
}

// isMonitor reports whether pid is a live (not zombie) maka monitor.
func isMonitor(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	for _, a := range args {
		if a == "monitor" {
			return true
		}
	}
	return false
}

// killedError is the monitor's error, if err is one.
func killedError(err error) *monitor.KilledError {
	var k *monitor.KilledError
	if errors.As(err, &k) {
		return k
	}
	return nil
}

// The monitor gives back what its start-up touched and its loops never
// touch again: the garbage of the CLI's set-up (debug.FreeOSMemory), and
// the pages of the binary's code and data read from the file (clean: the
// kernel reads them again if they are ever needed; dropPages). It then
// holds about its own working set for the rest of the container's life.

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
