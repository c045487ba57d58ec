package monitor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/maka-runtime/maka/internal/guardexe"
)

// The guard makes a detached sandbox fail closed without waiting for a
// maka command: a second, small process, started by the monitor once it
// is attached, holding the sandbox's cgroup directory (a descriptor, never
// a path) and the read end of a pipe whose only write end the monitor
// holds. When the monitor dies, however it dies (SIGKILL, the OOM killer,
// a crash), the kernel closes that write end and the guard reads
// end-of-file: it kills the sandbox (cgroup.kill) and records why in the
// journal. When the monitor ends in order (its sandbox stopped, or
// SIGTERM: delete's monitor.Stop), it first writes a byte on the pipe, and
// the guard exits without a kill. A guard killed with its monitor (the
// same signal to both) leaves the check maka's commands make
// (libmaka.FailClosed): the sandbox is then killed by the next command
// that meets it.
//
// The guard is maka-guard (cmd/maka-guard: freestanding C, a few KiB,
// carried by internal/guardexe) where the monitor's binary carries it: it
// is started while `maka start` or an engine waits, and a second Go start
// there cost a third of start's time under emulation (performance.md
// change 15). It kills, then execs the monitor's own binary as
// `monitor --guard-record` for the journal's record (recordLost). A build
// without it starts the monitor's binary as `monitor --guard` (runGuard),
// which does the same in Go.

// Guard file descriptors (after stdio).
const (
	guardCgroupFd = 3
	guardPipeFd   = 4
	guardExeFd    = 5 // maka-guard only: the monitor's binary, for the record
	guardSelfFd   = 6 // maka-guard only: its own memfd (it closes it)
)

// disarmByte, on the guard's pipe: the monitor ended in order.
const disarmByte = 'd'

// guardKillEnv carries maka-guard's kill result to the record: 0, or the
// errno of its failed cgroup.kill.
const guardKillEnv = "MAKA_GUARD_KILL"

// guard is the monitor's handle on its guard process.
type guard struct {
	w    *os.File
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited
}

// startGuard starts the guard of the sandbox whose cgroup directory is
// open as cgfd.
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
	cmd, exe, err := guardCommand(root, cfg, cg, r, true)
	if err == nil {
		err = cmd.Start()
	}
	if exe != nil {
		exe.Close() // the guard's copy is its own
		if err != nil {
			// A host that will not exec a memfd (vm.memfd_noexec=2):
			// the Go guard does the same.
			fmt.Fprintf(os.Stderr, "maka monitor %s: maka-guard: %v; the monitor's binary guards instead\n", cfg.ID, err)
			cmd, _, err = guardCommand(root, cfg, cg, r, false)
			if err == nil {
				err = cmd.Start()
			}
		}
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("guard: %w", err)
	}
	g := &guard{w: w, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(g.done) }() // reaped when it exits
	return g, nil
}

// guardCommand is the guard's command: maka-guard with the record's
// command line where this binary carries it (exe: this binary, open for
// it; the caller closes it once the guard started), else this binary as
// `monitor --guard` (and where small is false).
func guardCommand(root string, cfg Config, cg, pipe *os.File, small bool) (cmd *exec.Cmd, exe *os.File, err error) {
	rest := Args(root, cfg)[3:] // after "--root ROOT monitor"
	prog, err := guardexe.Open()
	if err != nil || !small { // not carried: the Go guard
		cmd = exec.Command("/proc/self/exe", append([]string{"--root", root, "monitor", "--guard"}, rest...)...)
		cmd.Args[0] = "maka-monitor-guard"
		cmd.ExtraFiles = []*os.File{cg, pipe}
		cmd.Dir = "/"
		cmd.Stderr = os.Stderr // the monitor's log
		return cmd, nil, nil
	}
	// The record is written by this very binary (the inode it runs from,
	// not a path someone could replace meanwhile).
	if exe, err = os.Open("/proc/self/exe"); err != nil {
		return nil, nil, err
	}
	cmd = exec.Command(fmt.Sprintf("/proc/self/fd/%d", guardSelfFd))
	cmd.Args = append([]string{"maka-guard", "maka-monitor-guard", "--root", root, "monitor", "--guard-record"}, rest...)
	cmd.ExtraFiles = []*os.File{cg, pipe, exe, prog}
	cmd.Env = []string{} // the record needs none; maka-guard sets its one
	cmd.Dir = "/"
	cmd.Stderr = os.Stderr // the monitor's log: the record's errors
	return cmd, exe, nil
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

// runGuard is the Go guard process: it waits for its monitor to end, and
// kills the sandbox if the monitor did not end in order, as maka-guard.
func runGuard(cfg Config, cg, pipe *os.File) error {
	defer cg.Close()
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
	return recordLost(cfg, killAt(int(cg.Fd())))
}

// runGuardRecord is maka-guard's record: it exec'd this binary after its
// kill, whose result is in guardKillEnv.
func runGuardRecord(cfg Config) error {
	v := os.Getenv(guardKillEnv)
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("container %s: the guard's record: %s=%q is not an errno", cfg.ID, guardKillEnv, v)
	}
	var killErr error
	if n != 0 {
		killErr = fmt.Errorf("cgroup.kill: %w", unix.Errno(n))
	}
	return recordLost(cfg, killErr)
}

// recordLost records in the journal that the sandbox was killed because
// its monitor was lost, and says what failed: killErr is the kill's.
func recordLost(cfg Config, killErr error) error {
	r := Record{Time: time.Now().UTC(), Type: TypeLimit, Action: ActionKill, Kind: LimitMonitorLost}
	j, jerr := OpenJournal(filepath.Join(cfg.StateDir, JournalFile))
	if jerr == nil {
		jerr = j.Append(r)
		if cerr := j.Close(); jerr == nil {
			jerr = cerr
		}
	}
	if killErr != nil {
		// maka's next command meets the sandbox and fails it closed
		// (libmaka.FailClosed); say why it still ran meanwhile.
		return fmt.Errorf("container %s: its monitor is gone and the sandbox could not be killed: %w", cfg.ID, errors.Join(killErr, jerr))
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
