package libmaka

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer/system"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// The contract store (DESIGN.md §5) keeps, per container, a record of the
// sandbox maka promised to build and who is building it, on a disk that
// survives the tmpfs --root. It is written before anything exists on the
// host, so that whatever a crash leaves behind can be found and removed.
//
// Layout, one directory per --root (containerd gives each namespace its
// own root, and ids are only unique within one):
//
//	<state-dir>/                    0700
//	  <key>/                        0700, key = sha256(root)[:16] in hex
//	    root                        the --root path, for people and as a check
//	    records/<id>.json           0600, published atomically
//	    locks/<id>.lock             0600, flock'ed; never removed

// DefaultStateDir is the contract store's default place.
const DefaultStateDir = "/var/lib/maka"

// RecordVersion is the version of the record format this maka writes.
// Version 2 added cgroupID; a version 1 record names a cgroup whose id
// maka never learnt (and which config.json could choose), so it is not read.
const RecordVersion = 2

// Stage is the last lifecycle operation maka began on a container, and
// whether it completed. It is not the live status (`maka state` asks the
// kernel for that): a "running" container whose process exited is stopped.
type Stage string

const (
	StageCreating Stage = "creating" // create/run in progress
	StageCreated  Stage = "created"  // create completed: init waits for start
	StageStarting Stage = "starting" // start in progress
	StageRunning  Stage = "running"  // start (or run) completed
	StageDeleting Stage = "deleting" // delete in progress
)

// Transitional stages are those of an operation that has not completed: a
// record left in one by a dead owner is an interrupted operation.
func (s Stage) Transitional() bool {
	return s == StageCreating || s == StageStarting || s == StageDeleting
}

func (s Stage) valid() bool {
	switch s {
	case StageCreating, StageCreated, StageStarting, StageRunning, StageDeleting:
		return true
	}
	return false
}

// Owner is the process that drives (or last drove) a container: its pid,
// and its start time (field 22 of /proc/PID/stat) so that a recycled pid is
// not mistaken for it.
type Owner struct {
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
	Command   string `json:"command"`
}

// CurrentOwner describes this process running command.
func CurrentOwner(command string) (Owner, error) {
	start, err := ownStartTime()
	if err != nil {
		return Owner{}, fmt.Errorf("own start time: %w", err)
	}
	return Owner{Pid: os.Getpid(), StartTime: start, Command: command}, nil
}

// ownStartTime is this process's start time, read once: every record
// published names its owner, and /proc/self/stat is parsed whole.
var ownStartTime = sync.OnceValues(func() (uint64, error) {
	st, err := system.Stat(os.Getpid())
	if err != nil {
		return 0, err
	}
	return st.StartTime, nil
})

// Alive reports whether the owner process still exists: same pid, same
// start time, and not a zombie.
func (o Owner) Alive() bool {
	return alive(o.Pid, o.StartTime)
}

func (o Owner) String() string {
	return fmt.Sprintf("pid %d (maka %s)", o.Pid, o.Command)
}

// LaunchOptions are the runtime choices of create/run that config.json does
// not make; relaunch needs them to rebuild the same sandbox.
type LaunchOptions struct {
	NoPivot      bool `json:"noPivot,omitempty"`
	NoNewKeyring bool `json:"noNewKeyring,omitempty"`
}

// ContainerRecord is one container's persisted contract and ownership.
type ContainerRecord struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Root is the --root holding libcontainer's state (<root>/<id>).
	Root   string `json:"root"`
	Bundle string `json:"bundle"`
	// CgroupPath is the container's cgroup v2 directory, known (and
	// recorded) before it is created.
	CgroupPath string `json:"cgroupPath"`
	// CgroupID is the id (inode number) of the cgroup maka created at
	// CgroupPath, published right after creating it: 0 while it does not
	// exist yet (or if the create died before recording it). maka kills
	// and removes only the cgroup with this id (cgroupid.go).
	CgroupID uint64 `json:"cgroupID,omitempty"`
	// MonitorCgroup is the cgroup of its detached monitor (a child of
	// monitor.MonitorsCgroup), kept here too: a teardown that finds the
	// state directory naming it gone (lost, removed by hand) still removes
	// it.
	MonitorCgroup string `json:"monitorCgroup,omitempty"`
	// Init is the sandbox's init, recorded once it is spawned (it never
	// changes after): start and delete ask the kernel about it without
	// loading libcontainer's state (initstatus.go). Records published
	// before it was kept have none.
	Init    *InitProcess `json:"init,omitempty"`
	Created time.Time    `json:"created"`
	Stage   Stage        `json:"stage"`
	Owner   Owner        `json:"owner"`
	// Attached: the container lives only as long as Owner (a foreground
	// `maka run`, which deletes it at the end). When Owner dies, the
	// container is an orphan. A detached container outlives its creator.
	Attached bool          `json:"attached,omitempty"`
	Options  LaunchOptions `json:"options"`
	// Boundary and Policy are decoded only by the commands that use them
	// (lazy.go); the others read the boundary's head (HeadOf) and write
	// both back as they were read.
	Boundary Lazy[Boundary] `json:"boundary"`
	Policy   Lazy[Policy]   `json:"policy,omitzero"`
}

