package specconv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// An RLIMIT_NOFILE above the kernel's fs.nr_open fails at start (prlimit:
// EPERM, whatever maka's privileges): refused before anything exists, at
// create and at exec, naming the field. Under rootless maka every hard
// limit above maka's own fails the same way.
func TestRlimitsTheKernelRefuses(t *testing.T) {
	host := hostWith(func(f *libmaka.HostFacts) {
		f.NrOpen = 1048576
		f.HardLimits = map[int]uint64{}
		for _, r := range rlimitTypes {
			f.HardLimits[r] = 4096
		}
	})

	for _, tc := range []struct {
		policy string
		rl     specs.POSIXRlimit
		want   string // "" : allowed
	}{
		{"restricted", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: 1048576, Soft: 1024}, ""},
		{"restricted", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: 1048577, Soft: 1024}, "process.rlimits[0].hard: 1048577 is above the kernel's fs.nr_open (1048576)"},
		{"restricted", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: ^uint64(0), Soft: 1024}, "process.rlimits[0].hard: 18446744073709551615 is above the kernel's fs.nr_open"},
		{"restricted", specs.POSIXRlimit{Type: "RLIMIT_CORE", Hard: 1 << 40, Soft: 0}, ""},
		{"rootless", specs.POSIXRlimit{Type: "RLIMIT_CORE", Hard: 4096, Soft: 0}, ""},
		{"rootless", specs.POSIXRlimit{Type: "RLIMIT_CORE", Hard: 4097, Soft: 0}, "process.rlimits[0].hard: 4097 is above maka's own hard limit of RLIMIT_CORE (4096)"},
	} {
		s := sandboxSpec(t)
		s.Process.Rlimits = []specs.POSIXRlimit{tc.rl}
		p := policy(t, "restricted")
		if tc.policy == "rootless" {
			p = p.ForRootless(&libmaka.Rootless{UID: 1000, GID: 1000, CgroupParent: "/u"})
		}
		for _, which := range []string{"create", "exec"} {
			var err error
			if which == "create" {
				_, err = ToBoundary(host, s, p)
			} else {
				ps := *s.Process
				err = CheckExec(host, &ps, p, nil)
			}
			switch {
			case tc.want == "" && err != nil && strings.Contains(err.Error(), "rlimits"):
				t.Errorf("%s, %s %+v: refused: %v", tc.policy, which, tc.rl, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s, %s %+v: %v, want a refusal %q", tc.policy, which, tc.rl, err, tc.want)
			}
		}
	}
}

// A key=value option on a mount that may not have it names the mount's kind
// (a bind has no type in config.json: the message read "a  mount") and the
// types that take such options.
func TestMountDataOptionNamesTheKind(t *testing.T) {
	for _, tc := range []struct {
		m    specs.Mount
		want string
	}{
		{specs.Mount{Destination: "/mnt", Source: "/srv", Options: []string{"bind", "ro", "mode=755"}}, `mounts[%d].options[2]: "mode=755" is not an option a bind mount may have (only tmpfs, devpts and proc mounts take key=value options here)`},
		{specs.Mount{Destination: "/mnt", Type: "tmpfs", Source: "tmpfs", Options: []string{"foo=1"}}, `mounts[%d].options[0]: "foo=1" is not an option a tmpfs mount may have (it takes size, nr_blocks, nr_inodes, mode, uid, gid, huge)`},
	} {
		s := sandboxSpec(t)
		s.Mounts = append(s.Mounts, tc.m)
		_, err := ToBoundary(testHost, s, policy(t, "baseline"))
		want := fmt.Sprintf(tc.want, len(s.Mounts)-1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v\nwant %q", tc.m, err, want)
		}
	}
}

