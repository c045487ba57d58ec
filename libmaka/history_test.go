package libmaka

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/maka-runtime/maka/libmaka/monitor"
)

func historyStore(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	s, err := OpenStore(filepath.Join(dir, "state"), filepath.Join(dir, "root"), true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func stateWith(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestArchiveKeepsViolationsAndPeak(t *testing.T) {
	s := historyStore(t)
	created := time.Now().Add(-time.Hour)
	state := stateWith(t, map[string]string{monitor.JournalFile: `{"type":"syscall"}` + "\n", monitor.PeakFile: "{}"})
	if err := s.Archive("box", created, state); err != nil {
		t.Fatal(err)
	}
	// Twice keeps the first copy: recover may meet an instance delete
	// already archived.
	os.WriteFile(filepath.Join(state, monitor.JournalFile), []byte("changed\n"), 0o600)
	if err := s.Archive("box", created, state); err != nil {
		t.Fatal(err)
	}
	hist, err := s.History("box")
	if err != nil || len(hist) != 1 {
		t.Fatalf("history: %v %+v", err, hist)
	}
	if !hist[0].Created.Equal(created.UTC().Truncate(time.Nanosecond)) {
		t.Errorf("created %s, want %s", hist[0].Created, created.UTC())
	}
	data, _ := os.ReadFile(filepath.Join(hist[0].Dir, monitor.JournalFile))
	if string(data) != `{"type":"syscall"}`+"\n" {
		t.Errorf("kept journal %q", data)
	}
	if _, err := os.Stat(filepath.Join(hist[0].Dir, monitor.PeakFile)); err != nil {
		t.Error(err)
	}
	// A failed create (nothing recorded, never stopped) is not kept.
	if err := s.Archive("failed", created, stateWith(t, map[string]string{monitor.JournalFile: ""})); err != nil {
		t.Fatal(err)
	}
	if hist, _ := s.History("failed"); len(hist) != 0 {
		t.Errorf("an empty instance was kept: %+v", hist)
	}
}

func TestPruneHistory(t *testing.T) {
	s := historyStore(t)
	state := stateWith(t, map[string]string{monitor.PeakFile: "{}"})
	now := time.Now()
	// Old instances go when archiving (retention), and so do all but the
	// newest HistoryPerID.
	if err := s.Archive("old", now.Add(-HistoryRetention-time.Hour), state); err != nil {
		t.Fatal(err)
	}
	if hist, _ := s.History("old"); len(hist) != 0 {
		t.Errorf("an instance older than the retention was kept: %+v", hist)
	}
	for i := range HistoryPerID + 3 {
		if err := s.Archive("many", now.Add(-time.Duration(HistoryPerID+3-i)*time.Minute), state); err != nil {
			t.Fatal(err)
		}
	}
	hist, _ := s.History("many")
	if len(hist) != HistoryPerID {
		t.Fatalf("kept %d instances, want %d", len(hist), HistoryPerID)
	}
	if !hist[0].Created.Before(hist[len(hist)-1].Created) {
		t.Error("history is not oldest first")
	}
	// --prune: everything older than the cutoff, across ids.
	s.Archive("other", now.Add(-2*time.Minute), state)
	n, err := s.PruneHistory(now.Add(-10*time.Minute - 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	left, _ := s.History("many")
	other, _ := s.History("other")
	if n != HistoryPerID-10 || len(left) != 10 || len(other) != 1 {
		t.Errorf("pruned %d, left %d of many and %d of other", n, len(left), len(other))
	}
	if n, _ := s.PruneHistory(now.Add(time.Minute)); n != 11 {
		t.Errorf("pruning everything removed %d, want 11", n)
	}
	if _, err := os.Stat(filepath.Join(s.historyDir(), "many")); !os.IsNotExist(err) {
		t.Errorf("an id with nothing kept left its directory: %v", err)
	}
}

// The kept copy of a journal is bounded by the journal's cap, and says
// how many records it left out (issue 24: a flood's 4.6 MB journal was
// kept whole).
func TestArchiveBoundsTheJournal(t *testing.T) {
	s := historyStore(t)
	line := `{"time":"2026-01-01T00:00:00Z","type":"syscall","action":"deny","comm":"a","syscall":"unshare","errno":"EPERM","args":["0x10000000","0x0","0x0","0x0","0x0","0x0"]}` + "\n"
	big := strings.Repeat(line, 30000) // ~4.5 MB, as the flood left
	state := stateWith(t, map[string]string{monitor.JournalFile: big})
	if err := s.Archive("flood", time.Now(), state); err != nil {
		t.Fatal(err)
	}
	hist, err := s.History("flood")
	if err != nil || len(hist) != 1 {
		t.Fatalf("history: %v %+v", err, hist)
	}
	fi, err := os.Stat(filepath.Join(hist[0].Dir, monitor.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > monitor.DefaultLimits.MaxBytes {
		t.Fatalf("kept journal is %d bytes, cap %d", fi.Size(), monitor.DefaultLimits.MaxBytes)
	}
	recs, st, err := monitor.ReadViolations(filepath.Join(hist[0].Dir, monitor.JournalFile))
	if err != nil || len(recs) != 1 || recs[0].Times()+st.Suppressed != 30000 {
		t.Fatalf("kept: %d records, %d suppressed, %v", len(recs), st.Suppressed, err)
	}
}
