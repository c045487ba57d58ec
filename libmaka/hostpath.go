package libmaka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Descriptors, not names (DESIGN §1). A host path someone else can write
// (the bundle's root, a bind source, a namespace path) is opened once,
// without following any symlink, and checked on the descriptor; the mount
// libcontainer is handed is staged from that descriptor (open_tree +
// move_mount) into a directory only maka can write. Swapping the name for
// a symlink after the check then changes nothing: the name is never
// looked up again. OpenHostPath is the only way in; a test lists its
// callers (hostpath_callers_test.go).

// HostKind is what a host path must be.
type HostKind int

const (
	// HostDir: a directory (the root).
	HostDir HostKind = iota
	// HostBindSource: any file but a symlink (a bind source).
	HostBindSource
	// HostNamespace: a namespace file (nsfs), of type NSType.
	HostNamespace
)

// HostPath is a host path opened once (O_PATH), without following links,
// and checked. Close it once it is staged.
type HostPath struct {
	// Field names the config.json field the path came from (for errors).
	Field string
	// Path is the path as opened.
	Path string
	fd   int
	st   unix.Stat_t
}

// FileID is a file's device and inode.
type FileID struct{ Dev, Ino uint64 }

func (h *HostPath) ID() FileID { return FileID{h.st.Dev, h.st.Ino} }

// Close closes the descriptor.
func (h *HostPath) Close() {
	if h != nil && h.fd >= 0 {
		unix.Close(h.fd)
		h.fd = -1
	}
}

// IsDir reports whether the checked path is a directory.
func (h *HostPath) IsDir() bool { return h.st.Mode&unix.S_IFMT == unix.S_IFDIR }

// nsFile names each namespace type's file under /proc/PID/ns.
var nsFile = map[string]string{
	"pid": "pid", "network": "net", "mount": "mnt", "ipc": "ipc", "uts": "uts", "user": "user", "cgroup": "cgroup", "time": "time",
}

// nsTypes are the kernel's namespace types (NS_GET_NSTYPE) by the names
// config.json gives them.
var nsTypes = map[int]string{
	unix.CLONE_NEWPID: "pid", unix.CLONE_NEWNET: "network", unix.CLONE_NEWNS: "mount", unix.CLONE_NEWIPC: "ipc",
	unix.CLONE_NEWUTS: "uts", unix.CLONE_NEWUSER: "user", unix.CLONE_NEWCGROUP: "cgroup", unix.CLONE_NEWTIME: "time",
}

// nsTypeOf is the type of the namespace file held by the O_PATH
// descriptor fd. NS_GET_NSTYPE needs a descriptor opened for reading: fd
// reopened through /proc/self/fd, which names the same file whatever its
// path says now (the readlink of a namespace bound on a file is its path,
// not "net:[ino]").
func nsTypeOf(fd int) (string, error) {
	rfd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(rfd)
	v, err := unix.IoctlRetInt(rfd, unix.NS_GET_NSTYPE)
	if err != nil {
		return "", err
	}
	if t, ok := nsTypes[v]; ok {
		return t, nil
	}
	return fmt.Sprintf("unknown (%#x)", v), nil
}

// withArticle is a namespace type's name with its article.
func withArticle(t string) string {
	if t == "ipc" || strings.HasPrefix(t, "unknown") {
		return "an " + t
	}
	return "a " + t
}

// OpenHostPath opens path (absolute, as the check resolved it) for field:
// with openat2 RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, so a symlink
// anywhere in it (one swapped in after the check) is refused, not
// followed; then checks the descriptor: its type (kind), and that it is
// none of never (maka's own state: the directory itself, one below it, or
// one holding it, compared by device and inode, so a second name or a
// bind mount of the same directory is refused too). A namespace path's
// last component may be a /proc/PID/ns/* entry (the kernel's own link,
// which no user can swap): the directory holding it is opened without
// links, the entry itself is followed only when that directory is procfs;
// the result must be a namespace file (nsfs) of type nsType and none of
// the host's own (init's or maka's).
func OpenHostPath(field, path string, kind HostKind, nsType string, never *Never) (*HostPath, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%s: %s is not an absolute path", field, path)
	}
	h := &HostPath{Field: field, Path: filepath.Clean(path), fd: -1}
	var err error
	if kind == HostNamespace {
		h.fd, err = openNamespace(h.Path)
	} else {
		h.fd, err = openNoLinks(h.Path, unix.O_PATH|unix.O_CLOEXEC)
	}
	if err != nil {
		return nil, hostPathError(field, h.Path, err)
	}
	if err := h.check(kind, nsType, never); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