// A time namespace of the sandbox's own, with offsets of the monotonic and
// boottime clocks, under every profile; offsets the kernel would refuse
// when the init writes them (libcontainer fails there, after the cgroup
// and namespaces exist) are refused at create, naming the field.
func TestTimeNamespaceOffsets(t *testing.T) {
	host := hostWith(func(f *libmaka.HostFacts) { f.Monotonic, f.Boottime = 1000, 1000 })
	const max = ktimeSecMax / 2
	own := []specs.LinuxNamespace{{Type: specs.TimeNamespace}}
	for _, tc := range []struct {
		name    string
		ns      []specs.LinuxNamespace
		offsets map[string]specs.LinuxTimeOffset
		want    string // "" : allowed
	}{
		{"no offsets", own, nil, ""},
		{"both clocks", own, map[string]specs.LinuxTimeOffset{"monotonic": {Secs: -1000}, "boottime": {Secs: max - 1000, Nanosecs: 999999999}}, ""},
		{"no namespace", nil, map[string]specs.LinuxTimeOffset{"boottime": {Secs: 5}}, `linux.timeOffsets: offsets need a time namespace of the sandbox's own`},
		{"joined", []specs.LinuxNamespace{{Type: specs.TimeNamespace, Path: "/proc/1/ns/time"}}, map[string]specs.LinuxTimeOffset{"boottime": {Secs: 5}}, "offsets cannot be set when joining"},
		{"unknown clock", own, map[string]specs.LinuxTimeOffset{"realtime": {Secs: 5}}, `linux.timeOffsets.realtime: "realtime" is not a clock`},
		{"nanosecs", own, map[string]specs.LinuxTimeOffset{"monotonic": {Nanosecs: 1e9}}, "linux.timeOffsets.monotonic.nanosecs: 1000000000 is not below"},
		{"below zero", own, map[string]specs.LinuxTimeOffset{"monotonic": {Secs: -1001}}, "linux.timeOffsets.monotonic.secs: -1001 would take the monotonic clock (now 1000 s) outside"},
		{"past the range", own, map[string]specs.LinuxTimeOffset{"boottime": {Secs: max - 999}}, "linux.timeOffsets.boottime.secs"},
		{"most negative", own, map[string]specs.LinuxTimeOffset{"boottime": {Secs: -1 << 63}}, "linux.timeOffsets.boottime.secs"},
	} {
		for _, profile := range []string{"restricted", "baseline"} {
			s := sandboxSpec(t)
			s.Linux.Namespaces = append(s.Linux.Namespaces, tc.ns...)
			s.Linux.TimeOffsets = tc.offsets
			b, err := ToBoundary(host, s, policy(t, profile))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s, %s: refused: %v", tc.name, profile, err)
			case tc.want == "" && len(tc.offsets) > 0 && len(b.TimeOffsets) != len(tc.offsets):
				t.Errorf("%s, %s: the boundary's offsets = %v", tc.name, profile, b.TimeOffsets)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s, %s: %v, want a refusal %q", tc.name, profile, err, tc.want)
			}
		}
	}
}

