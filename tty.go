package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/containerd/console"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// stdio decides where a container process's stdin/out/err and terminal go.
//
//   - no terminal: the process inherits maka's own stdio (containerd and
//     conmon hand us pipes or files);
//   - terminal and --console-socket: libcontainer sends the pty master to the
//     caller's socket (detached runs, conmon, the containerd shim);
//   - terminal in the foreground: maka takes the master itself, puts its own
//     terminal in raw mode and copies both ways, resizing on SIGWINCH.
type stdio struct {
	foregroundTTY bool
	parentSock    *os.File // our end of the socketpair (foreground tty)
	childSock     *os.File // handed to libcontainer
	master        console.Console
	restore       func()
	copyDone      chan struct{}
}

func setupStdio(p *libcontainer.Process, terminal, detach bool, consoleSocket string) (*stdio, error) {
	s := &stdio{}
	if !terminal {
		if consoleSocket != "" {
			return nil, errors.New("--console-socket: cannot be used when process.terminal is false")
		}
		return s, nil
	}
	p.Stdin, p.Stdout, p.Stderr = nil, nil, nil
	if consoleSocket != "" {
		conn, err := net.Dial("unix", consoleSocket)
		if err != nil {
			return nil, fmt.Errorf("--console-socket %s: %w", consoleSocket, err)
		}
		f, err := conn.(*net.UnixConn).File()
		conn.Close()
		if err != nil {
			return nil, fmt.Errorf("--console-socket %s: %w", consoleSocket, err)
		}
		p.ConsoleSocket = f
		s.childSock = f
		return s, nil
	}
	if detach {
		return nil, errors.New("process.terminal is true but maka detaches: pass --console-socket to receive the terminal")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("console socketpair: %w", err)
	}
	s.parentSock = os.NewFile(uintptr(fds[0]), "console-parent")
	s.childSock = os.NewFile(uintptr(fds[1]), "console-child")
	p.ConsoleSocket = s.childSock
	s.foregroundTTY = true
	return s, nil
}

// afterStart closes what the child now holds and, in the foreground tty
// case, receives the pty master and starts copying.
func (s *stdio) afterStart() error {
	if s.childSock != nil {
		s.childSock.Close()
	}
	if !s.foregroundTTY {
		return nil
	}
	defer s.parentSock.Close()
	f, err := libmaka.RecvFd(s.parentSock)
	if err != nil {
		return fmt.Errorf("receive the container's terminal: %w", err)
	}
	master, err := console.ConsoleFromFile(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("container terminal: %w", err)
	}
	s.master = master
	if cur, err := console.ConsoleFromFile(os.Stdin); err == nil {
		if err := cur.SetRaw(); err == nil {
			s.restore = func() { _ = cur.Reset() }
		}
		_ = master.ResizeFrom(cur)
	}
	s.copyDone = make(chan struct{})
	var once sync.Once
	go func() {
		_, _ = io.Copy(os.Stdout, master)
		once.Do(func() { close(s.copyDone) })
	}()
	go func() { _, _ = io.Copy(master, os.Stdin) }()
	return nil
}

// resize follows our terminal's size (on SIGWINCH).
func (s *stdio) resize() {
	if s.master == nil {
		return
	}
	if cur, err := console.ConsoleFromFile(os.Stdin); err == nil {
		if err := s.master.ResizeFrom(cur); err != nil {
			logrus.Debugf("resize terminal: %v", err)
		}
	}
}

// close drains the terminal output and restores our terminal.
func (s *stdio) close() {
	if s.copyDone != nil {
		<-s.copyDone
	}
	if s.master != nil {
		s.master.Close()
	}
	if s.restore != nil {
		s.restore()
	}
	if s.parentSock != nil {
		s.parentSock.Close()
	}
	if s.childSock != nil {
		s.childSock.Close()
	}
}