func hostPathError(field, path string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%s: %s has a symlink in it now (it changed since it was checked, or names a link): config.json must name the real path", field, path)
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s: %s does not exist (it changed since it was checked)", field, path)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%s: openat2 is not supported by this kernel (Linux 5.6 or later is required)", field)
	}
	return fmt.Errorf("%s: open %s: %w", field, path, err)
}

func openNoLinks(path string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
			Flags:   flags,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

func openNamespace(path string) (int, error) {
	dir, base := filepath.Split(path)
	// The directory's links are resolved once (/var/run, /proc/self): the
	// namespace named there is what is checked, whatever it is; config.json
	// could name it directly. The entry itself is followed only in procfs.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return -1, err
	}
	dfd, err := openNoLinks(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(dfd, &sfs); err != nil {
		return -1, err
	}
	flags := unix.O_PATH | unix.O_CLOEXEC
	if sfs.Type != unix.PROC_SUPER_MAGIC {
		flags |= unix.O_NOFOLLOW
	}
	return unix.Openat(dfd, base, flags, 0)
}

func (h *HostPath) check(kind HostKind, nsType string, never *Never) error {
	if err := unix.Fstat(h.fd, &h.st); err != nil {
		return fmt.Errorf("%s: %s: %w", h.Field, h.Path, err)
	}
	typ := h.st.Mode & unix.S_IFMT
	switch kind {
	case HostDir:
		if typ != unix.S_IFDIR {
			return fmt.Errorf("%s: %s is not a directory", h.Field, h.Path)
		}
	case HostBindSource:
		// Any file but a symlink (refused when opened): sockets and
		// device nodes are bound as runc binds them, the device cgroup
		// and the policy's bind rules deciding what they give.
	case HostNamespace:
		var sfs unix.Statfs_t
		if err := unix.Fstatfs(h.fd, &sfs); err != nil {
			return fmt.Errorf("%s: %s: %w", h.Field, h.Path, err)
		}
		if sfs.Type != unix.NSFS_MAGIC {
			return fmt.Errorf("%s: %s is not a namespace file (a symlink, or it changed since it was checked)", h.Field, h.Path)
		}
		if name, ok := nsFile[nsType]; ok {
			// Its type, asked of the kernel: the init's setns would
			// refuse another, too late to name the field.
			got, err := nsTypeOf(h.fd)
			if err != nil {
				return fmt.Errorf("%s: %s: its namespace type: %w", h.Field, h.Path, err)
			}
			if got != nsType {
				return fmt.Errorf("%s: %s is %s namespace, not a %s namespace", h.Field, h.Path, withArticle(got), nsType)
			}
			for _, p := range []string{"/proc/1/ns/" + name, "/proc/self/ns/" + name} {
				var st unix.Stat_t
				if unix.Stat(p, &st) == nil && st.Dev == h.st.Dev && st.Ino == h.st.Ino {
					return fmt.Errorf("%s: %s is the host's own %s namespace", h.Field, h.Path, nsType)
				}
			}
		}
		return nil
	}
	if never == nil {
		return nil
	}
	if never.holders[h.ID()] {
		return fmt.Errorf("%s: %s holds maka's own state: no sandbox may see it", h.Field, h.Path)
	}
	mine, err := ancestors(h.fd)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", h.Field, h.Path, err)
	}
	for _, n := range never.dirs {
		if mine[n] {
			return fmt.Errorf("%s: %s is (or lies below) maka's own state: no sandbox may see it", h.Field, h.Path)
		}
	}
	return nil
}

// ancestors is the set of fd's directory and every directory above it up
// to the process's root ("..", across mounts), by device and inode.
func ancestors(fd int) (map[FileID]bool, error) {
	out := map[FileID]bool{}
	cur, err := unix.Openat(fd, ".", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		// A file: start from itself, then its directory is not
		// reachable by "..": a file is never a state dir, nor holds one.
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			return nil, err
		}
		out[FileID{st.Dev, st.Ino}] = true
		return out, nil
	}
	for i := 0; i < 4096; i++ {
		var st unix.Stat_t
		if err := unix.Fstat(cur, &st); err != nil {
			unix.Close(cur)
			return nil, err
		}
		id := FileID{st.Dev, st.Ino}
		if out[id] {
			break // the root: ".." is itself
		}
		out[id] = true
		up, err := unix.Openat(cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(cur)
		if err != nil {
			return nil, err
		}
		cur = up
	}
	unix.Close(cur)
	return out, nil
}

// Never is maka's own state on this host, which no sandbox may see, by
// device and inode: a second name or a bind mount of it is caught too.
type Never struct {
	dirs    []FileID        // the state directories
	holders map[FileID]bool // they and every directory above them but /
}

