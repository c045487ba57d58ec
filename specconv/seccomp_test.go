package specconv

import (
	"slices"
	"testing"

	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

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
	if sc.DefaultAction != specs.ActAllow {
		t.Errorf("default action %s", sc.DefaultAction)
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
	if notified(b.Spec.Linux.Seccomp)["openat"] == 0 {
		t.Fatal("audit: files did not add the open rules")
	}
	b.Spec.Root.Path = t.TempDir()
	out, err := ToLibcontainer(b.Spec, Options{ID: "x"})
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
