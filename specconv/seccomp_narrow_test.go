package specconv

import (
	"runtime"
	"slices"
	"testing"

	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// The evaluation model of the tests: the verdicts a profile may give a call
// with these arguments (upper bounds: overlapping rules may all apply).
func matches(r specs.LinuxSyscall, name string, vals [6]uint64) bool {
	if !slices.Contains(r.Names, name) {
		return false
	}
	for _, alt := range alternatives(r.Args) {
		if !slices.ContainsFunc(alt, func(a specs.LinuxSeccompArg) bool { return a.Index > 5 || !condHolds(a, vals[a.Index]) }) {
			return true
		}
	}
	return false
}

func mayAllowCall(sc *specs.LinuxSeccomp, name string, vals [6]uint64) bool {
	matched := false
	for _, r := range sc.Syscalls {
		if matches(r, name, vals) {
			if widening(r.Action) {
				return true
			}
			matched = true
		}
	}
	return !matched && widening(sc.DefaultAction)
}

func notifiesCall(sc *specs.LinuxSeccomp, name string, vals [6]uint64) bool {
	return slices.ContainsFunc(sc.Syscalls, func(r specs.LinuxSyscall) bool { return r.Action == specs.ActNotify && matches(r, name, vals) })
}

// Names and argument values the tests and the fuzzer draw from.
var (
	probeNames = []string{"read", "write", "openat", "open", "creat", "openat2", "clone", "clone3", "unshare",
		"mount", "ptrace", "personality", "socket", "io_uring_setup", "io_uring_enter", "chroot", "bpf",
		"getpid", "execve", "kill", "not_a_syscall", "statx", "newfstatat", "fstatat64"}
	probeValues = []uint64{0, 1, 2, 8, 10, 16, 17, 40, 0x40, 0x200, 0x241, 0x20000, 0x20008, 0xffffffff,
		unix.CLONE_NEWUSER, unix.CLONE_NEWNS | uint64(unix.SIGCHLD), forkCloneFlags, threadCloneFlags, 1 << 63}
)

// checkNarrowed is FuzzNarrowSeccomp's property, on every probe:
// allowed(result) ⊆ allowed(own) ∩ allowed(cfg), watched(own) ⊆
// watched(result), and no call is both allowed and notified by the result
// (libseccomp would pick one).
func checkNarrowed(t *testing.T, own, cfg, res *specs.LinuxSeccomp) {
	t.Helper()
	for _, name := range probeNames {
		for _, v0 := range probeValues {
			for _, v1 := range []uint64{0, 1, 9, 0x241} {
				vals := [6]uint64{v0, v1, v1}
				allowed := mayAllowCall(res, name, vals)
				if allowed && (!mayAllowCall(own, name, vals) || (cfg != nil && !mayAllowCall(cfg, name, vals) && !olderFormsAllowAll(cfg, res, name))) {
					t.Fatalf("%s%v allowed by the result, not by both\nown %+v\ncfg %+v\nres %+v", name, vals, own, cfg, res.Syscalls)
				}
				if notifiesCall(own, name, vals) && !notifiesCall(res, name, vals) {
					t.Fatalf("%s%v watched by maka, not by the result\ncfg %+v\nres %+v", name, vals, cfg, res.Syscalls)
				}
				if allowed && notifiesCall(res, name, vals) {
					t.Fatalf("%s%v both allowed and notified by the result: %+v", name, vals, res.Syscalls)
				}
			}
		}
	}
}

// olderFormsAllowAll is the one way the result may allow a call cfg
// refuses, written apart from the code it checks: cfg does not name
// statx, and allows its older form (newfstatat, or fstatat64 where a
// numbering has no newfstatat) with any arguments and no refusal, in the
// native numbering and every other the result lists that the kernel can
// present.
func olderFormsAllowAll(cfg, res *specs.LinuxSeccomp, name string) bool {
	if name != "statx" || slices.ContainsFunc(cfg.Syscalls, func(r specs.LinuxSyscall) bool { return slices.Contains(r.Names, name) }) {
		return false
	}
	surely := func(form string) bool {
		plain := false
		for _, r := range cfg.Syscalls {
			if !slices.Contains(r.Names, form) {
				continue
			}
			if !allows(r.Action) {
				return false
			}
			plain = plain || len(r.Args) == 0
		}
		return plain
	}
	kernel := kernelSeccompArchs[runtime.GOARCH]
	archs := []string{runtime.GOARCH}
	for _, a := range res.Architectures {
		arch, err := seccomp.ConvertStringToArch(string(a))
		if err == nil && slices.Contains(kernel, arch) {
			archs = append(archs, arch)
		}
	}
	for _, arch := range archs {
		sa, err := libseccomp.GetArchFromString(arch)
		if err != nil {
			return false
		}
		form := "newfstatat"
		if nr, err := libseccomp.GetSyscallFromNameByArch(form, sa); err != nil || nr < 0 {
			form = "fstatat64"
		}
		if !surely(form) {
			return false
		}
	}
	return true
}

func TestDefaultSeccompIsAnAllowlistWithoutIoUring(t *testing.T) {
	for _, audit := range []bool{false, true} {
		sc := DefaultSeccomp(audit)
		if allows(sc.DefaultAction) || sc.DefaultAction == specs.ActTrace {
			t.Fatalf("default action %s", sc.DefaultAction)
		}
		for _, name := range append([]string{"io_uring_setup", "io_uring_enter", "io_uring_register", "clone3", "unshare", "not_a_syscall"}, WatchedSyscalls...) {
			for _, v := range probeValues {
				if mayAllowCall(sc, name, [6]uint64{v}) {
					t.Errorf("audit %v: %s(%#x) allowed", audit, name, v)
				}
			}
		}
		for _, name := range []string{"read", "write", "execve", "futex", "rt_sigaction", "wait4", "getdents64", "pipe2"} {
			if !mayAllowCall(sc, name, [6]uint64{}) {
				t.Errorf("%s refused", name)
			}
		}
		// Arg-conditioned: a fork and a thread, not a namespace; sockets by family.
		for call, want := range map[[2]uint64]bool{{forkCloneFlags}: true, {threadCloneFlags}: true,
			{forkCloneFlags | unix.CLONE_NEWUSER}: false, {unix.CLONE_NEWTIME}: false} {
			if mayAllowCall(sc, "clone", [6]uint64{call[0]}) != want {
				t.Errorf("clone(%#x): allowed %v", call[0], !want)
			}
		}
		if !mayAllowCall(sc, "socket", [6]uint64{unix.AF_INET6}) || mayAllowCall(sc, "socket", [6]uint64{unix.AF_VSOCK}) ||
			!mayAllowCall(sc, "personality", [6]uint64{0xffffffff}) || mayAllowCall(sc, "personality", [6]uint64{0x0400000}) {
			t.Error("socket or personality arguments")
		}
		// With file audit a write-mode openat is notified, a read-only one allowed.
		if audit != notifiesCall(sc, "openat", [6]uint64{0, 0, unix.O_WRONLY}) || !mayAllowCall(sc, "openat", [6]uint64{0, 0, unix.O_RDONLY}) ||
			mayAllowCall(sc, "openat", [6]uint64{0, 0, unix.O_CREAT}) == audit {
			t.Errorf("audit %v: openat verdicts", audit)
		}
		checkNarrowed(t, sc, nil, sc)
	}
}

func TestSeccompCounts(t *testing.T) {
	a, w, d := SeccompCounts(DefaultSeccomp(false))
	if w != len(WatchedSyscalls) || a < 250 || d < len(deniedSyscalls)+len(excludedSyscalls) {
		t.Errorf("default: allowed %d, watched %d, denied %d", a, w, d)
	}
	all, _, _ := SeccompCounts(nil)
	if all != a+w+d {
		t.Errorf("nil: %d, want %d", all, a+w+d)
	}
	a2, w2, d2 := SeccompCounts(&specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{{Names: []string{"mount", "frobnicate"}, Action: specs.ActErrno}}})
	if a2 != all-1 || w2 != 0 || d2 != 2 {
		t.Errorf("allow all but mount and frobnicate: %d %d %d", a2, w2, d2)
	}
	// With file audit open/openat stay allowed (read-only), creat/openat2 are watched.
	_, wa, _ := SeccompCounts(DefaultSeccomp(true))
	if wa != w+2 {
		t.Errorf("audit: watched %d, want %d", wa, w+2)
	}
}

