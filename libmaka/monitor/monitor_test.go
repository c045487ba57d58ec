package monitor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestJournalAppendsSyncedLinesAndReadsThemBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Time: time.Unix(1, 0).UTC(), Type: TypeSyscall, Action: ActionDeny, Pid: 7, HostPid: 4242, Comm: "unshare", Syscall: "unshare", Args: hexArgs([6]uint64{unix.CLONE_NEWUSER}), Errno: "EPERM"},
		{Time: time.Unix(2, 0).UTC(), Type: TypeLimit, Action: ActionAudit, Kind: LimitPidsMax, Count: 3, Limit: 64},
	}
	for _, r := range want {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	data, _ := os.ReadFile(path)
	if lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"); len(lines) != 2 {
		t.Fatalf("journal has %d lines, want one a record:\n%s", len(lines), data)
	}
	// A torn last line (a crash mid-write) is not a record.
	if err := os.WriteFile(path, append(data, []byte(`{"time":"`)...), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("read back\n%s\nwant\n%s", gj, wj)
	}
	if got[0].Args[0] != "0x10000000" {
		t.Errorf("args[0] = %s, want CLONE_NEWUSER in hex", got[0].Args[0])
	}
	none, err := ReadJournal(filepath.Join(t.TempDir(), "missing"))
	if err != nil || len(none) != 0 {
		t.Fatalf("missing journal: %v, %v", none, err)
	}
}

func TestRecordEncodingOmitsWhatDoesNotApply(t *testing.T) {
	b, _ := json.Marshal(Record{Time: time.Unix(0, 0).UTC(), Type: TypeLimit, Action: ActionKill, Kind: LimitTimeout, Limit: 5})
	if got := string(b); got != `{"time":"1970-01-01T00:00:00Z","type":"limit","action":"kill","kind":"timeout","limit":5}` {
		t.Fatalf("limit record = %s", got)
	}
}

func TestKilledErrorLeadsWithItsCode(t *testing.T) {
	v := &KilledError{ID: "box", Record: Record{Type: TypeSyscall, Action: ActionKill, Pid: 3, Comm: "sh", Syscall: "mount", Args: []string{"0x1"}}}
	if v.Code() != ViolationCode || !strings.HasPrefix(v.Error(), "SANDBOX_BOUNDARY_VIOLATION: container box was killed: syscall mount(0x1) by pid 3 (sh)") {
		t.Errorf("violation: %s: %s", v.Code(), v.Error())
	}
	to := &KilledError{ID: "box", Record: Record{Type: TypeLimit, Kind: LimitTimeout, Limit: 2}}
	if to.Code() != TimeoutCode || to.Error() != "SANDBOX_TIMEOUT: container box ran longer than its timeout of 2 s and was killed" {
		t.Errorf("timeout: %s: %s", to.Code(), to.Error())
	}
}

func TestSyscallNamesOfTheNativeArchitecture(t *testing.T) {
	for nr, want := range map[int32]string{unix.SYS_MOUNT: "mount", unix.SYS_UNSHARE: "unshare", unix.SYS_PTRACE: "ptrace", unix.SYS_BPF: "bpf", unix.SYS_FINIT_MODULE: "finit_module", unix.SYS_CLONE: "clone"} {
		if got := SyscallName(nativeArch, nr); got != want {
			t.Errorf("SyscallName(%d) = %q, want %q", nr, got, want)
		}
	}
	// Another architecture's numbers are not guessed at.
	if got := SyscallName(0x40000003, unix.SYS_MOUNT); !strings.HasPrefix(got, "syscall_") {
		t.Errorf("foreign arch: %q", got)
	}
}

func TestEventCountReadsFlatKeyedFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.events")
	os.WriteFile(path, []byte("low 0\nhigh 0\nmax 4\noom 1\noom_kill 2\noom_group_kill 0\n"), 0o600)
	if n := eventCount(path, "oom_kill"); n != 2 {
		t.Errorf("oom_kill = %d", n)
	}
	if n := eventCount(path, "max"); n != 4 {
		t.Errorf("max = %d", n)
	}
	if n := eventCount(path, "oom"); n != 1 { // not oom_kill's prefix
		t.Errorf("oom = %d", n)
	}
}

func TestNewRefusesAnUnknownOnViolation(t *testing.T) {
	if _, err := New(Config{StateDir: t.TempDir(), OnViolation: "ignore"}); err == nil {
		t.Fatal("onViolation ignore accepted")
	}
	m, err := New(Config{StateDir: t.TempDir(), OnViolation: ActionKill})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil || m.Err() != nil {
		t.Fatalf("close: %v, err: %v", err, m.Err())
	}
}

func TestRecordsShowTheArgumentsASyscallTakes(t *testing.T) {
	if got := syscallArgs("unshare", [6]uint64{unix.CLONE_NEWUSER, 7, 7, 7, 7, 7}); len(got) != 1 || got[0] != "0x10000000" {
		t.Errorf("unshare args = %v", got)
	}
	if got := syscallArgs("syscall_9999/arch_0x1", [6]uint64{}); len(got) != 6 {
		t.Errorf("unknown syscall args = %v, want all six", got)
	}
}

func TestFlagNamesOfAWriteModeOpen(t *testing.T) {
	if got := flagNames(unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC); got != "O_WRONLY|O_CREAT|O_TRUNC" {
		t.Errorf("flagNames = %s", got)
	}
	if got := flagNames(unix.O_RDWR | unix.O_APPEND); got != "O_RDWR|O_APPEND" {
		t.Errorf("flagNames = %s", got)
	}
}

func TestContainerPathOfAnAbsoluteAndARelativeOpen(t *testing.T) {
	if p, ok := containerPath(os.Getpid(), unix.AT_FDCWD, "/etc/passwd"); !ok || p != "/etc/passwd" {
		t.Errorf("absolute: %q %v", p, ok)
	}
	wd, _ := os.Getwd()
	if p, ok := containerPath(os.Getpid(), unix.AT_FDCWD, "x/y"); !ok || p != strings.TrimSuffix(wd, "/")+"/x/y" {
		t.Errorf("relative: %q %v (cwd %s)", p, ok, wd)
	}
}

func TestReadStringStopsAtTheNul(t *testing.T) {
	b := []byte("/etc/shadow\x00garbage")
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	s, err := readString(os.Getpid(), addr)
	runtime.KeepAlive(b)
	if err != nil || s != "/etc/shadow" {
		t.Fatalf("readString = %q, %v", s, err)
	}
}
