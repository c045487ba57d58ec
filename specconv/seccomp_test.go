package specconv

import (
	"slices"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// assertNoNamespaces: no new namespace through unshare, clone or clone3,
// while fork and threads still work.
func assertNoNamespaces(t *testing.T, sc *specs.LinuxSeccomp) {
	t.Helper()
	if seccompMayAllow(sc, "unshare", unix.CLONE_NEWUSER) || seccompMayAllow(sc, "clone3", 0) {
		t.Errorf("unshare or clone3 still allowed: %+v", sc.Syscalls)
	}
	for _, flag := range namespaceCloneFlags {
		if seccompMayAllow(sc, "clone", flag|forkCloneFlags) {
			t.Errorf("clone with flag %#x still allowed", flag)
		}
	}
	if !seccompMayAllow(sc, "clone", forkCloneFlags) || !seccompMayAllow(sc, "clone", threadCloneFlags) {
		t.Errorf("fork or thread creation refused: %+v", sc.Syscalls)
	}
}

func TestPodmanSeccompProfileLosesNamespaceCreationOnly(t *testing.T) {
	s := engineSpec(t, "podman")
	orig := s.Linux.Seccomp
	if !seccompMayAllow(orig, "unshare", 0) || !seccompMayAllow(orig, "clone", unix.CLONE_NEWUSER) {
		t.Fatal("the captured Podman profile was expected to allow unshare and clone(CLONE_NEWUSER)")
	}
	b, err := ToBoundary(s, policy(t, libmaka.ProfileBaseline))
	if err != nil {
		t.Fatal(err)
	}
	sc := b.Seccomp
	assertNoNamespaces(t, sc)
	if sc.DefaultAction != orig.DefaultAction || *sc.DefaultErrnoRet != *orig.DefaultErrnoRet {
		t.Errorf("default action changed: %s/%d", sc.DefaultAction, *sc.DefaultErrnoRet)
	}
	// Everything else the profile says is kept.
	for _, name := range []string{"read", "mount", "chroot", "socket", "personality"} {
		for _, arg := range []uint64{0, 8, 16} {
			if seccompMayAllow(sc, name, arg) != seccompMayAllow(orig, name, arg) {
				t.Errorf("%s(%d): verdict changed", name, arg)
			}
		}
	}
	if seccompMayAllow(sc, "bpf", 0) || seccompMayAllow(sc, "kexec_load", 0) {
		t.Error("a refused call became allowed")
	}
	// The caller's spec is untouched.
	if !seccompMayAllow(s.Linux.Seccomp, "unshare", 0) {
		t.Error("ToBoundary modified the input's seccomp profile")
	}
	convertable(t, b, "p")
}

func TestDenyNamespaceCreation(t *testing.T) {
	eperm := uint(unix.EPERM)
	cases := map[string]*specs.LinuxSeccomp{
		"allow by default": {DefaultAction: specs.ActAllow},
		"clone allowed by name": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read", "clone", "clone3", "unshare", "exit"}, Action: specs.ActAllow}}},
		// Docker's: clone only without CLONE_NEW{NS,UTS,IPC,USER,PID,NET,CGROUP}; CLONE_NEWTIME passes.
		"docker's masked clone": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"clone"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 0x7E020000, ValueTwo: 0, Op: specs.OpMaskedEqual}}}}},
		"notify": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"clone", "unshare"}, Action: specs.ActNotify}, {Names: []string{"exit"}, Action: specs.ActAllow}}},
	}
	for name, sc := range cases {
		t.Run(name, func(t *testing.T) {
			if !denyNamespaceCreation(sc) {
				t.Fatal("profile not changed")
			}
			assertNoNamespaces(t, sc)
			if slices.ContainsFunc(sc.Syscalls, func(r specs.LinuxSyscall) bool { return len(r.Names) == 0 }) {
				t.Error("an empty rule was left")
			}
		})
	}
	// A profile that refuses all of it already is left as it is.
	strict := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, DefaultErrnoRet: &eperm,
		Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActAllow}}}
	if denyNamespaceCreation(strict) || len(strict.Syscalls) != 1 {
		t.Errorf("a strict profile was changed: %+v", strict.Syscalls)
	}
	// A profile that refuses plain clone does not gain it.
	noClone := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{{Names: []string{"unshare"}, Action: specs.ActAllow}}}
	denyNamespaceCreation(noClone)
	if seccompMayAllow(noClone, "clone", forkCloneFlags) || seccompMayAllow(noClone, "unshare", 0) {
		t.Errorf("clone allowed or unshare kept: %+v", noClone.Syscalls)
	}
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
	b, err := ToBoundary(sandboxSpec(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if notified(b.Seccomp)["openat"] == 0 {
		t.Fatal("audit: files did not add the open rules")
	}
	convertable(t, b, "x")
	out, err := ToLibcontainer(b, Options{ID: "x"})
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
