package main

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A SIGPIPE of maka's own (the egress proxy writing to a client that left,
// in a foreground run) is never relayed to the container's process; other
// signals are.
func TestForwarderKeepsSIGPIPE(t *testing.T) {
	child := exec.Command("sleep", "30") // stands in for the container's process
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	fwd, err := newSignalForwarder(false)
	if err != nil {
		t.Fatal(err)
	}
	defer fwd.stop()
	status := make(chan int, 1)
	go func() { status <- fwd.forward(child.Process.Pid, &stdio{}) }()
	if err := unix.Kill(unix.Getpid(), unix.SIGPIPE); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-status:
		t.Fatalf("the process ended with %d after maka's SIGPIPE", st)
	case <-time.After(500 * time.Millisecond):
	}
	if err := unix.Kill(unix.Getpid(), unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-status:
		if st != 128+int(unix.SIGTERM) {
			t.Errorf("after SIGTERM: status %d", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM was not relayed")
	}
}
