// Package launch is maka's one launch path: a checked boundary contract
// becomes a running sandbox (Run), used alike by `maka create`, `maka
// run`, `maka recover --relaunch` and the Go API (libmaka/sandbox's
// Manager). It also holds what the CLI and the Go API share beyond it:
// compiling a config.json (Compile), bounded commands (RunBounded,
// ExecQueued), the environment of exec'd processes (ExecHome) and owner
// keys (LockOwner, Purge). It is internal: embedders use libmaka/sandbox.
package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/maka-runtime/maka/internal/agent"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// KillTimeout bounds how long a failed launch or a removal waits for a
// killed init to go: the teardown's.
const KillTimeout = libmaka.KillTimeout

// Launch is one sandbox to create and, with Start, to start.
type Launch struct {
	ID string
	// Bundle is the bundle's absolute path: the record's, the hooks' state.
	Bundle string
	// Boundary is the contract, compiled and checked (Compile); Policy the
	// effective policy it was checked against.
	Boundary *libmaka.Boundary
	Policy   *libmaka.Policy
	Options  libmaka.LaunchOptions
	// Command names the launch in the id's lock and in errors: "create",
	// "run", "recover".
	Command string
	// Start runs the user's process once the monitor is attached (run);
	// otherwise the init waits for `maka start` (create).
	Start bool
	// Attached: the sandbox lives as long as this process (a foreground
	// run, a Manager's sandboxes): its monitor runs here and its record
	// names this process, so `maka recover` reaps it if this process dies.
	// Otherwise a monitor process of its own watches it (Monitors).
	Attached bool
	// Monitors are the programs to try for a detached sandbox's monitor
	// process, as descriptors (Executables; monitor.Args is their command
	// line).
	Monitors []*os.File
	// Process is the init's process (InitProcess), its stdio set up.
	Process *libcontainer.Process
	// Started, if set, runs once the init has started, before the user's
	// process may run (a foreground terminal's hand-over).
	Started func() error
	// PidFile, if set, receives the init's pid (written atomically).
	PidFile string
	// Op is the id's lock when the caller holds it (recover --relaunch);
	// nil: Run takes it, and runs the poststart hooks once it is released.
	Op *libmaka.Op
}

// Launched is a sandbox Run created.
type Launched struct {
	Container *libmaka.Container
	// Pid is the init's host pid.
	Pid int
	// Created is when its record was first published: with the id, it
	// names this instance of the sandbox.
	Created time.Time
	// Agent is the client of the sandbox's resident agent, for an
	// attached sandbox whose init is the agent (nil otherwise); a detached
	// sandbox's monitor holds its agent and serves it to `maka exec`.
	Agent *agent.Client
	mon   *monitor.Monitor // attached sandboxes only
}

// InitProcess is the init's process of boundary b, as libcontainer starts
// it; the caller sets its stdio.
func InitProcess(b *libmaka.Boundary) (*libcontainer.Process, error) {
	p, err := specconv.NewProcess(libmaka.ThisHost(), specconv.ProcessOf(b), true)
	if err != nil {
		return nil, err
	}
	p.LogLevel = strconv.Itoa(int(logrus.GetLevel()))
	return p, nil
}

// Run creates the sandbox l describes under the id's lock: it leases its
// ids and builds its root (enforce), publishes the record before the
// cgroup exists, starts the monitor listening, starts the init, attaches
// the monitor and, with Start, lets the user's process run. On any error
// everything it made is removed again: the container here, the rest
// (record, lease, scaffold) by the lock's End.
func Run(rt *libmaka.Runtime, l Launch) (*Launched, error) {
	if l.Op != nil {
		return create(rt, l.Op, l)
	}
	op, err := rt.Begin(l.ID, l.Command)
	if err != nil {
		return nil, err
	}
	phase.Mark("store: read")
	s, err := create(rt, op, l)
	op.End()
	if err == nil && l.Start {
		// After the lock is released: a hook may call maka on the id.
		// A failing hook has stopped the sandbox: s is still returned,
		// for the caller to end it as it ends a sandbox whose process
		// exited.
		err = s.Poststart()
	}
	return s, err
}

