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

// DefaultSeccomp is maka's seccomp profile: everything is allowed except
// WatchedSyscalls and clone with namespace flags (notified to the monitor),
// and deniedSyscalls (EPERM). clone3 answers ENOSYS (its flags live in
// memory, out of seccomp's reach), so libc falls back to clone, where the
// flags can be checked. With auditFiles, write-mode opens (open, openat,
// creat; openat2 whose flags are in memory, always) are notified too; the
// monitor records those aimed at read-only places and lets them proceed.
func DefaultSeccomp(auditFiles bool) *specs.LinuxSeccomp {
	eperm := uint(unix.EPERM)
	enosys := uint(unix.ENOSYS)
	sc := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32, specs.ArchAARCH64, specs.ArchARM},
		Syscalls: []specs.LinuxSyscall{
			{Names: slices.Clone(WatchedSyscalls), Action: specs.ActNotify},
			{Names: slices.Clone(deniedSyscalls), Action: specs.ActErrno, ErrnoRet: &eperm},
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
		},
	}
	for _, flag := range namespaceCloneFlags {
		sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{
			Names: []string{"clone"}, Action: specs.ActNotify,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: flag, ValueTwo: flag, Op: specs.OpMaskedEqual}},
		})
	}
	if auditFiles {
		for _, call := range []struct {
			name  string
			index uint
		}{{"open", 1}, {"openat", 2}} {
			for _, flag := range writeOpenFlags {
				sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{
					Names: []string{call.name}, Action: specs.ActNotify,
					Args: []specs.LinuxSeccompArg{{Index: call.index, Value: flag, ValueTwo: flag, Op: specs.OpMaskedEqual}},
				})
			}
		}
		sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{Names: []string{"creat", "openat2"}, Action: specs.ActNotify})
	}
	return sc
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
