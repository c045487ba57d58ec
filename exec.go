package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	units "github.com/docker/go-units"
	"github.com/maka-runtime/maka/internal/agent"
	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/maka-runtime/maka/libmaka/sandbox"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// The repeatable flags' long and short forms are two flags sharing one
// value (in order), not aliases: urfave/cli v2 refuses a command line that
// mixes an alias with its flag ("--env A=1 -e B=2"), which runc accepts.
var (
	execEnv  = cli.NewStringSlice()
	execGids = cli.NewInt64Slice()
	execCaps = cli.NewStringSlice()
)

var execCommand = &cli.Command{
	Name:      "exec",
	Usage:     "run a new process inside a running container",
	ArgsUsage: "<container-id> <command> [command options]  ||  --process <process.json> <container-id>",
	Description: `The process is the container's own process spec (environment, user,
capabilities) with the command and the flags below applied, or the whole
process given by --process (runtime-spec's process object). In the foreground
maka relays signals and the terminal and exits with the process's status.

With --timeout or --output-limit the command is bounded, as an agent's tool
call: a relative --cwd resolves under /maka/work (and must stay below it),
bounded commands on one container run one at a time, the deadline includes
the wait for the others (a command still waiting when it passes never runs),
a command past its deadline kills the whole sandbox, stdout and stderr are
captured up to the limit together (default 1 MiB; more fails with exit 255,
never truncated), and the command runs in a child cgroup of its own: every
process it started, detached ones included, is killed before maka exits.

EXAMPLE:
       # maka exec -t box1 sh
       # maka exec --env FOO=bar --cwd /tmp box1 ls`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "console-socket", Usage: "path to an AF_UNIX socket which will receive a file descriptor referencing the master end of the console's pseudoterminal"},
		&cli.StringFlag{Name: "cwd", Usage: "current working directory in the container"},
		&cli.StringSliceFlag{Name: "env", Usage: "set an environment variable (NAME=value; repeatable; short form -e)", Value: cli.NewStringSlice(), Destination: execEnv},
		&cli.StringSliceFlag{Name: "e", Hidden: true, Value: cli.NewStringSlice(), Destination: execEnv},
		&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "allocate a pseudo-TTY"},
		&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "UID[:GID] to run the process as"},
		&cli.Int64SliceFlag{Name: "additional-gids", Usage: "additional gids (repeatable; short form -g)", Value: cli.NewInt64Slice(), Destination: execGids},
		&cli.Int64SliceFlag{Name: "g", Hidden: true, Value: cli.NewInt64Slice(), Destination: execGids},
		&cli.StringFlag{Name: "process", Aliases: []string{"p"}, Usage: "path to a process.json (runtime-spec process object)"},
		&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "detach from the process"},
		&cli.StringFlag{Name: "pid-file", Usage: "file to write the process's pid to (written atomically)"},
		&cli.StringFlag{Name: "process-label", Usage: "SELinux label for the process"},
		&cli.StringFlag{Name: "apparmor", Usage: "AppArmor profile for the process"},
		&cli.BoolFlag{Name: "no-new-privs", Usage: "set no_new_privs for the process"},
		&cli.StringSliceFlag{Name: "cap", Usage: "add a capability to the bounding, effective and permitted sets, and to the ambient set if the process has an inheritable set (repeatable; short form -c)", Value: cli.NewStringSlice(), Destination: execCaps},
		&cli.StringSliceFlag{Name: "c", Hidden: true, Value: cli.NewStringSlice(), Destination: execCaps},
		&cli.IntFlag{Name: "preserve-fds", Usage: "pass N additional file descriptors to the process"},
		&cli.BoolFlag{Name: "ignore-paused", Usage: "allow exec in a paused container"},
		&cli.StringFlag{Name: "cgroup", Usage: "run the process in this existing sub-cgroup of the container's cgroup (a path relative to it)"},
		&cli.DurationFlag{Name: "timeout", Usage: "bounded command: the deadline, waiting for other bounded commands included (at most the policy's maxCommandTimeout, 180s by default; after dispatch it kills the sandbox)"},
		&cli.StringFlag{Name: "output-limit", Usage: "bounded command: cap stdout and stderr together (e.g. 1MiB; more fails, never truncated)"},
	},
	SkipFlagParsing: false,
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, minArgs); err != nil {
			return err
		}
		status, err := execProcess(c)
		if err != nil {
			// As runc: a failed exec exits 255, so that callers can tell
			// it from the process's own status.
			fatalWithCode(fmt.Errorf("exec failed: %w", err), 255)
		}
		if status != 0 {
			os.Exit(status)
		}
		return nil
	},
}

