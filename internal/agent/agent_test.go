package agent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The agent runs here as a plain child process (no namespace, no cgroup:
// the protocol and its bounds are what is tested; tests/integration
// tries it as a sandbox's init).

// agentBinary is cmd/maka-agent built as `make agent` builds it (static),
// once for the package's tests.
var agentBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "maka-agent-test")
	if err != nil {
		panic(err)
	}
	agentBinary = filepath.Join(dir, "maka-agent")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	build := exec.Command(cc, "-static", "-Os", "-Wall", "-Werror", "-o", agentBinary, "../../cmd/maka-agent/agent.c")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the agent:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// agentCommand runs the agent.
func agentCommand() *exec.Cmd {
	cmd := exec.Command(agentBinary)
	cmd.Env = []string{}
	cmd.Stderr = os.Stderr
	return cmd
}

// startAgent runs the agent with its end of a pair; the client's end.
func startAgent(t *testing.T) (*Client, *exec.Cmd, *os.File) {
	t.Helper()
	cf, af, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := unix.Dup(int(cf.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	cmd := agentCommand()
	cmd.ExtraFiles = []*os.File{af}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	af.Close()
	c, err := NewClient(cf)
	if err != nil {
		t.Fatal(err)
	}
	rf := os.NewFile(uintptr(raw), "raw-client")
	t.Cleanup(func() {
		c.Close()
		rf.Close()
		_ = cmd.Wait()
	})
	return c, cmd, rf
}

// run starts cmd through c with stdin in, and returns its output and exit.
func run(t *testing.T, c *Client, args []string, in string) (string, string, Exit) {
	t.Helper()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	p, err := c.Start(Command{Args: args, Env: []string{"PATH=/usr/bin:/bin", "X=1"}, Cwd: "/tmp", Stdin: inR, Stdout: outW, Stderr: errW}, 10*time.Second)
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		t.Fatalf("start %q: %v", args, err)
	}
	if p.HostPid <= 0 {
		t.Fatalf("host pid %d", p.HostPid)
	}
	// Before Go the command runs nothing of its own: its pid is the
	// agent's child, still the agent's program.
	exe, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.HostPid), "exe"))
	if strings.Contains(exe, "/cat") || strings.Contains(exe, "/sh") {
		t.Errorf("before Go the command already runs %s", exe)
	}
	if err := p.Go(); err != nil {
		t.Fatal(err)
	}
	go func() { io.WriteString(inW, in); inW.Close() }()
	var out, errb bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&errb, errR); close(done) }()
	io.Copy(&out, outR)
	<-done
	e, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), e
}

func TestAgentRunsCommands(t *testing.T) {
	c, _, _ := startAgent(t)
	out, errs, e := run(t, c, []string{"sh", "-c", `echo "$X $(pwd)"; cat; echo oops >&2; exit 3`}, "fed\n")
	if out != "1 /tmp\nfed\n" || errs != "oops\n" || e.Code() != 3 {
		t.Errorf("out %q err %q exit %d", out, errs, e.Code())
	}
	// PATH search, a missing program, a signal's death.
	if out, _, e := run(t, c, []string{"echo", "a", "b"}, ""); out != "a b\n" || e.Code() != 0 {
		t.Errorf("echo: %q %d", out, e.Code())
	}
	if _, errs, e := run(t, c, []string{"no-such-program"}, ""); e.Code() != 127 || !strings.Contains(errs, "no-such-program") {
		t.Errorf("missing: %q %d", errs, e.Code())
	}
	if _, _, e := run(t, c, []string{"sh", "-c", "kill -9 $$"}, ""); e.Code() != 137 {
		t.Errorf("killed: %d", e.Code())
	}
	// The control socket is closed in the command.
	if out, _, _ := run(t, c, []string{"sh", "-c", "ls -l /proc/self/fd | grep -c socket || true"}, ""); strings.TrimSpace(out) != "0" {
		t.Errorf("sockets open in a command: %s", out)
	}
}

