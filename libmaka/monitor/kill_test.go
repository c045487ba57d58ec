package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kill that cannot be written is an error, never silence: the sandbox
// may still run. A cgroup that is gone has nothing to kill.
func TestKillAtReportsFailure(t *testing.T) {
	gone := t.TempDir()
	f, err := os.Open(gone)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := killAt(int(f.Fd())); err != nil {
		t.Errorf("a cgroup without cgroup.kill (gone): %v", err)
	}
	// cgroup.kill that cannot be opened for writing.
	if err := os.Mkdir(filepath.Join(gone, "cgroup.kill"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := killAt(int(f.Fd())); err == nil || !strings.Contains(err.Error(), "cgroup.kill") {
		t.Errorf("an unwritable cgroup.kill: err = %v, want it named", err)
	}
}

// The guard whose kill fails says so (its log), rather than return as if
// the sandbox were dead.
func TestGuardReportsAFailedKill(t *testing.T) {
	dir, cg := guardCgroup(t, true)
	if err := os.Remove(filepath.Join(dir, "cgroup.kill")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "cgroup.kill"), 0o700); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close() // the monitor died
	err = runGuard(Config{ID: "g", StateDir: t.TempDir()}, cg, r)
	if err == nil || !strings.Contains(err.Error(), "could not be killed") {
		t.Errorf("runGuard = %v, want the failed kill reported", err)
	}
}
