package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzReadRecords: a violation journal of any content is read without a
// panic; the bytes reported used are whole lines of the input (a follower
// resumes there), and the records read re-encode to lines that read back
// as the same records.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(`{"time":"2026-01-01T00:00:00Z","type":"seccomp","action":"deny","pid":1,"syscall":"mount","args":["0x0"]}` + "\n"))
	f.Add([]byte("{\"type\":\"x\"}\n{\"type\":"))
	f.Add([]byte("not json\n"))
	f.Add([]byte("{\"pid\":\"1\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "journal")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		recs, used, err := ReadRecords(fh)
		if used < 0 || used > int64(len(data)) || (used > 0 && data[used-1] != '\n') {
			t.Fatalf("used %d of %d bytes: not a line boundary", used, len(data))
		}
		if err != nil {
			return
		}
		var out bytes.Buffer
		for _, r := range recs {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(append(b, '\n'))
		}
		again := filepath.Join(t.TempDir(), "again")
		if err := os.WriteFile(again, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		fh2, err := os.Open(again)
		if err != nil {
			t.Fatal(err)
		}
		defer fh2.Close()
		recs2, used2, err := ReadRecords(fh2)
		if err != nil || len(recs2) != len(recs) || used2 != int64(out.Len()) {
			t.Fatalf("re-encoded journal: %d records, %d bytes, %v; want %d, %d", len(recs2), used2, err, len(recs), out.Len())
		}
		for i := range recs {
			a, _ := json.Marshal(recs[i])
			b, _ := json.Marshal(recs2[i])
			if !bytes.Equal(a, b) {
				t.Fatalf("record %d changed: %s vs %s", i, a, b)
			}
		}
	})
}

// FuzzJournalBounds: whatever sequence of records a sandbox causes (each
// byte picks a kind: a process name, a syscall, kill or not), the journal
// stays within its caps, a kill record is never lost, and every record is
// either in the journal (folded: its repeats) or counted as suppressed.
func FuzzJournalBounds(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 255, 4, 4, 4})
	f.Add(bytes.Repeat([]byte{7}, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), JournalFile)
		lim := Limits{MaxRecords: 20, MaxBytes: 3000, Rate: 0, Burst: 12}
		j, err := OpenJournalLimits(path, lim)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Unix(1000, 0).UTC()
		kills := 0
		for i, b := range data {
			r := Record{Time: t0.Add(time.Duration(i) * time.Millisecond), Type: TypeSyscall, Action: ActionDeny, Errno: "EPERM",
				Pid: i, Comm: fmt.Sprintf("c%d", b%32), Syscall: []string{"unshare", "mount", "bpf"}[int(b/32)%3]}
			if b == 255 {
				r.Action, r.Errno = ActionKill, ""
				kills++
			}
			if err := j.Append(r); err != nil {
				t.Fatal(err)
			}
			if i%50 == 49 {
				_ = j.Flush()
			}
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := ReadJournal(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > lim.MaxRecords+kills {
			t.Fatalf("%d lines, cap %d (+%d kills)", len(raw), lim.MaxRecords, kills)
		}
		recs, st, err := ReadViolations(path)
		if err != nil {
			t.Fatal(err)
		}
		var total uint64
		gotKills := 0
		for _, r := range recs {
			total += r.Times()
			if r.Action == ActionKill {
				gotKills++
			}
		}
		if gotKills != kills {
			t.Fatalf("%d kill records kept of %d", gotKills, kills)
		}
		if total+st.Suppressed != uint64(len(data)) || st.ByCap+st.ByRate != st.Suppressed {
			t.Fatalf("%d recorded + %d suppressed (%d cap, %d rate) != %d appended", total, st.Suppressed, st.ByCap, st.ByRate, len(data))
		}
	})
}
