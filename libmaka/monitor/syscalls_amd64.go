package monitor

import "golang.org/x/sys/unix"

const nativeArch = unix.AUDIT_ARCH_X86_64

// Syscalls that only some architectures have.
var archSyscallNames = map[int32]string{
	unix.SYS_OPEN: "open", unix.SYS_CREAT: "creat", unix.SYS_KEXEC_FILE_LOAD: "kexec_file_load",
}
