package monitor

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The spawn protocol of a detached monitor, written once here: the
// launcher (Spawn) and the monitor process (Main, behind both `maka
// monitor` and cmd/maka-monitor) agree on its command line and its three
// inherited fds: the seccomp listener's socket, the pipe on which the
// launcher sends Info once the init runs, and the pipe on which the monitor
// answers once it is attached (it then holds the sandbox's tmpfs mounts,
// before the user's process may run).
const (
	listenerFd = 3
	infoFd     = 4
	ackFd      = 5
)

// PidFile, in the container's state directory, holds the pid of its
// detached monitor process; StartFile its start time (pidfd.go).
const PidFile = "monitor.pid"

// LogFile, in the container's state directory, is a detached monitor's
// stderr.
const LogFile = "monitor.log"

// attachWait bounds how long the launcher waits for the monitor to attach
// (an emulated, loaded machine is slow to start it).
const attachWait = 30 * time.Second

// Detached is the launcher's handle on a monitor process.
type Detached struct {
	id        string
	info, ack *os.File
	Pid       int
	// Cgroup is the monitor's own cgroup ("" rootless).
	Cgroup string
}

// exeFd is where a detached monitor's own program comes, in the monitor:
// it is exec'd from there (/proc/self/fd/6), and closes it (Main).
const exeFd = 6

