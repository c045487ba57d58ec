// Package agent is maka's side of a tool sandbox's resident agent
// (cmd/maka-agent, carried by internal/agentexe): the protocol over the
// socket pair the agent holds as the sandbox's init, and a Client that
// starts commands through it.
//
// Everything the agent says is untrusted: it runs with the sandbox's
// credentials, so a command could have taken it over. Replies are bounded
// and must answer a request in flight; the command's pid as maka uses it
// never comes from the agent but from the kernel (the command's own
// credentials on its sync socket, translated into maka's pid namespace),
// and the caller checks that pid before placing the command in its cgroup
// and letting it run.
package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Wire constants, as agent.c has them.
const (
	magic       = 0x314b414d // "MAK1"
	msgStart    = 1
	msgSignal   = 2
	msgAttach   = 3
	msgStarted  = 16
	msgExited   = 17
	msgFailed   = 18
	headerSize  = 24
	replySize   = 48
	maxMsg      = 256 << 10
	maxStrings  = 4096
	maxCommands = 64
)

// CtlFd is the descriptor the agent holds its socket on.
const CtlFd = 3

// ErrGone: the agent's socket ended: the agent, and so the sandbox, is
// gone. Nothing is ever run some other way.
var ErrGone = errors.New("the sandbox's agent is gone")

// ErrTampered: a command changed what the agent's commands inherit from it
// (its limits, priority, scheduling, CPUs, I/O priority, OOM score), as
// its own user may; the agent starts no further command and the sandbox
// is no longer to be trusted: it is ErrGone.
var ErrTampered = fmt.Errorf("%w: a command changed the agent's own limits or scheduling, which every later command would inherit", ErrGone)

// signalWait bounds a signal's write to the agent (one that does not read
// is not waited for).
const signalWait = time.Second

// Command is one command for the agent to start.
type Command struct {
	Args []string
	Env  []string
	Cwd  string
	// Stdin, Stdout, Stderr are passed to the command as they are.
	Stdin, Stdout, Stderr *os.File
}

// Exit is how a command ended, as the agent reports it.
type Exit struct {
	// Status is the wait status (unix.WaitStatus).
	Status unix.WaitStatus
	// User and System CPU time, and the largest resident set (KiB).
	User, System time.Duration
	MaxRSSKiB    int64
}

// Code is the status as a shell reports it: 128+N for signal N.
func (e Exit) Code() int {
	if e.Status.Signaled() {
		return 128 + int(e.Status.Signal())
	}
	return e.Status.ExitStatus()
}

// Pair makes the socket pair for a sandbox's agent: client's end for
// NewClient, agent's end to pass to the sandbox's init as fd CtlFd.
func Pair() (client, agent *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	for _, fd := range fds {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, maxMsg+4096)
	}
	return os.NewFile(uintptr(fds[0]), "agent-client"), os.NewFile(uintptr(fds[1]), "agent"), nil
}

// MaxClients is how many connections the agent serves at once: its
// holder's and those Attach made.
const MaxClients = 16

// Attach gives the agent behind holder (the holder's end of the agent's
// first connection, which only the sandbox's holder has: maka's launcher
// or the sandbox's monitor) a connection of its own, and returns the
// client's end for NewClient. Commands started on it are reported on it
// and only it may signal them; its end is never the sandbox's. The agent
// closes one it cannot take (MaxClients): the client reads the end.
func Attach(holder *os.File) (*os.File, error) {
	cf, af, err := Pair()
	if err != nil {
		return nil, err
	}
	defer af.Close()
	sc, err := holder.SyscallConn()
	if err != nil {
		cf.Close()
		return nil, err
	}
	// Never blocking: an agent that does not read its holder's socket
	// must not stall the holder (the monitor's accept loop, its Close).
	var serr error
	if err := sc.Control(func(fd uintptr) {
		serr = unix.Sendmsg(int(fd), attachHeader(), unix.UnixRights(int(af.Fd())), nil, unix.MSG_DONTWAIT)
	}); err != nil {
		serr = err
	}
	if serr != nil {
		cf.Close()
		return nil, fmt.Errorf("agent: %w", errors.Join(ErrGone, serr))
	}
	return cf, nil
}

func attachHeader() []byte {
	h := make([]byte, headerSize)
	binary.LittleEndian.PutUint32(h[0:], magic)
	binary.LittleEndian.PutUint32(h[4:], msgAttach)
	return h
}

// Client talks to one agent.
type Client struct {
	conn *net.UnixConn
	// wmu: one write (and its deadline) at a time.
	wmu  sync.Mutex
	mu   sync.Mutex
	next uint32
	// waiting: the requests in flight, by id.
	waiting map[uint32]*Proc
	gone    bool
	done    chan struct{}
}

