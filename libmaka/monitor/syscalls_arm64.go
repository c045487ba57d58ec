package monitor

import "golang.org/x/sys/unix"

const nativeArch = unix.AUDIT_ARCH_AARCH64

// Syscalls that only some architectures have (arm64 has no open or creat).
var archSyscallNames = map[int32]string{
	unix.SYS_KEXEC_FILE_LOAD: "kexec_file_load",
}
