package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/maka-runtime/maka/internal/agent"
	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
)

// Defaults of a Manager's commands and transfers, as the bubblewrap backend
// maka's tool sandbox follows has them.
const (
	DefaultMaxTimeout    = libmaka.DefaultMaxCommandTimeout * time.Second
	DefaultOutputLimit   = 1 << 20
	DefaultTransferLimit = 8 << 20
	// WorkDir is where a command's relative working directory resolves.
	WorkDir = launch.WorkDir
)

// Options open a Manager.
type Options struct {
	// Root holds the runtime state (maka's --root; default /run/maka) and
	// StateDir the contract store (--state-dir; default /var/lib/maka).
	Root, StateDir string
	// Policy is the policy every sandbox is checked against (nil: the
	// built-in restricted profile).
	Policy *libmaka.Policy
	// MaxTimeout is the longest deadline a command may ask for (default:
	// the policy's maxCommandTimeout, 180 s unless it says otherwise): a
	// longer one is refused before anything runs. It is also the deadline
	// of a command that asks for none.
	MaxTimeout time.Duration
	// OutputLimit caps a command's stdout and stderr together (default
	// 1 MiB); TransferLimit caps one CopyIn or CopyOut, or the files of
	// one CopyDirIn or CopyDirOut together (default 8 MiB).
	OutputLimit, TransferLimit int64
}

// Manager launches and tracks sandboxes from a Go program. Its sandboxes
// are attached to the program: their monitors run in it, and if it dies
// `maka recover` (or Manager.Recover) reaps them, as it reaps a foreground
// `maka run` whose maka died.
type Manager struct {
	rt   *libmaka.Runtime
	opts Options
	// checks are the host's, probed once at Open.
	checks []libmaka.HostCheck
	mu     sync.Mutex
	// owned are the live sandboxes launched with an owner, by key.
	owned map[string]*Sandbox
	// pools are the prewarmed sandboxes, by configuration (pool.go);
	// closed: Close was called; wg counts the refills running. poolMu
	// guards them (mu is held across an owner's whole launch, which may
	// claim from a pool).
	poolMu sync.Mutex
	pools  map[string]*pool
	closed bool
	wg     sync.WaitGroup
}

// Open opens a Manager on a state root, a contract store and a policy. It
// checks the host first (maka check's checks): a host that cannot run
// sandboxes is refused with libmaka.ErrHostUnfit.
func Open(opts Options) (*Manager, error) {
	if opts.Root == "" {
		opts.Root = "/run/maka"
	}
	if opts.StateDir == "" {
		opts.StateDir = libmaka.DefaultStateDir
	}
	var err error
	for _, d := range []*string{&opts.Root, &opts.StateDir} {
		if *d, err = filepath.Abs(*d); err != nil {
			return nil, err
		}
	}
	if opts.Policy == nil {
		if opts.Policy, err = libmaka.BuiltinPolicy("restricted"); err != nil {
			return nil, err
		}
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = opts.Policy.CommandTimeout()
	}
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = DefaultOutputLimit
	}
	if opts.TransferLimit <= 0 {
		opts.TransferLimit = DefaultTransferLimit
	}
	checks := libmaka.CheckHostSupport()
	if err := libmaka.HostUnfit(checks, false); err != nil {
		return nil, err
	}
	return &Manager{rt: &libmaka.Runtime{Root: opts.Root, StateDir: opts.StateDir}, opts: opts, checks: checks, owned: map[string]*Sandbox{}, pools: map[string]*pool{}}, nil
}

// Request names the sandbox to launch: its id (empty: one from a pool of
// its configuration if one is ready, see Manager.Prewarm, else a new id
// sb-…), and either a bundle
// directory holding config.json (Bundle) or a configuration built in Go
// (Spec, with Bundle the directory a relative root.path is relative to).
// For Exec the sandbox's process should idle (IdleArgs): commands run
// beside it. A process that runs to its end is waited for with Wait.
type Request struct {
	ID     string
	Bundle string
	Spec   *specs.Spec
	// Owner, if set, keys the sandbox to its user: while it lives, no
	// other process may launch one for the same owner (ErrOwnerBusy), and
	// launching again here with the same configuration returns it.
	Owner *Owner
	// Egress, if set, is what the sandbox may reach through maka's proxy:
	// host:port entries (exact names, *.suffix, addresses, CIDRs), each
	// within the policy's egress ceiling. It is the org.maka.egress
	// annotation; the Manager serves the proxy (docs/egress.md).
	Egress []string
}

