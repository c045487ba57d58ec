package libmaka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// MissingMountpoints returns the mount destinations the trusted root
// lacks, each resolved inside the root as libcontainer resolves it
// (symlinks in the root followed, never out of it), relative to the
// root. maka provides them in the sandbox's scaffold (BuildRoot) instead
// of letting libcontainer create them in the root, which maka never
// writes. Existence is checked with openat2 RESOLVE_IN_ROOT, so a symlink
// in the root cannot point the check at the host. fields[i] names the
// config.json field of dests[i] for the error: a path whose parent in the
// root is not a directory cannot be provided. files[i] says dests[i] is a
// file's mount point (a bind of a file): those missing are in the second
// list.
func MissingMountpoints(rootfs string, dests, fields []string, files []bool) (dirs, regular []string, err error) {
	root, err := os.Open(rootfs)
	if err != nil {
		return nil, nil, fmt.Errorf("root.path: %w", err)
	}
	defer root.Close()
	var bad []string
	for i, d := range dests {
		rel := strings.TrimLeft(filepath.Clean("/"+d), "/")
		if rel == "" {
			continue
		}
		fd, err := unix.Openat2(int(root.Fd()), rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == nil {
			unix.Close(fd)
			continue
		}
		field := d
		if i < len(fields) {
			field = fields[i]
		}
		switch {
		case errors.Is(err, unix.ENOSYS):
			return nil, nil, errors.New("check mount points: openat2 is not supported by this kernel (Linux 5.6 or later is required)")
		case !errors.Is(err, unix.ENOENT):
			bad = append(bad, fmt.Sprintf("%s: %s cannot be a mount point in the root filesystem: %v", field, d, err))
			continue
		}
		resolved, err := securejoin.SecureJoin(rootfs, rel)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: resolve %s in the root filesystem: %v", field, d, err))
			continue
		}
		r, err := filepath.Rel(rootfs, resolved)
		if err != nil || r == "." || strings.HasPrefix(r, "../") {
			bad = append(bad, fmt.Sprintf("%s: %s resolves outside the root filesystem", field, d))
			continue
		}
		list := &dirs
		if i < len(files) && files[i] {
			list = &regular
		}
		if !slices.Contains(*list, r) {
			*list = append(*list, r)
		}
	}
	if len(bad) > 0 {
		return nil, nil, errors.New(strings.Join(bad, "; "))
	}
	slices.Sort(dirs)
	slices.Sort(regular)
	return dirs, regular, nil
}

// idmapFilesystems are the filesystems whose idmapped mounts maka uses,
// with the first kernel that supports them (FS_ALLOW_IDMAP). Types come
// from mountinfo: statfs is no guide (9p reports the server's type).
var idmapFilesystems = map[string][2]int{
	"ext4":  {5, 12},
	"xfs":   {5, 12},
	"btrfs": {5, 15},
	"tmpfs": {6, 3},
}

// IDMapSupport says whether the root at path can be mounted idmapped on
// this kernel (its files then show with the sandbox's ids: the host's
// root as the sandbox's root), and if not, why. Every mount below path
// must support it too: the root is bound recursively.
func IDMapSupport(path string) (bool, string) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false, err.Error()
	}
	mounts, err := readMountinfo()
	if err != nil {
		return false, err.Error()
	}
	// The mount that holds path: the last of those with the longest
	// mount point above it (a later mount on the same point hides the
	// earlier); and every mount below path.
	var holder *mountEntry
	var below []mountEntry
	prefix := strings.TrimSuffix(real, "/") + "/"
	for i, m := range mounts {
		switch {
		case strings.HasPrefix(m.point, prefix):
			below = append(below, m)
		case m.point == real || m.point == "/" || strings.HasPrefix(real, m.point+"/"):
			if holder == nil || len(m.point) >= len(holder.point) {
				holder = &mounts[i]
			}
		}
	}
	if holder == nil {
		return false, "no mount holds " + real
	}
	major, minor := kernelVersion()
	for _, m := range append([]mountEntry{*holder}, below...) {
		v, ok := idmapFilesystems[m.fstype]
		if !ok {
			return false, fmt.Sprintf("%s is on %s, which maka does not idmap", m.point, m.fstype)
		}
		if major < v[0] || major == v[0] && minor < v[1] {
			return false, fmt.Sprintf("idmapped %s mounts need Linux %d.%d", m.fstype, v[0], v[1])
		}
	}
	return true, ""
}

func kernelVersion() (major, minor int) {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return 0, 0
	}
	_, _ = fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return major, minor
}

type mountEntry struct{ point, fstype string }