// ParseRecord decodes and checks a record. Every path in it is used to
// kill and remove things, so each must be absolute and clean, and the
// cgroup must lie strictly below the cgroup v2 mount.
func ParseRecord(data []byte) (*ContainerRecord, error) {
	var r ContainerRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("record: %w", JSONError(err, "record"))
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("record %q: %w", r.ID, err)
	}
	return &r, nil
}

func (r *ContainerRecord) check() error {
	switch {
	case r.Version != RecordVersion:
		return fmt.Errorf("version %d: this maka reads version %d", r.Version, RecordVersion)
	case !ValidID(r.ID):
		return errors.New("invalid id")
	case !cleanAbs(r.Root):
		return fmt.Errorf("root %q: not a clean absolute path", r.Root)
	case r.Bundle != "" && !cleanAbs(r.Bundle):
		return fmt.Errorf("bundle %q: not a clean absolute path", r.Bundle)
	case !cleanAbs(r.CgroupPath) || !strings.HasPrefix(r.CgroupPath, cgroupRoot+"/"):
		return fmt.Errorf("cgroupPath %q: not a clean path below %s", r.CgroupPath, cgroupRoot)
	case r.CgroupID == 0 && r.Stage != StageCreating:
		return fmt.Errorf("stage %s without a cgroupID: a created sandbox's cgroup id is always recorded", r.Stage)
	case !r.Stage.valid():
		return fmt.Errorf("unknown stage %q", r.Stage)
	case r.Owner.Pid <= 0:
		return fmt.Errorf("owner pid %d", r.Owner.Pid)
	case r.Init != nil && r.Init.Pid <= 0:
		return fmt.Errorf("init pid %d", r.Init.Pid)
	case !r.Boundary.Held():
		return errors.New("no boundary")
	}
	return nil
}

