package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/maka-runtime/maka/internal/agent"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// WorkDir is where a command's relative working directory resolves.
const WorkDir = "/maka/work"

// Output is a finished bounded command: its exit code (128+N if signal N
// killed it), its output and how long it ran.
type Output struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	Duration time.Duration
	// Usage is the command's own process's (with what it waited for).
	Usage Usage
}

// Usage is a command's resource use, from wait4.
type Usage struct {
	User, System time.Duration
	MaxRSSKiB    int64
}

// usageOf is st's Usage.
func usageOf(st *os.ProcessState) Usage {
	if st == nil {
		return Usage{}
	}
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return Usage{}
	}
	return Usage{User: time.Duration(ru.Utime.Nano()), System: time.Duration(ru.Stime.Nano()), MaxRSSKiB: ru.Maxrss}
}

// The errors of a bounded command (libmaka/sandbox re-exports them).
var (
	// ErrNotDispatched: the deadline passed (or ctx was cancelled) while
	// the command waited for the sandbox; nothing ran, the sandbox lives.
	ErrNotDispatched = errors.New("the command never ran")
	// ErrSandboxDestroyed: the deadline passed (or ctx was cancelled)
	// while the command ran: the whole sandbox was destroyed, as what the
	// command left running cannot be trusted to stop.
	ErrSandboxDestroyed = errors.New("the sandbox was destroyed")
	// ErrOutputLimit: the command wrote more than its output limit; it
	// was killed, and its output is not returned (never truncated).
	ErrOutputLimit = errors.New("output over the limit")
)

// CommandCwd resolves a command's working directory: absolute as given,
// relative below WorkDir and never above it.
func CommandCwd(cwd string) (string, error) {
	if cwd == "" {
		return WorkDir, nil
	}
	if filepath.IsAbs(cwd) {
		return filepath.Clean(cwd), nil
	}
	p := filepath.Join(WorkDir, cwd)
	if p != WorkDir && !strings.HasPrefix(p, WorkDir+"/") {
		return "", fmt.Errorf("cwd %q: a relative working directory must stay below %s", cwd, WorkDir)
	}
	return p, nil
}

// commandSeq numbers the commands' child cgroups within this process.
var commandSeq atomic.Int64

// Stdio is a bounded command's input and output. Stdin nil: /dev/null.
// Stdout or Stderr nil: that stream is collected into Output; set, it
// receives the stream as it comes (Output's is then empty). Either way the
// two together are held to the command's limit: past it the command is
// killed and ErrOutputLimit returned (a writer has by then received at
// most the limit). The writers are called from other goroutines, one call
// at a time (they may be the same writer); a writer that blocks holds the
// command's output, and its deadline still runs.
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// RunBounded runs ps (held to the sandbox's policy already) in ctr, in a
// child cgroup of the sandbox's of its own, and returns once it and every
// process it started are gone; stdout and stderr are collected up to limit
// bytes together (more fails with ErrOutputLimit: the command is killed,
// nothing is returned). If ctx ends while it runs, destroy is called: a
// deadline after dispatch destroys the sandbox (ErrSandboxDestroyed).
// Sandbox.Exec and `maka exec --timeout/--output-limit` run commands so.
func RunBounded(ctx context.Context, ctr *libmaka.Container, ps *specs.Process, stdio Stdio, limit int64, destroy func() error) (*Output, error) {
	return runBounded(ctx, ctr, stdio, limit, destroy, func(sub, _ string, in, out, errw *os.File) (func() (int, Usage, error), error) {
		p, err := specconv.NewProcess(libmaka.ThisHost(), ps, false)
		if err != nil {
			return nil, err
		}
		p.LogLevel = strconv.Itoa(int(logrus.GetLevel()))
		p.SubCgroupPaths = map[string]string{"": sub}
		p.Stdin, p.Stdout, p.Stderr = in, out, errw
		if err := ctr.Run(p); err != nil {
			return nil, fmt.Errorf("sandbox %s: exec: %w", ctr.ID(), err)
		}
		return func() (int, Usage, error) {
			st, _ := p.Wait()
			return ExitCode(st), usageOf(st), nil
		}, nil
	})
}