func execProcess(c *cli.Context) (int, error) {
	pidFile, err := absPath(c.String("pid-file"))
	if err != nil {
		return 1, err
	}
	consoleSocket, err := absPath(c.String("console-socket"))
	if err != nil {
		return 1, err
	}
	op, ctr, err := lockContainer(c)
	if err != nil {
		return 1, err
	}
	defer op.End()
	if !ctr.Record.Boundary.Held() {
		return 1, fmt.Errorf("container %s: %w", ctr.ID(), launch.ErrNoContract)
	}
	if changed, err := ctr.RootlessExecFilter(); err != nil {
		return 1, err
	} else if changed {
		rt, err := runtimeOf(c)
		if err != nil {
			return 1, err
		}
		if ctr, err = rt.Load(ctr.ID()); err != nil {
			return 1, err
		}
	}
	status, err := ctr.Status()
	if err != nil {
		return 1, err
	}
	switch {
	case status == libmaka.Stopped:
		return 1, fmt.Errorf("cannot exec in a stopped container %s: %w", ctr.ID(), libmaka.ErrNotRunning)
	case status == libmaka.Paused && !c.Bool("ignore-paused"):
		return 1, fmt.Errorf("cannot exec in a paused container %s (use --ignore-paused to override): %w", ctr.ID(), libmaka.ErrWrongState)
	}
	// Held to the policy the container was created under and to its
	// boundary.
	base, b, pol, err := launch.ExecBase(&ctr.Record)
	if err != nil {
		return 1, fmt.Errorf("container %s: %w", ctr.ID(), err)
	}
	ps, err := execSpec(c, base)
	if err != nil {
		return 1, err
	}
	ps.Env = launch.ExecHome(ps.Env, b, ps.User.UID, c.String("process") == "", c.StringSlice("env"))
	if err := specconv.CheckExec(libmaka.ThisHost(), ps, pol, b); err != nil {
		return 1, err
	}
	// A sandbox whose init is maka's agent starts its commands through it:
	// no process of maka's enters the sandbox and no namespace is joined.
	// A command that needs libcontainer's own path (a terminal, another
	// user, descriptors of the caller's) takes it, as in any sandbox.
	cl, err := agentClient(c, ctr, ps, status)
	if err != nil {
		return 1, err
	}
	if c.IsSet("timeout") || c.IsSet("output-limit") {
		op.End()
		return execBounded(c, ctr, ps, cl)
	}
	if cl != nil {
		op.End()
		return execAgent(c, ctr, cl, ps, pidFile)
	}
	process, err := specconv.NewProcess(libmaka.ThisHost(), ps, false)
	if err != nil {
		if path := c.String("process"); path != "" {
			return 1, fmt.Errorf("--process %s: %w", path, err)
		}
		return 1, err
	}
	process.LogLevel = strconv.Itoa(int(logrus.GetLevel()))
	if sub := c.String("cgroup"); sub != "" {
		if sub, err = execSubCgroup(ctr.CgroupPath(), sub); err != nil {
			return 1, err
		}
		process.SubCgroupPaths = map[string]string{"": sub}
	}
	if err := passFds(process, c.Int("preserve-fds")); err != nil {
		return 1, err
	}
	detach := c.Bool("detach")
	io, err := setupStdio(process, ps.Terminal, detach, consoleSocket)
	if err != nil {
		return 1, err
	}
	defer io.close()
	var fwd *signalForwarder
	if !detach {
		if fwd, err = newSignalForwarder(true); err != nil {
			return 1, err
		}
		defer fwd.stop()
	}
	if status == libmaka.Paused {
		// The process cannot join a frozen cgroup until `resume`, which
		// needs this lock: holding it would deadlock until the timeout.
		op.End()
	}
	if err := ctr.Run(process); err != nil {
		return 1, fmt.Errorf("exec in %s: %w", ctr.ID(), err)
	}
	op.End() // the process is set up: other commands may drive the container
	if err := io.afterStart(); err != nil {
		return 1, err
	}
	pid, err := process.Pid()
	if err != nil {
		return 1, err
	}
	if pidFile != "" {
		if err := libmaka.WritePidFile(pidFile, pid); err != nil {
			return 1, err
		}
	}
	if detach {
		return 0, nil
	}
	return fwd.forward(pid, io), nil
}

