package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func denyRec(comm string, at time.Time, pid int) Record {
	return Record{Time: at, Type: TypeSyscall, Action: ActionDeny, Errno: "EPERM", Pid: pid, HostPid: 1000 + pid, Comm: comm, Syscall: "unshare", Args: []string{"0x10000000"}}
}

func journalLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Identical records (type, syscall, comm, action, errno; not pid or time)
// fold into one record with a count and its first and last time.
func TestJournalFoldsIdenticalRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	j, err := OpenJournalLimits(path, Limits{MaxRecords: 100, MaxBytes: 1 << 20, Rate: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(100, 0).UTC()
	for i := range 1000 {
		if err := j.Append(denyRec("unshare", t0.Add(time.Duration(i)*time.Millisecond), i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Append(denyRec("other", t0.Add(2*time.Second), 5)); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(journalLines(t, path)); n > 3 {
		t.Fatalf("1001 records of 2 kinds took %d lines, want at most 3", n)
	}
	recs, st, err := ReadViolations(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("read %d records, want 2 folded: %+v", len(recs), recs)
	}
	r := recs[0]
	if r.Comm != "unshare" || r.Times() != 1000 || !r.Time.Equal(t0) || r.Last == nil || !r.Last.Equal(t0.Add(999*time.Millisecond)) {
		t.Fatalf("folded record: comm %s x%d from %v to %v; want unshare x1000 from %v to +999ms", r.Comm, r.Times(), r.Time, r.Last, t0)
	}
	if recs[1].Comm != "other" || recs[1].Times() != 1 {
		t.Fatalf("second record: %+v", recs[1])
	}
	if st.Suppressed != 0 {
		t.Fatalf("nothing was dropped, stats say %d suppressed", st.Suppressed)
	}
}

// Records that cannot fold (a new comm each) stop at the record cap and
// the rate limit; the drops are counted in the stats file, which
// ReadViolations returns.
func TestJournalCapsAndCountsSuppressed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	j, err := OpenJournalLimits(path, Limits{MaxRecords: 50, MaxBytes: 1 << 20, Rate: 1e9, Burst: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(100, 0).UTC()
	for i := range 500 {
		_ = j.Append(denyRec("c"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26%26)), t0, i))
	}
	j.Close()
	if n := len(journalLines(t, path)); n > 50 {
		t.Fatalf("journal has %d lines, cap is 50", n)
	}
	recs, st, err := ReadViolations(path)
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, r := range recs {
		total += r.Times()
	}
	if st.Suppressed == 0 || total+st.Suppressed != 500 {
		t.Fatalf("%d recorded + %d suppressed, want 500 in all with some suppressed", total, st.Suppressed)
	}
	if st.ByCap == 0 {
		t.Fatalf("stats do not say the cap dropped records: %+v", st)
	}

	// The byte cap.
	path2 := filepath.Join(t.TempDir(), JournalFile)
	j, _ = OpenJournalLimits(path2, Limits{MaxRecords: 1 << 20, MaxBytes: 4096, Rate: 1e9, Burst: 1e9})
	for i := range 500 {
		_ = j.Append(denyRec(strings.Repeat("y", 10)+string(rune('a'+i%26))+string(rune('a'+i/26%26)), t0, i))
	}
	j.Close()
	if fi, _ := os.Stat(path2); fi.Size() > 4096 {
		t.Fatalf("journal is %d bytes, cap is 4096", fi.Size())
	}

	// The rate limit: a burst of 10, then 0 more a second.
	path3 := filepath.Join(t.TempDir(), JournalFile)
	j, _ = OpenJournalLimits(path3, Limits{MaxRecords: 1 << 20, MaxBytes: 1 << 30, Rate: 0.001, Burst: 10})
	for i := range 100 {
		_ = j.Append(denyRec("r"+string(rune('a'+i%26))+string(rune('a'+i/26%26)), t0, i))
	}
	j.Close()
	_, st, _ = ReadViolations(path3)
	if n := len(journalLines(t, path3)); n != 10 || st.Suppressed != 90 || st.ByRate != 90 {
		t.Fatalf("rate limit: %d lines, %d suppressed (%d by rate), want 10 and 90", n, st.Suppressed, st.ByRate)
	}
}

// A kill record is never dropped: it says why the sandbox died.
func TestJournalKeepsKillRecordsPastTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	j, _ := OpenJournalLimits(path, Limits{MaxRecords: 2, MaxBytes: 1 << 20, Rate: 1e9, Burst: 1e9})
	t0 := time.Unix(100, 0).UTC()
	for i := range 5 {
		_ = j.Append(denyRec(string(rune('a'+i)), t0, i))
	}
	if err := j.Append(Record{Time: t0, Type: TypeLimit, Action: ActionKill, Kind: LimitTimeout, Limit: 5}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	recs, _, _ := ReadViolations(path)
	if len(recs) == 0 || recs[len(recs)-1].Kind != LimitTimeout {
		t.Fatalf("the kill record was dropped: %+v", recs)
	}
}

// A reopened journal counts what it holds: the cap holds across monitors.
func TestJournalReopenKeepsTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	lim := Limits{MaxRecords: 10, MaxBytes: 1 << 20, Rate: 1e9, Burst: 1e9}
	t0 := time.Unix(100, 0).UTC()
	for round := range 3 {
		j, err := OpenJournalLimits(path, lim)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			_ = j.Append(denyRec(string(rune('a'+round))+string(rune('a'+i)), t0, i))
		}
		j.Close()
	}
	if n := len(journalLines(t, path)); n != 10 {
		t.Fatalf("three monitors wrote %d lines, cap is 10", n)
	}
	_, st, _ := ReadViolations(path)
	if st.Suppressed != 14 {
		t.Fatalf("suppressed %d, want 14 (24 - 10)", st.Suppressed)
	}
}

// A write error is returned and counted in the stats, never dropped.
func TestJournalReportsWriteErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	j.f.Close() // every write now fails
	if err := j.Append(denyRec("x", time.Unix(1, 0), 1)); err == nil {
		t.Fatal("a failed write returned no error")
	}
	_ = j.Close()
	_, st, err := ReadViolations(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.WriteErrors != 1 || st.LastError == "" {
		t.Fatalf("stats after a failed write: %+v", st)
	}
}

// Records written before folding existed (no repeat, no last) read as one
// occurrence each, and still fold on read.
func TestReadViolationsFoldsOldRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), JournalFile)
	old := `{"time":"2026-01-01T00:00:00Z","type":"syscall","action":"deny","pid":1,"comm":"a","syscall":"mount","args":["0x0"],"errno":"EPERM"}
{"time":"2026-01-01T00:00:01Z","type":"syscall","action":"deny","pid":2,"comm":"a","syscall":"mount","args":["0x1"],"errno":"EPERM"}
{"time":"2026-01-01T00:00:02Z","type":"limit","action":"audit","kind":"pids.max","count":3,"limit":64}
`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, st, err := ReadViolations(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Times() != 2 || recs[0].Last == nil || recs[0].Last.Unix() != recs[0].Time.Unix()+1 || recs[1].Count != 3 || st.Suppressed != 0 {
		t.Fatalf("old journal read as %+v, %+v", recs, st)
	}
}