// starter starts a bounded command with its stdio in its child cgroup sub
// (subDir on the host) and returns how to wait for its exit code and use.
type starter func(sub, subDir string, in, out, errw *os.File) (wait func() (int, Usage, error), err error)

// runBounded is RunBounded with the command started by start (libcontainer's
// exec path, or a sandbox's resident agent: RunAgent).
func runBounded(ctx context.Context, ctr *libmaka.Container, stdio Stdio, limit int64, destroy func() error, start starter) (*Output, error) {
	id := ctr.ID()
	cgroup := ctr.CgroupPath()
	if cgroup == "" {
		return nil, fmt.Errorf("sandbox %s: its cgroup is not known", id)
	}
	sub := fmt.Sprintf("maka-cmd-%d-%d", os.Getpid(), commandSeq.Add(1))
	subDir := filepath.Join(cgroup, sub)
	if err := os.Mkdir(subDir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox %s: command cgroup: %w", id, err)
	}
	// Whatever happens below, nothing the command started outlives it.
	defer killCgroup(subDir)
	out := &capped{limit: limit, over: make(chan struct{})}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return nil, err
	}
	defer errR.Close()
	inFile, feed, err := stdinOf(stdio.Stdin)
	if err != nil {
		outW.Close()
		errW.Close()
		return nil, err
	}
	began := time.Now()
	wait, err := start(sub, subDir, inFile, outW, errW)
	// Only the command holds the write ends now: EOF once it is gone.
	outW.Close()
	errW.Close()
	inFile.Close()
	if err != nil {
		return nil, err
	}
	if feed != nil {
		go feed()
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); out.copy(sink(stdio.Stdout, &out.stdout), outR) }()
	go func() { defer readers.Done(); out.copy(sink(stdio.Stderr, &out.stderr), errR) }()
	type exit struct {
		code int
		use  Usage
		err  error
	}
	exited := make(chan exit, 1)
	go func() {
		code, use, err := wait()
		exited <- exit{code, use, err}
	}()
	var end exit
	select {
	case end = <-exited:
	case <-out.over:
		killCgroup(subDir)
		// Killed: its end comes at once, unless the agent does not
		// report it (then the sandbox is not to be trusted either).
		select {
		case <-exited:
		case <-time.After(KillTimeout):
			derr := destroy()
			<-exited
			readers.Wait()
			return nil, errors.Join(fmt.Errorf("sandbox %s: %w: no end reported for a killed command; the sandbox was destroyed", id, ErrSandboxDestroyed), derr)
		}
		readers.Wait()
		return nil, fmt.Errorf("sandbox %s: %w: stdout and stderr together passed %d bytes; the command was killed", id, ErrOutputLimit, limit)
	case <-ctx.Done():
		// After dispatch a deadline destroys the sandbox: what the command
		// started is not known to be stoppable short of that.
		derr := destroy()
		<-exited
		readers.Wait()
		if derr != nil {
			return nil, fmt.Errorf("sandbox %s: the command ran past its deadline (%w) and destroying the sandbox failed: %w", id, ctx.Err(), derr)
		}
		return nil, fmt.Errorf("sandbox %s: %w: the command ran past its deadline: %w", id, ErrSandboxDestroyed, ctx.Err())
	}
	// The command's process is gone; so must be all it started, before
	// the reply (a detached child would hold the pipes, and run on).
	killCgroup(subDir)
	// Anything holding the pipes outside the command's cgroup (it could
	// have handed them to the sandbox's init) must not hold the reply.
	_ = outR.SetReadDeadline(time.Now().Add(time.Second))
	_ = errR.SetReadDeadline(time.Now().Add(time.Second))
	readers.Wait()
	if out.exceeded() {
		return nil, fmt.Errorf("sandbox %s: %w: stdout and stderr together passed %d bytes", id, ErrOutputLimit, limit)
	}
	if end.err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", id, end.err)
	}
	return &Output{ExitCode: end.code, Stdout: out.stdout.Bytes(), Stderr: out.stderr.Bytes(), Duration: time.Since(began), Usage: end.use}, nil
}