// readMountinfo lists this process's mounts in mount order.
func readMountinfo() ([]mountEntry, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []mountEntry
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		// ... mount point (5th), optional fields, "-", fstype.
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 5 || sep+1 >= len(f) {
			continue
		}
		out = append(out, mountEntry{point: unescapeMountinfo(f[4]), fstype: f[sep+1]})
	}
	return out, nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			var c int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MaxRootEntries bounds the entries of a root maka binds one by one.
const MaxRootEntries = 256

// Scaffolded reports whether the sandbox's root is assembled by maka: a
// scaffold directory holding the root's entries bound read-only (idmapped
// when IDMapped) and the mount points the root lacks.
func (r *Rootfs) Scaffolded() bool {
	return r.IDMapped || len(r.Missing) > 0 || len(r.MissingFiles) > 0
}

// rootsDir holds the scaffolds of a store's sandboxes:
// <state-dir>/roots/<the store's key>/<id>.
func rootsDir(s *Store) string {
	return filepath.Join(filepath.Dir(s.Dir), "roots", filepath.Base(s.Dir))
}

// BuildRoot assembles b's root when b.Rootfs.Scaffolded: a directory
// <state-dir>/roots/<id> that stands for the root. It holds an empty
// directory (or file) for each entry of the root, and b.Rootfs.Binds binds
// each entry there read-only, recursively, through the sandbox's id
// mapping when the root is idmapped; symlinks are copied as they are. The
// directories on the way to a missing mount point are scaffolds too, down
// to the missing part, which is made empty. The root itself is only read.
// The scaffold is the op's: End removes it unless the create commits,
// Lock.Drop once the record goes, recover when no record names it.
//
// The root is read and bound from the root's staged clone (st.Root:
// Op.StageBoundary's private copy of the checked descriptor under maka's
// own directory), never r.Path by name again; from r.Path when nothing
// was staged (st nil, rootless: the user's own files). Staged, the
// scaffold is handed to libcontainer as a staged clone of it that is
// nosuid and nodev (st.Scaffold), as the overlay root is and as runc keeps
// the root's own mount flags (runc's mounts.bats); rootless, by name.
func (op *Op) BuildRoot(b *Boundary, st *Staged) error {
	from := ""
	if st != nil {
		from = st.Root
	}
	r := &b.Rootfs
	if !r.Scaffolded() || r.Overlay {
		return nil
	}
	if !r.Readonly {
		return errors.New("root.readonly: maka assembles only a read-only root")
	}
	base := rootsDir(op.lock.store)
	// The sandbox's root (an unprivileged host id with a user namespace)
	// resolves this path when libcontainer binds the root: the state dir
	// and the scaffolds' directories are searchable by all, listable by
	// their owner only (the records and locks stay 0700).
	stateDir := filepath.Dir(op.lock.store.Dir)
	for _, d := range []string{stateDir, filepath.Dir(base), base} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return fmt.Errorf("root scaffold: %w", err)
		}
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("root scaffold: %w", err)
		}
		if perm := fi.Mode().Perm(); perm&0o011 != 0o011 {
			if err := os.Chmod(d, perm|0o011); err != nil {
				return fmt.Errorf("root scaffold: %w", err)
			}
		}
	}
	dir := filepath.Join(base, op.ID)
	// A scaffold left by a create of this id that died before publishing.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("root scaffold: %w", err)
	}
	op.scaffold = dir
	staged := from != ""
	if !staged {
		from = r.Path
	}
	s := scaffolder{root: from, dir: dir, covered: coveredDirs(b)}
	if r.IDMapped {
		s.uids, s.gids = b.UIDMappings, b.GIDMappings
	} else if b.Users.Namespace {
		s.owner0 = true
		s.uids, s.gids = b.UIDMappings, b.GIDMappings
	}
	var err error
	if err = s.build(r.Missing, r.MissingFiles); err != nil {
		return fmt.Errorf("root scaffold for %s: %w", r.Path, err)
	}
	opts := []string{"rbind", "rro"}
	if r.IDMapped {
		opts = append(opts, "ridmap")
	}
	// Each entry is bound from a mount staged from its own descriptor,
	// opened below the staged root without following any link: the root's
	// entries are the bundle author's to rename while maka works, and a
	// bind by name would follow an entry swapped for a link to /etc.
	// Rootless, nothing was staged: the user's own files, by name.
	// Each bind is a mount staged in the host's mount namespace while the
	// sandbox lives: a root of countless entries must not exhaust the
	// host's mounts (fs.mount-max). A distribution's root has about 20.
	if len(s.binds) > MaxRootEntries {
		return fmt.Errorf("root.path: %s has %d entries to bind (its own, and those of the directories holding a missing mount point); maka binds at most %d", r.Path, len(s.binds), MaxRootEntries)
	}
	var rootfd = -1
	if staged {
		// The staged root is maka's own path (its state directory may be
		// reached through a system symlink such as /var/run): opened by
		// name, its last component not followed.
		if rootfd, err = unix.Open(from, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("root scaffold for %s: %w", r.Path, err)
		}
		defer unix.Close(rootfd)
	}
	r.Binds = r.Binds[:0]
	for _, e := range s.binds {
		src := filepath.Join(from, e)
		if rootfd >= 0 {
			if src, err = op.stageEntry(rootfd, filepath.Join(r.Path, e), e, s.isDir[e]); err != nil {
				return err
			}
		}
		r.Binds = append(r.Binds, specs.Mount{Destination: "/" + e, Type: "bind", Source: src, Options: opts})
	}
	r.Scaffold = dir
	if st != nil {
		if st.Scaffold, err = op.stageScaffold(dir); err != nil {
			return fmt.Errorf("root scaffold for %s: %w", r.Path, err)
		}
	}
	return nil
}

