package libmaka

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/utils"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// Status is a container's lifecycle state, as the OCI runtime spec names it.
type Status string

const (
	Created Status = "created"
	Running Status = "running"
	Paused  Status = "paused"
	Stopped Status = "stopped"
)

// Runtime is a state root holding containers (runc's --root), and the
// contract store of that root under StateDir (DefaultStateDir if empty).
type Runtime struct {
	Root     string
	StateDir string
}

// Store opens the root's contract store; see OpenStore for create.
func (rt *Runtime) Store(create bool) (*Store, error) {
	dir := rt.StateDir
	if dir == "" {
		dir = DefaultStateDir
	}
	return OpenStore(dir, rt.Root, create)
}

// Record is what maka keeps next to libcontainer's state.json, in
// <root>/<id>/maka.json: what libcontainer cannot carry for us.
type Record struct {
	// Poststart hooks are kept out of libcontainer's config: libcontainer
	// v1.5.3 runs them at create, the runtime spec says after start.
	Poststart []specs.Hook `json:"poststart,omitempty"`
	// Poststop hooks too: the teardown runs them once everything else is
	// gone, and a failing one is a warning (the spec's step 13).
	Poststop []specs.Hook `json:"poststop,omitempty"`
	// Process is the init's process spec: the base of `exec` (environment,
	// user, capabilities), so that exec never reads config.json again.
	Process Lazy[specs.Process] `json:"process,omitzero"`
	// Boundary is the contract the container was created under, and
	// Policy the (effective) policy it was checked against: exec is held
	// to the same policy. Like Process, decoded only by the commands that
	// use them (lazy.go): every command loads this file.
	Boundary Lazy[Boundary] `json:"boundary,omitzero"`
	Policy   Lazy[Policy]   `json:"policy,omitzero"`
}

const recordFile = "maka.json"

// Container is one container under a Runtime.
type Container struct {
	*libcontainer.Container
	rt     *Runtime
	Record Record
	// held is the contract record as the teardown now running read it
	// under the id's lock (nil: read the store).
	held *ContainerRecord
}

// contractRecord is c's record in the contract store: the one the teardown
// holds, else read.
func (c *Container) contractRecord() (*ContainerRecord, error) {
	if c.held != nil {
		return c.held, nil
	}
	store, err := c.rt.Store(false)
	if err != nil || store == nil {
		return nil, err
	}
	return store.Get(c.ID())
}

