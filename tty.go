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
	host          console.Console // maka's own terminal, if any
	received      chan recvResult // the pty master, received while the container starts
	restore       func()
	copyDone      chan struct{}
}

func setupStdio(p *libcontainer.Process, terminal, detach bool, consoleSocket string) (*stdio, error) {
	s := &stdio{}
	if consoleSocket != "" && (!terminal || !detach) {
		// As runc: the socket receives the terminal of a detached process only.
		return nil, errors.New("--console-socket: cannot be used unless maka detaches and allocates a terminal (process.terminal, exec --tty)")
	}
	if !terminal {
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
	// Receive the master while libcontainer starts the container (init
	// sends it before it waits to exec the user process), as runc does, so
	// that ONLCR is off before the process writes anything.
	s.received = make(chan recvResult, 1)
	go func(sock *os.File) { s.received <- recvConsole(sock) }(s.parentSock)
	return s, nil
}

type recvResult struct {
	master console.Console
	err    error
}

// recvConsole receives the container's pty master on sock and turns off
// its \n -> \r\n translation (as runc): our own terminal, in raw mode,
// passes the bytes through unchanged.
func recvConsole(sock *os.File) recvResult {
	f, err := libmaka.RecvFd(sock)
	if err != nil {
		return recvResult{err: fmt.Errorf("receive the container's terminal: %w", err)}
	}
	master, err := console.ConsoleFromFile(f)
	if err != nil {
		f.Close()
		return recvResult{err: fmt.Errorf("container terminal: %w", err)}
	}
	if err := console.ClearONLCR(master.Fd()); err != nil {
		logrus.Debugf("container terminal: clear ONLCR: %v", err)
	}
	return recvResult{master: master}
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
	r := <-s.received
	s.parentSock.Close()
	s.parentSock = nil
	if r.err != nil {
		return r.err
	}
	master := r.master
	s.master = master
	s.host = hostConsole()
	if s.host != nil {
		if err := s.host.SetRaw(); err == nil {
			s.restore = func() { _ = s.host.Reset() }
		}
		s.resize()
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

// hostConsole is maka's own terminal, as runc finds it: the first of
// stderr, stdout and stdin that is a terminal, else the controlling
// terminal; nil when there is none (the container's terminal then keeps
// process.consoleSize).
func hostConsole() console.Console {
	for _, f := range []*os.File{os.Stderr, os.Stdout, os.Stdin} {
		if c, err := console.ConsoleFromFile(f); err == nil {
			return c
		}
	}
	f, err := os.Open("/dev/tty")
	if err != nil {
		return nil
	}
	c, err := console.ConsoleFromFile(f)
	if err != nil {
		f.Close()
		return nil
	}
	return c
}

// resize gives the container's terminal our terminal's size (at start and
// on SIGWINCH). A terminal without a size (0x0, e.g. a pty nobody sized)
// does not override process.consoleSize.
func (s *stdio) resize() {
	if s.master == nil || s.host == nil {
		return
	}
	ws, err := s.host.Size()
	if err != nil || ws.Height == 0 || ws.Width == 0 {
		return
	}
	if err := s.master.Resize(ws); err != nil {
		logrus.Debugf("resize terminal: %v", err)
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