// stageScaffold stages a clone of the scaffold dir, nosuid and nodev (it
// holds only directories, links and empty mount points: the flags change
// nothing inside, they are what the sandbox's mountinfo shows for /).
func (op *Op) stageScaffold(dir string) (string, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return "", fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return "", fmt.Errorf("mount_setattr: %w", err)
	}
	dst, err := op.stagePoint()
	if err != nil {
		return "", err
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", fmt.Errorf("move_mount: %w", err)
	}
	return dst, nil
}

// coveredDirs are the destinations a mount covers whole and the masked
// paths (the root's entry there is hidden): the scaffold makes an empty
// mount point instead of binding what would be hidden. A masked entry so
// is never reachable in the sandbox, not even before its mask is made, and
// the mask is the one mount there (runc's mask.bats counts them).
func coveredDirs(b *Boundary) map[string]bool {
	out := map[string]bool{}
	for _, m := range b.Mounts {
		if slices.Contains(m.Options, "tmpcopyup") {
			// Its tmpfs starts as a copy of what it covers: the root's
			// entry is bound, content and all.
			continue
		}
		d := strings.TrimLeft(filepath.Clean("/"+m.Destination), "/")
		if d != "" {
			out[d] = true
		}
	}
	for _, p := range b.MaskedPaths {
		if d := strings.TrimLeft(filepath.Clean("/"+p), "/"); d != "" {
			out[d] = true
		}
	}
	return out
}

type scaffolder struct {
	root, dir  string
	uids, gids []specs.LinuxIDMapping
	// owner0: the root is not idmapped, but missing mount points belong to
	// the sandbox's root (its mapped id 0).
	owner0  bool
	covered map[string]bool
	binds   []string
	isDir   map[string]bool // binds that are directories
}

func (s *scaffolder) build(missing, files []string) error {
	// expand: the directories the scaffold re-creates (entry by entry)
	// rather than binds; made: the missing part, made empty.
	expand := map[string]bool{"": true}
	made := map[string]bool{}
	for _, m := range append(slices.Clone(missing), files...) {
		parts := strings.Split(m, "/")
		for i := range parts {
			p := strings.Join(parts[:i+1], "/")
			fi, err := os.Lstat(filepath.Join(s.root, p))
			switch {
			case err == nil && fi.IsDir() && i < len(parts)-1:
				expand[p] = true
			case err == nil:
				if i < len(parts)-1 {
					return fmt.Errorf("/%s is not a directory", p)
				}
			case errors.Is(err, os.ErrNotExist):
				made[p] = true
			default:
				return err
			}
		}
	}
	dirs := make([]string, 0, len(expand))
	for d := range expand {
		dirs = append(dirs, d)
	}
	// Parents first.
	slices.SortFunc(dirs, func(a, b string) int { return strings.Compare(a, b) })
	for _, d := range dirs {
		src := filepath.Join(s.root, d)
		fi, err := os.Lstat(src)
		if err != nil {
			return err
		}
		if err := s.mkdir(d, fi); err != nil {
			return err
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := path(d, e.Name())
			if expand[p] {
				continue
			}
			if err := s.entry(p); err != nil {
				return err
			}
		}
	}
	ms := make([]string, 0, len(made))
	for m := range made {
		ms = append(ms, m)
	}
	slices.Sort(ms)
	for _, m := range ms {
		p := filepath.Join(s.dir, m)
		if slices.Contains(files, m) {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
		} else if err := os.Mkdir(p, 0o755); err != nil {
			return err
		}
		if s.uids != nil && os.Geteuid() == 0 {
			if err := os.Lchown(p, int(mapID(s.uids, 0)), int(mapID(s.gids, 0))); err != nil {
				return err
			}
		}
	}
	return nil
}