// Sandbox is a live sandbox of a Manager.
type Sandbox struct {
	m        *Manager
	launched *launch.Launched
	// initDone is closed once the init has been reaped (by the goroutine
	// Launch starts: the init is this process's child), with initCode its
	// exit code and initErr why it could not be had; both are written
	// before the close and read only after it.
	initDone chan struct{}
	initCode int
	initErr  error
	// slot serialises commands: one runs at a time, the others queue with
	// their deadlines running.
	slot chan struct{}
	mu   sync.Mutex
	gone bool
	// owner is the owner key this sandbox holds (nil: none); digest the
	// configuration it was launched with.
	owner  *launch.OwnerLock
	digest string
	// agent is the client of the sandbox's resident agent, whose init it
	// is when its process is IdleArgs and this program carries the agent
	// (nil: commands go through libcontainer's exec path).
	agent *agent.Client
}

// Launch compiles the request's configuration into a boundary contract,
// checks it against the Manager's policy (a refusal is a
// *specconv.RejectedError listing each item, and nothing is created) and
// launches the sandbox on the same path as `maka run --detach`, its monitor
// attached. ctx bounds the launch only.
func (m *Manager) Launch(ctx context.Context, req Request) (*Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.ID != "" && !libmaka.ValidID(req.ID) {
		return nil, fmt.Errorf("sandbox id %q: use letters, digits and _ + - . (not . or ..)", req.ID)
	}
	m.poolMu.Lock()
	closed := m.closed
	m.poolMu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	bundle, spec, err := m.configOf(req)
	if err != nil {
		return nil, err
	}
	if req.Owner == nil {
		return m.obtain(req.ID, bundle, spec, nil, "")
	}
	return m.launchOwned(req, bundle, spec)
}

// configOf is the request's bundle directory and configuration, its egress
// declared.
func (m *Manager) configOf(req Request) (string, *specs.Spec, error) {
	bundle, err := filepath.Abs(req.Bundle)
	if err != nil {
		return "", nil, err
	}
	spec := req.Spec
	if spec == nil {
		if spec, err = specconv.LoadSpec(bundle); err != nil {
			return "", nil, err
		}
	}
	if spec, err = specconv.WithEgress(spec, req.Egress); err != nil {
		return "", nil, err
	}
	return bundle, spec, nil
}

// obtain is the sandbox a request gets: without an id, one claimed from a
// pool of its configuration if one is ready, else a fresh launch (under a
// new id when none was asked for).
func (m *Manager) obtain(id, bundle string, spec *specs.Spec, owner *launch.OwnerLock, digest string) (*Sandbox, error) {
	if id == "" {
		pd, err := poolDigest(bundle, spec)
		if err != nil {
			return nil, err
		}
		if s := m.claim(pd); s != nil {
			s.owner, s.digest = owner, digest
			return s, nil
		}
		id = newID("sb-")
	}
	return m.launch(id, bundle, spec, owner, digest)
}

// launchOwned launches (or finds) the sandbox of an owner.
func (m *Manager) launchOwned(req Request, bundle string, spec *specs.Spec) (*Sandbox, error) {
	if req.Owner.Scope == "" {
		return nil, errors.New("owner: a scope is required")
	}
	data, err := json.Marshal(struct {
		ID, Bundle string
		Spec       *specs.Spec
	}{req.ID, bundle, spec})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	key := launch.Owner(*req.Owner).Key()
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.owned[key]; s != nil && !s.isGone() {
		if s.digest != digest {
			return nil, fmt.Errorf("owner %s: its sandbox %s lives with another configuration (destroy it first)", req.Owner, s.ID())
		}
		return s, nil
	}
	dir, err := launch.OwnersDir(m.rt)
	if err != nil {
		return nil, err
	}
	l, err := launch.LockOwner(dir, key)
	if err != nil {
		return nil, fmt.Errorf("owner %s: %w", req.Owner, err)
	}
	// A dead owner's sandbox not yet purged: that instance goes first
	// (never a later sandbox of its id).
	if prev, err := l.Read(); err != nil || prev != nil {
		if err == nil {
			err = launch.DisposeInstance(m.rt, prev.ID, prev.Created)
		}
		if err != nil {
			l.Release(false)
			return nil, fmt.Errorf("owner %s: its previous sandbox: %w", req.Owner, err)
		}
	}
	s, err := m.obtain(req.ID, bundle, spec, l, digest)
	if err != nil {
		l.Release(true)
		return nil, err
	}
	if err := l.Write(launch.OwnerFile{Owner: launch.Owner(*req.Owner), ID: s.ID(), Created: s.launched.Created, Digest: digest}); err != nil {
		_ = s.Destroy()
		return nil, fmt.Errorf("owner %s: %w", req.Owner, err)
	}
	m.owned[key] = s
	return s, nil
}