func create(rt *libmaka.Runtime, op *libmaka.Op, l Launch) (_ *Launched, err error) {
	b := l.Boundary
	conv, err := enforce(op, b, specconv.Options{
		ID:           l.ID,
		NoPivotRoot:  l.Options.NoPivot,
		NoNewKeyring: l.Options.NoNewKeyring,
		Rootless:     l.Policy.Rootless != nil,
	})
	if err != nil {
		return nil, err
	}
	stateDir := filepath.Join(rt.Root, l.ID)
	if specconv.UsesNotify(conv.Config.Seccomp) {
		// Always maka's: a listenerPath from config.json is a host socket
		// the sandbox's author would have maka dial.
		conv.Config.Seccomp.ListenerPath = filepath.Join(stateDir, monitor.SocketFile)
		conv.Config.Seccomp.ListenerMetadata = ""
	}
	ctr, err := rt.Create(op, conv.Config, libmaka.Record{
		Poststart: conv.Poststart,
		Poststop:  conv.Poststop,
		Process:   libmaka.Hold(specconv.ProcessOf(b)),
		Boundary:  libmaka.Hold(b),
		Policy:    libmaka.Hold(l.Policy),
	}, l.Bundle, l.Options)
	if err != nil {
		return nil, err
	}
	s := &Launched{Container: ctr}
	var w *watch
	// One cleanup for every failure from here on: the monitor stops, and
	// libmaka's one teardown ends the container created here (processes,
	// libcontainer's destroy, cgroup, state, record, then the poststop
	// hooks); if that fails, op.End's reap tries again.
	defer func() {
		if err != nil {
			w.abort()
			if terr := op.Teardown(ctr, nil); terr != nil {
				logrus.Warn(terr)
			}
		}
	}()
	// The monitor listens before the init starts: libcontainer hands it
	// the seccomp notification fd during Start.
	if w, err = startWatch(rt.Root, stateDir, l); err != nil {
		return nil, fmt.Errorf("%s %s: %w", l.Command, l.ID, err)
	}
	phase.Mark("monitor listen")
	holder, release, err := agentInit(b, l.Process)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", l.Command, l.ID, err)
	}
	w.agentEnd = holder
	err = ctr.Start(l.Process)
	release()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", l.Command, l.ID, err)
	}
	phase.Mark("init: namespaces, mounts, seccomp")
	// The init as libcontainer knows it, parked on the exec fifo (alive):
	// start and delete ask the kernel about it (libmaka/initstatus.go).
	if st, serr := ctr.Container.State(); serr == nil {
		op.SetInit(st.InitProcessPid, st.InitProcessStartTime)
	}
	if l.Command == "create" {
		libmaka.CrashPoint("create:init-spawned")
	}
	if l.Started != nil {
		if err = l.Started(); err != nil {
			return nil, err
		}
	}
	if s.Pid, err = l.Process.Pid(); err != nil {
		return nil, err
	}
	// The init's address-space limits, now that it is parked on the exec
	// fifo with its seccomp filter loaded (specconv.InitRlimits).
	if err = ctr.SetInitRlimits(s.Pid, specconv.InitRlimits(specconv.ProcessOf(b))); err != nil {
		return nil, fmt.Errorf("%s %s: %w", l.Command, l.ID, err)
	}
	if b.Network.Mode == libmaka.NetworkEgress {
		// Made in the init's network namespace while the init is parked:
		// the port is the proxy's before any code of the sandbox's runs.
		if w.egressLn, err = libmaka.EgressListen(s.Pid, b.Network.Proxy, b.Users.Namespace); err != nil {
			return nil, fmt.Errorf("%s %s: %w", l.Command, l.ID, err)
		}
		phase.Mark("egress listener")
	}
	if s.Agent, err = w.attach(ctr.CgroupPath(), s.Pid, egressConfig(b, l.Policy)); err != nil {
		return nil, err
	}
	phase.Mark("monitor attach")
	if l.Start {
		// Only now, the monitor holding the init's tmpfs mounts, may the
		// user's process run (and end).
		if err = ctr.Exec(); err != nil {
			return nil, fmt.Errorf("%s %s: %w", l.Command, l.ID, err)
		}
		phase.Mark("start")
		if l.Command == "run" {
			libmaka.CrashPoint("run:init-spawned")
		}
	}
	if l.PidFile != "" {
		if err = libmaka.WritePidFile(l.PidFile, s.Pid); err != nil {
			return nil, err
		}
	}
	stage := libmaka.StageCreated
	if l.Start {
		stage = libmaka.StageRunning
	}
	if w.detached != nil && op.Record != nil {
		op.Record.MonitorCgroup = w.detached.Cgroup
	}
	if err = op.Commit(stage, l.Attached); err != nil {
		return nil, err
	}
	phase.Mark("store: commit")
	if op.Record != nil {
		s.Created = op.Record.Created
	}
	s.mon = w.mon
	return s, nil
}