// parseProcessFile decodes exec --process's file: errors name the file and
// the key by JSON's terms, never Go's.
func parseProcessFile(path string, data []byte) (*specs.Process, error) {
	if off := libmaka.InvalidUTF8(data); off >= 0 {
		return nil, fmt.Errorf("--process %s: malformed JSON: a byte that is not UTF-8 (at byte %d): JSON text is UTF-8", path, off)
	}
	var p specs.Process
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("--process %s: %w", path, libmaka.JSONError(err, "process"))
	}
	return &p, nil
}

// execSpec builds the process to exec: --process, or the init's process
// spec with the command line and flags applied.
func execSpec(c *cli.Context, base specs.Process) (*specs.Process, error) {
	if path := c.String("process"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--process: %w", err)
		}
		return parseProcessFile(path, data)
	}
	args := c.Args().Tail()
	if len(args) > 0 && args[0] == "--" {
		// `maka exec ID -- CMD -x`: "--" ends maka's options.
		args = args[1:]
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("exec: no command given (and no --process)")
	}
	p := base
	p.Args = args
	p.Terminal = c.Bool("tty")
	p.ConsoleSize = nil
	// A bounded command's relative cwd is below /maka/work, its default.
	bounded := c.IsSet("timeout") || c.IsSet("output-limit")
	switch cwd := c.String("cwd"); {
	case cwd != "" && bounded:
		resolved, err := launch.CommandCwd(cwd)
		if err != nil {
			return nil, fmt.Errorf("--cwd: %w", err)
		}
		p.Cwd = resolved
	case cwd != "":
		p.Cwd = cwd
	case bounded:
		p.Cwd = sandbox.WorkDir
	}
	p.Env = launch.MergeEnv(p.Env, c.StringSlice("env"))
	if u := c.String("user"); u != "" {
		uid, gid, hasGid, err := parseUser(u)
		if err != nil {
			return nil, err
		}
		p.User.UID = uid
		if hasGid {
			p.User.GID = gid
		}
	}
	for _, g := range c.Int64Slice("additional-gids") {
		if g < 0 || g > 1<<32-1 {
			return nil, fmt.Errorf("--additional-gids: %d is out of range", g)
		}
		p.User.AdditionalGids = append(p.User.AdditionalGids, uint32(g))
	}
	if caps := c.StringSlice("cap"); len(caps) > 0 {
		var pc specs.LinuxCapabilities
		if p.Capabilities != nil {
			pc = *p.Capabilities
		}
		for _, cp := range caps {
			cp = strings.ToUpper(cp)
			if !strings.HasPrefix(cp, "CAP_") {
				cp = "CAP_" + cp
			}
			pc.Bounding = append(pc.Bounding, cp)
			pc.Effective = append(pc.Effective, cp)
			pc.Permitted = append(pc.Permitted, cp)
			// As runc: ambient only when the spec has an inheritable set
			// (an ambient capability must also be inheritable).
			if pc.Inheritable != nil {
				pc.Ambient = append(pc.Ambient, cp)
			}
		}
		p.Capabilities = &pc
	}
	if l := c.String("process-label"); l != "" {
		p.SelinuxLabel = l
	}
	if a := c.String("apparmor"); a != "" {
		p.ApparmorProfile = a
	}
	if c.IsSet("no-new-privs") {
		p.NoNewPrivileges = c.Bool("no-new-privs")
	}
	return &p, nil
}

