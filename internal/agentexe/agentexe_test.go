package agentexe

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

func TestOpenWithoutTheAgent(t *testing.T) {
	if Carried() {
		t.Skip("built with the agent")
	}
	if _, err := Open(); !errors.Is(err, ErrNotCarried) {
		t.Fatalf("Open without the agent: %v, want ErrNotCarried", err)
	}
}

// The carried agent (`make agent`, then a build with agent_embed) opens
// and runs: without its socket on fd 3 (here: /dev/null) it stops at
// once, status 1.
func TestOpenCarried(t *testing.T) {
	if !Carried() {
		t.Skip("built without the agent (agent_embed)")
	}
	f, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := Open(); g != f {
		t.Fatal("Open made a second memfd")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	cmd := exec.Command("/proc/self/fd/4")
	cmd.ExtraFiles = []*os.File{null, f}
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the agent without its socket: %v, want exit 1", err)
	}
}