// MonitorErr is why the attached monitor destroyed the sandbox, if it did
// (a *monitor.KilledError); nil for a detached sandbox.
func (s *Launched) MonitorErr() error {
	if s.mon == nil {
		return nil
	}
	return s.mon.Err()
}

// Poststart runs the poststart hooks once the user process has started
// (see the function Poststart).
func (s *Launched) Poststart() error { return Poststart(s.Container) }

// Finish stops an attached sandbox's monitor once its process has exited
// (before its cgroup goes) and returns why the monitor killed the sandbox,
// if it did (a *monitor.KilledError).
func (s *Launched) Finish() error {
	closeClient(s.Agent)
	if s.mon == nil {
		return nil
	}
	s.mon.Close()
	return s.mon.Err()
}

// Poststart runs ctr's poststart hooks (after start, the id's lock
// released). As the runtime spec (1.3: "the runtime MUST generate an
// error, stop the container") and runc: the first hook that fails is the
// error, the hooks after it do not run, and the sandbox's processes are
// killed; it stays, stopped, for its caller to remove.
func Poststart(ctr *libmaka.Container) error {
	if len(ctr.Record.Poststart) == 0 {
		return nil
	}
	st, err := ctr.OCIState()
	if err == nil {
		err = libmaka.RunHooks("poststart", ctr.Record.Poststart, st)
	}
	if err != nil {
		if kerr := ctr.Kill(KillTimeout); kerr != nil {
			logrus.Warn(kerr)
		}
		return fmt.Errorf("container %s: %w", ctr.ID(), err)
	}
	return nil
}

// enforce leases the sandbox's ids (under op, the id's lock: the lease is
// given back if the create fails), opens and checks its host paths once
// and stages mounts from those descriptors (the root, bind sources,
// namespace paths: libcontainer is handed only the staged paths), builds
// its root from the staged root, and derives libcontainer's configuration
// from the boundary alone.
func enforce(op *libmaka.Op, b *libmaka.Boundary, opts specconv.Options) (*specconv.Converted, error) {
	if b.Users.Source == libmaka.IDsFromPool {
		if err := op.LeaseIDs(b, *b.Users.Pool); err != nil {
			return nil, err
		}
		phase.Mark("id lease")
	}
	staged, err := op.StageBoundary(b)
	if err != nil {
		return nil, err
	}
	phase.Mark("stage host paths")
	if _, err := op.BuildOverlayRoot(b, staged); err != nil {
		return nil, err
	}
	if err := op.BuildRoot(b, staged); err != nil {
		return nil, err
	}
	libmaka.CrashPoint(op.Command + ":root-built")
	phase.Mark("root build")
	opts.Staged = staged
	conv, err := specconv.ToLibcontainer(libmaka.ThisHost(), b, opts)
	phase.Mark("convert")
	return conv, err
}

// watch is the monitor of one sandbox being launched: in this process
// (attached) or in a monitor process of its own (detached).
type watch struct {
	tmpfs    []string         // the container paths of its writable tmpfs mounts
	mon      *monitor.Monitor // attached
	detached *monitor.Detached
	// egressLn is the egress proxy's listener (a sandbox under egress),
	// agentEnd the holder's end of its agent (its init is the agent),
	// each until the monitor takes it at attach.
	egressLn, agentEnd *os.File
}

// egressConfig is the egress the monitor serves for b under policy p (nil:
// b has none).
func egressConfig(b *libmaka.Boundary, p *libmaka.Policy) *monitor.EgressConfig {
	if b.Network.Mode != libmaka.NetworkEgress {
		return nil
	}
	return &monitor.EgressConfig{
		List:        b.Network.Egress,
		MaxConns:    p.EgressLimits.Connections,
		IdleTimeout: time.Duration(p.EgressLimits.IdleTimeout) * time.Second,
		Bytes:       p.EgressLimits.Bytes,
		OnRefusal:   p.OnEgressRefusal,
	}
}

