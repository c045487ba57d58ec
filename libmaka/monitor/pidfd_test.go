package monitor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// startDecoy starts a process whose command line holds "monitor" (what
// the old Stop looked for), reaped in the background.
func startDecoy(t *testing.T) (*exec.Cmd, chan struct{}) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 30", "monitor")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd, done
}

func exited(done chan struct{}, within time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

// Stop signals only the process the pid file names by pid and start time
// (through a pidfd): a pid reused by another process, even one whose
// command line says "monitor", is never signalled (issue 24).
func TestStopSignalsOnlyTheRecordedProcess(t *testing.T) {
	dir := t.TempDir()
	cmd, done := startDecoy(t)
	pid := cmd.Process.Pid
	start, err := startTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PidFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{
		"",                              // no start time: cannot be verified
		strconv.FormatUint(start+1, 10), // another process at that pid
	} {
		os.Remove(filepath.Join(dir, StartFile))
		if content != "" {
			if err := os.WriteFile(filepath.Join(dir, StartFile), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		Stop(dir)
		if exited(done, 200*time.Millisecond) {
			t.Fatalf("Stop with start file %q signalled pid %d, which is not the recorded monitor", content, pid)
		}
		if st := MonitorStatus(dir); st == MonitorAlive {
			t.Fatalf("start file %q: status %v, want not alive (unverified)", content, st)
		}
	}
	if err := writePidFile(dir, pid); err != nil {
		t.Fatal(err)
	}
	if st := MonitorStatus(dir); st != MonitorAlive {
		t.Fatalf("status of the recorded, running process: %v, want alive", st)
	}
	Stop(dir)
	if !exited(done, 2*time.Second) {
		t.Fatal("Stop did not stop the recorded process")
	}
	if st := MonitorStatus(dir); st != MonitorDead {
		t.Fatalf("status after it exited: %v, want dead", st)
	}
	if st := MonitorStatus(t.TempDir()); st != MonitorNone {
		t.Fatalf("status without a pid file: %v, want none", st)
	}
}
