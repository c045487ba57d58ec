package specconv

import (
	"runtime"

	"github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// A config.json profile written before a syscall existed does not name it,
// and its default action was meant for the calls of its time. runc loads
// such a profile with libcontainer's -ENOSYS stub in front: a call numbered
// above every call the profile names answers ENOSYS, as a kernel without
// the call would, and libcs and Go fall back to the older call. maka's
// narrowed filter names maka's own (newer) calls, so the stub computed on
// it no longer covers them; NarrowSeccomp writes the ENOSYS itself instead
// (cfgEra). Without it v0.9.0 of the OCI runtime-tools gets EPERM for
// statx, and a libc that probes statx, clone3 or close_range reads EPERM as
// "forbidden", not "old kernel".

// eraArch is the numbering a profile's era is read in: the architecture
// maka is built for, whose programs a sandbox runs. A profile's rules hold
// for every architecture it lists, but the numberings do not agree on what
// is new: i386 numbers arch_prctl (384) after statx (383), and x32's own
// calls (512..547) sit above every call it shares with x86_64, so a profile
// read in those numberings would know statx. runc's stub decides per
// architecture; for native calls its answer is this one.
var eraArch = runtime.GOARCH

// cfgEra is the newest syscall a config profile names, by number in one
// architecture's numbering. known is false when the profile names no call
// that numbering has (or libseccomp does not know the architecture): then
// nothing is newer than the profile, and its default stands.
type cfgEra struct {
	arch   libseccomp.ScmpArch
	newest libseccomp.ScmpSyscall
	known  bool
}

// eraOf reads the newest call cfg names in arch's numbering (a Go or
// libseccomp architecture name). Names libseccomp does not know are
// skipped, as libcontainer skips them when it loads the filter.
func eraOf(cfg *specs.LinuxSeccomp, arch string) cfgEra {
	a, err := libseccomp.GetArchFromString(arch)
	if err != nil {
		return cfgEra{}
	}
	e := cfgEra{arch: a}
	for _, name := range ruleNames(cfg) {
		if nr, ok := syscallNumber(name, a); ok && (!e.known || nr > e.newest) {
			e.newest, e.known = nr, true
		}
	}
	return e
}

// predates reports whether the profile was written before the call: its
// number is above the newest the profile names. A call libseccomp does not
// know, or that the architecture lacks, cannot be placed: false.
func (e cfgEra) predates(name string) bool {
	if !e.known {
		return false
	}
	nr, ok := syscallNumber(name, e.arch)
	return ok && nr > e.newest
}

// syscallNumber is name's number in arch's numbering. libseccomp answers a
// negative pseudo-number for a call the architecture does not have (socket
// calls multiplexed on i386, say): not a number to compare.
func syscallNumber(name string, arch libseccomp.ScmpArch) (libseccomp.ScmpSyscall, bool) {
	nr, err := libseccomp.GetSyscallFromNameByArch(name, arch)
	return nr, err == nil && nr >= 0
}

// enosysRefusal is the answer to a call newer than config.json's profile.
func enosysRefusal() *specs.LinuxSyscall {
	enosys := uint(unix.ENOSYS)
	return &specs.LinuxSyscall{Action: specs.ActErrno, ErrnoRet: &enosys}
}