// launch compiles and launches one sandbox.
func (m *Manager) launch(id, bundle string, spec *specs.Spec, owner *launch.OwnerLock, digest string) (*Sandbox, error) {
	b, policy, err := launch.Compile(spec, m.opts.Policy, id, bundle, launch.NeverPaths(m.rt.Root, m.rt.StateDir), m.checks)
	if err != nil {
		return nil, err
	}
	if b.Process.Terminal {
		return nil, errors.New("process.terminal: a Manager's sandbox has no terminal (commands' output is captured)")
	}
	p, err := launch.InitProcess(b)
	if err != nil {
		return nil, err
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer null.Close()
	p.Stdin, p.Stdout, p.Stderr = null, null, null
	launched, err := launch.Run(m.rt, launch.Launch{
		ID: id, Bundle: bundle, Boundary: b, Policy: policy,
		Command: "launch", Start: true, Attached: true, Process: p,
	})
	if launched == nil {
		return nil, err
	}
	s := &Sandbox{m: m, launched: launched, initDone: make(chan struct{}), slot: make(chan struct{}, 1), owner: owner, digest: digest, agent: launched.Agent}
	// The init is this process's child: reap it when it ends, and keep
	// its status for Wait.
	go func() {
		st, err := p.Wait()
		s.initCode = launch.ExitCode(st)
		if st == nil && err != nil {
			s.initErr = err
		}
		close(s.initDone)
	}()
	if err != nil {
		// A poststart hook failed and stopped the sandbox: remove it.
		if derr := s.Destroy(); derr != nil {
			logrus.Warn(derr)
		}
		return nil, err
	}
	return s, nil
}

// ID is the sandbox's container id (maka state, maka violations).
func (s *Sandbox) ID() string { return s.launched.Container.ID() }

// Boundary is the contract the sandbox was launched under.
func (s *Sandbox) Boundary() *libmaka.Boundary {
	// A Sandbox is made only by launch.Run, whose record holds the
	// boundary it compiled: Get decodes nothing and cannot fail.
	b, _ := s.launched.Container.Record.Boundary.Get()
	return b
}

// Violations are the sandbox's violation records so far, identical ones
// folded (Record.Repeat, Record.Last) as `maka violations` shows them.
func (s *Sandbox) Violations() ([]monitor.Record, error) {
	recs, err := monitor.ReadJournal(filepath.Join(s.launched.Container.StateDir(), monitor.JournalFile))
	return monitor.Fold(recs), err
}

// Destroy kills the sandbox and everything in it and removes it: its
// cgroup, mounts, state, record and user-namespace ids. The monitor
// records its peak usage first. Destroying twice is not an error.
func (s *Sandbox) Destroy() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.destroyLocked()
}

func (s *Sandbox) isGone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone
}

func (s *Sandbox) destroyLocked() (err error) {
	if s.gone {
		return nil
	}
	s.gone = true
	// The owner's key goes with the sandbox, unless it could not be
	// removed: then it is kept, for Purge to find once this process ends.
	defer func() { s.owner.Release(err == nil) }()
	ctr := s.launched.Container
	op, err := s.m.rt.Begin(ctr.ID(), "destroy")
	if err != nil {
		return err
	}
	defer op.End()
	// A sandbox replaced meanwhile (deleted and created again by someone
	// else) is not ours to remove.
	if !op.OwnedBySelf() {
		return nil
	}
	if s.agent != nil {
		s.agent.Close()
	}
	// Why its monitor killed it is moot once it is being removed.
	finish := func() { _ = s.launched.Finish() }
	if err := op.Teardown(ctr, finish); err != nil {
		return fmt.Errorf("destroy %s: %w", ctr.ID(), err)
	}
	return nil
}

// Purge destroys the sandboxes of scope's owners whose process died, and
// reports those busy (their owner lives) or failed (kept for retry).
func (m *Manager) Purge(scope string) ([]PurgeResult, error) {
	got, err := launch.Purge(m.rt, scope)
	if err != nil {
		return nil, err
	}
	out := make([]PurgeResult, len(got))
	for i, r := range got {
		out[i] = PurgeResult{Owner: Owner(r.Owner), ID: r.ID, Result: r.Result, Error: r.Error}
	}
	return out, nil
}

// Recover reaps what crashed programs and maka commands left behind (the
// sandboxes of a Manager whose program died among them), as `maka recover`.
func (m *Manager) Recover() ([]libmaka.RecoveryResult, error) {
	return m.rt.Recover(nil)
}