func TestNarrowSeccomp(t *testing.T) {
	own := DefaultSeccomp(false)
	eperm, enosys, einval := uint(unix.EPERM), uint(unix.ENOSYS), uint(unix.EINVAL)
	cases := map[string]*specs.LinuxSeccomp{
		"allow everything": {DefaultAction: specs.ActAllow},
		"allow io_uring and mount by name": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read", "write", "io_uring_setup", "mount", "clone", "clone3", "exit_group"}, Action: specs.ActAllow}}},
		"docker's clone and vsock rules": {DefaultAction: specs.ActErrno, DefaultErrnoRet: &eperm, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read"}, Action: specs.ActAllow},
			{Names: []string{"clone"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 0x7E020000, Op: specs.OpMaskedEqual}}},
			{Names: []string{"socket"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 40, Op: specs.OpNotEqual}}},
			{Names: []string{"personality"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 8, Op: specs.OpEqualTo}}},
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys}}},
		"podman's audit socket refusal": {DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"socket", "read"}, Action: specs.ActAllow},
			{Names: []string{"socket"}, Action: specs.ActErrno, ErrnoRet: &einval, Args: []specs.LinuxSeccompArg{
				{Index: 0, Value: unix.AF_NETLINK, Op: specs.OpEqualTo}, {Index: 2, Value: unix.NETLINK_AUDIT, Op: specs.OpEqualTo}}}}},
		"refuse read, kill on write": {DefaultAction: specs.ActAllow, Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read"}, Action: specs.ActErrno, ErrnoRet: &enosys}, {Names: []string{"write"}, Action: specs.ActKillProcess}}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := NarrowSeccomp(own, cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkNarrowed(t, own, cfg, res)
			if mayAllowCall(res, "io_uring_setup", [6]uint64{}) || !notifiesCall(res, "mount", [6]uint64{}) {
				t.Error("io_uring allowed or mount not watched")
			}
			if res.DefaultAction != specs.ActErrno {
				t.Errorf("default %s", res.DefaultAction)
			}
		})
	}
	res, _ := NarrowSeccomp(own, cases["docker's clone and vsock rules"])
	if !mayAllowCall(res, "clone", [6]uint64{forkCloneFlags}) || mayAllowCall(res, "clone", [6]uint64{unix.CLONE_NEWTIME}) ||
		!mayAllowCall(res, "socket", [6]uint64{unix.AF_INET}) || mayAllowCall(res, "socket", [6]uint64{40}) ||
		!mayAllowCall(res, "personality", [6]uint64{8}) || mayAllowCall(res, "personality", [6]uint64{0}) || mayAllowCall(res, "write", [6]uint64{}) {
		t.Errorf("docker's profile narrowed wrong: %+v", res.Syscalls)
	}
	res, _ = NarrowSeccomp(own, cases["podman's audit socket refusal"])
	if !mayAllowCall(res, "socket", [6]uint64{unix.AF_INET}) || !mayAllowCall(res, "socket", [6]uint64{unix.AF_NETLINK, 3, 0}) ||
		mayAllowCall(res, "socket", [6]uint64{unix.AF_NETLINK, 3, unix.NETLINK_AUDIT}) || mayAllowCall(res, "socket", [6]uint64{unix.AF_VSOCK}) {
		t.Errorf("podman's socket rules narrowed wrong: %+v", res.Syscalls)
	}
	res, _ = NarrowSeccomp(own, cases["refuse read, kill on write"])
	for _, r := range res.Syscalls {
		if slices.Equal(r.Names, []string{"read"}) && (r.Action != specs.ActErrno || *r.ErrnoRet != enosys) ||
			slices.Equal(r.Names, []string{"write"}) && r.Action != specs.ActKillProcess {
			t.Errorf("config's refusal not kept: %+v", r)
		}
	}
	if _, err := NarrowSeccomp(&specs.LinuxSeccomp{DefaultAction: specs.ActAllow}, nil); err == nil {
		t.Error("a default-allow own profile was accepted")
	}
	// cfg is not modified; listenerPath is dropped.
	cfg := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, ListenerPath: "/x", Flags: []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagSpecAllow}}
	res, _ = NarrowSeccomp(own, cfg)
	if res.ListenerPath != "" || slices.Contains(res.Flags, specs.LinuxSeccompFlagSpecAllow) || cfg.ListenerPath != "/x" {
		t.Errorf("listener or SPEC_ALLOW kept: %+v", res)
	}
}

