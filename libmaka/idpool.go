package libmaka

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A sandbox with its own user namespace runs as a block of host ids no
// other live sandbox and no host account uses: container ids 0..Size-1 are
// host ids Start+k*Size.. of the policy's pool. The block is leased at
// create, before the record is published (the record names it), and given
// back when the record is dropped: after the cgroup is gone, so never
// while a process of that sandbox lives.
//
// A lease is a file <state-dir>/ids/<first host id>-<size>: it holds the
// whole range [first, first+size), and no block that meets a held range is
// leased again, from whatever pool (two policies whose pools are offset
// share the state dir's leases). Leasing takes the ids directory's flock
// (the check for a range that meets one and the O_EXCL create are one
// step), and the file names its holder, so that a lease whose holder has
// no record (a create that died between leasing and publishing) is found
// and reclaimed by `maka recover`. A lease named by its first id alone
// (from a maka before ranges) holds a block of DefaultIDPool.Size. The
// pool is the state dir's: two maka with different state dirs need
// disjoint pools.

// IDPool is the host ids maka leases to sandboxes, Count blocks of Size.
type IDPool struct {
	Start uint32 `json:"start"`
	Size  uint32 `json:"size"`
	Count uint32 `json:"count"`
	// GIDStart, if set, is where the gid blocks start (a rootless user's
	// /etc/subgid range); else gids are the uids' numbers.
	GIDStart uint32 `json:"gidStart,omitempty"`
	// Owner, if set, is a rootless maka's user: container id 0 is the
	// user's own uid and gid, and container ids 1..Size the block (the
	// layout rootless runc and Podman use: files the runtime makes for
	// the sandbox's root, such as its exec fifo, can only be the user's).
	Owner *IDOwner `json:"owner,omitempty"`
}

// IDOwner is the user a rootless pool's container id 0 maps to.
type IDOwner struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// ContainerIDs is how many container ids a block maps (0..n-1).
func (p IDPool) ContainerIDs() uint32 {
	if p.Owner != nil {
		return p.Size + 1
	}
	return p.Size
}

// mappings are the uid and gid mappings of block i.
func (p IDPool) mappings(i uint32) (uids, gids []specs.LinuxIDMapping) {
	if p.Owner == nil {
		return []specs.LinuxIDMapping{{ContainerID: 0, HostID: p.Block(i), Size: p.Size}},
			[]specs.LinuxIDMapping{{ContainerID: 0, HostID: p.GIDBlock(i), Size: p.Size}}
	}
	return []specs.LinuxIDMapping{{ContainerID: 0, HostID: p.Owner.UID, Size: 1}, {ContainerID: 1, HostID: p.Block(i), Size: p.Size}},
		[]specs.LinuxIDMapping{{ContainerID: 0, HostID: p.Owner.GID, Size: 1}, {ContainerID: 1, HostID: p.GIDBlock(i), Size: p.Size}}
}

// IDRange is a range of host ids (a delegated range in the policy).
type IDRange struct {
	Start uint32 `json:"start"`
	Size  uint32 `json:"size"`
}

// User namespace modes of a policy.
const (
	// UserNamespaceRequired: every sandbox gets its own user namespace
	// (restricted).
	UserNamespaceRequired = "required"
	// UserNamespaceOptional: only a config.json that asks for one gets
	// one, as Kubernetes' hostUsers: false does (baseline).
	UserNamespaceOptional = "optional"
)

// Sources of a sandbox's id mapping.
const (
	IDsFromPool   = "pool"   // leased by maka at create
	IDsFromConfig = "config" // config.json's, within a delegated range
	IDsOwn        = "own"    // a rootless maka's user's own uid and gid alone
)

// DefaultIDPool is 1024 blocks of 65536 ids from 2^30: inside the range
// systemd leaves to containers (524288..1879048191), far above the
// 100000-based ranges useradd writes to /etc/subuid, and below 2^31, which
// some tools misread as negative.
var DefaultIDPool = IDPool{Start: 1 << 30, Size: 65536, Count: 1024}

// End is one past the pool's last id.
func (p IDPool) End() uint64 { return uint64(p.Start) + uint64(p.Size)*uint64(p.Count) }

// Block is the first host id of block i.
func (p IDPool) Block(i uint32) uint32 { return p.Start + i*p.Size }

// GIDBlock is the first host gid of block i.
func (p IDPool) GIDBlock(i uint32) uint32 {
	if p.GIDStart == 0 {
		return p.Block(i)
	}
	return p.GIDStart + i*p.Size
}

