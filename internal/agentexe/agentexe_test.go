package agentexe

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpenWithoutTheAgent(t *testing.T) {
	if Carried() {
		t.Skip("built with the agent")
	}
	if _, err := Open(); !errors.Is(err, ErrNotCarried) {
		t.Fatalf("Open without the agent: %v, want ErrNotCarried", err)
	}
}

// The memfd is sealed, read-only and runs: no holder can change the
// program a later sandbox runs.
func TestSealed(t *testing.T) {
	f, err := sealed([]byte("#!/bin/sh\nexit 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if seals&want != want {
		t.Fatalf("seals %#x, want %#x", seals, want)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("the read-only descriptor took a write")
	}
	// Reopened for writing, as a process holding it could try: the seal
	// refuses every write.
	w, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_WRONLY, 0)
	if err == nil {
		defer w.Close()
		if _, err := w.WriteAt([]byte("#!/bin/sh\nexit 0\n"), 0); !errors.Is(err, unix.EPERM) {
			t.Fatalf("write through a writable reopen: %v, want EPERM", err)
		}
		if err := w.Truncate(0); !errors.Is(err, unix.EPERM) {
			t.Fatalf("truncate: %v, want EPERM", err)
		}
		w.Close()
	}
	cmd := exec.Command("/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{f}
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("running the memfd: %v, want exit 7", err)
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