// The history copy of a journal is bounded like the journal.
func TestCopyJournalBounded(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src", JournalFile)
	os.MkdirAll(filepath.Dir(src), 0o700)
	line := `{"time":"2026-01-01T00:00:00Z","type":"syscall","action":"deny","comm":"` + strings.Repeat("z", 80) + `","syscall":"mount","errno":"EPERM"}` + "\n"
	if err := os.WriteFile(src, []byte(strings.Repeat(line, 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst", JournalFile)
	os.MkdirAll(filepath.Dir(dst), 0o700)
	lim := Limits{MaxRecords: 100, MaxBytes: 1 << 20}
	if err := CopyJournal(src, dst, lim); err != nil {
		t.Fatal(err)
	}
	if n := len(journalLines(t, dst)); n != 100 {
		t.Fatalf("copied %d lines, cap 100", n)
	}
	recs, st, err := ReadViolations(dst)
	if err != nil || len(recs) != 1 || recs[0].Times() != 100 || st.Suppressed != 4900 {
		t.Fatalf("bounded copy read as %d records (x%d), %d suppressed, %v; want 1 x100, 4900", len(recs), recs[0].Times(), st.Suppressed, err)
	}
}

func TestParseLimits(t *testing.T) {
	lim, err := parseLimits("records=10, rate=2.5")
	if err != nil || lim.MaxRecords != 10 || lim.Rate != 2.5 || lim.MaxBytes != DefaultLimits.MaxBytes || lim.Burst != DefaultLimits.Burst {
		t.Fatalf("parseLimits: %+v, %v", lim, err)
	}
	if lim, err := parseLimits(""); err != nil || lim != DefaultLimits {
		t.Fatalf("empty: %+v, %v", lim, err)
	}
	// The variable only tightens: a value above the default is refused
	// (the bound holds whoever sets maka's environment).
	for _, bad := range []string{"records", "records=x", "records=-1", "lines=5",
		"records=4097", "bytes=1048577", "rate=101", "burst=1e12"} {
		if _, err := parseLimits(bad); err == nil || !strings.Contains(err.Error(), LimitsEnv) {
			t.Errorf("parseLimits(%q) = %v, want an error naming %s", bad, err, LimitsEnv)
		}
	}
}