func TestRefuseWiderSeccomp(t *testing.T) {
	own := DefaultSeccomp(false)
	cfg := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, ListenerPath: "/x",
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchS390X},
		Syscalls: []specs.LinuxSyscall{
			{Names: []string{"read", "io_uring_setup"}, Action: specs.ActAllow},
			{Names: []string{"personality"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 8, Op: specs.OpEqualTo}}},
			{Names: []string{"personality"}, Action: specs.ActAllow},
			{Names: []string{"mount"}, Action: specs.ActErrno},
			{Names: []string{"clone"}, Action: specs.ActLog, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 0x7E020000, Op: specs.OpMaskedEqual}}},
			{Names: []string{"clone"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 0, Value: 0x7E0200FF, Op: specs.OpMaskedEqual}}},
		}}
	var fields []string
	for _, w := range RefuseWiderSeccomp(own, cfg) {
		fields = append(fields, w.Field)
		if w.Reason == "" {
			t.Errorf("%s: no reason", w.Field)
		}
	}
	want := []string{"linux.seccomp.defaultAction", "linux.seccomp.syscalls[0].names[1]", "linux.seccomp.syscalls[2].names[0]",
		"linux.seccomp.syscalls[4].names[0]", "linux.seccomp.architectures[1]", "linux.seccomp.listenerPath"}
	if !slices.Equal(fields, want) {
		t.Errorf("fields %q\nwant %q", fields, want)
	}
	if w := RefuseWiderSeccomp(own, own); w != nil {
		t.Errorf("own profile is wider than itself: %+v", w)
	}
	if w := RefuseWiderSeccomp(own, DefaultSeccomp(true)); w != nil {
		t.Errorf("the audit profile widens: %+v", w)
	}
}

