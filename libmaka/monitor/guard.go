package monitor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The guard makes a detached sandbox fail closed without waiting for a
// maka command: a second, small process (the monitor's own binary, run as
// `monitor --guard`), started by the monitor once it is attached, holding
// the sandbox's cgroup directory (a descriptor, never a path) and the read
// end of a pipe whose only write end the monitor holds. When the monitor
// dies, however it dies (SIGKILL, the OOM killer, a crash), the kernel
// closes that write end and the guard reads end-of-file: it records why
// in the journal and kills the sandbox (cgroup.kill). When the monitor
// ends in order (its sandbox stopped, or SIGTERM: delete's monitor.Stop),
// it first writes a byte on the pipe, and the guard exits without a kill.
// A guard killed with its monitor (the same signal to both) leaves the
// check maka's commands make (libmaka.FailClosed): the sandbox is then
// killed by the next command that meets it.

// Guard file descriptors (after stdio).
const (
	guardCgroupFd = 3
	guardPipeFd   = 4
)

// disarmByte, on the guard's pipe: the monitor ended in order.
const disarmByte = 'd'

// guard is the monitor's handle on its guard process.
type guard struct {
	w    *os.File
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited
}

// startGuard starts the guard of the sandbox whose cgroup directory is
// open as cgfd.
// guardStartNice is the guard's priority while its Go runtime starts.
const guardStartNice = 15

func startGuard(root string, cfg Config, cgfd int) (*guard, error) {
	r, w, err := os.Pipe() // both close-on-exec: the write end stays ours alone
	if err != nil {
		return nil, err
	}
	defer r.Close()
	dup, err := unix.FcntlInt(uintptr(cgfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		w.Close()
		return nil, err
	}
	cg := os.NewFile(uintptr(dup), "cgroup")
	defer cg.Close()
	args := append([]string{"--root", root, "monitor", "--guard"}, Args(root, cfg)[3:]...)
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Args[0] = "maka-monitor-guard"
	cmd.ExtraFiles = []*os.File{cg, r}
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr // the monitor's log
	err = cmd.Start()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("guard: %w", err)
	}
	// Its Go start runs beside the command that follows create (start,
	// right after): at a low priority it takes the CPU that command
	// leaves. It guards from its first instruction all the same (the
	// pipe is its from the fork), and takes its priority back once it
	// waits on the pipe (runGuard).
	_ = unix.Setpriority(unix.PRIO_PROCESS, cmd.Process.Pid, guardStartNice)
	g := &guard{w: w, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(g.done) }() // reaped when it exits
	return g, nil
}

// disarm tells the guard the monitor ends in order, and waits (a second
// at most) for it to exit: whoever waits for the monitor (delete) then
// finds neither.
func (g *guard) disarm() {
	if g == nil {
		return
	}
	_, _ = g.w.Write([]byte{disarmByte})
	g.w.Close()
	select {
	case <-g.done:
	case <-time.After(time.Second):
	}
}

// runGuard is the guard process: it waits for its monitor to end, and
// kills the sandbox if the monitor did not end in order.
func runGuard(cfg Config, cg, pipe *os.File) error {
	defer cg.Close()
	// Back to the priority it was made with, before it waits: a kill
	// must not queue behind the sandbox (as root; a rootless guard keeps
	// the low one, as lowering a nice value needs CAP_SYS_NICE).
	_ = unix.Setpriority(unix.PRIO_PROCESS, 0, 0)
	b := make([]byte, 1)
	n, _ := io.ReadFull(pipe, b)
	pipe.Close()
	if n == 1 && b[0] == disarmByte {
		return nil
	}
	// The monitor is gone. Nothing left to do if the sandbox has no
	// process (it stopped, and its monitor with it).
	if !populatedFd(int(cg.Fd())) {
		return nil
	}
	r := Record{Time: time.Now().UTC(), Type: TypeLimit, Action: ActionKill, Kind: LimitMonitorLost}
	j, jerr := OpenJournal(filepath.Join(cfg.StateDir, JournalFile))
	if jerr == nil {
		jerr = j.Append(r)
		if cerr := j.Close(); jerr == nil {
			jerr = cerr
		}
	}
	if err := killAt(int(cg.Fd())); err != nil {
		// maka's next command meets the sandbox and fails it closed
		// (libmaka.FailClosed); say why it still ran meanwhile.
		return fmt.Errorf("container %s: its monitor is gone and the sandbox could not be killed: %w", cfg.ID, errors.Join(err, jerr))
	}
	if jerr != nil {
		return fmt.Errorf("container %s: its monitor is gone; the sandbox was killed; the journal: %w", cfg.ID, jerr)
	}
	return nil
}

// populatedFd reports whether the cgroup directory open as dirfd has a
// process (cgroup.events "populated 1").
func populatedFd(dirfd int) bool {
	fd, err := unix.Openat(dirfd, "cgroup.events", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // gone
	}
	f := os.NewFile(uintptr(fd), "cgroup.events")
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return true // unknown: a kill of an empty cgroup does no harm
	}
	return strings.Contains(string(data), "populated 1")
}