func (p IDPool) validate() []string {
	var errs []string
	switch {
	case p.Size == 0 || p.Count == 0:
		errs = append(errs, fmt.Sprintf("idPool: size %d and count %d must both be at least 1", p.Size, p.Count))
	case p.Start == 0:
		errs = append(errs, "idPool.start: 0 would map a sandbox to the host's root")
	case p.End() > math.MaxUint32 || uint64(p.GIDStart)+uint64(p.Size)*uint64(p.Count) > math.MaxUint32:
		errs = append(errs, fmt.Sprintf("idPool: start %d + count %d × size %d passes the last id %d", p.Start, p.Count, p.Size, uint32(math.MaxUint32-1)))
	}
	return errs
}

// Contains reports whether [start, start+size) lies in the pool.
func (p IDPool) Contains(start, size uint32) bool {
	return uint64(start) >= uint64(p.Start) && uint64(start)+uint64(size) <= p.End()
}

// Overlaps reports whether [start, start+size) meets the pool.
func (p IDPool) Overlaps(start, size uint32) bool {
	return uint64(start) < p.End() && uint64(start)+uint64(size) > uint64(p.Start)
}

// lease is the content of a lease file.
type lease struct {
	Root    string    `json:"root"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

func idsDir(s *Store) string { return filepath.Join(filepath.Dir(s.Dir), "ids") }

// LeaseIDs gives b (which asks for a user namespace with ids from the
// pool) the first free block of pool and writes its mapping into b. The
// lease is the op's: End gives it back unless the create commits, and once
// the record is published, dropping the record gives it back.
func (op *Op) LeaseIDs(b *Boundary, pool IDPool) error {
	if b.Users.Source != IDsFromPool {
		return nil
	}
	if msg := pool.validate(); len(msg) > 0 {
		return fmt.Errorf("policy: %s", msg[0])
	}
	if op.leased != nil {
		return fmt.Errorf("container %s: ids already leased", op.ID)
	}
	dir := idsDir(op.lock.store)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("id pool: %w", err)
	}
	if err := CheckPrivateDir(dir); err != nil {
		return fmt.Errorf("id pool: %w", err)
	}
	data, err := json.Marshal(lease{Root: op.lock.store.Root, ID: op.ID, Created: time.Now().UTC()})
	if err != nil {
		return err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return fmt.Errorf("id pool: %w", err)
	}
	defer unlock()
	held, err := heldRanges(dir)
	if err != nil {
		return fmt.Errorf("id pool: %w", err)
	}
	for i := uint32(0); i < pool.Count; i++ {
		start := pool.Block(i)
		if meetsAny(held, start, pool.Size) {
			continue
		}
		path := filepath.Join(dir, leaseName(start, pool.Size))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("id pool: %w", err)
		}
		_, werr := f.Write(data)
		if serr := f.Sync(); werr == nil {
			werr = serr
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = syncDir(dir)
		}
		if werr != nil {
			_ = os.Remove(path)
			return fmt.Errorf("id pool: lease %s: %w", path, werr)
		}
		op.leased = &leaseRef{path: path, lease: lease{Root: op.lock.store.Root, ID: op.ID}}
		b.UIDMappings, b.GIDMappings = pool.mappings(i)
		CrashPoint(op.Command + ":ids-leased")
		return nil
	}
	return fmt.Errorf("id pool: all %d blocks of %d ids from %d are leased to live sandboxes, or meet a range leased from another pool (raise idPool.count in the policy, or delete sandboxes)", pool.Count, pool.Size, pool.Start)
}

// legacyLeaseSize is the range a lease named by its first id alone holds.
const legacyLeaseSize = 65536

// leaseName is the lease file of the range [start, start+size).
func leaseName(start, size uint32) string {
	return strconv.FormatUint(uint64(start), 10) + "-" + strconv.FormatUint(uint64(size), 10)
}

// parseLeaseName reads a lease file's name: <first>-<size>, or <first>
// alone (legacyLeaseSize).
func parseLeaseName(name string) (IDRange, bool) {
	first, size, ranged := strings.Cut(name, "-")
	start, err := strconv.ParseUint(first, 10, 32)
	if err != nil {
		return IDRange{}, false
	}
	n := uint64(legacyLeaseSize)
	if ranged {
		if n, err = strconv.ParseUint(size, 10, 32); err != nil || n == 0 {
			return IDRange{}, false
		}
	}
	return IDRange{Start: uint32(start), Size: uint32(n)}, true
}

// heldRanges are the ranges the lease files in dir hold.
func heldRanges(dir string) ([]IDRange, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []IDRange
	for _, e := range entries {
		if r, ok := parseLeaseName(e.Name()); ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// meetsAny reports whether [start, start+size) meets one of held.
func meetsAny(held []IDRange, start, size uint32) bool {
	for _, h := range held {
		if uint64(start) < uint64(h.Start)+uint64(h.Size) && uint64(h.Start) < uint64(start)+uint64(size) {
			return true
		}
	}
	return false
}

// lockDir takes dir's flock (exclusive), released by the returned func.
func lockDir(dir string) (func(), error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, &os.PathError{Op: "lock", Path: dir, Err: err}
	}
	return func() { _ = unix.Close(fd) }, nil
}

type leaseRef struct {
	path  string
	lease lease
}

// releaseLease removes the lease file at path if it is held by (root, id):
// a block given back and leased again belongs to its new holder.
func releaseLease(path, root, id string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("id pool: %w", err)
	}
	var l lease
	if json.Unmarshal(data, &l) == nil && (l.Root != root || l.ID != id) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("id pool: give back %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// releaseIDs gives back the block rec's sandbox leased, if any, as its
// boundary's head b says. Call it once no process of the sandbox lives
// (its cgroup is gone).
func releaseIDs(store *Store, rec *ContainerRecord, b *BoundaryHead) error {
	if b == nil || b.Users.Source != IDsFromPool || len(b.UIDMappings) == 0 {
		return nil
	}
	dir := idsDir(store)
	m := b.UIDMappings[len(b.UIDMappings)-1]
	if err := releaseLease(filepath.Join(dir, leaseName(m.HostID, m.Size)), rec.Root, rec.ID); err != nil {
		return err
	}
	// A lease from a maka before ranges.
	return releaseLease(filepath.Join(dir, strconv.FormatUint(uint64(m.HostID), 10)), rec.Root, rec.ID)
}

// reclaimLeases gives back the leases whose holder has no record naming
// them and no live command: creates that died between leasing and
// publishing. A holder's id lock is taken (without waiting) first, so a
// create that is still running keeps its lease.
func reclaimLeases(store *Store, stateDir string) {
	dir := idsDir(store)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if _, ok := parseLeaseName(e.Name()); !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var l lease
		if json.Unmarshal(data, &l) != nil || !filepath.IsAbs(l.Root) || !ValidID(l.ID) {
			// A torn lease (a crash while writing it): its holder never
			// published a record naming it, so nothing runs on it. Keep
			// it if it was written a moment ago.
			if st, err := os.Stat(path); err == nil && time.Since(st.ModTime()) > time.Minute {
				_ = os.Remove(path)
			}
			continue
		}
		holder, err := OpenStore(stateDir, l.Root, false)
		if err != nil {
			continue
		}
		if holder == nil {
			_ = releaseLease(path, l.Root, l.ID)
			continue
		}
		lock, err := holder.Lock(l.ID, 0)
		if err != nil {
			continue // a live command holds it
		}
		rec, err := holder.Get(l.ID)
		if err == nil && !namesLease(rec, e.Name()) {
			_ = releaseLease(path, l.Root, l.ID)
		}
		lock.Unlock()
	}
}

// namesLease reports whether rec names the lease file name. A record whose
// boundary cannot be read keeps whatever lease it may name: reclaiming it
// could hand its ids to a second sandbox while the first still runs.
func namesLease(rec *ContainerRecord, name string) bool {
	if rec == nil {
		return false
	}
	b, err := HeadOf(&rec.Boundary)
	if err != nil {
		return true
	}
	if b == nil || b.Users.Source != IDsFromPool || len(b.UIDMappings) == 0 {
		return false
	}
	m := b.UIDMappings[len(b.UIDMappings)-1]
	return name == leaseName(m.HostID, m.Size) || name == strconv.FormatUint(uint64(m.HostID), 10)
}

// FirstFreeBlock is the first block of pool no lease holds now (without
// leasing it): what `maka boundary --format oci` shows.
func FirstFreeBlock(stateDir string, pool IDPool) (uint32, error) {
	held, err := heldRanges(filepath.Join(stateDir, "ids"))
	if err != nil {
		return 0, fmt.Errorf("id pool: %w", err)
	}
	for i := uint32(0); i < pool.Count; i++ {
		if start := pool.Block(i); !meetsAny(held, start, pool.Size) {
			return start, nil
		}
	}
	return 0, fmt.Errorf("id pool: all %d blocks of %d ids from %d are leased to live sandboxes", pool.Count, pool.Size, pool.Start)
}