// startWatch starts the sandbox's monitor, listening, before its init
// starts.
func startWatch(root, stateDir string, l Launch) (*watch, error) {
	cfg := monitor.Config{
		ID: l.ID, StateDir: stateDir, OnViolation: l.Policy.OnViolation,
		Timeout:     time.Duration(l.Boundary.Limits.Timeout) * time.Second,
		GetcwdErrno: specconv.InitGetcwdErrno(l.Boundary),
	}
	ln, err := monitor.Listen(stateDir)
	if err != nil {
		return nil, err
	}
	// The journal exists from the start: `maka events` follows it.
	j, err := monitor.OpenJournal(filepath.Join(stateDir, monitor.JournalFile))
	if err != nil {
		ln.Close()
		return nil, err
	}
	j.Close()
	w := &watch{}
	for _, wm := range l.Boundary.Writable {
		if wm.Kind == "tmpfs" {
			w.tmpfs = append(w.tmpfs, wm.Path)
		}
	}
	if !l.Attached {
		if w.detached, err = monitor.Spawn(l.Monitors, root, cfg, ln); err != nil {
			return nil, err
		}
		return w, nil
	}
	if w.mon, err = monitor.New(cfg); err != nil {
		ln.Close()
		return nil, err
	}
	w.mon.Serve(ln)
	return w, nil
}

// attach tells the monitor the init is running (its cgroup now exists,
// its mounts are set up) and waits until the monitor is attached: it then
// holds the sandbox's tmpfs mounts, and only then may the user's process
// run (and end, and its init be reaped). The monitor takes the agent's
// holder end; an attached sandbox's launcher gets a client of the agent
// of its own.
func (w *watch) attach(cgroup string, initPid int, eg *monitor.EgressConfig) (*agent.Client, error) {
	ln, holder := w.egressLn, w.agentEnd
	w.egressLn, w.agentEnd = nil, nil
	if w.detached != nil {
		for _, f := range []*os.File{ln, holder} {
			if f != nil {
				defer f.Close() // the monitor has its own copy
			}
		}
		return nil, w.detached.Attach(monitor.Info{Cgroup: cgroup, InitPid: initPid, Tmpfs: w.tmpfs, Egress: eg, Agent: holder != nil}, ln, holder)
	}
	var cl *agent.Client
	if holder != nil {
		// The client's socket is the holder's own: both ends must close
		// before the agent (and the sandbox) ends.
		dup, err := dupFile(holder)
		if err == nil {
			cl, err = agent.NewClient(dup)
		}
		if err != nil {
			holder.Close()
			if ln != nil {
				ln.Close()
			}
			return nil, err
		}
		if err := w.mon.ServeAgent(holder); err != nil {
			cl.Close()
			if ln != nil {
				ln.Close()
			}
			return nil, err
		}
	}
	if ln != nil {
		if err := w.mon.ServeEgress(ln, *eg); err != nil {
			closeClient(cl)
			return nil, err
		}
	}
	if cgroup == "" {
		w.mon.MarkAttached()
		return cl, nil
	}
	if err := w.mon.Attach(cgroup, initPid, w.tmpfs); err != nil {
		closeClient(cl)
		return nil, err
	}
	return cl, nil
}

func closeClient(cl *agent.Client) {
	if cl != nil {
		cl.Close()
	}
}

// dupFile is a descriptor of f's open file of its own (close-on-exec).
func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// abort gives up on a launch that failed: the monitor stops.
func (w *watch) abort() {
	if w != nil && w.egressLn != nil {
		w.egressLn.Close()
	}
	if w != nil && w.agentEnd != nil {
		w.agentEnd.Close()
	}
	switch {
	case w == nil:
	case w.mon != nil:
		w.mon.Close()
	case w.detached != nil:
		w.detached.Abort()
	}
}

// Executables are the programs for a detached monitor, best first, as
// descriptors (monitor.Spawn execs them, never a name): the small monitor
// if there is one (small, may be nil), then this program itself (maka:
// `maka monitor`), the very file this process runs.
func Executables(small *os.File) []*os.File {
	var exes []*os.File
	if small != nil {
		exes = append(exes, small)
	}
	if self, err := selfExecutable(); err == nil {
		exes = append(exes, self)
	}
	return exes
}

// selfExecutable is this process's own program, opened once.
var selfExecutable = sync.OnceValues(func() (*os.File, error) {
	return os.Open("/proc/self/exe")
})
