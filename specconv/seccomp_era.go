package specconv

import (
	"runtime"
	"slices"

	"github.com/opencontainers/runc/libcontainer/seccomp"
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
// nothing is newer than the profile, and its default stands. filtered are
// the numberings the narrowed filter applies to (filteredNumberings), in
// which an older form is read; nil: none can be read, nothing widens.
type cfgEra struct {
	arch     libseccomp.ScmpArch
	newest   libseccomp.ScmpSyscall
	known    bool
	filtered []libseccomp.ScmpArch
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

// A call newer than the profile can be the newer form of one the profile
// allows: statx reads the metadata newfstatat reads, of the same paths,
// under the same permission checks (search permission on the path's
// directories, none on the file), in a newer layout with a few more fields
// (birth time, mount id, file attributes). A profile written before statx
// that allows newfstatat with any arguments allowed that metadata. ENOSYS
// for statx would take nothing from the workload (glibc and Go fall back
// to newfstatat), but it ends libcontainer's init, which calls statx after
// the filter is loaded and does not fall back (seccomp_init.go). So such a
// profile lets statx run: its older form stands for it. Only with any
// arguments and no refusal: a profile that allows newfstatat for some
// arguments says nothing about the rest, and a condition cannot be carried
// over (statx's flags are its third argument, newfstatat's its fourth, and
// statx's mask has no counterpart).
//
// olderForms: for a call, its older forms in the order a numbering is
// searched; a numbering's older form is the first it has (newfstatat on
// the 64-bit numberings and x32; fstatat64 on i386, arm and s390, which
// have no newfstatat). Only statx, the one call newer than such profiles
// that the runtime's own init makes after the filter: glibc and Go fall
// back from openat2, clone3 and close_range on ENOSYS, and openat2's and
// clone3's arguments are in a struct seccomp cannot read, so a profile's
// conditions on openat or clone could not follow them.
var olderForms = map[string][]string{
	"statx": {"newfstatat", "fstatat64"},
}

// filteredNumberings are the numberings a narrowed filter listing archs
// applies to: the native one (libseccomp filters it whatever the profile
// lists) and each listed one the kernel can present (kernelArchs: a
// numbering the kernel never presents runs nothing). nil when one of them
// cannot be placed: then no older form can be read in it.
func filteredNumberings(archs []specs.Arch) []libseccomp.ScmpArch {
	names := []string{eraArch}
	for _, a := range archs {
		n, err := seccomp.ConvertStringToArch(string(a))
		if err != nil {
			return nil
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var out []libseccomp.ScmpArch
	for _, n := range kernelArchs(names) {
		a, err := libseccomp.GetArchFromString(n)
		if err != nil {
			return nil
		}
		out = append(out, a)
	}
	return out
}

// olderFormAllowed reports whether cfg allows name's older form with any
// arguments, without any refusal, in every numbering the filter applies
// to. The caller asks only for a call cfg does not name and predates. The
// older form is read without the era (cfgEra{}): one cfg does not name
// gets cfg's default, never a widening of its own.
func (e cfgEra) olderFormAllowed(cfg *specs.LinuxSeccomp, name string) bool {
	forms, ok := olderForms[name]
	if !ok || len(e.filtered) == 0 {
		return false
	}
	for _, a := range e.filtered {
		i := slices.IndexFunc(forms, func(f string) bool {
			_, ok := syscallNumber(f, a)
			return ok
		})
		if i < 0 || !cfgVerdict(cfg, cfgEra{}, forms[i]).everything {
			return false
		}
	}
	return true
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