// stdinOf is the command's stdin: /dev/null, a file as it is (a copy of
// its descriptor), or a pipe fed from r.
func stdinOf(r io.Reader) (*os.File, func(), error) {
	switch f := r.(type) {
	case nil:
		null, err := os.Open(os.DevNull)
		return null, nil, err
	case *os.File:
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil, nil, err
		}
		return os.NewFile(uintptr(fd), f.Name()), nil, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return pr, func() {
		_, _ = io.Copy(pw, r)
		pw.Close()
	}, nil
}

// capped collects stdout and stderr up to a limit on their sum.
type capped struct {
	mu             sync.Mutex
	limit, n       int64
	stdout, stderr bytes.Buffer
	over           chan struct{}
	overOnce       sync.Once
}

// sink is where a stream goes: the caller's writer, or the buffer.
func sink(w io.Writer, buf *bytes.Buffer) io.Writer {
	if w != nil {
		return w
	}
	return buf
}

// copy reads r into dst until EOF or the limit: the bytes that pass the
// limit are never written (the command is being killed). Writes to dst are
// made holding mu: one at a time across both streams.
func (c *capped) copy(dst io.Writer, r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			c.mu.Lock()
			c.n += int64(n)
			if c.n > c.limit {
				c.mu.Unlock()
				c.overOnce.Do(func() { close(c.over) })
				// Drain without keeping: the command is being killed.
				_, _ = io.Copy(io.Discard, r)
				return
			}
			_, _ = dst.Write(buf[:n])
			c.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (c *capped) exceeded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n > c.limit
}

// ExitCode is a process's status as a shell reports it: 128+N for signal N.
func ExitCode(st *os.ProcessState) int {
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// killCgroup kills every process of the cgroup at dir (cgroup.kill), waits
// until it is empty (at most KillTimeout) and removes it.
func killCgroup(dir string) {
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	for deadline := time.Now().Add(KillTimeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil || bytes.Contains(data, []byte("populated 0")) {
			break
		}
	}
	_ = unix.Rmdir(dir)
}

// MergeEnv is env with overrides applied (a NAME=value replaces NAME's).
func MergeEnv(env, overrides []string) []string {
	out := append([]string(nil), env...)
	for _, kv := range overrides {
		name, _, _ := strings.Cut(kv, "=")
		replaced := false
		for i, e := range out {
			if n, _, _ := strings.Cut(e, "="); n == name {
				out[i], replaced = kv, true
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return out
}

// execLockFile, in a container's state directory, serialises bounded
// commands across processes (a Manager's and `maka exec --timeout`).
const execLockFile = "exec.lock"

// acquireExecSlot waits, until ctx ends, to be the only bounded command of
// the container whose state directory is dir; release ends the turn.
func acquireExecSlot(ctx context.Context, dir string) (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, execLockFile), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ExecQueued runs a bounded command (RunBounded) once no other bounded
// command runs in ctr: the wait counts against ctx's deadline, and a
// command whose deadline passes while it waits never runs
// (ErrNotDispatched).
func ExecQueued(ctx context.Context, ctr *libmaka.Container, ps *specs.Process, stdio Stdio, limit int64, destroy func() error) (*Output, error) {
	release, err := acquireExecSlot(ctx, ctr.StateDir())
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox %s: %w: it waited for the sandbox until %w", ctr.ID(), ErrNotDispatched, ctx.Err())
		}
		return nil, fmt.Errorf("sandbox %s: %w", ctr.ID(), err)
	}
	defer release()
	return RunBounded(ctx, ctr, ps, stdio, limit, destroy)
}

// ExecQueuedAgent is ExecQueued through the sandbox's resident agent.
func ExecQueuedAgent(ctx context.Context, ctr *libmaka.Container, cl *agent.Client, ps *specs.Process, stdio Stdio, limit int64, destroy func() error) (*Output, error) {
	release, err := acquireExecSlot(ctx, ctr.StateDir())
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox %s: %w: it waited for the sandbox until %w", ctr.ID(), ErrNotDispatched, ctx.Err())
		}
		return nil, fmt.Errorf("sandbox %s: %w", ctr.ID(), err)
	}
	defer release()
	return RunAgent(ctx, ctr, cl, ps, stdio, limit, destroy)
}
