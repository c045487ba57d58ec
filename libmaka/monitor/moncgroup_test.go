package monitor

import (
	"os"
	"path/filepath"
	"testing"
)

// A teardown removes only what CgroupFile names below MonitorsCgroup: a
// file naming anything else is an error, never a removal.
func TestCgroupOfStateStaysBelowTheMonitors(t *testing.T) {
	old := MonitorsCgroup
	defer func() { MonitorsCgroup = old }()
	MonitorsCgroup = t.TempDir()
	state := t.TempDir()
	if p, err := cgroupOfState(state); p != "" || err != nil {
		t.Fatalf("no file: %q, %v", p, err)
	}
	good := filepath.Join(MonitorsCgroup, "box-0a1b2c3d")
	for name, want := range map[string]bool{
		good:                                    true,
		MonitorsCgroup:                          false,
		filepath.Join(MonitorsCgroup, ".."):     false,
		MonitorsCgroup + "/a/../../etc":         false,
		filepath.Join(MonitorsCgroup, "a", "b"): false,
		"/sys/fs/cgroup/maka/box":               false,
	} {
		if err := os.WriteFile(filepath.Join(state, CgroupFile), []byte(name+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := cgroupOfState(state)
		if (err == nil) != want || (want && p != good) {
			t.Errorf("%q: %q, %v; want accepted: %v", name, p, err, want)
		}
	}
	// RemoveCgroup of a directory that is not there: nothing to do.
	if err := os.WriteFile(filepath.Join(state, CgroupFile), []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RemoveCgroup(state); err != nil {
		t.Errorf("a cgroup already gone: %v", err)
	}
	// The path kept across libcontainer's destroy is checked again.
	if err := RemoveCgroupPath("/sys/fs/cgroup/maka/box"); err == nil {
		t.Error("RemoveCgroupPath took a path outside the monitors' cgroups")
	}
	if err := RemoveCgroupPath(""); err != nil {
		t.Errorf("no cgroup: %v", err)
	}
}
