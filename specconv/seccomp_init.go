package specconv

import (
	"fmt"
	"slices"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// initStatx is the call libcontainer's init (runc v1.5.3, with
// filepath-securejoin's pathrs-lite procfs) makes after loading the seccomp
// filter: each time it opens /proc/thread-self/fd (to reopen the exec fifo,
// to close the exec fds, and in `maka exec`'s init) its overmount check asks
// statx for mount ids. It probed statx before the filter, so it does not
// fall back once the filter refuses it: EPERM and ENOSYS alike end the init
// ("get root mount id: statx(STATX_MNT_ID_...): ... function not
// implemented"), after the container exists. (On a kernel without
// STATX_MNT_ID, before 5.8, the probe fails and the call is never made;
// specconv does not read the kernel, so the rule holds everywhere.) A
// profile that predates statx and allows newfstatat with any arguments
// lets statx run (olderForms, seccomp_era.go) and passes this check; one
// that predates it and does not is refused here, before anything exists.
const initStatx = "statx"

// initStatxRefusal is the refusal, if the narrowed filter res does not let
// statx run with any arguments: the config.json field that refuses it
// (the first rule of cfg naming statx, or its defaultAction) and why.
func initStatxRefusal(cfg, res *specs.LinuxSeccomp) (field, reason string, refused bool) {
	var rules []specs.LinuxSyscall
	for _, r := range res.Syscalls {
		if slices.Contains(r.Names, initStatx) {
			rules = append(rules, r)
		}
	}
	if len(rules) == 1 && allows(rules[0].Action) && len(rules[0].Args) == 0 {
		return "", "", false
	}
	field, named := statxField(cfg)
	predated := !named && eraOf(cfg, eraArch).predates(initStatx)
	const why = "which the runtime's init calls after the filter is loaded"
	if len(rules) == 1 && !allows(rules[0].Action) && len(rules[0].Args) == 0 {
		return field, fmt.Sprintf("the profile refuses statx (%s), %s (allow statx in the profile)",
			answer(rules[0], predated), why), true
	}
	return field, fmt.Sprintf("the profile allows statx only with some arguments, %s (allow statx with any arguments)", why), true
}

// statxField is the config.json field behind the statx verdict: the first
// rule naming statx (named), else the default action.
func statxField(cfg *specs.LinuxSeccomp) (field string, named bool) {
	for i, r := range cfg.Syscalls {
		if j := slices.Index(r.Names, initStatx); j >= 0 {
			return fmt.Sprintf("linux.seccomp.syscalls[%d].names[%d]", i, j), true
		}
	}
	return "linux.seccomp.defaultAction", false
}

// answer names a refusing rule's answer: the errno (libcontainer's default
// is EPERM) or the action; predated: the ENOSYS is NarrowSeccomp's answer
// to a profile older than the call, not the profile's own, and says so.
func answer(r specs.LinuxSyscall, predated bool) string {
	if r.Action != specs.ActErrno {
		return string(r.Action)
	}
	errno := unix.EPERM
	if r.ErrnoRet != nil {
		errno = unix.Errno(*r.ErrnoRet)
	}
	name := unix.ErrnoName(errno)
	if name == "" {
		name = fmt.Sprintf("errno %d", errno)
	}
	if errno == unix.ENOSYS && predated {
		name += ": the profile predates it"
	}
	return name
}
