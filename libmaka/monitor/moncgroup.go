package monitor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A detached monitor (and its guard) runs in a cgroup of maka's own, one
// per sandbox, with limits of its own: what a sandbox makes its monitor do
// (a flood of violations under deny) is charged there, never to whoever
// called maka, and cannot grow past those limits. The cgroup is
// <cgroup root>/maka.monitors/<id>-<random>, named in the sandbox's state
// directory (CgroupFile) and removed by the sandbox's teardown after the
// monitor has stopped (RemoveCgroup). Rootless maka cannot make cgroups:
// its monitors stay in the caller's.

// CgroupFile, in the container's state directory, names its monitor's
// cgroup (a directory below MonitorsCgroup).
const CgroupFile = "monitor.cgroup"

// MonitorsCgroup holds the monitors' cgroups.
var MonitorsCgroup = "/sys/fs/cgroup/maka.monitors"

// cgroupLimits are each monitor's: its heap is kept near 4 MiB (GOMEMLIMIT
// in RunDetached), a few threads, and (cpuMax) at most half a CPU however
// hard the sandbox floods it.
var cgroupLimits = [][2]string{
	{"memory.max", "64M"},
	{"memory.swap.max", "0"},
	{"pids.max", "64"},
}

// cpuMax is the monitor's CPU bound, set once it has attached (capCPU):
// before that it runs only maka's own start (a Go program's start and the
// attach), while the sandbox's init waits parked for it, and under the
// bound that start took ~380 ms of a create under emulation (half a CPU
// for a start that needs a whole one). What the sandbox can make the
// monitor do begins only after attach, under the bound.
const cpuMax = "50000 100000"

// capCPU bounds the monitor's cgroup p to cpuMax.
func capCPU(p string) error {
	if err := os.WriteFile(filepath.Join(p, "cpu.max"), []byte(cpuMax), 0); err != nil {
		return fmt.Errorf("%s: cpu.max: %w", p, err)
	}
	return nil
}

// makeCgroup makes a monitor's cgroup for the sandbox id, with its limits,
// and returns its path and an open descriptor (to start the monitor in it:
// clone3's CLONE_INTO_CGROUP).
func makeCgroup(id string) (string, *os.File, error) {
	if err := os.Mkdir(MonitorsCgroup, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, err
	}
	// The controllers the limits need, for the parent's children.
	if err := os.WriteFile(filepath.Join(MonitorsCgroup, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0); err != nil {
		return "", nil, fmt.Errorf("%s: enable memory, pids and cpu: %w", MonitorsCgroup, err)
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	name := id
	if len(name) > 200 {
		name = name[:200]
	}
	path := filepath.Join(MonitorsCgroup, name+"-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(path, 0o755); err != nil {
		return "", nil, err
	}
	for _, l := range cgroupLimits {
		if err := os.WriteFile(filepath.Join(path, l[0]), []byte(l[1]), 0); err != nil {
			// memory.swap.max is absent without swap accounting: the
			// memory limit still holds.
			if l[0] == "memory.swap.max" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			_ = os.Remove(path)
			return "", nil, fmt.Errorf("%s: %s: %w", path, l[0], err)
		}
	}
	f, err := os.OpenFile(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(path)
		return "", nil, err
	}
	return path, f, nil
}

// cgroupOfState reads CgroupFile in stateDir: "" when there is none. A
// path that is not a child of MonitorsCgroup is refused (the file is
// maka's own, but a teardown removes what it names).
func cgroupOfState(stateDir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, CgroupFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(string(data))
	if filepath.Dir(p) != MonitorsCgroup || filepath.Clean(p) != p || filepath.Base(p) == ".." || filepath.Base(p) == "." {
		return "", fmt.Errorf("%s names %q, not a monitor's cgroup", CgroupFile, p)
	}
	return p, nil
}

// RemoveCgroup removes the cgroup of the monitor of the sandbox whose
// state directory is stateDir, once the monitor has stopped (Stop): what
// is left in it (a guard that did not stand down) is killed first. A
// cgroup it cannot remove is an error: the teardown keeps the record, and
// recover tries again.
func RemoveCgroup(stateDir string) error {
	p, err := CgroupOf(stateDir)
	if err != nil {
		return err
	}
	return RemoveCgroupPath(p)
}

// CgroupOf is the cgroup of the monitor of the sandbox whose state
// directory is stateDir ("": none), for RemoveCgroupPath once that
// directory may be gone (libcontainer's destroy removes it).
func CgroupOf(stateDir string) (string, error) { return cgroupOfState(stateDir) }

// removeTimeout bounds the wait for a killed monitor and guard to leave
// their cgroup: the teardown's bound for the sandbox's own processes
// (libmaka.KillTimeout). 2 s was too short under load: a delete failed
// with EBUSY while the killed monitor was still exiting (CI-C, hostile.bats,
// five emulated guests on two cores), and kept the record for recover.
const removeTimeout = 10 * time.Second

// RemoveCgroupPath removes a monitor's cgroup p (from CgroupOf; "" is
// nothing to do), killing what is left in it first.
func RemoveCgroupPath(p string) error {
	if p == "" {
		return nil
	}
	if filepath.Dir(p) != MonitorsCgroup {
		return fmt.Errorf("%q is not a monitor's cgroup", p)
	}
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.WriteFile(filepath.Join(p, "cgroup.kill"), []byte("1"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("monitor cgroup %s: %w", p, err)
	}
	deadline := time.Now().Add(removeTimeout)
	for {
		err := unix.Rmdir(p)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("monitor cgroup %s: %w", p, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
