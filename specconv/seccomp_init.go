package specconv

import (
	"fmt"
	"slices"

	"github.com/maka-runtime/maka/libmaka"
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

// initGetcwd is the other call libcontainer's init makes after loading the
// filter, but only where noNewPrivileges is false: the init then loads
// the filter before it drops its capabilities (loading one without
// no_new_privs needs CAP_SYS_ADMIN), and then checks its working
// directory (verifyCwd, CVE-2024-21626's fix: getcwd must not answer
// "(unreachable)"). A profile that refuses getcwd ends the init there
// ("getwd: operation not permitted"), after the container exists; runc
// fails the same, crun makes no such check (OCI validation's
// linux_seccomp). maka hands getcwd to its monitor instead
// (InitGetcwdErrno): the monitor lets a call made before it is attached
// run (the init's: no process of the user's runs before the monitor is
// attached), and answers every later one with the profile's errno, as the
// kernel would have. An exec'd process with no_new_privs off meets the
// same check after the monitor is attached: refused, as under runc.
const initGetcwd = "getcwd"

// maxErrno is the largest errno a seccomp filter returns (SECCOMP_RET_DATA
// is clamped to it by the kernel) and the monitor may answer.
const maxErrno = 4095

// getcwdVerdict is sc's answer to getcwd: the one rule naming it, or the
// default action; whole is false when it depends on the arguments.
func getcwdVerdict(sc *specs.LinuxSeccomp) (r specs.LinuxSyscall, whole bool) {
	var rules []specs.LinuxSyscall
	for _, rule := range sc.Syscalls {
		if slices.Contains(rule.Names, initGetcwd) {
			rules = append(rules, rule)
		}
	}
	switch {
	case len(rules) == 0:
		return specs.LinuxSyscall{Action: sc.DefaultAction, ErrnoRet: sc.DefaultErrnoRet}, true
	case len(rules) == 1 && len(rules[0].Args) == 0:
		return rules[0], true
	}
	return specs.LinuxSyscall{}, false
}

// InitGetcwdErrno is the errno b's monitor answers getcwd with once it is
// attached (the init's own call runs), or 0 where getcwd is not handed to
// the monitor: no_new_privs is on (the filter comes after the cwd check),
// there is no filter, or it allows getcwd.
func InitGetcwdErrno(b *libmaka.Boundary) uint {
	if b.Seccomp == nil || b.Process.NoNewPrivileges {
		return 0
	}
	r, whole := getcwdVerdict(b.Seccomp)
	if !whole || r.Action != specs.ActErrno {
		return 0 // allowed; anything else is refused at create (initGetcwdRefusal)
	}
	if r.ErrnoRet == nil {
		return uint(unix.EPERM)
	}
	if *r.ErrnoRet > maxErrno {
		return 0 // refused at create (initGetcwdRefusal)
	}
	return *r.ErrnoRet
}

// initGetcwdRefusal is the refusal, if the narrowed filter res refuses
// getcwd in a way the monitor cannot answer for the user's process alone
// (a kill, a trap, an errno of 0, a rule on the arguments) while
// noNewPrivileges is false: the init would fail after the container
// exists. field names cfg's rule, or its defaultAction.
func initGetcwdRefusal(cfg, res *specs.LinuxSeccomp, noNewPrivs bool) (field, reason string, refused bool) {
	if noNewPrivs {
		return "", "", false
	}
	r, whole := getcwdVerdict(res)
	if whole && (allows(r.Action) || r.Action == specs.ActErrno && (r.ErrnoRet == nil || *r.ErrnoRet != 0 && *r.ErrnoRet <= maxErrno)) {
		return "", "", false
	}
	field = "linux.seccomp.defaultAction"
	for i, rule := range cfg.Syscalls {
		if j := slices.Index(rule.Names, initGetcwd); j >= 0 {
			field = fmt.Sprintf("linux.seccomp.syscalls[%d].names[%d]", i, j)
			break
		}
	}
	const why = "which the runtime's init calls after the filter is loaded when process.noNewPrivileges is false (set it, allow getcwd, or refuse it with an errno)"
	if !whole {
		return field, "the profile answers getcwd depending on its arguments, " + why, true
	}
	return field, fmt.Sprintf("the profile refuses getcwd (%s), %s", answer(r, false), why), true
}

// seccompOf is the filter b's init loads: b's, with getcwd handed to the
// monitor where InitGetcwdErrno says so.
func seccompOf(b *libmaka.Boundary) *specs.LinuxSeccomp {
	if InitGetcwdErrno(b) == 0 {
		return b.Seccomp
	}
	sc := *b.Seccomp
	sc.Syscalls = nil
	for _, rule := range b.Seccomp.Syscalls {
		if i := slices.Index(rule.Names, initGetcwd); i >= 0 {
			rule.Names = slices.Delete(slices.Clone(rule.Names), i, i+1)
			if len(rule.Names) == 0 {
				continue
			}
		}
		sc.Syscalls = append(sc.Syscalls, rule)
	}
	sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{Names: []string{initGetcwd}, Action: specs.ActNotify})
	return &sc
}
