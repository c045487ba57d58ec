package libmaka

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

func shHook(script string) specs.Hook {
	return specs.Hook{Path: "/bin/sh", Args: []string{"sh", "-c", script}}
}

// The runtime spec's step 13: a failing poststop hook is a warning, and
// the hooks after it still run (runtime-tools' poststop_fail).
func TestRunPoststopGoesOnPastAFailure(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	RunPoststop("c1", []specs.Hook{
		shHook("exit 3"),
		shHook("cat > " + out),
	}, &specs.State{ID: "c1", Status: specs.StateStopped})
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the hook after the failing one did not run: %v", err)
	}
	var st specs.State
	if err := json.Unmarshal(data, &st); err != nil || st.ID != "c1" || st.Status != specs.StateStopped {
		t.Errorf("state on stdin = %s (%v)", data, err)
	}
}

// Prestart hooks see "created" (the spec's step 3 comes after step 2;
// runtime-tools' hooks_stdin); the state libcontainer passes is left as
// it was for the createRuntime hooks after them. A failure names the
// prestart hook, as runc's message does.
func TestPrestartAsCreated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	h := PrestartAsCreated([]specs.Hook{shHook("cat > " + out)})
	given := &specs.State{ID: "c1", Status: specs.StateCreating, Pid: 42}
	if err := h.Run(given); err != nil {
		t.Fatal(err)
	}
	var st specs.State
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &st); err != nil || st.Status != specs.StateCreated || st.Pid != 42 {
		t.Errorf("state on stdin = %s (%v)", data, err)
	}
	if given.Status != specs.StateCreating {
		t.Errorf("the state libcontainer passes on was changed to %q", given.Status)
	}
	err := PrestartAsCreated([]specs.Hook{shHook("true"), shHook("exit 1"), shHook("cat > " + out + ".2")}).Run(given)
	if err == nil || !strings.Contains(err.Error(), "error running prestart hook #1:") {
		t.Errorf("failure = %v, want it to name prestart hook #1", err)
	}
	if _, serr := os.Stat(out + ".2"); serr == nil {
		t.Error("a prestart hook after the failing one ran")
	}
}