// FuzzNarrowSeccomp: for any config profile, the intersection allows
// nothing either side refuses and keeps every call maka watches watched.
// The input is decoded into a profile: byte 0 picks file audit and the
// default action, then 5 bytes per rule (name, action, condition count,
// index/op, value).
func FuzzNarrowSeccomp(f *testing.F) {
	f.Add([]byte{0x00})
	f.Add([]byte{0x01, 6, 0, 0, 0, 0})
	f.Add([]byte{0x02, 6, 0, 1, 0x10, 15, 12, 1, 2, 0x16, 6})
	// statx's older forms allowed (probeNames 22, 23), plainly, with a
	// condition, and with a refusal for some arguments.
	f.Add([]byte{0x01, 22, 0, 0, 0, 0, 23, 0, 0, 0, 0})
	f.Add([]byte{0x01, 22, 0, 1, 0x30, 2, 23, 0, 0, 0, 0})
	f.Add([]byte{0x01, 22, 0, 0, 0, 0, 23, 0, 0, 0, 0, 22, 1, 1, 0x30, 9})
	f.Add([]byte{0x05, 22, 2, 0, 0, 0, 23, 0, 0, 0, 0, 21, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		actions := []specs.LinuxSeccompAction{specs.ActAllow, specs.ActErrno, specs.ActLog, specs.ActNotify,
			specs.ActTrace, specs.ActKillProcess, specs.ActTrap, "SCMP_ACT_BOGUS"}
		ops := []specs.LinuxSeccompOperator{specs.OpEqualTo, specs.OpNotEqual, specs.OpMaskedEqual, specs.OpLessThan,
			specs.OpGreaterEqual, specs.OpLessEqual, specs.OpGreaterThan, "SCMP_CMP_BOGUS"}
		errno := uint(data[0] >> 3)
		own := DefaultSeccomp(data[0]&0x80 != 0)
		cfg := &specs.LinuxSeccomp{DefaultAction: actions[data[0]&7], DefaultErrnoRet: &errno}
		for rest := data[1:]; len(rest) >= 5; rest = rest[5:] {
			r := specs.LinuxSyscall{Names: []string{probeNames[int(rest[0])%len(probeNames)]}, Action: actions[rest[1]&7]}
			for n := 0; n < int(rest[2]%3); n++ {
				v := probeValues[(int(rest[4])+n)%len(probeValues)]
				r.Args = append(r.Args, specs.LinuxSeccompArg{Index: uint(rest[3]>>4+byte(n)) % 3, Op: ops[(rest[3]+byte(n))&7],
					Value: v, ValueTwo: v & uint64(rest[4]) << (n * 4)})
			}
			cfg.Syscalls = append(cfg.Syscalls, r)
		}
		res, err := NarrowSeccomp(own, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkNarrowed(t, own, cfg, res)
		if allows(res.DefaultAction) {
			t.Fatalf("result default %s", res.DefaultAction)
		}
		if RefuseWiderSeccomp(own, res) != nil {
			t.Fatalf("the intersection is wider than own: %+v", RefuseWiderSeccomp(own, res))
		}
	})
}

// maka's own profile handed back as config.json's (what `maka boundary
// --format oci` prints, what runc and crun are given) narrows to itself:
// clone without namespace flags stays allowed. Carving each flag's masked
// refusal out of the allow once dropped it, and nothing could fork.
func TestNarrowOwnProfileKeepsPlainClone(t *testing.T) {
	own := DefaultSeccomp(false)
	got, err := NarrowSeccomp(own, DefaultSeccomp(false))
	if err != nil {
		t.Fatal(err)
	}
	var allow, notify int
	for _, r := range got.Syscalls {
		if !slices.Contains(r.Names, "clone") {
			continue
		}
		switch r.Action {
		case specs.ActAllow:
			allow++
			if len(r.Args) != 1 || r.Args[0].Op != specs.OpMaskedEqual || r.Args[0].ValueTwo != 0 || r.Args[0].Value != nsMaskForTest(own) {
				t.Errorf("clone allowed with %+v, want (flags & namespace flags) == 0", r.Args)
			}
		case specs.ActNotify:
			notify++
		}
	}
	if allow != 1 || notify != 8 {
		t.Errorf("clone: %d allow and %d notify rules, want 1 and 8", allow, notify)
	}
}

// nsMaskForTest is the mask of own's clone allow rule.
func nsMaskForTest(own *specs.LinuxSeccomp) uint64 {
	for _, r := range own.Syscalls {
		if slices.Contains(r.Names, "clone") && r.Action == specs.ActAllow && len(r.Args) == 1 {
			return r.Args[0].Value
		}
	}
	return 0
}

func TestDisjoint(t *testing.T) {
	m := func(mask, v uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: 0, Op: specs.OpMaskedEqual, Value: mask, ValueTwo: v}
	}
	eq := func(v uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: 0, Op: specs.OpEqualTo, Value: v}
	}
	lt := func(v uint64) specs.LinuxSeccompArg {
		return specs.LinuxSeccompArg{Index: 0, Op: specs.OpLessThan, Value: v}
	}
	for _, tc := range []struct {
		a, b []specs.LinuxSeccompArg
		want bool
	}{
		{[]specs.LinuxSeccompArg{m(0x7e020080, 0)}, []specs.LinuxSeccompArg{m(0x10000000, 0x10000000)}, true},
		{[]specs.LinuxSeccompArg{m(0x7e020080, 0)}, []specs.LinuxSeccompArg{m(0x1, 0x1)}, false}, // no common bits
		{[]specs.LinuxSeccompArg{eq(5)}, []specs.LinuxSeccompArg{lt(3)}, true},
		{[]specs.LinuxSeccompArg{eq(2)}, []specs.LinuxSeccompArg{lt(3)}, false},
		{[]specs.LinuxSeccompArg{lt(3)}, []specs.LinuxSeccompArg{m(0xf, 0x1)}, false}, // cannot tell
		{[]specs.LinuxSeccompArg{m(0xf, 0)}, []specs.LinuxSeccompArg{{Index: 1, Op: specs.OpMaskedEqual, Value: 0xf, ValueTwo: 0xf}}, false},
	} {
		if got := disjoint(tc.a, tc.b); got != tc.want {
			t.Errorf("disjoint(%+v, %+v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// A config profile that predates a call maka allows does not name it: the
// narrowed filter answers ENOSYS (as libcontainer's -ENOSYS stub would for
// the profile alone, and as a kernel without the call would), so a libc
// falls back; a call of the profile's era it leaves out keeps its default.
// The names are chosen so that this holds in x86_64's and aarch64's
// numberings alike (newest named: unlinkat 263 on x86_64, gettid 178 on
// aarch64; getpid is 39 and 172, statx 332 and 291, openat2 437 on both).
func TestNarrowSeccompNewerThanTheProfile(t *testing.T) {
	own := DefaultSeccomp(false)
	eperm, eacces := uint(unix.EPERM), uint(unix.EACCES)
	old := []string{"read", "write", "close", "exit_group", "unlinkat", "gettid"}
	profile := func(def specs.LinuxSeccompAction, extra ...specs.LinuxSyscall) *specs.LinuxSeccomp {
		return &specs.LinuxSeccomp{DefaultAction: def, DefaultErrnoRet: &eperm,
			Syscalls: append([]specs.LinuxSyscall{{Names: old, Action: specs.ActAllow}}, extra...)}
	}
	olderForms := specs.LinuxSyscall{Names: []string{"newfstatat", "fstatat64"}, Action: specs.ActAllow}
	fstatat64 := specs.LinuxSyscall{Names: []string{"fstatat64"}, Action: specs.ActAllow}
	const allow, enosys, epermV, eaccesV = "allow", "ENOSYS", "EPERM", "EACCES"
	for _, tc := range []struct {
		name string
		cfg  *specs.LinuxSeccomp
		want map[string]string
	}{
		{"a profile naming only old calls", profile(specs.ActErrno),
			map[string]string{"statx": enosys, "openat2": enosys, "clone3": enosys, "close_range": enosys,
				"getpid": epermV, "read": allow}},
		{"a kill default: newer calls still ENOSYS", profile(specs.ActKillProcess),
			map[string]string{"statx": enosys, "openat2": enosys}},
		{"a profile allowing statx", profile(specs.ActErrno, specs.LinuxSyscall{Names: []string{"statx"}, Action: specs.ActAllow}),
			map[string]string{"statx": allow, "openat2": enosys, "getpid": epermV}},
		{"a profile refusing statx by name", profile(specs.ActErrno, specs.LinuxSyscall{Names: []string{"statx"}, Action: specs.ActErrno, ErrnoRet: &eacces}),
			map[string]string{"statx": eaccesV, "openat2": enosys}},
		{"a profile whose default allows", profile(specs.ActAllow, specs.LinuxSyscall{Names: []string{"getpid"}, Action: specs.ActErrno, ErrnoRet: &eacces}),
			map[string]string{"statx": allow, "openat2": allow, "close_range": allow, "getpid": eaccesV}},
		// statx is the newer form of newfstatat (fstatat64 in the 32-bit
		// numberings): a profile that predates statx and allows its older
		// forms with any arguments lets it run; nothing else widens.
		{"a profile allowing statx's older forms", profile(specs.ActErrno, olderForms),
			map[string]string{"statx": allow, "openat2": enosys, "clone3": enosys, "close_range": enosys, "getpid": epermV}},
		{"a kill default, statx's older forms allowed", profile(specs.ActKillProcess, olderForms),
			map[string]string{"statx": allow, "openat2": enosys}},
		{"statx's older forms logged", profile(specs.ActErrno, specs.LinuxSyscall{Names: olderForms.Names, Action: specs.ActLog}),
			map[string]string{"statx": allow, "openat2": enosys}},
		{"newfstatat allowed only with some arguments", profile(specs.ActErrno, fstatat64,
			specs.LinuxSyscall{Names: []string{"newfstatat"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 3, Op: specs.OpEqualTo}}}),
			map[string]string{"statx": enosys, "openat2": enosys}},
		{"newfstatat refused for some arguments", profile(specs.ActErrno, olderForms,
			specs.LinuxSyscall{Names: []string{"newfstatat"}, Action: specs.ActErrno, ErrnoRet: &eacces, Args: []specs.LinuxSeccompArg{{Index: 3, Op: specs.OpEqualTo, Value: 0x1000}}}),
			map[string]string{"statx": enosys}},
		{"newfstatat refused by a later rule", profile(specs.ActErrno, olderForms,
			specs.LinuxSyscall{Names: []string{"newfstatat"}, Action: specs.ActErrno, ErrnoRet: &eacces}),
			map[string]string{"statx": enosys, "newfstatat": eaccesV}},
		{"newfstatat traced", profile(specs.ActErrno, fstatat64, specs.LinuxSyscall{Names: []string{"newfstatat"}, Action: specs.ActTrace}),
			map[string]string{"statx": enosys}},
		{"newfstatat allowed, fstatat64 (i386's, arm's) not", profile(specs.ActErrno, specs.LinuxSyscall{Names: []string{"newfstatat"}, Action: specs.ActAllow}),
			map[string]string{"statx": enosys}},
		{"fstatat64 allowed, newfstatat not", profile(specs.ActErrno, fstatat64),
			map[string]string{"statx": enosys}},
		{"statx's older forms allowed, statx refused by name", profile(specs.ActErrno, olderForms,
			specs.LinuxSyscall{Names: []string{"statx"}, Action: specs.ActErrno, ErrnoRet: &eacces}),
			map[string]string{"statx": eaccesV}},
		{"statx's older forms allowed, statx killed by name", profile(specs.ActErrno, olderForms,
			specs.LinuxSyscall{Names: []string{"statx"}, Action: specs.ActKillProcess}),
			map[string]string{"statx": string(specs.ActKillProcess)}},
		{"a profile of statx's era leaving it out, its older forms allowed", profile(specs.ActErrno, olderForms,
			specs.LinuxSyscall{Names: []string{"openat2"}, Action: specs.ActAllow}),
			map[string]string{"statx": epermV, "openat2": allow}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := NarrowSeccomp(own, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkNarrowed(t, own, tc.cfg, res)
			for call, want := range tc.want {
				if got := verdictForTest(t, res, call); got != want {
					t.Errorf("%s: %s, want %s", call, got, want)
				}
			}
		})
	}
}

// verdictForTest is what res answers call, which it must name in one rule
// without conditions: "allow", or the refusal's errno ("kill" and the
// like for other actions).
func verdictForTest(t *testing.T, res *specs.LinuxSeccomp, call string) string {
	t.Helper()
	var rules []specs.LinuxSyscall
	for _, r := range res.Syscalls {
		if slices.Contains(r.Names, call) {
			rules = append(rules, r)
		}
	}
	if len(rules) != 1 || len(rules[0].Args) != 0 {
		t.Fatalf("%s: want one rule without conditions, have %+v", call, rules)
	}
	r := rules[0]
	switch {
	case allows(r.Action):
		return "allow"
	case r.Action != specs.ActErrno:
		return string(r.Action)
	case r.ErrnoRet == nil:
		return "EPERM" // libcontainer's default errno
	}
	return unix.ErrnoName(unix.Errno(*r.ErrnoRet))
}

// The era is read in one numbering, and the numberings disagree: i386
// numbers arch_prctl (384) after statx (383), x86_64 before (158 and 332).
// Names nobody numbers place nothing.
func TestEraOfNumberings(t *testing.T) {
	cfg := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"read", "arch_prctl", "not_a_syscall"}, Action: specs.ActAllow}}}
	if !eraOf(cfg, "amd64").predates("statx") {
		t.Error("amd64: statx not newer than arch_prctl")
	}
	if eraOf(cfg, "x86").predates("statx") {
		t.Error("x86: statx newer than arch_prctl")
	}
	if eraOf(cfg, "amd64").predates("not_a_syscall") || eraOf(cfg, "amd64").predates("read") {
		t.Error("an unknown or named call placed after the profile")
	}
	none := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{
		{Names: []string{"not_a_syscall"}, Action: specs.ActAllow}}}
	if eraOf(none, "amd64").predates("statx") || eraOf(cfg, "no_such_arch").predates("statx") {
		t.Error("a profile naming no known call, or an unknown numbering, has an era")
	}
}