// NewClient serves the agent at the other end of f (Pair's client end),
// taking f over.
func NewClient(f *os.File) (*Client, error) {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("agent: not a unix socket")
	}
	cl := &Client{conn: uc, waiting: map[uint32]*Proc{}, done: make(chan struct{})}
	go cl.read()
	return cl, nil
}

// Done is closed when the agent is gone.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close ends the client's side: the agent reads the end and exits, and the
// sandbox with it.
func (c *Client) Close() error { return c.conn.Close() }

// Proc is a command started by the agent.
type Proc struct {
	c  *Client
	id uint32
	// started: the agent's STARTED or FAILED; exited: EXITED.
	started chan error
	exited  chan Exit
	// HostPid is the command's pid in maka's pid namespace, from the
	// kernel (the credentials on its sync socket); set by Start.
	HostPid int
	sync    *os.File
	// abandoned: its Start gave up waiting; a late STARTED kills it (the
	// agent is slow, not lying: the client lives on).
	abandoned bool
}

// Start asks the agent to start cmd, and returns once the command's
// process exists and waits, before running any code of its own: with its
// host pid, taken from the kernel. The caller checks it and places it
// (Place), then lets it run (Go).
func (c *Client) Start(cmd Command, timeout time.Duration) (*Proc, error) {
	body, err := encodeStart(cmd)
	if err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "agent-sync"), os.NewFile(uintptr(pair[1]), "agent-sync")
	defer theirs.Close()
	if err := unix.SetsockoptInt(pair[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		mine.Close()
		return nil, err
	}
	c.mu.Lock()
	if c.gone {
		c.mu.Unlock()
		mine.Close()
		return nil, ErrGone
	}
	if len(c.waiting) >= maxCommands {
		c.mu.Unlock()
		mine.Close()
		return nil, fmt.Errorf("agent: %d commands at once, the most it runs", maxCommands)
	}
	c.next++
	p := &Proc{c: c, id: c.next, started: make(chan error, 1), exited: make(chan Exit, 1), sync: mine}
	c.waiting[p.id] = p
	c.mu.Unlock()
	binary.LittleEndian.PutUint32(body[8:], p.id)
	rights := unix.UnixRights(int(cmd.Stdin.Fd()), int(cmd.Stdout.Fd()), int(cmd.Stderr.Fd()), int(theirs.Fd()))
	deadline := time.Now().Add(timeout)
	// An agent that does not read does not hold the caller past its
	// deadline.
	c.wmu.Lock()
	_ = c.conn.SetWriteDeadline(deadline)
	_, _, err = c.conn.WriteMsgUnix(body, rights, nil)
	c.wmu.Unlock()
	if err != nil {
		p.forget()
		return nil, fmt.Errorf("agent: %w", errors.Join(ErrGone, err))
	}
	select {
	case err := <-p.started:
		if err != nil {
			p.forget()
			return nil, err
		}
	case <-time.After(time.Until(deadline)):
		p.abandon()
		return nil, errors.New("agent: no answer to a command's start")
	}
	pid, err := readCreds(mine, deadline)
	if err != nil {
		p.Abort()
		return nil, fmt.Errorf("agent: the command's credentials: %w", err)
	}
	p.HostPid = pid
	return p, nil
}

// readCreds reads the command's one byte and the credentials the kernel
// attached to it: its pid in our pid namespace.
func readCreds(f *os.File, deadline time.Time) (int, error) {
	fd := int(f.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		return 0, err
	}
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms <= 0 {
			return 0, errors.New("timed out")
		}
		if _, err := unix.Poll(pfd, ms); err != nil && !errors.Is(err, unix.EINTR) {
			return 0, err
		}
		buf := make([]byte, 1)
		oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n != 1 || buf[0] != 'R' {
			return 0, errors.New("not the command's ready byte")
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return 0, errors.New("no credentials")
		}
		cred, err := unix.ParseUnixCredentials(&msgs[0])
		if err != nil {
			return 0, err
		}
		if cred.Pid <= 0 {
			return 0, errors.New("the command's pid is not visible here")
		}
		return int(cred.Pid), nil
	}
}

// Go lets the started command run (once it is placed).
func (p *Proc) Go() error {
	defer p.sync.Close()
	_, err := p.sync.Write([]byte{'G'})
	return err
}

// Signal asks the agent to send sig to the command.
func (p *Proc) Signal(sig unix.Signal) {
	h := make([]byte, headerSize)
	binary.LittleEndian.PutUint32(h[0:], magic)
	binary.LittleEndian.PutUint32(h[4:], msgSignal)
	binary.LittleEndian.PutUint32(h[8:], p.id)
	binary.LittleEndian.PutUint32(h[12:], uint32(sig))
	p.c.wmu.Lock()
	defer p.c.wmu.Unlock()
	_ = p.c.conn.SetWriteDeadline(time.Now().Add(signalWait))
	_, _ = p.c.conn.Write(h)
}