// parseUser parses --user UID[:GID] (numeric, as runc); without a GID the
// process keeps the spec's.
func parseUser(s string) (uid, gid uint32, hasGid bool, err error) {
	u, g, hasGid := strings.Cut(s, ":")
	n, err := strconv.ParseUint(u, 10, 32)
	if err != nil {
		return 0, 0, false, fmt.Errorf("--user %q: UID must be a number", s)
	}
	uid = uint32(n)
	if hasGid {
		m, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return 0, 0, false, fmt.Errorf("--user %q: GID must be a number", s)
		}
		gid = uint32(m)
	}
	return uid, gid, hasGid, nil
}

// execSubCgroup checks exec --cgroup's path (runc's): a sub-cgroup of the
// container's cgroup at dir, which must exist, written relative to it
// ("/" and a leading slash mean the container's own). With cgroup v2 there
// is one path; runc's CONTROLLER:PATH form names cgroup v1 controllers.
func execSubCgroup(dir, sub string) (string, error) {
	if strings.Contains(sub, ":") {
		return "", fmt.Errorf("--cgroup %q: controller-specific paths are cgroup v1's; give one path below the container's cgroup", sub)
	}
	for _, part := range strings.Split(sub, "/") {
		if part == ".." {
			return "", fmt.Errorf("--cgroup %q: bad sub cgroup path: must stay below the container's cgroup (no ..)", sub)
		}
	}
	rel := strings.TrimLeft(filepath.Clean("/"+sub), "/")
	if rel == "" {
		return "", nil
	}
	if dir == "" {
		return "", fmt.Errorf("--cgroup %q: the container's cgroup is not known", sub)
	}
	// The reason ends the error in the kernel's words, as runc's does
	// ("no such file or directory"), without the host path.
	fi, err := os.Lstat(filepath.Join(dir, rel))
	if err == nil && !fi.IsDir() {
		err = unix.ENOTDIR
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("--cgroup %q: no such sub-cgroup of the container's cgroup: %w", sub, err)
	}
	return rel, nil
}

