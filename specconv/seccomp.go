package specconv

import (
	"slices"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// WatchedSyscalls are the ways out of a container that maka's monitor
// watches: the default seccomp profile hands them to the monitor (seccomp
// user notification), which records the attempt and answers EPERM (and,
// under onViolation kill, destroys the sandbox). Mounts (old and new API),
// namespaces, other processes' memory, BPF, perf, userfaultfd, keyrings,
// kernel modules, kexec, reboot, swap, file handles. Nothing an ordinary
// program needs.
var WatchedSyscalls = []string{
	"mount", "umount", "umount2", "pivot_root", "unshare", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"ptrace", "process_vm_readv", "process_vm_writev",
	"bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"init_module", "finit_module", "delete_module",
	"kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
	"open_by_handle_at",
}

// deniedSyscalls are refused (EPERM) without a record: obsolete or
// host-wide controls that probing programs and libcs call harmlessly
// (chroot, personality, the clocks, quotas, ...).
var deniedSyscalls = []string{
	"chroot", "kcmp", "pidfd_getfd",
	"create_module", "query_module", "get_kernel_syms",
	"name_to_handle_at", "lookup_dcookie",
	"acct", "quotactl", "quotactl_fd", "syslog", "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl",
	"iopl", "ioperm", "vm86", "vm86old", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	"vhangup", "personality",
}

// namespaceCloneFlags may not be passed to clone: a new user namespace
// would hand the process every capability inside it. clone with one of
// them is watched like unshare.
var namespaceCloneFlags = []uint64{
	unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// writeOpenFlags make an open a write: file audit is notified of opens
// with any of them (each is its own masked-equal rule; rules OR).
var writeOpenFlags = []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC}

// DefaultSeccomp is maka's seccomp profile, an allowlist. What it does not
// name is refused: defaultAction SCMP_ACT_ERRNO with defaultErrnoRet EPERM,
// and libcontainer's -ENOSYS stub (runc's patchbpf, added whenever the
// default action is not an allow and its errno is not ENOSYS) answers ENOSYS
// to every syscall numbered above the newest one the profile names, so a
// libc probing a syscall newer than the profile falls back as it would on
// an older kernel. A default of ERRNO(ENOSYS) would do that for every
// refused call, io_uring_setup included, which programs read as "old
// kernel" rather than "forbidden", and would skip the stub; EPERM says what
// happened.
//
// Allowed: allowedSyscalls, clone without namespace flags, personality and
// socket with the arguments in allowedPersonalities/allowedSocketFamilies.
// WatchedSyscalls and clone with a namespace flag are notified to the
// monitor (which records them and answers EPERM); deniedSyscalls and
// excludedSyscalls answer EPERM (listed so that counts and tests see them);
// clone3 answers ENOSYS (its flags live in memory, out of seccomp's reach),
// so libc falls back to clone, where the flags can be checked. With
// auditFiles, write-mode opens (open, openat with a write flag; creat, and
// openat2 whose flags are in memory, always) are notified too; the monitor
// records those aimed at read-only places and lets them proceed. Every
// name's rules are disjoint (an allow never overlaps a notify), so the
// verdict does not depend on how libseccomp orders overlapping rules.
func DefaultSeccomp(auditFiles bool) *specs.LinuxSeccomp {
	eperm := uint(unix.EPERM)
	enosys := uint(unix.ENOSYS)
	allow := slices.Clone(allowedSyscalls)
	if !auditFiles {
		allow = append(allow, "open", "openat", "openat2", "creat")
	}
	sc := &specs.LinuxSeccomp{
		DefaultAction:   specs.ActErrno,
		DefaultErrnoRet: &eperm,
		Architectures:   []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32, specs.ArchAARCH64, specs.ArchARM},
		Syscalls: []specs.LinuxSyscall{
			{Names: allow, Action: specs.ActAllow},
			{Names: slices.Clone(WatchedSyscalls), Action: specs.ActNotify},
			{Names: append(slices.Clone(deniedSyscalls), excludedSyscalls...), Action: specs.ActErrno, ErrnoRet: &eperm},
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
		},
	}
	for _, v := range allowedPersonalities {
		sc.Syscalls = append(sc.Syscalls, argRule("personality", specs.ActAllow, 0, v, 0, specs.OpEqualTo))
	}
	for _, v := range allowedSocketFamilies {
		sc.Syscalls = append(sc.Syscalls, argRule("socket", specs.ActAllow, 0, v, 0, specs.OpEqualTo))
	}
	var nsMask uint64
	for _, flag := range namespaceCloneFlags {
		nsMask |= flag
		sc.Syscalls = append(sc.Syscalls, argRule("clone", specs.ActNotify, 0, flag, flag, specs.OpMaskedEqual))
	}
	sc.Syscalls = append(sc.Syscalls, argRule("clone", specs.ActAllow, 0, nsMask, 0, specs.OpMaskedEqual))
	if auditFiles {
		var writeMask uint64
		for _, call := range []struct {
			name  string
			index uint
		}{{"open", 1}, {"openat", 2}} {
			for _, flag := range writeOpenFlags {
				writeMask |= flag
				sc.Syscalls = append(sc.Syscalls, argRule(call.name, specs.ActNotify, call.index, flag, flag, specs.OpMaskedEqual))
			}
			sc.Syscalls = append(sc.Syscalls, argRule(call.name, specs.ActAllow, call.index, writeMask, 0, specs.OpMaskedEqual))
		}
		sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{Names: []string{"creat", "openat2"}, Action: specs.ActNotify})
	}
	return sc
}

// argRule is a rule for one syscall with one condition on one argument.
func argRule(name string, act specs.LinuxSeccompAction, index uint, value, valueTwo uint64, op specs.LinuxSeccompOperator) specs.LinuxSyscall {
	return specs.LinuxSyscall{
		Names: []string{name}, Action: act,
		Args: []specs.LinuxSeccompArg{{Index: index, Value: value, ValueTwo: valueTwo, Op: op}},
	}
}

// Clone flags a process needs without any namespace: fork's and a thread's.
// They stand for "clone without namespace flags" when a profile is read.
const (
	forkCloneFlags   = unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID | uint64(unix.SIGCHLD)
	threadCloneFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
		unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID
)

// condHolds evaluates one seccomp argument condition on the value v.
func condHolds(a specs.LinuxSeccompArg, v uint64) bool {
	switch a.Op {
	case specs.OpNotEqual:
		return v != a.Value
	case specs.OpLessThan:
		return v < a.Value
	case specs.OpLessEqual:
		return v <= a.Value
	case specs.OpEqualTo:
		return v == a.Value
	case specs.OpGreaterEqual:
		return v >= a.Value
	case specs.OpGreaterThan:
		return v > a.Value
	case specs.OpMaskedEqual:
		return v&a.Value == a.ValueTwo
	}
	return true // an operator unknown here may match
}

// UsesNotify reports whether a libcontainer seccomp config hands any
// syscall to a listener: then the monitor must serve ListenerPath.
func UsesNotify(sc *configs.Seccomp) bool {
	if sc == nil {
		return false
	}
	for _, call := range sc.Syscalls {
		if call != nil && call.Action == configs.Notify {
			return true
		}
	}
	return false
}