// Abort gives up on a started command that is not to run: it is killed
// (it has not run any code of its own) and its sync socket closed; its
// end, when the agent reports it, frees its slot.
func (p *Proc) Abort() {
	p.Signal(unix.SIGKILL)
	p.sync.Close()
}

// abandon gives up waiting for the agent's answer to a start: a late
// STARTED kills the command, its end frees the slot.
func (p *Proc) abandon() {
	p.c.mu.Lock()
	p.abandoned = true
	p.c.mu.Unlock()
	p.sync.Close()
}

// Wait waits for the command's end as the agent reports it, or the agent's.
func (p *Proc) Wait() (Exit, error) {
	select {
	case e := <-p.exited:
		return e, nil
	case <-p.c.done:
		select {
		case e := <-p.exited:
			return e, nil
		default:
		}
		return Exit{}, ErrGone
	}
}

func (p *Proc) forget() {
	p.c.mu.Lock()
	delete(p.c.waiting, p.id)
	p.c.mu.Unlock()
	p.sync.Close()
}

// read serves the agent's replies until its socket ends. A reply that is
// not the protocol, or answers nothing in flight, ends the client: the
// agent is not to be trusted any longer.
func (c *Client) read() {
	defer func() {
		c.mu.Lock()
		c.gone = true
		c.mu.Unlock()
		close(c.done)
		c.conn.Close()
	}()
	buf := make([]byte, replySize+1)
	for {
		n, err := c.conn.Read(buf)
		if err != nil || n != replySize {
			return
		}
		le := binary.LittleEndian
		if le.Uint32(buf[0:]) != magic {
			return
		}
		typ, id := le.Uint32(buf[4:]), le.Uint32(buf[8:])
		a, b, cc, d := int64(le.Uint64(buf[16:])), int64(le.Uint64(buf[24:])), int64(le.Uint64(buf[32:])), int64(le.Uint64(buf[40:]))
		c.mu.Lock()
		p := c.waiting[id]
		if p != nil && (typ == msgExited || typ == msgFailed) {
			delete(c.waiting, id)
		}
		abandoned := p != nil && p.abandoned
		c.mu.Unlock()
		if p == nil {
			return
		}
		if abandoned {
			if typ == msgStarted {
				go p.Signal(unix.SIGKILL) // not from this loop: it must read on
			}
			continue
		}
		switch typ {
		case msgStarted:
			if a <= 0 {
				return
			}
			select {
			case p.started <- nil:
			default:
				return // a second STARTED
			}
		case msgFailed:
			err := fmt.Errorf("agent: the command could not start: %w", unix.Errno(a))
			if unix.Errno(a) == unix.ENOTRECOVERABLE {
				err = ErrTampered
			}
			select {
			case p.started <- err:
			default:
			}
		case msgExited:
			if b < 0 || cc < 0 || d < 0 {
				return
			}
			p.exited <- Exit{Status: unix.WaitStatus(a), User: time.Duration(b) * time.Microsecond, System: time.Duration(cc) * time.Microsecond, MaxRSSKiB: d}
		default:
			return
		}
	}
}

// encodeStart is a START message without its id (Start sets it).
func encodeStart(cmd Command) ([]byte, error) {
	if len(cmd.Args) == 0 || cmd.Args[0] == "" {
		return nil, errors.New("agent: no command")
	}
	if len(cmd.Args) > maxStrings || len(cmd.Env) > maxStrings {
		return nil, fmt.Errorf("agent: more than %d arguments or variables", maxStrings)
	}
	if cmd.Stdin == nil || cmd.Stdout == nil || cmd.Stderr == nil {
		return nil, errors.New("agent: a command needs its stdin, stdout and stderr")
	}
	cwd := cmd.Cwd
	if cwd == "" {
		cwd = "/"
	}
	b := make([]byte, headerSize, 4096)
	le := binary.LittleEndian
	le.PutUint32(b[0:], magic)
	le.PutUint32(b[4:], msgStart)
	le.PutUint32(b[16:], uint32(len(cmd.Args)))
	le.PutUint32(b[20:], uint32(len(cmd.Env)))
	for _, s := range append(append([]string{cwd}, cmd.Args...), cmd.Env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, errors.New("agent: a NUL byte in an argument, a variable or the working directory")
		}
		b = append(append(b, s...), 0)
		if len(b) > maxMsg {
			return nil, fmt.Errorf("agent: the command is larger than %d bytes", maxMsg)
		}
	}
	return b, nil
}
