package libmaka

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWritePidFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ctr.pid")
	if err := WritePidFile(path, 4242); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "4242" {
		t.Fatalf("pid file = %q, %v; want 4242", data, err)
	}
	// Overwriting replaces the file whole and leaves no temp file behind.
	if err := WritePidFile(path, 7); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir holds %d entries, want only the pid file", len(entries))
	}
	if data, _ := os.ReadFile(path); string(data) != "7" {
		t.Fatalf("pid file = %q, want 7", data)
	}
}

func TestWritePidFileMissingDir(t *testing.T) {
	err := WritePidFile(filepath.Join(t.TempDir(), "no", "such", "x.pid"), 1)
	if err == nil {
		t.Fatal("want an error for a missing directory")
	}
}
