package specconv

import (
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// deniedSyscalls are refused (EPERM) by maka's default seccomp profile,
// used when config.json brings none. They are the ways out of a container
// (mounts, namespaces, other processes' memory, kernel modules, keyrings,
// BPF, perf, the reboot and swap controls) and nothing an ordinary program
// needs. The monitor (a later step) watches the same list.
var deniedSyscalls = []string{
	"mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"bpf", "perf_event_open", "userfaultfd",
	"keyctl", "add_key", "request_key",
	"init_module", "finit_module", "delete_module", "create_module", "query_module", "get_kernel_syms",
	"kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
	"acct", "quotactl", "quotactl_fd", "syslog", "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl",
	"iopl", "ioperm", "vm86", "vm86old", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
	"vhangup", "personality",
}

// namespaceCloneFlags may not be passed to clone: a new user namespace
// would hand the process every capability inside it.
var namespaceCloneFlags = []uint64{
	unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
	unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME,
}

// DefaultSeccomp is maka's seccomp profile: everything is allowed except
// deniedSyscalls and clone with namespace flags. clone3 answers ENOSYS (its
// flags live in memory, out of seccomp's reach), so libc falls back to clone,
// where the flags can be checked.
func DefaultSeccomp() *specs.LinuxSeccomp {
	eperm := uint(unix.EPERM)
	enosys := uint(unix.ENOSYS)
	sc := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32, specs.ArchAARCH64, specs.ArchARM},
		Syscalls: []specs.LinuxSyscall{
			{Names: deniedSyscalls, Action: specs.ActErrno, ErrnoRet: &eperm},
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
		},
	}
	for _, flag := range namespaceCloneFlags {
		sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{
			Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: &eperm,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: flag, ValueTwo: flag, Op: specs.OpMaskedEqual}},
		})
	}
	return sc
}
