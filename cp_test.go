package main

import (
	"bytes"
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
