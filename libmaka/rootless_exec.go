package libmaka

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// A rootless maka cannot hand an exec'd process's seccomp listener to the
// monitor: runc's setns path makes the exec'd init non-dumpable, and
// pidfd_getfd on a non-dumpable process needs CAP_SYS_PTRACE in the host's
// user namespace. So the processes exec'd into a rootless sandbox get
// maka's filter with the watched calls answered EPERM, as the monitor
// answers them under deny, without being recorded (docs/security.md). The
// init and its descendants keep theirs: the init took its filter at
// create, from the configuration it was handed then.

// RootlessExecFilter rewrites the libcontainer state of c, if it is a
// rootless sandbox's, so that processes exec'd from now on get the filter
// without notifications. Call it holding the id's lock, and Load the
// container again afterwards. It reports whether it changed anything.
func (c *Container) RootlessExecFilter() (bool, error) {
	path := filepath.Join(c.rt.Root, c.ID(), "state.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return false, fmt.Errorf("container %s: state: %w", c.ID(), err)
	}
	var cfg configs.Config
	if err := json.Unmarshal(raw["config"], &cfg); err != nil {
		return false, fmt.Errorf("container %s: state: %w", c.ID(), err)
	}
	if !cfg.RootlessEUID || cfg.Seccomp == nil {
		return false, nil
	}
	eperm := uint(unix.EPERM)
	changed := cfg.Seccomp.ListenerPath != ""
	cfg.Seccomp.ListenerPath, cfg.Seccomp.ListenerMetadata = "", ""
	for _, sc := range cfg.Seccomp.Syscalls {
		if sc.Action == configs.Notify {
			sc.Action, sc.ErrnoRet, changed = configs.Errno, &eperm, true
		}
	}
	if cfg.Seccomp.DefaultAction == configs.Notify {
		cfg.Seccomp.DefaultAction, cfg.Seccomp.DefaultErrnoRet, changed = configs.Errno, &eperm, true
	}
	if !changed {
		return false, nil
	}
	if raw["config"], err = json.Marshal(&cfg); err != nil {
		return false, err
	}
	out, err := json.Marshal(raw)
	if err != nil {
		return false, err
	}
	return true, writeFileAtomicAs(path+".tmp", path, out)
}