// statx's older form is read in each numbering the filter applies to: the
// native one (libseccomp filters it whatever the profile lists) and those
// the profile lists that the kernel can present (on x86_64: its own and
// x32's newfstatat, i386's fstatat64). A numbering the filter leaves out
// runs no call (its calls get the filter's bad-arch kill), so its older
// form is not asked.
func TestStatxOlderFormPerNumbering(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the numberings are x86_64's")
	}
	own := DefaultSeccomp(false)
	old := specs.LinuxSyscall{Names: []string{"read", "write", "close", "exit_group", "unlinkat", "gettid"}, Action: specs.ActAllow}
	for _, tc := range []struct {
		name  string
		archs []specs.Arch
		forms []string
		want  string
	}{
		{"x86_64 alone, newfstatat", []specs.Arch{specs.ArchX86_64}, []string{"newfstatat"}, "allow"},
		{"x86_64 and x32, newfstatat", []specs.Arch{specs.ArchX86_64, specs.ArchX32}, []string{"newfstatat"}, "allow"},
		{"x86_64 and i386, newfstatat", []specs.Arch{specs.ArchX86_64, specs.ArchX86}, []string{"newfstatat"}, "ENOSYS"},
		{"i386 alone, both", []specs.Arch{specs.ArchX86}, []string{"newfstatat", "fstatat64"}, "allow"},
		// x86_64 is filtered even where the profile lists only i386.
		{"i386 alone, fstatat64", []specs.Arch{specs.ArchX86}, []string{"fstatat64"}, "ENOSYS"},
		{"i386 alone, newfstatat", []specs.Arch{specs.ArchX86}, []string{"newfstatat"}, "ENOSYS"},
		{"x32 alone, fstatat64", []specs.Arch{specs.ArchX32}, []string{"fstatat64"}, "ENOSYS"},
		// aarch64 is not the kernel's: the filter is x86_64's alone.
		{"aarch64 alone, newfstatat", []specs.Arch{specs.ArchAARCH64}, []string{"newfstatat"}, "allow"},
		{"aarch64 alone, fstatat64", []specs.Arch{specs.ArchAARCH64}, []string{"fstatat64"}, "ENOSYS"},
		{"every architecture (none listed), both", nil, []string{"newfstatat", "fstatat64"}, "allow"},
	} {
		cfg := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Architectures: tc.archs,
			Syscalls: []specs.LinuxSyscall{old, {Names: tc.forms, Action: specs.ActAllow}}}
		res, err := NarrowSeccomp(own, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkNarrowed(t, own, cfg, res)
		if got := verdictForTest(t, res, "statx"); got != tc.want {
			t.Errorf("%s: statx %s, want %s", tc.name, got, tc.want)
		}
	}
}
