package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
)

func TestSplitContainerArg(t *testing.T) {
	for _, tc := range []struct {
		arg, id, path string
		ok            bool
	}{
		{"box:/tmp/x", "box", "/tmp/x", true},
		{"box:rel/x", "box", "rel/x", true},
		{"box:", "box", "", true},
		{"-", "", "", false},
		{"./a:b", "", "", false},
		{"/abs/a:b", "", "", false},
		{"plain", "", "", false},
		{"dir/a:b", "", "", false},
		{":x", "", "", false},
	} {
		id, p, ok := splitContainerArg(tc.arg)
		if id != tc.id || p != tc.path || ok != tc.ok {
			t.Errorf("splitContainerArg(%q) = %q %q %v, want %q %q %v", tc.arg, id, p, ok, tc.id, tc.path, tc.ok)
		}
	}
}

// Each skipped entry of a directory copy is one line on stderr, naming the
// path and the reason; nothing for a copy that skipped nothing.
func TestReportSkipped(t *testing.T) {
	var b bytes.Buffer
	reportSkipped(&b, libmaka.DirResult{})
	if b.Len() != 0 {
		t.Errorf("nothing skipped: %q", b.String())
	}
	reportSkipped(&b, libmaka.DirResult{Skipped: []libmaka.SkippedEntry{
		{Path: "/tmp/d/link", Reason: "a symbolic link, not followed"},
		{Path: "/tmp/d/fifo", Reason: "a FIFO, not copied"},
	}})
	want := "cp: skipped /tmp/d/link: a symbolic link, not followed\ncp: skipped /tmp/d/fifo: a FIFO, not copied\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// DEST's temporary file is made at the first byte: a copy refused before
// any data (a kernel file, a FIFO, over the limit) leaves nothing beside
// DEST; one that writes makes it in DEST's directory.
func TestLazyTemp(t *testing.T) {
	dir := t.TempDir()
	l := &lazyTemp{dst: filepath.Join(dir, "out")}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 || l.f != nil {
		t.Fatalf("made before any write: %v", ents)
	}
	if _, err := l.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	defer l.f.Close()
	if filepath.Dir(l.f.Name()) != dir || !strings.HasPrefix(filepath.Base(l.f.Name()), ".maka-cp-") {
		t.Errorf("temporary file %s", l.f.Name())
	}
	bad := &lazyTemp{dst: filepath.Join(dir, "missing", "out")}
	if _, err := bad.Write([]byte("x")); err == nil || !strings.Contains(err.Error(), "destination "+bad.dst) {
		t.Errorf("missing directory: %v", err)
	}
}
