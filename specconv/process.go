package specconv

import (
	"fmt"
	"os"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// rlimitTypes maps the OCI names to Linux's RLIMIT_* numbers.
var rlimitTypes = map[string]int{
	"RLIMIT_CPU": 0, "RLIMIT_FSIZE": 1, "RLIMIT_DATA": 2, "RLIMIT_STACK": 3,
	"RLIMIT_CORE": 4, "RLIMIT_RSS": 5, "RLIMIT_NPROC": 6, "RLIMIT_NOFILE": 7,
	"RLIMIT_MEMLOCK": 8, "RLIMIT_AS": 9, "RLIMIT_LOCKS": 10, "RLIMIT_SIGPENDING": 11,
	"RLIMIT_MSGQUEUE": 12, "RLIMIT_NICE": 13, "RLIMIT_RTPRIO": 14, "RLIMIT_RTTIME": 15,
}

// deferred are the rlimits that bound the init's own address space:
// libcontainer applies a process's rlimits as soon as its init is ready,
// and the init (a Go program: ~1.6 GiB of address space reserved, most of
// it never touched) then still compiles the seccomp filter with libseccomp
// and fails under a 1 GiB RLIMIT_AS ("error adding seccomp filter rule
// ...: cannot allocate memory"; runtime-tools' process_rlimits). For the
// init maka applies them itself, once the init is parked on the exec fifo
// with its filter loaded (InitRlimits): the user's program runs under
// them from its first instruction all the same, and the filter never
// depends on the workload's limits.
var deferred = map[string]bool{"RLIMIT_AS": true, "RLIMIT_DATA": true}

// InitRlimits are the rlimits of the init's process p that maka applies
// once libcontainer's init has done its work (see deferred).
func InitRlimits(p *specs.Process) []configs.Rlimit {
	var out []configs.Rlimit
	for _, rl := range p.Rlimits {
		if deferred[rl.Type] {
			out = append(out, configs.Rlimit{Type: rlimitTypes[rl.Type], Hard: rl.Hard, Soft: rl.Soft})
		}
	}
	return out
}

// processLabel is label, or nothing on a host without SELinux (dropLabels).
func processLabel(host libmaka.Host, label string) string {
	if label == "" || !host.SELinux() {
		return ""
	}
	return label
}

// NewProcess converts an OCI process into a libcontainer process. For the
// container's init most settings come from the container config; for exec
// the process's own capabilities, labels and no_new_privs take precedence.
// host gives the soft stack limit the process inherits (execve's limits).
func NewProcess(host libmaka.Host, p *specs.Process, init bool) (*libcontainer.Process, error) {
	if errs := validateProcess("process", p, host.Facts().StackLimit); len(errs) > 0 {
		return nil, fmt.Errorf("invalid process: %s", strings.Join(errs, "; "))
	}
	lp := &libcontainer.Process{
		Args:            p.Args,
		Env:             p.Env,
		UID:             int(p.User.UID),
		GID:             int(p.User.GID),
		Cwd:             p.Cwd,
		Label:           processLabel(host, p.SelinuxLabel),
		AppArmorProfile: p.ApparmorProfile,
		NoNewPrivileges: &p.NoNewPrivileges,
		Init:            init,
		Stdin:           os.Stdin,
		Stdout:          os.Stdout,
		Stderr:          os.Stderr,
	}
	if p.ConsoleSize != nil {
		lp.ConsoleWidth = uint16(p.ConsoleSize.Width)
		lp.ConsoleHeight = uint16(p.ConsoleSize.Height)
	}
	for _, g := range p.User.AdditionalGids {
		lp.AdditionalGroups = append(lp.AdditionalGroups, int(g))
	}
	if c := p.Capabilities; c != nil {
		lp.Capabilities = &configs.Capabilities{
			Bounding:    c.Bounding,
			Effective:   c.Effective,
			Permitted:   c.Permitted,
			Inheritable: c.Inheritable,
			Ambient:     c.Ambient,
		}
	}
	for _, rl := range p.Rlimits {
		if init && deferred[rl.Type] {
			continue
		}
		lp.Rlimits = append(lp.Rlimits, configs.Rlimit{Type: rlimitTypes[rl.Type], Hard: rl.Hard, Soft: rl.Soft})
	}
	if p.Scheduler != nil {
		s := *p.Scheduler
		lp.Scheduler = &s
	}
	if p.IOPriority != nil {
		io := *p.IOPriority
		lp.IOPriority = &io
	}
	return lp, nil
}