// NeverOf is the never-list of the given directories (this invocation's
// --root and --state-dir), the default ones, and every root the stores of
// those state dirs name (other invocations' --root). A path that is one of
// them, lies below one, or holds one (other than /, which holds
// everything and is refused by name) is refused.
func NeverOf(dirs ...string) *Never {
	n := &Never{holders: map[FileID]bool{}}
	seen := map[FileID]bool{}
	var rootID FileID
	var st unix.Stat_t
	if unix.Stat("/", &st) == nil {
		rootID = FileID{st.Dev, st.Ino}
	}
	add := func(p string) {
		fd, err := openNoLinks(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
		if err != nil {
			// A state dir named through a link: its real path.
			r, rerr := filepath.EvalSymlinks(p)
			if rerr != nil {
				return
			}
			if fd, err = openNoLinks(r, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC); err != nil {
				return
			}
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			return
		}
		id := FileID{st.Dev, st.Ino}
		if seen[id] {
			return
		}
		seen[id] = true
		n.dirs = append(n.dirs, id)
		if up, err := ancestors(fd); err == nil {
			for a := range up {
				if a != rootID {
					n.holders[a] = true
				}
			}
		}
	}
	all := append([]string{DefaultStateDir, "/run/maka"}, dirs...)
	for _, d := range all {
		if d == "" {
			continue
		}
		add(d)
		// Other roots: each store under a state dir names its root.
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join(d, e.Name(), "root")); err == nil {
				add(strings.TrimSpace(string(data)))
			}
		}
	}
	return n
}

// stageDir holds the mounts staged for the sandbox id of store:
// <state-dir>/stage/<the store's key>/<id>.
func stageDir(s *Store, id string) string {
	return filepath.Join(filepath.Dir(s.Dir), "stage", filepath.Base(s.Dir), id)
}

// Stage mounts a clone of h (recursively with recursive) at a new entry of
// the op's stage directory and returns its path: the one libcontainer is
// handed. The directories on the way are root's, searchable by all (a
// user-namespaced init must reach them), writable by root alone.
func (op *Op) Stage(h *HostPath, recursive bool) (string, error) {
	dir := stageDir(op.lock.store, op.ID)
	if op.staged == 0 {
		// Mounts a create of this id that died before its End left.
		if err := unstage(dir); err != nil {
			return "", err
		}
		stateDir := filepath.Dir(op.lock.store.Dir)
		for _, d := range []string{stateDir, filepath.Join(stateDir, "stage"), filepath.Dir(dir)} {
			if err := ensureSearchable(d); err != nil {
				return "", fmt.Errorf("%s: stage: %w", h.Field, err)
			}
		}
		if err := makeStageDir(dir, op.stageGID); err != nil {
			return "", fmt.Errorf("%s: stage: %w", h.Field, err)
		}
	}
	op.staged++
	dst := filepath.Join(dir, strconv.Itoa(op.staged))
	if h.IsDir() {
		if err := os.Mkdir(dst, 0o700); err != nil {
			return "", fmt.Errorf("%s: stage: %w", h.Field, err)
		}
	} else {
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return "", fmt.Errorf("%s: stage: %w", h.Field, err)
		}
		f.Close()
	}
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(h.fd, "", flags)
	if err != nil {
		return "", fmt.Errorf("%s: stage %s: open_tree: %w", h.Field, h.Path, err)
	}
	defer unix.Close(tree)
	// The staged copy shares no propagation with the source: nothing
	// mounted at either shows at the other.
	attr := unix.MountAttr{Propagation: unix.MS_PRIVATE}
	_ = unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", fmt.Errorf("%s: stage %s: move_mount: %w", h.Field, h.Path, err)
	}
	return dst, nil
}

// makeStageDir makes the sandbox's own stage directory: root's, mode
// 0700, or 0710 with group gid when gid >= 0. A staged mount shows its
// source past the permissions of the source's parents: only root and
// the sandbox's own init (in its user namespace, that group: libcontainer
// mounts from there) may reach it, never another local user.
func makeStageDir(dir string, gid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if gid < 0 {
		return nil
	}
	if err := os.Lchown(dir, os.Geteuid(), gid); err != nil {
		return err
	}
	return os.Chmod(dir, 0o710)
}

func ensureSearchable(d string) error {
	if err := os.Mkdir(d, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(d, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("%s is not a directory", d)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("%s is writable by others than maka's user", d)
	}
	if st.Mode&0o011 != 0o011 {
		return os.Chmod(d, os.FileMode(st.Mode&0o7777|0o011))
	}
	return nil
}

// unstage removes every mount staged in dir and the dir: each entry is
// detached (MNT_DETACH: a sandbox being created may still hold it) and
// removed. A missing dir is nothing to do.
func unstage(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unstage: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		for {
			// Stacked mounts (none maka makes, but a crash may repeat
			// one) are all detached.
			if err := unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
				if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
					return fmt.Errorf("unstage %s: %w", p, err)
				}
				break
			}
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("unstage: %w", err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unstage: %w", err)
	}
	return nil
}