func cleanAbs(p string) bool {
	return p != "" && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// MaxIDLength is the longest id: its records' temporary file
// (".<id>.json.tmp") must fit a file name (255 bytes), as must its lock,
// its state directory and its cgroup.
const MaxIDLength = 255 - len("..json.tmp")

// IDRule says which ids are valid, for error messages.
const IDRule = "allowed: letters, digits, _ + - . and not . or .., at most 245 characters"

// InvalidIDError is the error for an id that is not ValidID: a long id is
// shown by its start and length, not whole.
func InvalidIDError(id string) error {
	shown := fmt.Sprintf("%q", id)
	if len(id) > 64 {
		shown = fmt.Sprintf("%q... (%d characters)", id[:32], len(id))
	}
	return fmt.Errorf("container id %s: invalid (%s)", shown, IDRule)
}

// ValidID reports whether id is a container id libcontainer accepts
// (letters, digits, _ + - . and not . or ..) and that fits a file name
// (MaxIDLength); only such ids name files.
func ValidID(id string) bool {
	if id == "" || id == "." || id == ".." || len(id) > MaxIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_', c == '+', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// Store is the contract store of one --root.
type Store struct {
	Dir  string // <state-dir>/<key>
	Root string
}

// storeDir is where the records of root live under stateDir.
func storeDir(stateDir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(stateDir, hex.EncodeToString(sum[:8]))
}

// OpenStore opens the store of root under stateDir. With create, missing
// directories are made (0700); without, a missing store is an empty one
// (nil, nil) so that read-only commands create nothing. Directories that
// exist must be private to the caller.
func OpenStore(stateDir, root string, create bool) (*Store, error) {
	if !filepath.IsAbs(stateDir) || !filepath.IsAbs(root) {
		return nil, fmt.Errorf("state dir %q and root %q must be absolute", stateDir, root)
	}
	s := &Store{Dir: storeDir(stateDir, root), Root: root}
	if !create {
		if _, err := os.Stat(s.Dir); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	for _, d := range []string{stateDir, s.Dir, s.recordsDir(), s.locksDir()} {
		if create {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("state dir: %w", err)
			}
		}
		if err := CheckPrivateDir(d); err != nil {
			return nil, err
		}
	}
	// The root file names the root; it also catches a hash collision.
	rootFile := filepath.Join(s.Dir, "root")
	data, err := os.ReadFile(rootFile)
	switch {
	case err == nil && string(data) != root:
		return nil, fmt.Errorf("state dir %s belongs to root %q, not %q", s.Dir, data, root)
	case errors.Is(err, os.ErrNotExist) && create:
		// Concurrent first opens race here: each writes its own
		// temporary file and renames it; all write the same content.
		if err := writeRootFile(rootFile, root); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("state dir: %w", err)
	}
	return s, nil
}

// CheckPrivateDir refuses a directory that someone other than the caller
// could write to: records and state decide what maka kills and removes.
func CheckPrivateDir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("state dir %s: not a directory", path)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("state dir %s: refused: owned by uid %d, not by the caller (uid %d)", path, st.Uid, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("state dir %s: refused: group or world writable (mode %04o); it must be writable by its owner only (chmod go-w)", path, perm)
	}
	return nil
}

func (s *Store) recordsDir() string          { return filepath.Join(s.Dir, "records") }
func (s *Store) locksDir() string            { return filepath.Join(s.Dir, "locks") }
func (s *Store) recordPath(id string) string { return filepath.Join(s.recordsDir(), id+".json") }
func (s *Store) tempPath(id string) string   { return filepath.Join(s.recordsDir(), "."+id+".json.tmp") }

// Get returns the record of id, or nil (and no error) if there is none.
func (s *Store) Get(id string) (*ContainerRecord, error) {
	if s == nil {
		return nil, nil
	}
	if !ValidID(id) {
		return nil, fmt.Errorf("container id %q: invalid", id)
	}
	data, err := os.ReadFile(s.recordPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", id, err)
	}
	r, err := ParseRecord(data)
	if err != nil {
		return nil, fmt.Errorf("container %s: %s: %w", id, s.recordPath(id), err)
	}
	if r.ID != id || r.Root != s.Root {
		return nil, fmt.Errorf("container %s: %s names container %q of root %q", id, s.recordPath(id), r.ID, r.Root)
	}
	return r, nil
}

// IDs lists the ids that have a record, sorted.
func (s *Store) IDs() ([]string, error) {
	if s == nil {
		return nil, nil
	}
	entries, err := os.ReadDir(s.recordsDir())
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && e.Type().IsRegular() && ValidID(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Lock is the exclusive hold on one id. Only its holder changes the id's
// record or container.
type Lock struct {
	store *Store
	id    string
	f     *os.File
}

// Lock takes the id's lock, waiting up to wait for another holder (wait 0:
// one attempt). Lock files are never removed: a command that opened one
// must not lock an inode that a later command no longer sees under that
// name. The wait blocks in the kernel rather than polling: waiters cost
// nothing while they wait, and wake as soon as the holder lets go.
func (s *Store) Lock(id string, wait time.Duration) (*Lock, error) {
	if !ValidID(id) {
		return nil, InvalidIDError(id)
	}
	f, err := os.OpenFile(filepath.Join(s.locksDir(), id+".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("container %s: lock: %w", id, err)
	}
	fd := int(f.Fd())
	err = flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) && wait > 0 {
		got := make(chan error, 1)
		go func() { got <- flock(fd, unix.LOCK_EX) }()
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case err = <-got:
		case <-timer.C:
			// Abandoned: if the lock comes later, let it go at once.
			go func() {
				<-got //nolint:errcheck // taken or not, the file is closed: that lets it go
				_ = f.Close()
			}()
			return nil, s.busyError(id, wait)
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, s.busyError(id, wait)
		}
		return nil, fmt.Errorf("container %s: lock: %w", id, err)
	}
	return &Lock{store: s, id: id, f: f}, nil
}

func flock(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func (s *Store) busyError(id string, wait time.Duration) error {
	holder := "another maka"
	if r, _ := s.Get(id); r != nil && r.Owner.Alive() {
		holder = r.Owner.String()
	}
	return fmt.Errorf("container %s is busy: %s has held it for more than %s", id, holder, wait)
}

// Busy reports whether a command holds id's lock now. It probes with a
// shared lock, which conflicts only with a holder's exclusive one.
func (s *Store) Busy(id string) bool {
	if s == nil {
		return false
	}
	f, err := os.OpenFile(filepath.Join(s.locksDir(), id+".lock"), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // never locked
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return true
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// Unlock releases the lock (the lock file stays).
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		l.f.Close() // closing the last descriptor releases the flock
		l.f = nil
	}
}

// Publish writes the record atomically: a temporary file, fsync, rename
// over the record, fsync of the directory. A reader sees the old record or
// the new one, never a torn one, and after Publish returns the new one
// survives a power cut.
func (l *Lock) Publish(r *ContainerRecord) error {
	if r.ID != l.id {
		return fmt.Errorf("record of %q published under the lock of %q", r.ID, l.id)
	}
	r.Version = RecordVersion
	r.Root = l.store.Root
	if err := r.check(); err != nil {
		return fmt.Errorf("container %s: record: %w", l.id, err)
	}
	data, err := json.Marshal(r) // compact: it is parsed, never read by eye (jq), and indenting cost 6 ms a run in the guest
	if err != nil {
		return fmt.Errorf("container %s: record: %w", l.id, err)
	}
	if err := writeFileAtomicAs(l.store.tempPath(l.id), l.store.recordPath(l.id), data); err != nil {
		return fmt.Errorf("container %s: publish record: %w", l.id, err)
	}
	return nil
}

// Drop removes the record (and a temporary file a crash may have left),
// and syncs the directory so that the removal is durable too. The block of
// ids the record names is given back first: a record is dropped only once
// its sandbox is gone (no process of it lives), and a crash between the
// two leaves a record whose lease is already free, which is harmless
// (releaseIDs only removes a lease its record holds).
func (l *Lock) Drop() error { return l.drop(nil) }

// drop is Drop with the record as the caller read it under this lock (nil:
// read it here): the teardown has it already, and each read of a record is
// a JSON decode of the whole contract (a CPU profile of `run` found five
// per teardown, ~50 ms in the guest).
func (l *Lock) drop(rec *ContainerRecord) error {
	if rec == nil {
		rec, _ = l.store.Get(l.id)
	}
	if rec != nil {
		head, err := HeadOf(&rec.Boundary)
		switch {
		case err != nil:
			// A record whose boundary cannot be read names no lease or
			// scaffold anyone can trust; its sandbox is gone (drop comes
			// last), so it is dropped all the same, and what it named is
			// left to `maka recover` (a lease no record names is given
			// back; a scaffold no record names is removed).
			logrus.Warnf("container %s: its record's boundary cannot be read (%v): its id lease and root scaffold, if any, are left to maka recover", l.id, err)
		default:
			if err := releaseIDs(l.store, rec, head); err != nil {
				return err
			}
			// Only the scaffold maka made for this id, wherever the
			// record says.
			if head != nil && head.Rootfs.Scaffold == filepath.Join(rootsDir(l.store), l.id) {
				if err := removeRoot(head.Rootfs.Scaffold); err != nil {
					return fmt.Errorf("container %s: %w", l.id, err)
				}
			}
		}
	}
	if err := unstage(stageDir(l.store, l.id)); err != nil {
		return fmt.Errorf("container %s: %w", l.id, err)
	}
	_ = os.Remove(l.store.tempPath(l.id))
	if err := os.Remove(l.store.recordPath(l.id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("container %s: drop record: %w", l.id, err)
	}
	return syncDir(l.store.recordsDir())
}

func writeRootFile(path, root string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".root.*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	f.Close()
	return writeFileAtomicAs(tmp, path, []byte(root))
}

// writeFileAtomicAs writes data to tmp, syncs it, renames it to path and
// syncs the directory. Only the lock holder writes a given tmp.
func writeFileAtomicAs(tmp, path string, data []byte) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