func TestAgentSignal(t *testing.T) {
	c, _, _ := startAgent(t)
	inR, inW, _ := os.Pipe()
	defer inW.Close()
	null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	p, err := c.Start(Command{Args: []string{"sleep", "100"}, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: inR, Stdout: null, Stderr: null}, 10*time.Second)
	inR.Close()
	null.Close()
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Go()
	p.Signal(unix.SIGTERM)
	e, err := p.Wait()
	if err != nil || !e.Status.Signaled() || e.Status.Signal() != unix.SIGTERM {
		t.Errorf("after SIGTERM: %v %v", err, e.Status)
	}
}

// What is not the protocol is ignored (and its descriptors closed), a
// malformed START is refused by its id; the agent still serves.
func TestAgentIgnoresGarbage(t *testing.T) {
	cf, af, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	cmd := agentCommand()
	cmd.ExtraFiles = []*os.File{af}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	af.Close()
	defer func() { cf.Close(); _ = cmd.Wait() }()
	for _, m := range [][]byte{[]byte("hello"), bytes.Repeat([]byte{0xff}, 100), header(77, 1, 1, 1)} {
		if _, err := cf.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	// START without descriptors, with too many strings, with strings that
	// run off its end, and one bigger than the agent reads (truncated):
	// each refused, or ignored.
	_, _ = cf.Write(header(msgStart, 99, 1, 0))
	_, _ = cf.Write(header(msgStart, 5, maxStrings+1, 0))
	_, _ = cf.Write(append(header(msgStart, 6, 2, 0), []byte("/\x00echo")...))
	_, _ = cf.Write(append(header(msgStart, 7, 1, 0), bytes.Repeat([]byte("a"), maxMsg)...))
	failed := map[uint32]bool{}
	buf := make([]byte, 64)
	for {
		pfd := []unix.PollFd{{Fd: int32(cf.Fd()), Events: unix.POLLIN}}
		if n, _ := unix.Poll(pfd, 2000); n != 1 {
			break
		}
		n, err := unix.Read(int(cf.Fd()), buf)
		if err != nil {
			t.Fatal(err)
		}
		if n != replySize || binary.LittleEndian.Uint32(buf[4:]) != msgFailed {
			t.Fatalf("reply %x", buf[:n])
		}
		failed[binary.LittleEndian.Uint32(buf[8:])] = true
	}
	if !failed[99] || !failed[5] || !failed[6] || failed[7] {
		t.Errorf("refused %v, want 99, 5 and 6 (7 is not the protocol: ignored)", failed)
	}
	c, err := NewClient(cf)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out, _, e := run(t, c, []string{"echo", "still"}, ""); out != "still\n" || e.Code() != 0 {
		t.Errorf("after garbage: %q %d", out, e.Code())
	}
}

func header(typ, id, argc, envc uint32) []byte {
	b := make([]byte, headerSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], magic)
	le.PutUint32(b[4:], typ)
	le.PutUint32(b[8:], id)
	le.PutUint32(b[16:], argc)
	le.PutUint32(b[20:], envc)
	return b
}

