//go:build !amd64 && !arm64

package monitor

// On other architectures syscalls are named by number only.
const nativeArch = 0

var archSyscallNames = map[int32]string{}