// libcontainer's init calls statx after loading the seccomp filter (the
// overmount check of its procfs handle, when it reopens the exec fifo and
// closes the exec fds; it probed statx before the filter, so any failure,
// ENOSYS included, ends the init): a config.json profile under which statx
// does not run is refused at create, naming the field, before anything
// exists.
func TestSeccompProfileMustLetTheInitStatx(t *testing.T) {
	eacces := uint(13)
	old := specs.LinuxSyscall{Names: []string{"read", "write", "close", "exit_group", "unlinkat", "gettid", "execve"}, Action: specs.ActAllow}
	olderForms := specs.LinuxSyscall{Names: []string{"newfstatat", "fstatat64"}, Action: specs.ActAllow}
	for _, tc := range []struct {
		name string
		sc   *specs.LinuxSeccomp
		want string // "": not refused for statx
	}{
		{"no profile", nil, ""},
		{"a profile allowing statx", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno,
			Syscalls: []specs.LinuxSyscall{old, {Names: []string{"statx"}, Action: specs.ActAllow}}}, ""},
		{"a default that allows", &specs.LinuxSeccomp{DefaultAction: specs.ActAllow,
			Syscalls: []specs.LinuxSyscall{{Names: []string{"read"}, Action: specs.ActErrno}}}, ""},
		{"a profile that predates statx", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{old}},
			"linux.seccomp.defaultAction: the profile refuses statx (ENOSYS: the profile predates it), which the runtime's init calls after the filter is loaded (allow statx in the profile)"},
		{"a profile of statx's era leaving it out", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno,
			Syscalls: []specs.LinuxSyscall{old, {Names: []string{"openat2"}, Action: specs.ActAllow}}},
			"linux.seccomp.defaultAction: the profile refuses statx (EPERM)"},
		{"statx refused by name", &specs.LinuxSeccomp{DefaultAction: specs.ActAllow,
			Syscalls: []specs.LinuxSyscall{{Names: []string{"read", "statx"}, Action: specs.ActErrno, ErrnoRet: &eacces}}},
			"linux.seccomp.syscalls[0].names[1]: the profile refuses statx (EACCES)"},
		{"statx killed by name", &specs.LinuxSeccomp{DefaultAction: specs.ActAllow,
			Syscalls: []specs.LinuxSyscall{{Names: []string{"statx"}, Action: specs.ActKillProcess}}},
			"linux.seccomp.syscalls[0].names[0]: the profile refuses statx (SCMP_ACT_KILL_PROCESS)"},
		{"statx allowed with some arguments", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno, Syscalls: []specs.LinuxSyscall{old,
			{Names: []string{"statx"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 2, Value: 0, Op: specs.OpEqualTo}}}}},
			"linux.seccomp.syscalls[1].names[0]: the profile allows statx only with some arguments, which the runtime's init calls after the filter is loaded (allow statx with any arguments)"},
		// statx's older form (newfstatat; fstatat64 in the 32-bit
		// numbering the kernel also takes) allowed with any arguments by
		// a profile that predates statx: statx runs (seccomp_era.go).
		{"a profile that predates statx and allows its older forms", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno,
			Syscalls: []specs.LinuxSyscall{old, olderForms}}, ""},
		{"a profile that predates statx and allows newfstatat only with some arguments", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno,
			Syscalls: []specs.LinuxSyscall{old, {Names: []string{"fstatat64"}, Action: specs.ActAllow},
				{Names: []string{"newfstatat"}, Action: specs.ActAllow, Args: []specs.LinuxSeccompArg{{Index: 3, Value: 0, Op: specs.OpEqualTo}}}}},
			"linux.seccomp.defaultAction: the profile refuses statx (ENOSYS: the profile predates it), which the runtime's init calls after the filter is loaded (allow statx in the profile)"},
		{"a profile that predates statx and refuses newfstatat for some arguments", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno,
			Syscalls: []specs.LinuxSyscall{old, olderForms,
				{Names: []string{"newfstatat"}, Action: specs.ActErrno, Args: []specs.LinuxSeccompArg{{Index: 3, Value: 0x1000, Op: specs.OpEqualTo}}}}},
			"linux.seccomp.defaultAction: the profile refuses statx (ENOSYS: the profile predates it)"},
		{"a profile that predates statx, allows its older forms and refuses it by name", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno,
			Syscalls: []specs.LinuxSyscall{old, olderForms, {Names: []string{"statx"}, Action: specs.ActErrno, ErrnoRet: &eacces}}},
			"linux.seccomp.syscalls[2].names[0]: the profile refuses statx (EACCES)"},
		{"a profile of statx's era leaving it out, allowing its older forms", &specs.LinuxSeccomp{DefaultAction: specs.ActErrno,
			Syscalls: []specs.LinuxSyscall{old, olderForms, {Names: []string{"openat2"}, Action: specs.ActAllow}}},
			"linux.seccomp.defaultAction: the profile refuses statx (EPERM)"},
	} {
		s := sandboxSpec(t)
		s.Linux.Seccomp = tc.sc
		_, err := ToBoundary(testHost, s, policy(t, "baseline"))
		switch {
		case tc.want == "" && err != nil && strings.Contains(err.Error(), "statx"):
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v\nwant a refusal %q", tc.name, err, tc.want)
		}
	}
}

// runtime-tools v0.9.0's default profile (the one every program of the OCI
// validation suite writes into config.json; the fixture seccomp.bats runs)
// predates statx and allows newfstatat and fstatat64: it is accepted as
// published, statx runs, the calls newer than it keep ENOSYS and one of
// its era it leaves out (membarrier) its default. Without newfstatat it is
// refused at create as before.
func TestRuntimeToolsV090SeccompProfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "tests", "integration", "fixtures", "seccomp-runtime-tools-v0.9.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	load := func() *specs.LinuxSeccomp {
		var sc specs.LinuxSeccomp
		if err := json.Unmarshal(data, &sc); err != nil {
			t.Fatal(err)
		}
		return &sc
	}
	for _, profile := range []string{"restricted", "baseline"} {
		s := sandboxSpec(t)
		s.Linux.Seccomp = load()
		b, err := ToBoundary(testHost, s, policy(t, profile))
		if err != nil {
			t.Fatalf("%s: as published: %v", profile, err)
		}
		for call, want := range map[string]string{"statx": "allow", "newfstatat": "allow", "openat2": "ENOSYS",
			"clone3": "ENOSYS", "close_range": "ENOSYS", "membarrier": "EPERM"} {
			if got := verdictForTest(t, b.Seccomp, call); got != want {
				t.Errorf("%s: %s: %s, want %s", profile, call, got, want)
			}
		}

		s = sandboxSpec(t)
		s.Linux.Seccomp = load()
		for i := range s.Linux.Seccomp.Syscalls {
			r := &s.Linux.Seccomp.Syscalls[i]
			r.Names = slices.DeleteFunc(r.Names, func(n string) bool { return n == "newfstatat" })
		}
		const want = "linux.seccomp.defaultAction: the profile refuses statx (ENOSYS: the profile predates it), which the runtime's init calls after the filter is loaded (allow statx in the profile)"
		if _, err := ToBoundary(testHost, s, policy(t, profile)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: without newfstatat: %v\nwant a refusal %q", profile, err, want)
		}
	}
}