// The end of maka's side ends the agent; the agent's end fails every
// command in flight with ErrGone.
func TestAgentGone(t *testing.T) {
	c, cmd, raw := startAgent(t)
	raw.Close()
	inR, inW, _ := os.Pipe()
	defer inW.Close()
	null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	p, err := c.Start(Command{Args: []string{"sleep", "100"}, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: inR, Stdout: null, Stderr: null}, 10*time.Second)
	inR.Close()
	null.Close()
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Go()
	_ = cmd.Process.Kill()
	if _, err := p.Wait(); !errors.Is(err, ErrGone) {
		t.Errorf("after the agent died: %v", err)
	}
	_ = unix.Kill(p.HostPid, unix.SIGKILL)
	if _, err := c.Start(Command{Args: []string{"true"}, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, time.Second); err == nil {
		t.Error("a command started with the agent gone")
	}
}

func TestEncodeStartBounds(t *testing.T) {
	f := os.Stdin
	for _, cmd := range []Command{
		{Stdin: f, Stdout: f, Stderr: f},
		{Args: []string{""}, Stdin: f, Stdout: f, Stderr: f},
		{Args: []string{"a\x00b"}, Stdin: f, Stdout: f, Stderr: f},
		{Args: []string{strings.Repeat("x", maxMsg)}, Stdin: f, Stdout: f, Stderr: f},
		{Args: make([]string, maxStrings+1), Stdin: f, Stdout: f, Stderr: f},
		{Args: []string{"true"}},
	} {
		if _, err := encodeStart(cmd); err == nil {
			t.Errorf("encodeStart accepted %d args", len(cmd.Args))
		}
	}
}

// Attach gives a client a connection of its own: its commands are
// reported to it alone, only it may signal them, it cannot attach others,
// its end is not the sandbox's, and the agent takes at most MaxClients.
func TestAgentAttach(t *testing.T) {
	c, _, holder := startAgent(t)
	af, err := Attach(holder)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewClient(af)
	if err != nil {
		t.Fatal(err)
	}
	if out, _, e := run(t, a, []string{"echo", "attached"}, ""); out != "attached\n" || e.Code() != 0 {
		t.Errorf("through an attached client: %q %d", out, e.Code())
	}
	// The holder's command 1 and the attached client's: a SIGNAL for id 1
	// on the attached connection reaches only its own.
	null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer null.Close()
	sleep := func(cl *Client) *Proc {
		inR, inW, _ := os.Pipe()
		t.Cleanup(func() { inW.Close() })
		p, err := cl.Start(Command{Args: []string{"sleep", "100"}, Env: []string{"PATH=/usr/bin:/bin"}, Stdin: inR, Stdout: null, Stderr: null}, 10*time.Second)
		inR.Close()
		if err != nil {
			t.Fatal(err)
		}
		_ = p.Go()
		return p
	}
	mine := sleep(c)
	theirs := sleep(a)
	sig := header(msgSignal, mine.id, 0, 0)
	binary.LittleEndian.PutUint32(sig[12:], uint32(unix.SIGKILL))
	if _, err := a.conn.Write(sig); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := unix.Kill(mine.HostPid, 0); err != nil {
		t.Errorf("a client's SIGNAL reached the holder's command: %v", err)
	}
	theirs.Signal(unix.SIGKILL)
	if e, err := theirs.Wait(); err != nil || e.Code() != 137 {
		t.Errorf("the attached client's own command: %v %d", err, e.Code())
	}
	mine.Signal(unix.SIGKILL)
	_, _ = mine.Wait()
	// An attached client cannot attach: the descriptor it sends is closed.
	cf, af2, _ := Pair()
	defer cf.Close()
	if _, _, err := a.conn.WriteMsgUnix(attachHeader(), unix.UnixRights(int(af2.Fd())), nil); err != nil {
		t.Fatal(err)
	}
	af2.Close()
	pfd := []unix.PollFd{{Fd: int32(cf.Fd()), Events: unix.POLLIN}}
	if n, _ := unix.Poll(pfd, 5000); n != 1 || pfd[0].Revents&unix.POLLHUP == 0 {
		t.Errorf("a connection attached by a client was kept: poll %d %#x", n, pfd[0].Revents)
	}
	// Its end is not the sandbox's: the agent still serves the holder.
	a.Close()
	if out, _, _ := run(t, c, []string{"echo", "holder"}, ""); out != "holder\n" {
		t.Errorf("after an attached client left: %q", out)
	}
	// At most MaxClients: the holder's and MaxClients-1 attached.
	var clients []*Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i := 0; i < MaxClients-1; i++ {
		f, err := Attach(holder)
		if err != nil {
			t.Fatal(err)
		}
		cl, _ := NewClient(f)
		clients = append(clients, cl)
	}
	if out, _, _ := run(t, clients[len(clients)-1], []string{"echo", "last"}, ""); out != "last\n" {
		t.Errorf("the %dth client: %q", MaxClients-1, out)
	}
	f, err := Attach(holder)
	if err != nil {
		t.Fatal(err)
	}
	over, _ := NewClient(f)
	defer over.Close()
	select {
	case <-over.Done():
	case <-time.After(5 * time.Second):
		t.Error("a client over MaxClients was kept")
	}
}

// A command that changes what later commands would inherit from the agent
// (its nice value, a limit) is refused at the next start: ErrTampered, an
// ErrGone (maka ends the sandbox).
func TestAgentRefusesAfterTampering(t *testing.T) {
	for _, script := range []string{
		"renice -n 5 -p $PPID >/dev/null",
		"prlimit --pid $PPID --core=0:0",
	} {
		c, _, _ := startAgent(t)
		if _, errs, e := run(t, c, []string{"sh", "-c", script}, ""); e.Code() != 0 {
			t.Fatalf("%s: %q %d", script, errs, e.Code())
		}
		null, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		_, err := c.Start(Command{Args: []string{"true"}, Stdin: null, Stdout: null, Stderr: null}, 10*time.Second)
		null.Close()
		if !errors.Is(err, ErrTampered) || !errors.Is(err, ErrGone) {
			t.Errorf("after %q: %v, want ErrTampered", script, err)
		}
	}
}

// An agent that reads nothing does not hold Start past its deadline, nor
// Signal, nor Attach.
func TestAgentThatDoesNotRead(t *testing.T) {
	cf, af, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer af.Close()
	holder, err := dupOf(cf)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	c, err := NewClient(cf)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	null, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	defer null.Close()
	big := strings.Repeat("x", 200<<10)
	for i := 0; i < 6; i++ {
		t0 := time.Now()
		_, err := c.Start(Command{Args: []string{"echo", big}, Stdin: null, Stdout: null, Stderr: null}, 200*time.Millisecond)
		if err == nil {
			t.Fatal("a start answered by nobody succeeded")
		}
		if d := time.Since(t0); d > 3*time.Second {
			t.Fatalf("start %d took %s against an agent that does not read", i, d)
		}
	}
	done := make(chan struct{})
	go func() {
		for i := 0; i < 200; i++ {
			if f, err := Attach(holder); err == nil {
				f.Close()
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Attach blocked on an agent that does not read")
	}
}

func dupOf(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "dup"), nil
}

// A STARTED that comes after Start gave up is the agent being slow, not
// lying: the command is killed, the client lives on.
func TestAgentLateStarted(t *testing.T) {
	cf, af, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer af.Close()
	c, err := NewClient(cf)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	null, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	defer null.Close()
	if _, err := c.Start(Command{Args: []string{"true"}, Stdin: null, Stdout: null, Stderr: null}, 100*time.Millisecond); err == nil {
		t.Fatal("no answer, yet started")
	}
	// The fake agent reads the START and answers it late.
	buf := make([]byte, maxMsg)
	n, _, _, _, err := unix.Recvmsg(int(af.Fd()), buf, make([]byte, unix.CmsgSpace(4*4)), 0)
	if err != nil || n < headerSize {
		t.Fatalf("the START: %d %v", n, err)
	}
	id := binary.LittleEndian.Uint32(buf[8:])
	late := make([]byte, replySize)
	binary.LittleEndian.PutUint32(late[0:], magic)
	binary.LittleEndian.PutUint32(late[4:], msgStarted)
	binary.LittleEndian.PutUint32(late[8:], id)
	binary.LittleEndian.PutUint64(late[16:], 42)
	if _, err := af.Write(late); err != nil {
		t.Fatal(err)
	}
	// It asks the agent to kill that command.
	_ = af.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err = af.Read(buf)
	if err != nil || n != headerSize || binary.LittleEndian.Uint32(buf[4:]) != msgSignal ||
		binary.LittleEndian.Uint32(buf[8:]) != id || binary.LittleEndian.Uint32(buf[12:]) != uint32(unix.SIGKILL) {
		t.Fatalf("after a late STARTED: %x %v, want SIGNAL KILL for %d", buf[:n], err, id)
	}
	select {
	case <-c.Done():
		t.Fatal("a late STARTED ended the client")
	case <-time.After(200 * time.Millisecond):
	}
}
