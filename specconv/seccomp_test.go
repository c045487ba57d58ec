package specconv

import (
	"slices"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// assertNoNamespaces: no new namespace through unshare, clone or clone3
// (refused, or notified to the monitor, which answers EPERM), while fork and
// threads still work.
func assertNoNamespaces(t *testing.T, sc *specs.LinuxSeccomp) {
	t.Helper()
	if mayAllowCall(sc, "unshare", [6]uint64{unix.CLONE_NEWUSER}) || mayAllowCall(sc, "clone3", [6]uint64{}) {
		t.Errorf("unshare or clone3 still allowed")
	}
	for _, flag := range namespaceCloneFlags {
		if mayAllowCall(sc, "clone", [6]uint64{flag | forkCloneFlags}) {
			t.Errorf("clone with flag %#x still allowed", flag)
		}
	}
	if !mayAllowCall(sc, "clone", [6]uint64{forkCloneFlags}) || !mayAllowCall(sc, "clone", [6]uint64{threadCloneFlags}) {
		t.Errorf("fork or thread creation refused")
	}
}

// Podman's profile (default errno, allow rules for ~370 names, unshare and
// clone(CLONE_NEWUSER) among them) only narrows maka's: the result allows
// what both allow, keeps maka's default and watched calls, and never lets
// the process make a namespace.
func TestPodmanSeccompProfileOnlyNarrowsMakas(t *testing.T) {
	s := engineSpec(t, "podman")
	orig := s.Linux.Seccomp
	if !seccompMayAllow(orig, "unshare", 0) || !seccompMayAllow(orig, "clone", unix.CLONE_NEWUSER) {
		t.Fatal("the captured Podman profile was expected to allow unshare and clone(CLONE_NEWUSER)")
	}
	b, err := ToBoundary(testHost, s, policy(t, libmaka.ProfileBaseline))
	if err != nil {
		t.Fatal(err)
	}
	sc, own := b.Seccomp, DefaultSeccomp(false)
	assertNoNamespaces(t, sc)
	checkNarrowed(t, own, orig, sc)
	if sc.DefaultAction != own.DefaultAction {
		t.Errorf("default action %s, want maka's %s", sc.DefaultAction, own.DefaultAction)
	}
	var zero [6]uint64
	if !mayAllowCall(sc, "read", zero) || mayAllowCall(sc, "io_uring_setup", zero) || mayAllowCall(sc, "chroot", zero) {
		t.Error("read refused, or io_uring_setup or chroot (which maka refuses) allowed")
	}
	if !notifiesCall(sc, "mount", zero) {
		t.Error("mount (allowed by Podman's profile) is no longer watched")
	}
	if b.Syscalls.Profile != "config" || b.Syscalls.Narrowed == 0 {
		t.Errorf("syscalls = %+v: want config.json's profile shown as narrowing maka's, with what it asked for beyond it", b.Syscalls)
	}
	// The caller's spec is untouched.
	if !seccompMayAllow(s.Linux.Seccomp, "unshare", 0) {
		t.Error("ToBoundary modified the input's seccomp profile")
	}
	convertable(t, b, "p")
}

func notified(sc *specs.LinuxSeccomp) map[string]int {
	out := map[string]int{}
	for _, r := range sc.Syscalls {
		if r.Action == specs.ActNotify {
			for _, n := range r.Names {
				out[n]++
			}
		}
	}
	return out
}

func TestDefaultSeccompNotifiesTheWatchedSyscalls(t *testing.T) {
	sc := DefaultSeccomp(false)
	got := notified(sc)
	for _, name := range WatchedSyscalls {
		if got[name] != 1 {
			t.Errorf("%s: notified by %d rules, want 1", name, got[name])
		}
	}
	// clone only with a namespace flag: one masked-equal rule a flag.
	if got["clone"] != len(namespaceCloneFlags) {
		t.Errorf("clone: %d notify rules, want %d", got["clone"], len(namespaceCloneFlags))
	}
	for _, r := range sc.Syscalls {
		if slices.Contains(r.Names, "clone") && (len(r.Args) != 1 || r.Args[0].Op != specs.OpMaskedEqual) {
			t.Errorf("clone rule without its flag condition: %+v", r)
		}
		// libcontainer refuses to notify write (it needs it to hand the fd over).
		if r.Action == specs.ActNotify && slices.Contains(r.Names, "write") {
			t.Error("write is notified")
		}
	}
	for _, name := range []string{"open", "openat", "openat2", "creat"} {
		if got[name] != 0 {
			t.Errorf("%s notified without file audit", name)
		}
	}
	if sc.DefaultAction != specs.ActErrno || sc.DefaultErrnoRet == nil || *sc.DefaultErrnoRet != uint(unix.EPERM) {
		t.Errorf("default action %s, want SCMP_ACT_ERRNO with EPERM", sc.DefaultAction)
	}
}

func TestFileAuditNotifiesWriteModeOpensOnly(t *testing.T) {
	sc := DefaultSeccomp(true)
	var openat []uint64
	for _, r := range sc.Syscalls {
		if r.Action == specs.ActNotify && slices.Equal(r.Names, []string{"openat"}) {
			if len(r.Args) != 1 || r.Args[0].Index != 2 || r.Args[0].Value != r.Args[0].ValueTwo {
				t.Fatalf("openat rule: %+v", r)
			}
			openat = append(openat, r.Args[0].Value)
		}
	}
	slices.Sort(openat)
	want := []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_CREAT, unix.O_TRUNC}
	slices.Sort(want)
	if !slices.Equal(openat, want) {
		t.Fatalf("openat flags notified: %v, want %v", openat, want)
	}
	if got := notified(sc); got["creat"] != 1 || got["openat2"] != 1 {
		t.Fatalf("creat/openat2: %v", got)
	}
}