// Create sets up a new container under op (the id's lock, taken by
// rt.Begin): it publishes the record, then creates libcontainer's state and
// the cgroup; Start or Run then spawns the init. Nothing exists on the host
// before the record is on disk, so a crash at any point leaves only what
// the record names. It refuses a host without cgroup v2 before anything is
// touched. If the command fails or dies before op.Commit, op.End (or the
// next command, or `maka recover`) removes what was made.
func (rt *Runtime) Create(op *Op, config *configs.Config, rec Record, bundle string, opts LaunchOptions) (*Container, error) {
	id := op.ID
	if err := CheckCgroupV2(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(rt.Root, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: state root: %w", id, err)
	}
	if err := CheckPrivateDir(rt.Root); err != nil {
		return nil, fmt.Errorf("create %s: --root: %w", id, err)
	}
	// Under the lock, a record or a state dir means the id is taken: the
	// record is then never overwritten, so it never names another
	// container's cgroup.
	if _, err := os.Stat(filepath.Join(rt.Root, id)); op.Record != nil || err == nil {
		return nil, containerError(id, libcontainer.ErrExist)
	}
	cgroupPath, err := placeCgroup(id, config, rec)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	if err := op.publishFirst(&ContainerRecord{
		Bundle:     bundle,
		CgroupPath: cgroupPath,
		Created:    time.Now().UTC(),
		Options:    opts,
		Boundary:   rec.Boundary,
		Policy:     rec.Policy,
	}); err != nil {
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	phase.Mark("store: record")
	CrashPoint(op.Command + ":record-published")
	if CrashWanted(op.Command + ":init-setup") {
		addCrashHook(config, op.Command+":init-setup")
	}
	lc, err := libcontainer.Create(rt.Root, id, config)
	if err != nil {
		return nil, containerError(id, err)
	}
	phase.Mark("libcontainer create")
	c := &Container{Container: lc, rt: rt, Record: rec}
	// maka makes the (empty) cgroup itself, so that it exists only once
	// the record naming it is on disk, and records its id; libcontainer
	// joins it at Start.
	if err := op.makeCgroup(cgroupPath); err != nil {
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	CrashPoint(op.Command + ":cgroup-created")
	if err := writeJSONAtomic(filepath.Join(rt.Root, id, recordFile), rec); err != nil {
		return nil, fmt.Errorf("create %s: %w", id, err)
	}
	phase.Mark("cgroup")
	return c, nil
}

// cgroupDir is the cgroup v2 directory libcontainer will use for config.
func cgroupDir(config *configs.Config) (string, error) {
	m, err := manager.New(config.Cgroups)
	if err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	p := m.Path("")
	if !cleanAbs(p) || !strings.HasPrefix(p, cgroupRoot+"/") {
		return "", fmt.Errorf("cgroup path %q is not below %s", p, cgroupRoot)
	}
	return p, nil
}

// addCrashHook makes the create die while libcontainer sets up the init:
// it is in its cgroup and has done its mounts (createRuntime hooks run
// then), and no state.json exists yet. Only for MAKA_TEST_CRASH_AT.
func addCrashHook(config *configs.Config, stage string) {
	if config.Hooks == nil {
		config.Hooks = configs.Hooks{}
	}
	config.Hooks[configs.CreateRuntime] = append(config.Hooks[configs.CreateRuntime],
		configs.NewFunctionHook(func(*specs.State) error {
			CrashPoint(stage)
			return nil
		}))
}

// Load returns the container id; a missing one gives an error wrapping ErrNotExist.
func (rt *Runtime) Load(id string) (*Container, error) {
	if id == "" {
		return nil, errors.New("container id cannot be empty")
	}
	if !ValidID(id) {
		// libcontainer would lstat the id as a path ("file name too
		// long" for a 1,000-character id).
		return nil, InvalidIDError(id)
	}
	lc, err := libcontainer.Load(rt.Root, id)
	if err != nil {
		return nil, containerError(id, err)
	}
	phase.Mark("load: libcontainer")
	c := &Container{Container: lc, rt: rt}
	if err := c.readRecord(); err != nil {
		return nil, err
	}
	return c, nil
}

// readRecord reads maka's record beside libcontainer's state (none: an
// empty record).
func (c *Container) readRecord() error {
	r, err := readRecord(c.rt.Root, c.ID())
	if err == nil {
		c.Record = r
	}
	return err
}

func readRecord(root, id string) (Record, error) {
	var r Record
	data, err := os.ReadFile(filepath.Join(root, id, recordFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &r); err != nil {
			return Record{}, fmt.Errorf("container %s: %s: %w", id, recordFile, JSONError(err, recordFile))
		}
	case !errors.Is(err, os.ErrNotExist):
		return Record{}, fmt.Errorf("container %s: %w", id, err)
	}
	return r, nil
}

// Hooks is maka's record beside libcontainer's state (maka.json, read
// alone): the poststart and poststop hooks.
func (op *Op) Hooks() (Record, error) { return readRecord(op.rt.Root, op.ID) }

// Load loads op's container.
func (op *Op) Load() (*Container, error) { return op.rt.Load(op.ID) }

// IDs lists the ids of the containers under the root, sorted.
func (rt *Runtime) IDs() ([]string, error) {
	entries, err := os.ReadDir(rt.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// RemoveLeftovers removes the state directory of a container that can no
// longer be loaded (e.g. a create that died before state.json was written).
func (rt *Runtime) RemoveLeftovers(id string) error {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return fmt.Errorf("invalid container id %q", id)
	}
	return os.RemoveAll(filepath.Join(rt.Root, id))
}

// Status maps libcontainer's status to the OCI names.
func (c *Container) Status() (Status, error) {
	s, err := c.Container.Status()
	if err != nil {
		return "", fmt.Errorf("container %s: %w", c.ID(), err)
	}
	switch s {
	case libcontainer.Created:
		return Created, nil
	case libcontainer.Running:
		return Running, nil
	case libcontainer.Paused:
		return Paused, nil
	}
	return Stopped, nil
}

// Signal sends sig to the container's init.
func (c *Container) Signal(sig os.Signal) error {
	return containerError(c.ID(), c.Container.Signal(sig))
}

// State is the JSON document `maka state` prints: runc's shape, which
// containerd and conmon parse.
type State struct {
	OCIVersion  string            `json:"ociVersion"`
	ID          string            `json:"id"`
	Pid         int               `json:"pid"`
	Status      Status            `json:"status"`
	Bundle      string            `json:"bundle"`
	Rootfs      string            `json:"rootfs"`
	Created     time.Time         `json:"created"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Owner       string            `json:"owner"`
	// UIDMappings and GIDMappings are the user namespace's, as applied
	// (none: the sandbox's ids are the host's).
	UIDMappings []specs.LinuxIDMapping `json:"uidMappings,omitempty"`
	GIDMappings []specs.LinuxIDMapping `json:"gidMappings,omitempty"`
	// Orphaned is set when the container is the leftover of a maka that
	// died mid-operation (or whose runtime state is gone): why.
	Orphaned string `json:"orphaned,omitempty"`
}

// State reports the container's current state.
func (c *Container) State() (*State, error) {
	st, err := c.Container.State()
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.ID(), err)
	}
	status, err := c.Status()
	if err != nil {
		return nil, err
	}
	pid := st.InitProcessPid
	if status == Stopped {
		pid = 0
	}
	bundle, annotations := utils.Annotations(st.Config.Labels)
	// The root the contract names: libcontainer's is the staged clone
	// (or the scaffold) maka handed it, gone once the create ended.
	rootfs := st.Config.Rootfs
	if b, err := HeadOf(&c.Record.Boundary); err == nil && b != nil && b.Rootfs.Path != "" {
		rootfs = b.Rootfs.Path
	}
	return &State{
		OCIVersion:  specs.Version,
		ID:          st.ID,
		Pid:         pid,
		Status:      status,
		Bundle:      bundle,
		Rootfs:      rootfs,
		Created:     st.Created,
		Annotations: annotations,
		Owner:       c.owner(),
		UIDMappings: idMappings(st.Config.UIDMappings),
		GIDMappings: idMappings(st.Config.GIDMappings),
	}, nil
}

func idMappings(ms []configs.IDMap) []specs.LinuxIDMapping {
	var out []specs.LinuxIDMapping
	for _, m := range ms {
		out = append(out, specs.LinuxIDMapping{ContainerID: uint32(m.ContainerID), HostID: uint32(m.HostID), Size: uint32(m.Size)})
	}
	return out
}

// OCIState is the state passed to hooks.
func (c *Container) OCIState() (*specs.State, error) {
	s, err := c.Container.OCIState()
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.ID(), err)
	}
	return s, nil
}

// owner names the user owning the container's state directory.
func (c *Container) owner() string {
	fi, err := os.Stat(filepath.Join(c.rt.Root, c.ID()))
	if err != nil {
		return ""
	}
	uid := fi.Sys().(*syscall.Stat_t).Uid
	if u, err := user.LookupId(strconv.Itoa(int(uid))); err == nil {
		return u.Username
	}
	return "#" + strconv.Itoa(int(uid))
}

// CgroupPath is the container's cgroup v2 directory (empty if unknown).
func (c *Container) CgroupPath() string {
	st, err := c.Container.State()
	if err != nil {
		return ""
	}
	return st.CgroupPaths[""]
}

// Kill kills every process of the container at once and waits (up to
// timeout) for its init to be gone. A container whose init already exited
// is not an error.
func (c *Container) Kill(timeout time.Duration) error {
	if err := Fault("kill"); err != nil {
		return fmt.Errorf("kill %s: %w", c.ID(), err)
	}
	// Only the cgroup maka created (its recorded id) is killed.
	cg, err := c.ownedCgroup()
	if err != nil {
		return fmt.Errorf("kill %s: %w", c.ID(), err)
	}
	if cg != nil {
		defer cg.Close()
	}
	err = c.Container.Signal(unix.SIGKILL)
	if err != nil && !errors.Is(err, libcontainer.ErrNotRunning) {
		return fmt.Errorf("kill %s: %w", c.ID(), err)
	}
	// cgroup.kill also takes processes that left the pid namespace's
	// reach (e.g. a shared pid namespace).
	if cg != nil {
		_ = killAt(cg)
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := c.Container.Signal(unix.Signal(0)); err != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill %s: init still running after %s", c.ID(), timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Destroy removes the cgroup and the state (and runs poststop hooks).
// libcontainer kills and removes the cgroup by path: only once it is
// checked to be the one maka created.
func (c *Container) Destroy() error {
	cg, err := c.ownedCgroup()
	if err != nil {
		return fmt.Errorf("delete %s: %w", c.ID(), err)
	}
	if cg != nil {
		defer cg.Close()
	}
	c.archive()
	if err := c.Container.Destroy(); err != nil {
		return fmt.Errorf("delete %s: %w", c.ID(), err)
	}
	return nil
}

// archive keeps the container's violations and peak in the store's history
// before its state goes. A failure is logged: it never keeps a container
// from being removed.
func (c *Container) archive() {
	store, err := c.rt.Store(false)
	if err != nil || store == nil {
		return
	}
	rec, err := c.contractRecord()
	if err == nil && rec != nil {
		err = store.Archive(c.ID(), rec.Created, c.StateDir())
	}
	if err != nil {
		logrus.Warnf("container %s: %v", c.ID(), err)
	}
}

// writeJSONAtomic writes v to path through a temporary file and a rename.
func writeJSONAtomic(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// SignalAll sends sig to every process in the container's cgroup.
func (c *Container) SignalAll(sig unix.Signal) error {
	// The pids are listed from the cgroup's path: only the cgroup maka
	// created is listed.
	cg, err := c.ownedCgroup()
	if err != nil {
		return fmt.Errorf("kill %s: %w", c.ID(), err)
	}
	if cg != nil {
		defer cg.Close()
	}
	pids, err := c.Processes()
	if err != nil || len(pids) == 0 {
		// No cgroup or no process: the container is not running.
		return c.Signal(sig)
	}
	if err := c.Signal(sig); err != nil && !errors.Is(err, ErrNotRunning) {
		return err
	}
	for _, pid := range pids {
		_ = unix.Kill(pid, sig)
	}
	return nil
}

// SetInitRlimits applies rlimits to the container's init (pid, parked on
// the exec fifo: libcontainer's init has done its own work). The process
// is pinned by a pidfd and checked to be the init libcontainer recorded
// (its start time) before and alive after: a pid reused by a host process
// is never given the sandbox's limits.
func (c *Container) SetInitRlimits(pid int, rls []configs.Rlimit) error {
	if len(rls) == 0 {
		return nil
	}
	st, err := c.Container.State()
	if err != nil {
		return fmt.Errorf("container %s: %w", c.ID(), err)
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("container %s: init %d: pidfd_open: %w", c.ID(), pid, err)
	}
	defer unix.Close(pidfd)
	if start, err := procStartTime(pid); err != nil || start != st.InitProcessStartTime {
		return fmt.Errorf("container %s: init %d is not the process libcontainer started", c.ID(), pid)
	}
	for _, rl := range rls {
		if err := unix.Prlimit(pid, rl.Type, &unix.Rlimit{Cur: rl.Soft, Max: rl.Hard}, nil); err != nil {
			return fmt.Errorf("container %s: process.rlimits: %s: %w", c.ID(), rlimitName(rl.Type), err)
		}
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return fmt.Errorf("container %s: init %d exited while its rlimits were set: %w", c.ID(), pid, ErrNotRunning)
	}
	return nil
}

func rlimitName(t int) string {
	switch t {
	case unix.RLIMIT_AS:
		return "RLIMIT_AS"
	case unix.RLIMIT_DATA:
		return "RLIMIT_DATA"
	}
	return "rlimit " + strconv.Itoa(t)
}
