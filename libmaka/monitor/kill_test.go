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