// reclaimStages removes the staged mounts of ids no live command holds and
// no record names (creates that died before their End).
func reclaimStages(store *Store) {
	reclaimOrphans(store, filepath.Dir(stageDir(store, "x")), unstage)
}

// Staged are the paths libcontainer is handed in place of the Boundary's
// host paths: each a mount staged from a checked descriptor (Op.Stage).
// The Boundary (what `maka boundary` and the record show) keeps the
// user's paths.
type Staged struct {
	// Root stands for b.Rootfs.Path.
	Root string
	// Mounts[i] stands for b.Mounts[i].Source (binds only).
	Mounts map[int]string
	// Namespaces[i] stands for b.Namespaces[i].Path.
	Namespaces map[int]string
	// UserNS: the user namespace is maka's own (BuildOverlayRoot), joined
	// by its path: libcontainer reads its mappings from it.
	UserNS bool
	// Scaffold stands for b.Rootfs.Scaffold (BuildRoot): a staged clone
	// of it, nosuid and nodev.
	Scaffold string
}

// StageBoundary opens the root, every bind source and every namespace
// path of b once (OpenHostPath), checks them on their descriptors and
// stages them (Op.Stage). The staged mounts are removed at the op's End
// (libcontainer has made its own by then), and by Lock.Drop and recover
// after a crash. Rootless (not host root) there is nothing to stage from:
// the paths are the user's own and are handed by name, as checked.
func (op *Op) StageBoundary(b *Boundary) (*Staged, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	never := NeverOf(op.rt.Root, filepath.Dir(op.lock.store.Dir))
	op.stageGID = -1
	if b.Users.Namespace {
		// Only a mapped gid 0 (the init's group): never the overflow group.
		for _, m := range b.GIDMappings {
			if m.ContainerID == 0 && m.Size > 0 {
				op.stageGID = int(m.HostID)
			}
		}
	}
	st := &Staged{Mounts: map[int]string{}, Namespaces: map[int]string{}}
	stage := func(field, path string, kind HostKind, nsType string, recursive bool) (string, error) {
		h, err := OpenHostPath(field, path, kind, nsType, never)
		if err != nil {
			return "", err
		}
		defer h.Close()
		return op.Stage(h, recursive)
	}
	var err error
	if st.Root, err = stage("root.path", b.Rootfs.Path, HostDir, "", true); err != nil {
		return nil, err
	}
	for i, m := range b.Mounts {
		if !isBindMount(m.Type, m.Options) {
			continue
		}
		p, err := stage(fmt.Sprintf("mounts[%d].source", i), m.Source, HostBindSource, "", slices.Contains(m.Options, "rbind"))
		if err != nil {
			return nil, err
		}
		st.Mounts[i] = p
	}
	for i, n := range b.Namespaces {
		if n.Path == "" {
			continue
		}
		p, err := stage(fmt.Sprintf("linux.namespaces[%d].path", i), n.Path, HostNamespace, n.Type, false)
		if err != nil {
			return nil, err
		}
		st.Namespaces[i] = p
	}
	return st, nil
}

// OpenBeneath opens rel below the directory open as dirfd (O_PATH,
// RESOLVE_BENEATH and no symlink anywhere: an entry of the root swapped
// for a link to a host path after it was read is refused, not followed)
// and checks that it is a directory when dir, a file but a symlink
// otherwise. path names it in errors (field: path).
func OpenBeneath(field, path string, dirfd int, rel string, dir bool) (*HostPath, error) {
	h := &HostPath{Field: field, Path: path, fd: -1}
	var err error
	for {
		h.fd, err = unix.Openat2(dirfd, rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, hostPathError(field, path, err)
	}
	if err := unix.Fstat(h.fd, &h.st); err != nil {
		h.Close()
		return nil, fmt.Errorf("%s: %s: %w", field, path, err)
	}
	switch typ := h.st.Mode & unix.S_IFMT; {
	case typ == unix.S_IFLNK:
		h.Close()
		return nil, hostPathError(field, path, unix.ELOOP)
	case (typ == unix.S_IFDIR) != dir:
		h.Close()
		return nil, fmt.Errorf("%s: %s changed since it was read (a directory and a file swapped)", field, path)
	}
	return h, nil
}

// isBindMount is specconv.IsBind's rule (a bind type, or a bind option).
func isBindMount(typ string, options []string) bool {
	return typ == "bind" || slices.Contains(options, "bind") || slices.Contains(options, "rbind")
}

// NamespacePath is the staged path of b.Namespaces[i], if it was staged.
func (s *Staged) NamespacePath(i int) (string, bool) {
	if s == nil {
		return "", false
	}
	p, ok := s.Namespaces[i]
	return p, ok
}