func path(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// entry re-creates the root's entry p in the scaffold: a symlink as it
// is, a directory or a file as an empty mount point bound from the root
// (a directory a mount covers whole is left empty).
func (s *scaffolder) entry(p string) error {
	src := filepath.Join(s.root, p)
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	dst := filepath.Join(s.dir, p)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
		return s.chown(dst, fi)
	case fi.IsDir():
		if err := s.mkdir(p, fi); err != nil {
			return err
		}
		if s.covered[p] {
			return nil
		}
		// A directory holding nothing a mount would not hide (/mnt,
		// /srv, /maka with only its work mount point) is re-created, not
		// bound: each bind is a round trip to libcontainer's parent.
		if entries, err := os.ReadDir(src); err == nil && s.allHidden(p, entries) {
			for _, e := range entries {
				if err := s.entry(path(p, e.Name())); err != nil {
					return err
				}
			}
			return nil
		}
	default:
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fi.Mode().Perm())
		if err != nil {
			return err
		}
		f.Close()
		if err := s.chown(dst, fi); err != nil {
			return err
		}
		if s.covered[p] {
			return nil // masked: the mask is bound on the empty file
		}
	}
	s.binds = append(s.binds, p)
	if fi.IsDir() {
		if s.isDir == nil {
			s.isDir = map[string]bool{}
		}
		s.isDir[p] = true
	}
	return nil
}

// stageEntry stages the root's entry rel (below the staged root open as
// rootfd; path names it on the host) and returns the staged path.
func (op *Op) stageEntry(rootfd int, path, rel string, dir bool) (string, error) {
	h, err := OpenBeneath("root.path", path, rootfd, rel, dir)
	if err != nil {
		return "", err
	}
	defer h.Close()
	return op.Stage(h, true)
}

// allHidden reports whether each of the entries of p is a directory a
// mount covers, or an empty one.
func (s *scaffolder) allHidden(p string, entries []os.DirEntry) bool {
	for _, e := range entries {
		q := path(p, e.Name())
		if !e.IsDir() {
			return false
		}
		if s.covered[q] {
			continue
		}
		if sub, err := os.ReadDir(filepath.Join(s.root, q)); err != nil || len(sub) > 0 {
			return false
		}
	}
	return true
}

func (s *scaffolder) mkdir(p string, fi os.FileInfo) error {
	dst := filepath.Join(s.dir, p)
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	if err := s.chown(dst, fi); err != nil {
		return err
	}
	// Mkdir applies the umask; the mode (sticky bit included) is the root's.
	return os.Chmod(dst, fi.Mode()&(os.ModePerm|os.ModeSticky|os.ModeSetgid|os.ModeSetuid))
}

// chown gives the scaffold's entry the owner the root's entry shows in
// the sandbox: its ids through the mapping when the root is idmapped, the
// host's ids as they are otherwise.
func (s *scaffolder) chown(dst string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || os.Geteuid() != 0 {
		// Rootless: the scaffold is the user's, its container root.
		return nil
	}
	uid, gid := st.Uid, st.Gid
	if s.uids != nil && !s.owner0 {
		uid, gid = mapID(s.uids, uid), mapID(s.gids, gid)
	}
	return os.Lchown(dst, int(uid), int(gid))
}

// mapID is the host id of container id id under m (the overflow id 65534
// when it is not mapped).
func mapID(m []specs.LinuxIDMapping, id uint32) uint32 {
	for _, e := range m {
		if id >= e.ContainerID && id-e.ContainerID < e.Size {
			return e.HostID + id - e.ContainerID
		}
	}
	return 65534
}

// removeRoot removes the scaffold dir (only empty directories, files and
// symlinks maka made; RemoveAll follows no symlink).
func removeRoot(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove root scaffold: %w", err)
	}
	return nil
}

// reclaimRoots removes the scaffolds no record names and no live command
// holds: creates that died between building and publishing.
func reclaimRoots(store *Store) {
	reclaimOrphans(store, rootsDir(store), removeRoot)
}

// reclaimOrphans removes, with remove, each entry of dir named by an id
// that no live command holds (its lock is free) and no record names: what
// a create that died before publishing left there. A live sandbox's stays
// until its teardown.
func reclaimOrphans(store *Store, dir string, remove func(string) error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		id := e.Name()
		if !ValidID(id) {
			continue
		}
		lock, err := store.Lock(id, 0)
		if err != nil {
			continue
		}
		if rec, err := store.Get(id); err == nil && rec == nil {
			_ = remove(filepath.Join(dir, id))
		}
		lock.Unlock()
	}
}
