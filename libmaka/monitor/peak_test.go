package monitor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestTmpfsPeakIsTheLargestOfTheSamplesAndTheFinalValue(t *testing.T) {
	u := TmpfsUse{Path: "/tmp", Size: 8 << 20}
	for _, used := range []int64{0, 4 << 20, 5 << 20, 1 << 20} {
		u.observe(used)
	}
	if u.Peak != 5<<20 || u.Used != 1<<20 || u.Samples != 4 {
		t.Errorf("after a burst: %+v, want peak 5 MiB, used 1 MiB, 4 samples", u)
	}
	u.observe(6 << 20) // the final value may be the largest
	if u.Peak != 6<<20 || u.Used != 6<<20 {
		t.Errorf("final value: %+v", u)
	}
}

func TestPeakFileShape(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	k := newKillTiming(at, at.Add(12345*time.Microsecond), true)
	b, _ := json.Marshal(Peak{Time: at, Memory: 10, Pids: 2, Tmpfs: []TmpfsUse{{Path: "/tmp", Size: 100, Used: 4, Peak: 50, Samples: 3}}, Killed: k})
	want := `{"time":"2026-01-02T03:04:05Z","memory":10,"pids":2,` +
		`"tmpfs":[{"path":"/tmp","size":100,"used":4,"peak":50,"samples":3}],` +
		`"killed":{"violation":"2026-01-02T03:04:05Z","empty":"2026-01-02T03:04:05.012345Z","emptyAfterMs":12.345}}`
	if string(b) != want {
		t.Errorf("peak.json =\n%s\nwant\n%s", b, want)
	}
	// Not empty in time: no empty time, no figure.
	b, _ = json.Marshal(newKillTiming(at, time.Time{}, false))
	if string(b) != `{"violation":"2026-01-02T03:04:05Z"}` {
		t.Errorf("not emptied: %s", b)
	}
	// Nothing killed, no tmpfs held: neither appears.
	b, _ = json.Marshal(Peak{Time: at})
	if string(b) != `{"time":"2026-01-02T03:04:05Z","memory":0,"pids":0}` {
		t.Errorf("plain: %s", b)
	}
}

// fakeCgroup is a populated cgroup's directory with a cgroup.events file:
// inotify sees its writes as it sees the kernel's changes to a real one.
func fakeCgroup(t *testing.T) string {
	dir := t.TempDir()
	setPopulated(t, dir, true)
	return dir
}

func setPopulated(t *testing.T, dir string, populated bool) {
	v := "0"
	if populated {
		v = "1"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.events"), []byte("populated "+v+"\nfrozen 0\n"), 0o600); err != nil {
		t.Error(err)
	}
}

func TestWaitEmptyIsWokenWhenTheCgroupEmpties(t *testing.T) {
	dir := fakeCgroup(t)
	emptiedAt := make(chan time.Time, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		emptiedAt <- time.Now()
		setPopulated(t, dir, false)
	}()
	start := time.Now()
	at, ok := waitEmpty(dir, 10*time.Second)
	if !ok {
		t.Fatal("not seen empty")
	}
	emptied := <-emptiedAt
	if at.Before(emptied) || at.Sub(emptied) > time.Second {
		t.Errorf("seen empty at +%v, emptied at +%v", at.Sub(start), emptied.Sub(start))
	}
}

func TestWaitEmptyGivesUpOnACgroupThatStaysPopulated(t *testing.T) {
	dir := fakeCgroup(t)
	start := time.Now()
	if _, ok := waitEmpty(dir, 300*time.Millisecond); ok {
		t.Fatal("a populated cgroup seen empty")
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("gave up after %v, want the limit", d)
	}
	// A cgroup already gone is empty.
	if _, ok := waitEmpty(filepath.Join(dir, "gone"), time.Second); !ok {
		t.Error("a removed cgroup not seen empty")
	}
}

