package main

import (
	"os"
	"os/signal"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// signalForwarder is installed before a foreground process starts: maka
// becomes a child subreaper (so the process that libcontainer double-forks
// for exec is reparented to us), forwards every signal it receives to the
// container process and reaps children until that process exits.
type signalForwarder struct {
	ch chan os.Signal
}

// subreaper false (run --no-subreaper, runc's) leaves the process's
// orphans to the host's init.
func newSignalForwarder(subreaper bool) (*signalForwarder, error) {
	if subreaper {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return nil, os.NewSyscallError("prctl(PR_SET_CHILD_SUBREAPER)", err)
		}
	}
	f := &signalForwarder{ch: make(chan os.Signal, 128)}
	signal.Notify(f.ch)
	return f, nil
}

// stop restores default signal handling.
func (f *signalForwarder) stop() {
	signal.Stop(f.ch)
}

// forward runs until pid exits and returns its exit status (128+N when it
// was killed by signal N).
func (f *signalForwarder) forward(pid int, tty *stdio) int {
	// The process may have exited before we started listening.
	if status, done := reap(pid); done {
		return status
	}
	for sig := range f.ch {
		switch sig {
		case unix.SIGURG:
			// The Go runtime's preemption signal, not meant for the container.
		case unix.SIGPIPE:
			// maka's own: a write to a socket whose reader left, such as
			// the egress proxy's to a client that closed (it serves in
			// this process for a foreground run). Never the container's:
			// relayed, it would kill a workload whose init handles it.
			// (Not ignored with signal.Ignore: SIG_IGN is inherited
			// across exec, by the container.)
		case unix.SIGWINCH:
			tty.resize()
		case unix.SIGCHLD:
			if status, done := reap(pid); done {
				return status
			}
		default:
			logrus.Debugf("forwarding signal %v to %d", sig, pid)
			if err := unix.Kill(pid, sig.(unix.Signal)); err != nil {
				logrus.Debugf("forward %v to %d: %v", sig, pid, err)
			}
		}
	}
	return 255
}

// reap collects every exited child; done is true once pid has exited.
func reap(pid int) (status int, done bool) {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		p, err := unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
		if err == unix.EINTR {
			continue
		}
		if p <= 0 || err != nil {
			return 0, false
		}
		if p == pid {
			return exitStatus(ws), true
		}
	}
}

func exitStatus(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