// Spawn starts a detached monitor for cfg, serving ln (whose socket file
// it takes over: closing the launcher's copy does not remove it). exes are
// the programs to try in order (the small maka-monitor first, then maka
// itself), as descriptors the caller checked: each is exec'd from its
// descriptor, never by name, and must accept Args. root is maka's --root;
// its pid goes to PidFile in cfg.StateDir.
func Spawn(exes []*os.File, root string, cfg Config, ln *net.UnixListener) (d *Detached, err error) {
	ln.SetUnlinkOnClose(false)
	defer ln.Close()
	lf, err := ln.File()
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	defer lf.Close()
	// Info goes over a socket, not a pipe: it may carry the egress
	// proxy's listener, made once the init exists (SCM_RIGHTS).
	infoR, infoW, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	defer infoR.Close()
	ackR, ackW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		return nil, fmt.Errorf("monitor: %w", err)
	}
	defer ackW.Close()
	d = &Detached{id: cfg.ID, info: infoW, ack: ackR}
	defer func() {
		if err != nil {
			d.Abort()
		}
	}()
	// Only the three fds passed below: an inherited fd (bats' fd 3, a
	// caller's LISTEN_FDS) must not be held open for the container's life.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	// Its stderr: a log in the state directory (it logs only the first
	// failed write of the journal; the stats count the rest).
	logf, err := os.OpenFile(filepath.Join(cfg.StateDir, LogFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	defer logf.Close()
	// Its own cgroup, with limits (moncgroup.go); host root only.
	var cg *os.File
	var path string
	if os.Geteuid() == 0 {
		if path, cg, err = makeCgroup(cfg.ID); err != nil {
			return nil, fmt.Errorf("monitor: cgroup: %w", err)
		}
		d.Cgroup = path
		defer cg.Close()
		defer func() {
			if err != nil {
				_ = unix.Rmdir(path)
			}
		}()
		if err = os.WriteFile(filepath.Join(cfg.StateDir, CgroupFile), []byte(path+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("monitor: %w", err)
		}
	}
	var cmd *exec.Cmd
	if len(exes) == 0 {
		return nil, errors.New("monitor: no program to run it")
	}
	for _, exe := range exes {
		cmd = exec.Command(fmt.Sprintf("/proc/self/fd/%d", exeFd), Args(root, cfg)...)
		cmd.Args[0] = "maka-monitor"
		cmd.ExtraFiles = []*os.File{lf, infoR, ackW, exe}
		cmd.Stderr = logf
		cmd.Dir = "/"
		// disablethp: no transparent huge pages for its heap, where one
		// fault would make 2 MiB resident (measured: 4 MiB of a ~1 MiB heap).
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GODEBUG="+godebugWith("disablethp=1"))
		// Its own session: no terminal's signals, no caller's process group.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if cg != nil {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.Fd())
		}
		if err = cmd.Start(); err == nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("monitor: %w", err)
	}
	d.Pid = cmd.Process.Pid
	// Recorded with its start time while it is still our child (its pid
	// cannot be reused before we exit): see pidfd.go.
	werr := writePidFile(cfg.StateDir, d.Pid)
	_ = cmd.Process.Release()
	if werr != nil {
		return nil, fmt.Errorf("monitor: %w", werr)
	}
	return d, nil
}

// Args is a detached monitor's command line after the program name.
func Args(root string, cfg Config) []string {
	args := []string{"--root", root, "monitor", "--on-violation", cfg.OnViolation, "--timeout", cfg.Timeout.String()}
	if cfg.GetcwdErrno != 0 {
		args = append(args, "--getcwd-errno", strconv.FormatUint(uint64(cfg.GetcwdErrno), 10))
	}
	return append(args, cfg.ID)
}

// Attach tells the monitor the init is running (its cgroup exists, its
// mounts are set up), hands it the egress proxy's listener if there is one
// (egressLn, with in.Egress) and the agent's holder end (agentEnd, with
// in.Agent), and waits until the monitor is attached.
func (d *Detached) Attach(in Info, egressLn, agentEnd *os.File) error {
	data, _ := json.Marshal(in)
	var files []*os.File
	if egressLn != nil {
		files = append(files, egressLn)
	}
	if agentEnd != nil {
		files = append(files, agentEnd)
	}
	err := sendInfo(d.info, data, files...)
	d.info.Close()
	d.info = nil
	if err != nil {
		return fmt.Errorf("container %s: monitor: %w", d.id, err)
	}
	defer func() {
		d.ack.Close()
		d.ack = nil
	}()
	_ = d.ack.SetReadDeadline(time.Now().Add(attachWait))
	if n, err := d.ack.Read(make([]byte, 1)); n != 1 {
		return fmt.Errorf("container %s: the monitor did not attach: %w", d.id, err)
	}
	// Attached: from here on the sandbox can make it work, within its bound.
	if d.Cgroup != "" {
		if err := capCPU(d.Cgroup); err != nil {
			return fmt.Errorf("container %s: monitor: %w", d.id, err)
		}
	}
	return nil
}

// Abort gives up on a launch that failed: the monitor reads EOF and exits.
func (d *Detached) Abort() {
	if d.info != nil {
		d.info.Close()
		d.info = nil
	}
	if d.ack != nil {
		d.ack.Close()
		d.ack = nil
	}
}

// Main is the monitor process: it parses the part of Args after "monitor"
// (args) and serves the inherited fds. root is maka's --root.
func Main(root string, args []string) error {
	// Its name: exec'd from a descriptor (/proc/self/fd/N), the kernel
	// named it after the number.
	name := "maka-monitor"
	if len(args) > 0 && (args[0] == "--guard" || args[0] == "--guard-record") {
		name = "maka-guard"
	}
	_ = os.WriteFile("/proc/self/comm", []byte(name), 0)
	if len(args) > 0 && args[0] == "--guard" { // the monitor's guard: guard.go
		cfg, err := parseArgs(root, args[1:])
		if err != nil {
			return err
		}
		return runGuard(cfg, os.NewFile(guardCgroupFd, "guard-cgroup"), os.NewFile(guardPipeFd, "guard-pipe"))
	}
	if len(args) > 0 && args[0] == "--guard-record" { // maka-guard's record: guard.go
		cfg, err := parseArgs(root, args[1:])
		if err != nil {
			return err
		}
		return runGuardRecord(cfg)
	}
	// The program it was exec'd from (Spawn): not held for the sandbox's
	// life. Only here: the guards are exec'd without it, and their fd 6
	// may be the Go runtime's own.
	_ = unix.Close(exeFd)
	cfg, err := parseArgs(root, args)
	if err != nil {
		return err
	}
	return RunDetached(cfg, os.NewFile(listenerFd, "monitor-listener"), os.NewFile(infoFd, "monitor-info"), os.NewFile(ackFd, "monitor-ack"))
}

// parseArgs reads what Args wrote (after "monitor").
func parseArgs(root string, args []string) (Config, error) {
	fs := flag.NewFlagSet("monitor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	onViolation := fs.String("on-violation", ActionDeny, "deny or kill")
	timeout := fs.Duration("timeout", 0, "how long the sandbox may live (0: no limit)")
	getcwdErrno := fs.Uint("getcwd-errno", 0, "the errno getcwd gets once the monitor is attached (0: not handed to it)")
	if err := fs.Parse(args); err != nil {
		return Config{}, fmt.Errorf("monitor: %w", err)
	}
	if fs.NArg() != 1 {
		return Config{}, fmt.Errorf("monitor: want exactly one container id, got %d", fs.NArg())
	}
	id := fs.Arg(0)
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return Config{}, fmt.Errorf("monitor: invalid container id %q", id)
	}
	if root == "" {
		return Config{}, errors.New("monitor: no --root")
	}
	if *getcwdErrno > 4095 {
		return Config{}, fmt.Errorf("monitor: --getcwd-errno %d is not an errno", *getcwdErrno)
	}
	return Config{ID: id, StateDir: filepath.Join(root, id), OnViolation: *onViolation, Timeout: *timeout, GetcwdErrno: *getcwdErrno}, nil
}

// godebugWith is the caller's GODEBUG with setting added (the last one of a
// name wins).
func godebugWith(setting string) string {
	if cur := os.Getenv("GODEBUG"); cur != "" {
		return cur + "," + setting
	}
	return setting
}
