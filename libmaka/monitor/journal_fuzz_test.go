package monitor

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
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