func TestAKillIsTimedFromTheViolationToTheEmptyCgroup(t *testing.T) {
	cg := fakeCgroup(t)
	state := t.TempDir()
	m, err := New(Config{ID: "box", StateDir: state, OnViolation: ActionKill})
	if err != nil {
		t.Fatal(err)
	}
	m.cgroup = cg
	at := time.Now().UTC()
	m.violation(Record{Time: at, Type: TypeSyscall, Action: ActionDeny, Errno: "EPERM", Pid: 3, Comm: "sh", Syscall: "mount", Args: []string{"0x1"}}, 0)
	if b, _ := os.ReadFile(filepath.Join(cg, "cgroup.kill")); string(b) != "1" {
		t.Fatalf("cgroup.kill = %q, want 1", b)
	}
	time.Sleep(100 * time.Millisecond)
	setPopulated(t, cg, false)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var p Peak
	b, err := os.ReadFile(filepath.Join(state, PeakFile))
	if err != nil || json.Unmarshal(b, &p) != nil {
		t.Fatalf("peak.json: %s, %v", b, err)
	}
	if p.Killed == nil || p.Killed.EmptyAfterMs == nil || !p.Killed.Violation.Equal(at) {
		t.Fatalf("killed = %s, want the violation's time and a figure", b)
	}
	if ms := *p.Killed.EmptyAfterMs; ms < 100 || ms > 5000 {
		t.Errorf("emptyAfterMs = %v, want about 100", ms)
	}
	var k *KilledError
	if err := m.Err(); err == nil || !strings.Contains(err.Error(), " ms)") {
		t.Fatalf("Err() = %v, want the time to empty", err)
	} else if !errors.As(err, &k) || !strings.HasPrefix(k.Error(), "SANDBOX_BOUNDARY_VIOLATION: container box was killed: syscall mount(0x1) by pid 3 (sh), sandbox killed (empty after ") {
		t.Errorf("message: %s", k.Error())
	}
	if ms, ok := k.EmptyAfterMs(); !ok || ms != *p.Killed.EmptyAfterMs {
		t.Errorf("EmptyAfterMs = %v, %v", ms, ok)
	}
}

func TestKilledErrorSaysWhenTheSandboxDidNotEmpty(t *testing.T) {
	to := &KilledError{ID: "box", Record: Record{Type: TypeLimit, Kind: LimitTimeout, Limit: 2}, Timing: newKillTiming(time.Now(), time.Time{}, false)}
	if got := to.Error(); got != "SANDBOX_TIMEOUT: container box ran longer than its timeout of 2 s and was killed (still not empty 5s after)" {
		t.Errorf("message: %s", got)
	}
	if _, ok := to.EmptyAfterMs(); ok {
		t.Error("a figure for a sandbox that did not empty")
	}
}

func TestHoldTmpfsHoldsOnlyTmpfsMounts(t *testing.T) {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs at /dev/shm")
	}
	// Our own root stands for the container's.
	held := holdTmpfs(os.Getpid(), []string{"/dev/shm", "/proc", "/no/such/dir"})
	defer func() {
		for _, h := range held {
			unix.Close(h.fd)
		}
	}()
	if len(held) != 1 || held[0].use.Path != "/dev/shm" {
		t.Fatalf("held %+v, want /dev/shm only", held)
	}
	u := held[0].use
	if u.Size != int64(st.Blocks)*st.Bsize || u.Samples != 1 || u.Used < 0 || u.Used > u.Size || u.Peak != u.Used {
		t.Errorf("first sample %+v (statfs: %d blocks of %d)", u, st.Blocks, st.Bsize)
	}
	held[0].sample()
	if held[0].use.Samples != 2 {
		t.Errorf("samples = %d after a second sample", held[0].use.Samples)
	}
}

func TestWarmHasNoEffect(t *testing.T) {
	cg := fakeCgroup(t)
	state := t.TempDir()
	m, err := New(Config{ID: "box", StateDir: state, OnViolation: ActionKill})
	if err != nil {
		t.Fatal(err)
	}
	m.Warm() // before Attach: no cgroup yet
	m.cgroup = cg
	m.Warm()
	if _, err := os.Stat(filepath.Join(cg, "cgroup.kill")); err == nil {
		t.Error("Warm wrote cgroup.kill")
	}
	if err := m.Close(); err != nil || m.Err() != nil || m.First() != nil {
		t.Fatalf("close: %v, err %v, first %v", err, m.Err(), m.First())
	}
	if recs, _ := ReadJournal(filepath.Join(state, JournalFile)); len(recs) != 0 {
		t.Errorf("Warm recorded %v", recs)
	}
}
