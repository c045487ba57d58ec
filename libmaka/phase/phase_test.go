package phase

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func reset() {
	on, logged, phases = false, false, nil
}

func TestOffWritesNothing(t *testing.T) {
	reset()
	path := filepath.Join(t.TempDir(), "phases")
	t.Setenv(Env, "")
	Enable(false)
	Mark("a")
	End("run")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a file was written while timing is off: %v", err)
	}
	if len(phases) != 0 {
		t.Fatalf("phases recorded while off: %v", phases)
	}
}

// The phases add up to the whole, each is as long as the time between its
// marks, and the first starts at the process's start (before this test ran).
func TestPhasesAddUpToTheWhole(t *testing.T) {
	reset()
	path := filepath.Join(t.TempDir(), "phases")
	t.Setenv(Env, path)
	Enable(false)
	Mark("process start")
	time.Sleep(30 * time.Millisecond)
	Mark("sleep")
	End("run")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var l Line
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if l.Command != "run" || len(l.Phases) < 2 || l.Phases[0].Name != "process start" || l.Phases[1].Name != "sleep" {
		t.Fatalf("line %+v", l)
	}
	if l.Phases[1].Ms < 30 || l.Phases[1].Ms > 1000 {
		t.Errorf("sleep phase %.1f ms, want about 30", l.Phases[1].Ms)
	}
	if l.Phases[0].Ms <= 0 {
		t.Errorf("the process started before its first mark: %.1f ms", l.Phases[0].Ms)
	}
	sum := 0.0
	for _, p := range l.Phases {
		sum += p.Ms
	}
	if d := sum - l.TotalMs; d > 0.1 || d < -0.1 {
		t.Errorf("phases sum to %.3f ms, total %.3f ms", sum, l.TotalMs)
	}
	// A second End (or Mark) after the line is written adds nothing.
	Mark("late")
	End("run")
	again, _ := os.ReadFile(path)
	if string(again) != string(data) {
		t.Errorf("a second End wrote again: %s", again)
	}
}
