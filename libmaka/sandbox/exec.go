package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/maka-runtime/maka/internal/agent"
	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// Command is one command to run in a sandbox. Exactly one of Shell and
// Args is set: Shell runs through /bin/sh -c, Args executes directly.
type Command struct {
	Shell string
	Args  []string
	// Cwd is the working directory: an absolute path, or one relative to
	// /maka/work that stays below it (default /maka/work).
	Cwd string
	// Env is added to the sandbox's declared environment (NAME=value).
	Env []string
	// Stdin is the command's input (default: none, /dev/null): an
	// *os.File is passed as it is, any other reader through a pipe.
	Stdin io.Reader
	// Stdout and Stderr, if set, receive the command's output as it comes
	// (Result's is then empty); unset, Result holds it. Either way the two
	// together are held to OutputLimit: past it the command is killed and
	// Exec fails with ErrOutputLimit (a writer has then received at most
	// the limit, never more). They are written from other goroutines, one
	// write at a time (the same writer may serve both).
	Stdout, Stderr io.Writer
	// Timeout bounds the command, the wait for the sandbox included
	// (default and maximum: the Manager's MaxTimeout).
	Timeout time.Duration
	// OutputLimit caps stdout and stderr together (default: the
	// Manager's OutputLimit).
	OutputLimit int64
}

// Result is a finished command: its exit code (128+N if signal N killed
// it), its output and how long it ran.
type Result struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	Duration time.Duration
	// CPU is the command's user and system time and MaxRSSKiB its
	// largest resident set (of its own process, with the children it
	// waited for), as the kernel reports them.
	CPU       time.Duration
	MaxRSSKiB int64
}

var (
	// ErrTimeoutTooLong: the command asked for a deadline beyond the
	// Manager's MaxTimeout; nothing ran.
	ErrTimeoutTooLong = errors.New("timeout above the maximum")
	// ErrNotDispatched: the deadline passed (or ctx was cancelled) while
	// the command waited for the sandbox; nothing ran, the sandbox lives.
	ErrNotDispatched = launch.ErrNotDispatched
	// ErrSandboxDestroyed: the deadline passed (or ctx was cancelled)
	// while the command ran: the whole sandbox was destroyed, as what the
	// command left running cannot be trusted to stop.
	ErrSandboxDestroyed = launch.ErrSandboxDestroyed
	// ErrOutputLimit: the command wrote more than its output limit; it
	// was killed, and its output is not returned (never truncated).
	ErrOutputLimit = launch.ErrOutputLimit
	// ErrGone: the sandbox was destroyed, or its process ended.
	ErrGone = errors.New("the sandbox is gone")
)

// Exec runs cmd in the sandbox and returns once it and every process it
// started, detached ones included, are gone: each command runs in a child
// cgroup of the sandbox's, killed as a whole when the command's process
// exits. Commands on one sandbox run one at a time (across processes
// too). The deadline (cmd.Timeout, and ctx's) counts from the call: a
// command still waiting for the sandbox when it passes is refused
// (ErrNotDispatched), a running one destroys the sandbox
// (ErrSandboxDestroyed). A violation that made the monitor destroy the
// sandbox is a *BoundaryViolation.
func (s *Sandbox) Exec(ctx context.Context, cmd Command) (*Result, error) {
	ps, limit, timeout, err := s.commandSpec(cmd)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case s.slot <- struct{}{}:
		defer func() { <-s.slot }()
	case <-ctx.Done():
		return nil, fmt.Errorf("sandbox %s: %w: it waited for the sandbox until %w", s.ID(), ErrNotDispatched, ctx.Err())
	}
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return nil, fmt.Errorf("sandbox %s: %w", s.ID(), ErrGone)
	}
	s.mu.Unlock()
	select {
	case <-s.initDone:
		return nil, fmt.Errorf("sandbox %s: %w: its process has exited%s", s.ID(), ErrGone, s.killedBy())
	default:
	}
	stdio := launch.Stdio{Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr}
	destroy := func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.destroyLocked()
	}
	var res *launch.Output
	if s.agent != nil {
		res, err = launch.ExecQueuedAgent(ctx, s.launched.Container, s.agent, ps, stdio, limit, destroy)
		if errors.Is(err, agent.ErrGone) {
			// The monitor may have killed the sandbox (a violation under
			// kill): then that is the answer, as below.
			select {
			case <-s.initDone:
			case <-time.After(time.Second):
			}
			if k := s.launched.MonitorErr(); k != nil {
				return nil, k
			}
			// A dead (or no longer trusted) agent is a dead sandbox: the
			// command never runs some other way.
			_ = s.Destroy()
			return nil, fmt.Errorf("sandbox %s: %w: %w", s.ID(), ErrGone, err)
		}
	} else {
		res, err = launch.ExecQueued(ctx, s.launched.Container, ps, stdio, limit, destroy)
	}
	// Under onViolation kill the monitor destroyed the whole sandbox: the
	// violation is the answer.
	if k := s.launched.MonitorErr(); k != nil {
		return nil, k
	}
	if err != nil {
		return nil, err
	}
	return &Result{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Duration: res.Duration,
		CPU: res.Usage.User + res.Usage.System, MaxRSSKiB: res.Usage.MaxRSSKiB}, nil
}

// commandSpec is the process to run for cmd, held to the sandbox's policy
// and boundary as `maka exec` holds it, with the command's limits.
func (s *Sandbox) commandSpec(cmd Command) (*specs.Process, int64, time.Duration, error) {
	opts := s.m.opts
	timeout := cmd.Timeout
	switch {
	case timeout < 0:
		return nil, 0, 0, fmt.Errorf("timeout %s: must not be negative", timeout)
	case timeout == 0:
		timeout = opts.MaxTimeout
	case timeout > opts.MaxTimeout:
		return nil, 0, 0, fmt.Errorf("timeout %s: %w of %s", timeout, ErrTimeoutTooLong, opts.MaxTimeout)
	}
	limit := cmd.OutputLimit
	if limit <= 0 {
		limit = opts.OutputLimit
	}
	var args []string
	switch {
	case cmd.Shell != "" && len(cmd.Args) > 0:
		return nil, 0, 0, errors.New("command: give Shell or Args, not both")
	case cmd.Shell != "":
		args = []string{"/bin/sh", "-c", cmd.Shell}
	case len(cmd.Args) > 0:
		args = cmd.Args
	default:
		return nil, 0, 0, errors.New("command: empty (give Shell or Args)")
	}
	cwd, err := launch.CommandCwd(cmd.Cwd)
	if err != nil {
		return nil, 0, 0, err
	}
	ps, b, pol, err := launch.ExecBase(&s.launched.Container.Record)
	if err != nil {
		return nil, 0, 0, err
	}
	ps.Args, ps.Cwd, ps.Terminal, ps.ConsoleSize = args, cwd, false, nil
	ps.Env = launch.ExecHome(launch.MergeEnv(ps.Env, cmd.Env), b, ps.User.UID, true, cmd.Env)
	for _, kv := range cmd.Env {
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return nil, 0, 0, fmt.Errorf("command env %q: want NAME=value", kv)
		}
	}
	if err := specconv.CheckExec(libmaka.ThisHost(), &ps, pol, b); err != nil {
		return nil, 0, 0, err
	}
	return &ps, limit, timeout, nil
}

// killedBy says why the monitor destroyed the sandbox, if it did.
func (s *Sandbox) killedBy() string {
	if err := s.launched.MonitorErr(); err != nil {
		return ": " + err.Error()
	}
	return ""
}
