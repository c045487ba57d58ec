package monitor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// syscallNames names the syscalls the monitor can be notified of, by their
// number on this machine's architecture (the only one whose numbers the
// seccomp data can be trusted to use: see nativeArch).
var syscallNames = map[int32]string{
	unix.SYS_MOUNT: "mount", unix.SYS_UMOUNT2: "umount2", unix.SYS_PIVOT_ROOT: "pivot_root",
	unix.SYS_UNSHARE: "unshare", unix.SYS_SETNS: "setns", unix.SYS_CLONE: "clone",
	unix.SYS_FSOPEN: "fsopen", unix.SYS_FSCONFIG: "fsconfig", unix.SYS_FSMOUNT: "fsmount",
	unix.SYS_FSPICK: "fspick", unix.SYS_MOVE_MOUNT: "move_mount", unix.SYS_OPEN_TREE: "open_tree",
	unix.SYS_MOUNT_SETATTR: "mount_setattr",
	unix.SYS_PTRACE:        "ptrace", unix.SYS_PROCESS_VM_READV: "process_vm_readv", unix.SYS_PROCESS_VM_WRITEV: "process_vm_writev",
	unix.SYS_BPF: "bpf", unix.SYS_PERF_EVENT_OPEN: "perf_event_open", unix.SYS_USERFAULTFD: "userfaultfd",
	unix.SYS_KEYCTL: "keyctl", unix.SYS_ADD_KEY: "add_key", unix.SYS_REQUEST_KEY: "request_key",
	unix.SYS_INIT_MODULE: "init_module", unix.SYS_FINIT_MODULE: "finit_module", unix.SYS_DELETE_MODULE: "delete_module",
	unix.SYS_KEXEC_LOAD: "kexec_load", unix.SYS_REBOOT: "reboot",
	unix.SYS_SWAPON: "swapon", unix.SYS_SWAPOFF: "swapoff", unix.SYS_OPEN_BY_HANDLE_AT: "open_by_handle_at",
	unix.SYS_OPENAT: "openat", unix.SYS_OPENAT2: "openat2",
	// Notified only when the init calls it after its filter is loaded
	// and config.json's profile refuses it (Config.GetcwdErrno).
	unix.SYS_GETCWD: "getcwd",
}

// SyscallName names syscall nr of the architecture arch (an AUDIT_ARCH_*
// value, as in struct seccomp_data).
func SyscallName(arch uint32, nr int32) string {
	if arch == nativeArch {
		if name, ok := syscallNames[nr]; ok {
			return name
		}
		if name, ok := archSyscallNames[nr]; ok {
			return name
		}
	}
	return fmt.Sprintf("syscall_%d/arch_%#x", nr, arch)
}

// KnownSyscall reports whether name is one the monitor can name.
func KnownSyscall(name string) bool {
	for _, m := range []map[int32]string{syscallNames, archSyscallNames} {
		for _, n := range m {
			if n == name {
				return true
			}
		}
	}
	return false
}

// syscallArity is how many arguments each named syscall takes: a record
// shows those, not the six registers seccomp hands over.
var syscallArity = map[string]int{
	"mount": 5, "umount2": 2, "pivot_root": 2, "unshare": 1, "setns": 2, "clone": 5,
	"fsopen": 2, "fsconfig": 5, "fsmount": 3, "fspick": 3, "move_mount": 5, "open_tree": 3, "mount_setattr": 5,
	"ptrace": 4, "process_vm_readv": 6, "process_vm_writev": 6,
	"bpf": 3, "perf_event_open": 5, "userfaultfd": 1,
	"keyctl": 5, "add_key": 5, "request_key": 4,
	"init_module": 3, "finit_module": 3, "delete_module": 2,
	"kexec_load": 4, "kexec_file_load": 5, "reboot": 4, "swapon": 2, "swapoff": 1, "open_by_handle_at": 3,
	"open": 3, "openat": 4, "creat": 2, "openat2": 4, "getcwd": 2,
}

// syscallArgs are the arguments of a call to name, in hex.
func syscallArgs(name string, regs [6]uint64) []string {
	args := hexArgs(regs)
	if n, ok := syscallArity[name]; ok {
		return args[:n]
	}
	return args
}
