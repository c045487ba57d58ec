package libmaka

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/runc/libcontainer/system"
	"golang.org/x/sys/unix"
)

// The commands that only ask whether a container is created, running,
// paused or stopped (start, delete) answer from the record and the kernel,
// not from libcontainer's state: loading that decodes the container's whole
// configuration (31 KiB, most of it the seccomp allowlist), a third of
// start's own work under emulation (docs/dev/performance.md, change 16).
// The answer is libcontainer's, computed the way its refreshState does:
// paused if the cgroup is frozen, stopped if the init is gone, created
// while the exec fifo the init is parked on exists, else running.

// InitProcess names a sandbox's init as libcontainer's state does: the pid
// and the start time the kernel gave it (a pid alone may be reused).
type InitProcess struct {
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
}

// alive reports whether the process is still the same one and not a zombie.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := system.Stat(pid)
	if err != nil {
		return false
	}
	return st.StartTime == start && st.State != system.Zombie && st.State != system.Dead
}

// execFifo is libcontainer's name for the fifo the init waits on.
const execFifo = "exec.fifo"

// SetInit records the sandbox's init (published with the next Commit).
func (op *Op) SetInit(pid int, start uint64) {
	if op.Record != nil {
		op.Record.Init = &InitProcess{Pid: pid, StartTime: start}
	}
}

// initOf is the record's init; a record published before it carried one
// names it through libcontainer's state (two fields decoded, the whole
// file still scanned).
func (op *Op) initOf() (InitProcess, error) {
	if op.Record.Init != nil {
		return *op.Record.Init, nil
	}
	var st struct {
		Pid   int    `json:"init_process_pid"`
		Start uint64 `json:"init_process_start"`
	}
	data, err := os.ReadFile(filepath.Join(op.Record.Root, op.ID, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return InitProcess{}, fmt.Errorf("container %s %w", op.ID, ErrNotExist)
	}
	if err != nil {
		return InitProcess{}, fmt.Errorf("container %s: %w", op.ID, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return InitProcess{}, fmt.Errorf("container %s: state.json: %w", op.ID, JSONError(err, "state.json"))
	}
	return InitProcess{Pid: st.Pid, StartTime: st.Start}, nil
}

// Status is the status of op's container (see above). A container without
// a record (made by an older maka) is asked through libcontainer.
func (op *Op) Status() (Status, error) {
	if op.Record == nil || op.Record.CgroupID == 0 {
		ctr, err := op.rt.Load(op.ID)
		if err != nil {
			return "", err
		}
		return ctr.Status()
	}
	init, err := op.initOf()
	if err != nil {
		return "", err
	}
	rec := op.Record
	if frozen, err := frozenCgroup(rec.CgroupPath, rec.CgroupID, rec.Created); err != nil {
		return "", fmt.Errorf("container %s: %w", op.ID, err)
	} else if frozen {
		return Paused, nil
	}
	if !alive(init.Pid, init.StartTime) {
		return Stopped, nil
	}
	if _, err := os.Lstat(filepath.Join(rec.Root, op.ID, execFifo)); err == nil {
		return Created, nil
	}
	return Running, nil
}

// frozenCgroup reports whether the cgroup maka created is frozen (asked to
// be: libcontainer calls a cgroup on its way to frozen paused too). A
// cgroup that is gone is not.
func frozenCgroup(path string, id uint64, created time.Time) (bool, error) {
	dir, err := openOwnedCgroup(path, id, created)
	if err != nil || dir == nil {
		return false, err
	}
	defer dir.Close()
	data, err := readAt(dir, "cgroup.freeze")
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return data == "1\n", nil
}

// Start lets the created container's init go on to the user's process:
// it reads the exec fifo the init is parked on and removes it, as
// libcontainer's Exec does, without loading libcontainer's state (above).
// While it waits for the init to open its end it checks every 100 ms that
// the init still lives (an init that died parked never opens it).
func (op *Op) Start() error {
	if op.Record == nil || op.Record.CgroupID == 0 {
		ctr, err := op.rt.Load(op.ID)
		if err != nil {
			return err
		}
		return ctr.Exec()
	}
	init, err := op.initOf()
	if err != nil {
		return err
	}
	path := filepath.Join(op.Record.Root, op.ID, execFifo)
	opened := make(chan fifoResult, 1)
	go func() { opened <- openFifo(path, true) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-opened:
			return r.read()
		case <-tick.C:
			if !alive(init.Pid, init.StartTime) {
				// It may have run and ended between two ticks: its
				// end of the fifo then holds what it wrote.
				if err := openFifo(path, false).read(); err != nil {
					return errors.New("container process is already dead")
				}
				return nil
			}
		}
	}
}

type fifoResult struct {
	f   *os.File
	err error
}

// openFifo opens the exec fifo for reading, refusing anything but a fifo
// (the state directory is maka's, but the name is not trusted to be one):
// the name is opened O_PATH and checked, then that file is opened through
// its descriptor, so nothing else is ever opened for reading.
func openFifo(path string, block bool) fifoResult {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fifoResult{err: fmt.Errorf("exec fifo: %w", &os.PathError{Op: "open", Path: path, Err: err})}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return fifoResult{err: fmt.Errorf("exec fifo %s: not a fifo", path)}
	}
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if !block {
		flags |= unix.O_NONBLOCK
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), flags, 0)
	if err != nil {
		return fifoResult{err: fmt.Errorf("exec fifo: %w", &os.PathError{Op: "open", Path: path, Err: err})}
	}
	return fifoResult{f: os.NewFile(uintptr(fd), path)}
}

// read takes what the init wrote (nothing: it was started already) and
// removes the fifo: its absence is what says "running".
func (r fifoResult) read() error {
	if r.err != nil {
		return r.err
	}
	defer r.f.Close()
	data, err := io.ReadAll(io.LimitReader(r.f, 4096))
	if err != nil {
		return fmt.Errorf("exec fifo: %w", err)
	}
	if len(data) == 0 {
		return errors.New("cannot start an already running container")
	}
	if err := os.Remove(r.f.Name()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("exec fifo: %w", err)
	}
	return nil
}