// execBounded runs ps as a bounded command (--timeout, --output-limit):
// launch.ExecQueued's semantics, its output written once it is complete.
// A deadline after dispatch kills every process of the sandbox (it stays,
// stopped, for its owner's `maka delete`).
func execBounded(c *cli.Context, ctr *libmaka.Container, ps *specs.Process, cl *agent.Client) (int, error) {
	for _, f := range []string{"tty", "detach", "console-socket", "pid-file", "preserve-fds", "cgroup"} {
		if c.IsSet(f) {
			return 1, fmt.Errorf("--%s: a bounded command (--timeout, --output-limit) captures its output and runs in a cgroup of its own: drop --%s", f, f)
		}
	}
	// The longest deadline is the policy's the sandbox was created under.
	longest := sandbox.DefaultMaxTimeout
	if pol, err := libmaka.RecordedPolicy(&ctr.Record.Policy, &ctr.Record.Boundary); err != nil {
		return 1, fmt.Errorf("container %s: %w", ctr.ID(), err)
	} else if pol != nil {
		longest = pol.CommandTimeout()
	}
	timeout := c.Duration("timeout")
	switch {
	case !c.IsSet("timeout"):
		timeout = longest
	case timeout <= 0:
		return 1, fmt.Errorf("--timeout %s: must be positive", timeout)
	case timeout > longest:
		return 1, fmt.Errorf("--timeout %s: %w of %s (the policy's maxCommandTimeout)", timeout, sandbox.ErrTimeoutTooLong, longest)
	}
	limit := int64(sandbox.DefaultOutputLimit)
	if c.IsSet("output-limit") {
		n, err := units.RAMInBytes(c.String("output-limit"))
		if err != nil || n <= 0 {
			return 1, fmt.Errorf("--output-limit %q: want a positive size such as 64KiB or 1MiB", c.String("output-limit"))
		}
		limit = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// ^C or a TERM is a cancellation, as a deadline.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	kill := func() error { return ctr.Kill(launch.KillTimeout) }
	var res *launch.Output
	var err error
	if cl != nil {
		defer cl.Close()
		res, err = launch.ExecQueuedAgent(ctx, ctr, cl, ps, launch.Stdio{Stdin: os.Stdin}, limit, kill)
	} else {
		res, err = launch.ExecQueued(ctx, ctr, ps, launch.Stdio{Stdin: os.Stdin}, limit, kill)
	}
	if err != nil {
		return 1, err
	}
	os.Stdout.Write(res.Stdout)
	os.Stderr.Write(res.Stderr)
	return res.ExitCode, nil
}

// initProcess is the init's process spec as maka.json keeps it (nil if it
// keeps none or cannot be read: then no command goes through the agent).
func initProcess(ctr *libmaka.Container) *specs.Process {
	p, err := ctr.Record.Process.Get()
	if err != nil {
		return nil
	}
	return p
}

// agentClient is a client of the sandbox's agent for ps, or nil when its
// init is not the agent or ps needs libcontainer's path (launch.AgentCan,
// and the flags only that path has). A sandbox whose init is the agent but
// whose agent does not answer is an error: its command never runs some
// other way.
func agentClient(c *cli.Context, ctr *libmaka.Container, ps *specs.Process, status libmaka.Status) (*agent.Client, error) {
	if status != libmaka.Running || c.IsSet("cgroup") || c.Int("preserve-fds") > 0 || c.String("console-socket") != "" ||
		!launch.AgentCan(ps, initProcess(ctr)) {
		return nil, nil
	}
	f, err := monitor.DialAgent(ctr.StateDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // its init is not the agent
	}
	if err == nil {
		var cl *agent.Client
		if cl, err = agent.NewClient(f); err == nil {
			return cl, nil
		}
	}
	return nil, fmt.Errorf("exec in %s: its agent: %w", ctr.ID(), err)
}

// execAgent runs ps through the sandbox's agent as runc's exec runs a
// process without a terminal: with maka's stdio, the signals maka gets
// relayed to it, its exit status maka's; --detach returns once it runs.
func execAgent(c *cli.Context, ctr *libmaka.Container, cl *agent.Client, ps *specs.Process, pidFile string) (int, error) {
	defer cl.Close() // a detached command runs on: its end is reported to nobody
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	defer signal.Stop(sigs)
	stdio := make([]*os.File, 3)
	for i, f := range []*os.File{os.Stdin, os.Stdout, os.Stderr} {
		// A closed descriptor of maka's is the command's /dev/null.
		if _, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0); err != nil {
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				return 1, err
			}
			defer null.Close()
			f = null
		}
		stdio[i] = f
	}
	p, err := launch.StartAgent(ctr, cl, ps, stdio[0], stdio[1], stdio[2])
	if errors.Is(err, agent.ErrGone) && !errors.Is(err, agent.ErrTampered) {
		// An attached connection the agent did not take reads as gone.
		return 1, fmt.Errorf("%w (or it serves no further connection: at most %d maka exec at once)", err, agent.MaxClients-1)
	}
	if err != nil {
		return 1, err
	}
	if pidFile != "" {
		if err := libmaka.WritePidFile(pidFile, p.HostPid); err != nil {
			p.Signal(unix.SIGKILL)
			return 1, err
		}
	}
	if c.Bool("detach") {
		return 0, nil
	}
	type exit struct {
		e   agent.Exit
		err error
	}
	done := make(chan exit, 1)
	go func() {
		e, err := p.Wait()
		done <- exit{e, err}
	}()
	for {
		select {
		case x := <-done:
			if x.err != nil {
				return 255, fmt.Errorf("exec in %s: %w", ctr.ID(), x.err)
			}
			return x.e.Code(), nil
		case sig := <-sigs:
			switch sig {
			case unix.SIGURG, unix.SIGPIPE, unix.SIGCHLD, unix.SIGWINCH:
				// The Go runtime's, maka's own, or a terminal's: not the
				// command's (it has none).
			default:
				if s, ok := sig.(unix.Signal); ok {
					p.Signal(s)
				}
			}
		}
	}
}