func TestTheMonitorNamesEveryWatchedSyscall(t *testing.T) {
	for _, name := range WatchedSyscalls {
		switch name {
		case "umount", "kexec_file_load":
			// Not on every architecture (umount: none of the 64-bit ones).
			continue
		}
		if !monitor.KnownSyscall(name) {
			t.Errorf("the monitor cannot name %s", name)
		}
	}
}

func TestAuditPolicyAddsTheOpenRulesAndLibcontainerListens(t *testing.T) {
	p := policy(t, "restricted")
	p.Audit = "files"
	b, err := ToBoundary(testHost, sandboxSpec(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if notified(b.Seccomp)["openat"] == 0 {
		t.Fatal("audit: files did not add the open rules")
	}
	convertable(t, b, "x")
	out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !UsesNotify(out.Config.Seccomp) {
		t.Fatal("converted profile has no notify action")
	}
	if UsesNotify(nil) {
		t.Fatal("no profile notifies")
	}
}

// Test helpers: how a profile may answer a call, read conservatively.

// allowing reports whether an action may let the call run: allow and log do,
// and so may trace and notify (the tracer or listener decides).
func allowing(a specs.LinuxSeccompAction) bool {
	switch a {
	case specs.ActAllow, specs.ActLog, specs.ActTrace, specs.ActNotify:
		return true
	}
	return false
}

// seccompMayAllow reports whether the profile may let name run with its
// first argument arg0: some rule for it that may match lets it through, or
// no rule may match and the default action does. Conditions on other
// arguments may match (they are unknown here), which errs toward "allowed".
func seccompMayAllow(sc *specs.LinuxSeccomp, name string, arg0 uint64) bool {
	matched := false
	for _, r := range sc.Syscalls {
		if !slices.Contains(r.Names, name) || !argsMayMatch(r.Args, arg0) {
			continue
		}
		if allowing(r.Action) {
			return true
		}
		matched = true
	}
	return !matched && allowing(sc.DefaultAction)
}

// argsMayMatch evaluates a rule's conditions on arg0 as libcontainer adds
// them: all of them must hold, unless one argument has several conditions,
// in which case each is a rule of its own (any may hold).
func argsMayMatch(args []specs.LinuxSeccompArg, arg0 uint64) bool {
	if len(args) == 0 {
		return true
	}
	perIndex := map[uint]int{}
	for _, a := range args {
		perIndex[a.Index]++
	}
	anyOf := false
	for _, n := range perIndex {
		anyOf = anyOf || n > 1
	}
	for _, a := range args {
		holds := a.Index != 0 || condHolds(a, arg0)
		if anyOf && holds {
			return true
		}
		if !anyOf && !holds {
			return false
		}
	}
	return !anyOf
}
