package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// monitorAttachWait bounds how long create/run waits for the detached
// monitor to attach (an emulated, loaded machine is slow to start it).
const monitorAttachWait = 30 * time.Second

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
		rt, err := runtimeOf(c)
		if err != nil {
			return err
		}
		id := c.Args().First()
		return monitor.RunDetached(monitor.Config{
			ID: id, StateDir: filepath.Join(rt.Root, id),
			OnViolation: c.String("on-violation"), Timeout: c.Duration("timeout"),
		}, os.NewFile(monitorListenerFd, "monitor-listener"), os.NewFile(monitorInfoFd, "monitor-info"),
			os.NewFile(monitorAckFd, "monitor-ack"))
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
	// Only the three fds passed below: an inherited fd (bats' fd 3, a
	// caller's LISTEN_FDS) must not be held open for the container's life.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	monitorCmd := func(exe string) *exec.Cmd {
		cmd := exec.Command(exe, "--root", rt.Root, "monitor", "--on-violation", onViolation, "--timeout", timeout.String(), id)
		cmd.ExtraFiles = []*os.File{lf, infoR, ackW}
		cmd.Dir = "/"
		// disablethp: no transparent huge pages for its heap, where one
		// fault would make 2 MiB resident (measured: 4 MiB of a ~1 MiB heap).
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GODEBUG="+godebugWith("disablethp=1"))
		// Its own session: no terminal's signals, no caller's process group.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return cmd
	}
	self, err := os.Executable()
	if err != nil {
		infoW.Close()
		ackR.Close()
		return nil, fmt.Errorf("create %s: monitor: %w", id, err)
	}
	cmd := monitorCmd(self)
	if exe, err := monitorExecutable(rt.Root); err == nil && exe != self {
		// The small monitor, unless the root cannot run it (noexec).
		if small := monitorCmd(exe); small.Start() == nil {
			cmd = small
		}
	}
	if cmd.Process == nil {
		if err := cmd.Start(); err != nil {
			infoW.Close()
			ackR.Close()
			return nil, fmt.Errorf("create %s: monitor: %w", id, err)
		}
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
	data, _ := json.Marshal(monitor.Info{Cgroup: cg, InitPid: initPid, Tmpfs: w.tmpfs})
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

// godebugWith is the caller's GODEBUG with setting added (the last one of a
// name wins).
func godebugWith(setting string) string {
	if cur := os.Getenv("GODEBUG"); cur != "" {
		return cur + "," + setting
	}
	return setting
}
