package monitor

import (
	"os"
	"path/filepath"
	"testing"
)

// guardCgroup is a directory with the two files the guard uses.
func guardCgroup(t *testing.T, populated bool) (string, *os.File) {
	t.Helper()
	dir := t.TempDir()
	ev := "populated 0\nfrozen 0\n"
	if populated {
		ev = "populated 1\nfrozen 0\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.events"), []byte(ev), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, f
}

// The guard kills the sandbox (and records why) when its monitor's end of
// the pipe closes without the disarm byte: the monitor died. Disarmed, or
// with the sandbox already empty, it does nothing.
func TestGuard(t *testing.T) {
	for _, tc := range []struct {
		name              string
		disarm, populated bool
		wantKill          bool
	}{
		{"monitor died", false, true, true},
		{"monitor ended in order", true, true, false},
		{"sandbox already stopped", false, false, false},
	} {
		dir, cg := guardCgroup(t, tc.populated)
		state := t.TempDir()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		if tc.disarm {
			w.Write([]byte{disarmByte})
		}
		w.Close() // the monitor's death, or its end
		if err := runGuard(Config{ID: "g", StateDir: state}, cg, r); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		killed, _ := os.ReadFile(filepath.Join(dir, "cgroup.kill"))
		if (string(killed) == "1") != tc.wantKill {
			t.Errorf("%s: cgroup.kill = %q, want a kill: %v", tc.name, killed, tc.wantKill)
		}
		recs, _, err := ReadViolations(filepath.Join(state, JournalFile))
		if err != nil {
			t.Fatal(err)
		}
		recorded := len(recs) == 1 && recs[0].Kind == LimitMonitorLost && recs[0].Action == ActionKill
		if recorded != tc.wantKill {
			t.Errorf("%s: journal %+v, want a monitor_lost kill record: %v", tc.name, recs, tc.wantKill)
		}
	}
}