// With noNewPrivileges false, libcontainer's init loads the filter before
// its cwd check (getcwd): a profile that refuses getcwd with an errno is
// kept, getcwd handed to the monitor (which lets the init's call run and
// answers later ones with the profile's errno); one that refuses it any
// other way is refused at create, naming the field. With no_new_privs on,
// nothing changes.
func TestSeccompGetcwdUnderTheInitsCwdCheck(t *testing.T) {
	eacces, zero, huge := uint(13), uint(0), uint(4096)
	for _, tc := range []struct {
		name      string
		nnp       bool
		rule      *specs.LinuxSyscall // getcwd's rule in a default-allow profile
		wantErrno uint
		want      string // a refusal
	}{
		{"getcwd allowed", false, nil, 0, ""},
		{"getcwd refused, default errno", false, &specs.LinuxSyscall{Action: specs.ActErrno}, 1, ""},
		{"getcwd refused with EACCES", false, &specs.LinuxSyscall{Action: specs.ActErrno, ErrnoRet: &eacces}, 13, ""},
		{"getcwd refused, no_new_privs on", true, &specs.LinuxSyscall{Action: specs.ActErrno}, 0, ""},
		{"getcwd killed", false, &specs.LinuxSyscall{Action: specs.ActKillProcess},
			0, "linux.seccomp.syscalls[0].names[1]: the profile refuses getcwd (SCMP_ACT_KILL_PROCESS), which the runtime's init calls after the filter is loaded when process.noNewPrivileges is false"},
		{"getcwd errno 0", false, &specs.LinuxSyscall{Action: specs.ActErrno, ErrnoRet: &zero}, 0, "the profile refuses getcwd"},
		{"getcwd errno 4096", false, &specs.LinuxSyscall{Action: specs.ActErrno, ErrnoRet: &huge}, 0, "the profile refuses getcwd (errno 4096)"},
		{"getcwd refused for some arguments", false, &specs.LinuxSyscall{Action: specs.ActErrno,
			Args: []specs.LinuxSeccompArg{{Index: 1, Value: 4096, Op: specs.OpEqualTo}}},
			0, "linux.seccomp.syscalls[0].names[1]: the profile answers getcwd depending on its arguments"},
		{"getcwd killed, no_new_privs on", true, &specs.LinuxSyscall{Action: specs.ActKillProcess}, 0, ""},
	} {
		s := sandboxSpec(t)
		s.Process.NoNewPrivileges = tc.nnp
		s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActAllow}
		if tc.rule != nil {
			r := *tc.rule
			r.Names = []string{"read", "getcwd"}
			s.Linux.Seccomp.Syscalls = []specs.LinuxSyscall{r}
		}
		b, err := ToBoundary(testHost, s, policy(t, "baseline"))
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v\nwant a refusal %q", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
			continue
		}
		if got := InitGetcwdErrno(b); got != tc.wantErrno {
			t.Errorf("%s: InitGetcwdErrno = %d, want %d", tc.name, got, tc.wantErrno)
		}
		// The filter the init loads: getcwd notified, and named by no
		// other rule (read keeps its refusal), exactly when handed over.
		sc := seccompOf(b)
		var getcwd []specs.LinuxSyscall
		readKept := tc.rule == nil
		for _, r := range sc.Syscalls {
			if slices.Contains(r.Names, "getcwd") {
				getcwd = append(getcwd, r)
			}
			if tc.rule != nil && slices.Contains(r.Names, "read") && r.Action == tc.rule.Action {
				readKept = true
			}
		}
		notified := len(getcwd) == 1 && getcwd[0].Action == specs.ActNotify && len(getcwd[0].Names) == 1
		if notified != (tc.wantErrno != 0) || !readKept {
			t.Errorf("%s: the init's filter names getcwd in %+v (read kept: %v)", tc.name, getcwd, readKept)
		}
		if tc.wantErrno == 0 && sc != b.Seccomp {
			t.Errorf("%s: the filter was rewritten", tc.name)
		}
	}
}