// RecoverAndRelaunch reaps as Recover does, and creates again each reaped
// sandbox that was detached (maka create, maka run --detach: after a
// reboot, or a lost state root) from its recorded boundary, checked again
// against the Manager's policy, as `maka recover --relaunch` does: a
// boundary today's policy refuses is not relaunched, and the result's
// RelaunchError says why (BOUNDARY_REJECTED and its items). A relaunched
// sandbox is not the Manager's: it lives detached, watched by a monitor
// process, until `maka delete`. monitor is the program that process runs:
// maka or maka-monitor (a Go program embedding libmaka cannot be one).
func (m *Manager) RecoverAndRelaunch(monitor string) ([]libmaka.RecoveryResult, error) {
	if monitor == "" {
		return nil, errors.New("relaunch: the monitor program (maka or maka-monitor) is required")
	}
	// Opened once, and exec'd from this descriptor for every sandbox.
	exe, err := os.Open(monitor)
	if err != nil {
		return nil, fmt.Errorf("relaunch: the monitor program: %w", err)
	}
	defer exe.Close()
	var launched []*launch.Launched
	results, err := m.rt.Recover(func(op *libmaka.Op, rec *libmaka.ContainerRecord) (libmaka.Status, error) {
		status, l, err := launch.Relaunch(m.rt, op, rec, m.opts.Policy, []*os.File{exe}, m.checks)
		if status == libmaka.Running {
			launched = append(launched, l)
		}
		return status, err
	})
	// Their poststart hooks, once no lock is held (a hook may call maka
	// on the id), as after start.
	for _, l := range launched {
		if err := launch.Poststart(l.Container); err != nil {
			logrus.Warnf("recover: %v (the relaunched sandbox is stopped)", err)
		}
	}
	return results, err
}

// BoundaryViolation is the error of a command whose sandbox the monitor
// destroyed for a violation (or its timeout): Record is what it did, Code()
// SANDBOX_BOUNDARY_VIOLATION or SANDBOX_TIMEOUT, as the contract document's
// e.code and e.details.
type BoundaryViolation = monitor.KilledError

// target is the sandbox as a file transfer reaches it.
func (s *Sandbox) target() (libmaka.Target, error) {
	st, err := s.launched.Container.Container.State()
	if err != nil {
		return libmaka.Target{}, err
	}
	b := s.Boundary()
	return libmaka.Target{Pid: s.launched.Pid, StartTime: st.InitProcessStartTime, UIDMappings: b.UIDMappings, GIDMappings: b.GIDMappings}, nil
}

// CopyIn writes r to path in the sandbox (relative: under /maka/work), as
// its root with the permission bits of mode, through no symbolic link and
// only on a writable mount; more than the Manager's TransferLimit fails
// (libmaka.ErrTransferTooLarge) and leaves no file. The FileInfo is the
// sandbox's view.
func (s *Sandbox) CopyIn(path string, r io.Reader, mode fs.FileMode) (libmaka.FileInfo, error) {
	t, err := s.target()
	if err != nil {
		return libmaka.FileInfo{}, err
	}
	return libmaka.CopyIn(t, path, r, mode, s.m.opts.TransferLimit)
}

// CopyOut writes the regular file at path in the sandbox to w, through no
// symbolic link; a file over the Manager's TransferLimit fails before
// anything is written (libmaka.ErrTransferTooLarge).
func (s *Sandbox) CopyOut(path string, w io.Writer) (libmaka.FileInfo, error) {
	t, err := s.target()
	if err != nil {
		return libmaka.FileInfo{}, err
	}
	return libmaka.CopyOut(t, path, w, s.m.opts.TransferLimit)
}

// CopyDirIn copies the host directory src to path in the sandbox (relative:
// under /maka/work), a new directory (an existing path is refused, never
// merged into), as libmaka.CopyDirIn: regular files and directories with
// their permission bits, as the sandbox's root, only on a writable mount;
// links, FIFOs, sockets and devices are skipped and listed in the result.
// More than the Manager's TransferLimit in all (or libmaka's entry and
// depth caps) fails (libmaka.ErrTransferTooLarge) and leaves nothing.
func (s *Sandbox) CopyDirIn(src, path string) (libmaka.DirResult, error) {
	t, err := s.target()
	if err != nil {
		return libmaka.DirResult{}, err
	}
	return libmaka.CopyDirIn(t, src, path, s.m.opts.TransferLimit)
}

// CopyDirOut copies the sandbox's directory at path to dst on the host, a
// new directory, as libmaka.CopyDirOut: through no link, skipping (and
// listing) links, FIFOs, sockets and devices, capped as CopyDirIn, leaving
// nothing at dst on failure.
func (s *Sandbox) CopyDirOut(path, dst string) (libmaka.DirResult, error) {
	t, err := s.target()
	if err != nil {
		return libmaka.DirResult{}, err
	}
	return libmaka.CopyDirOut(t, path, dst, s.m.opts.TransferLimit)
}
