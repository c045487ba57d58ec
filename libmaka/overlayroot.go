package libmaka

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The root as one overlay (issue 24 item 2; docs/dev/overlay-root.md): the
// checked root, cloned from its staged descriptor and idmapped through the
// sandbox's user namespace, read-only, is the lower layer of an overlay
// whose upper layer is a small tmpfs of the sandbox's own. The mount points
// the root lacks are made in the upper layer. libcontainer is handed the
// overlay as the rootfs and joins the user namespace maka made: no
// scaffold, no bind per entry of the root, no round trip per bind between
// libcontainer's init and its parent.
//
// The user namespace is made by a holder: a 129-byte static program that
// only pauses (pauseELF), started from a sealed memfd with CLONE_NEWUSER
// and the sandbox's mappings, and killed once libcontainer's init has
// joined its namespace (Op.End). libcontainer reads the mappings back from
// /proc/<holder>/ns/user's own /proc entries.

// pauseELF is a minimal x86-64 ELF executable: `1: pause(); goto 1`.
var pauseELF = []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x02\x00\x3e\x00\x01\x00\x00\x00\x78\x00\x40\x00\x00\x00\x00\x00" +
	"\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x40\x00\x38\x00\x01\x00\x00\x00\x00\x00\x00\x00" +
	"\x01\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00" +
	"\x81\x00\x00\x00\x00\x00\x00\x00\x81\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x10\x00\x00\x00\x00\x00\x00\xb8\x22\x00\x00\x00\x0f\x05\xeb\xf7")

// overlayUpperSize and overlayUpperInodes bound the upper layer of a
// read-only root: it holds only the mount points maka makes.
// viewUpperInodes bounds a writable view's, as specconv bounds any tmpfs's
// nr_inodes (maxTmpfsInodes).
const (
	overlayUpperSize   = 1 << 20
	overlayUpperInodes = 4096
	viewUpperInodes    = 1 << 20
)

// usernsHolder is a process that holds a user namespace of the sandbox's
// mappings while libcontainer creates the sandbox in it.
type usernsHolder struct {
	cmd *exec.Cmd
}

func (h *usernsHolder) path() string {
	return fmt.Sprintf("/proc/%d/ns/user", h.cmd.Process.Pid)
}

func (h *usernsHolder) stop() {
	if h == nil || h.cmd == nil {
		return
	}
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
	h.cmd = nil
}

// OverlayRootSupported: maka has a holder program for this architecture,
// and the kernel takes an idmapped overlay layer (5.19) with user xattrs on
// a tmpfs upper layer (6.6: below it a writable view cannot remove a
// directory of the root and make it again).
var OverlayRootSupported = sync.OnceValue(func() bool {
	if runtime.GOARCH != "amd64" {
		return false
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 6 || (major == 6 && minor >= 6)
})

// holderSpawner starts holders from one OS thread that never exits: a
// child's Pdeathsig fires when the *thread* that forked it ends, and Go
// ends a thread whenever a goroutine locked to it returns (libcontainer's
// own do, in a long-lived program): the holder would die before
// libcontainer's init joins its namespace.
var holderSpawner = sync.OnceValue(func() chan spawnRequest {
	ch := make(chan spawnRequest)
	go func() {
		runtime.LockOSThread()
		for r := range ch {
			r.done <- r.cmd.Start()
		}
	}()
	return ch
})

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func startUsernsHolder(b *Boundary) (*usernsHolder, error) {
	if !OverlayRootSupported() {
		return nil, errors.ErrUnsupported
	}
	// An executable memfd must be asked for where vm.memfd_noexec makes
	// them non-executable by default (6.3); older kernels know no MFD_EXEC.
	fd, err := unix.MemfdCreate("maka-userns", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate("maka-userns", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		// vm.memfd_noexec=2 refuses executable memfds: the scaffold.
		return nil, fmt.Errorf("user namespace holder: %w: %w", err, errors.ErrUnsupported)
	}
	f := os.NewFile(uintptr(fd), "maka-userns")
	defer f.Close()
	if _, err := f.Write(pauseELF); err != nil {
		return nil, err
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		return nil, err
	}
	maps := func(m []specs.LinuxIDMapping) []syscall.SysProcIDMap {
		out := make([]syscall.SysProcIDMap, 0, len(m))
		for _, e := range m {
			out = append(out, syscall.SysProcIDMap{ContainerID: int(e.ContainerID), HostID: int(e.HostID), Size: int(e.Size)})
		}
		return out
	}
	// The path is resolved in the child, before its close-on-exec
	// descriptors close: the memfd is ours, sealed.
	cmd := exec.Command("/proc/self/fd/" + strconv.Itoa(fd))
	cmd.Args = []string{"maka-userns"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: maps(b.UIDMappings),
		GidMappings: maps(b.GIDMappings),
		// libcontainer's init may set supplementary groups.
		GidMappingsEnableSetgroups: true,
		// It runs as the sandbox's root (a host id of the leased block),
		// never as host root, in a process group of its own (a terminal's
		// ^C or ^Z to a foreground run is not for it), and dies with maka.
		Credential: &syscall.Credential{Uid: 0, Gid: 0},
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
	}
	done := make(chan error, 1)
	holderSpawner() <- spawnRequest{cmd: cmd, done: done}
	if err := <-done; err != nil {
		if errors.Is(err, unix.EACCES) {
			// A noexec memfd (vm.memfd_noexec): the scaffold.
			err = fmt.Errorf("%w: %w", err, errors.ErrUnsupported)
		}
		return nil, fmt.Errorf("user namespace: %w", err)
	}
	return &usernsHolder{cmd: cmd}, nil
}

// BuildOverlayRoot builds b's root as an overlay from the staged root when
// the root is idmapped and staged (host root) and read-only, and returns
// whether it did (false: the scaffold is built instead). The user
// namespace's path goes to the staged namespaces.
func (op *Op) BuildOverlayRoot(b *Boundary, staged *Staged) (bool, error) {
	r := &b.Rootfs
	userIdx := slices.IndexFunc(b.Namespaces, func(n Namespace) bool { return n.Type == "user" && n.Path == "" })
	// plain: no user namespace (baseline without one): no holder, no
	// idmapping, and overlayfs keeps its own xattrs as host root does
	// (trusted.*), on any kernel. Such a root is assembled only when it
	// must be: mount points to make, or a writable view.
	plain := !b.Users.Namespace
	// The scaffold stays for what the overlay does not cover: no host
	// root to stage with (rootless), a root the kernel cannot idmap, a
	// user namespace config.json names, an architecture without a holder.
	scaffold := staged == nil || !r.Readonly ||
		(!plain && (!r.IDMapped || userIdx < 0)) ||
		(plain && !r.WritableView && !r.Scaffolded()) ||
		(!r.WritableView && os.Getenv("MAKA_NO_OVERLAY_ROOT") != "")
	if !scaffold {
		// An overlay's layer does not cross mount points: a mount below
		// the root (an admin's, hiding part of it) would vanish and show
		// what it covers. The scaffold binds each entry recursively.
		below, err := mountsBelow(staged.Root)
		if err != nil {
			return false, err
		}
		if below != "" {
			if r.WritableView {
				return false, fmt.Errorf("root.readonly: false asks for a writable view of %s, which has a mount below it (%s) that the view cannot show: set root.readonly to true", r.Path, below)
			}
			scaffold = true
		}
	}
	var h *usernsHolder
	var err error
	if !scaffold && !plain {
		h, err = startUsernsHolder(b)
		scaffold = errors.Is(err, errors.ErrUnsupported)
	}
	if scaffold {
		if r.WritableView {
			return false, errors.New("root.readonly: false asks for a writable view of the read-only root, which maka builds only as host root, on a root the kernel can idmap, in a user namespace of maka's own, on amd64 with Linux 6.6 or later")
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	attr := unix.MountAttr{
		Attr_set:    unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV,
		Propagation: unix.MS_PRIVATE,
	}
	if !plain {
		op.holder = h
		nsfd, err := unix.Open(h.path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, fmt.Errorf("user namespace: %w", err)
		}
		defer unix.Close(nsfd)
		attr.Attr_set |= unix.MOUNT_ATTR_IDMAP
		attr.Userns_fd = uint64(nsfd)
	}

	// The lower layer: the staged root, cloned, read-only (and idmapped with
	// a user namespace).
	rootfd, err := unix.Open(staged.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("root.path: %w", err)
	}
	defer unix.Close(rootfd)
	lower, err := op.stagePoint()
	if err != nil {
		return false, err
	}
	tree, err := unix.OpenTree(rootfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return false, fmt.Errorf("root.path: open_tree: %w", err)
	}
	defer unix.Close(tree)
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return false, fmt.Errorf("root.path: the lower layer (mount_setattr): %w", err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, lower, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return false, fmt.Errorf("root.path: move_mount: %w", err)
	}

	// The upper layer: a tmpfs of the sandbox's root's.
	upper, err := op.stagePoint()
	if err != nil {
		return false, err
	}
	// A read-only root's upper layer holds only the mount points maka
	// makes; a writable view's holds the sandbox's writes, as much as any
	// of its tmpfs mounts may (its pages are charged to the sandbox's
	// memory cgroup, which writes them).
	// Inodes are kernel memory: bounded too (the mount points maka
	// makes are config.json's to ask for, and maka makes them as host
	// root, charged to whoever runs maka).
	upperOpts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", overlayUpperSize, overlayUpperInodes)
	if r.WritableView {
		size := b.Limits.TmpfsSize
		if size <= 0 {
			// No tmpfs limit in the policy: still not half the host's RAM.
			size = defaultLimits.TmpfsSize
		}
		upperOpts = fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", size, viewUpperInodes)
	}
	if err := unix.Mount("tmpfs", upper, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, upperOpts); err != nil {
		return false, fmt.Errorf("root overlay: upper layer: %w", err)
	}
	if err := makePrivate(upper); err != nil {
		return false, err
	}
	uid, gid := int(mapID(b.UIDMappings, 0)), int(mapID(b.GIDMappings, 0))
	if plain {
		uid, gid = 0, 0
	}
	for _, d := range []string{"u", "w"} {
		p := filepath.Join(upper, d)
		if err := os.Mkdir(p, 0o755); err != nil {
			return false, fmt.Errorf("root overlay: %w", err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			return false, fmt.Errorf("root overlay: %w", err)
		}
	}
	root, err := op.stagePoint()
	if err != nil {
		return false, err
	}
	// The layers are named by descriptor: the overlay's options show in
	// the sandbox's own /proc/self/mountinfo, and a host path there would
	// tell it where maka keeps its state.
	lowerfd, err := unix.Open(lower, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("root overlay: %w", err)
	}
	defer unix.Close(lowerfd)
	upperfd, err := unix.Open(upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("root overlay: %w", err)
	}
	defer unix.Close(upperfd)
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=/proc/self/fd/%d/u,workdir=/proc/self/fd/%d/w", lowerfd, upperfd, upperfd)
	if !plain {
		opts += ",userxattr"
	}
	if err := unix.Mount("overlay", root, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return false, fmt.Errorf("root overlay: %w", err)
	}
	if err := makePrivate(root); err != nil {
		return false, err
	}
	// The mount points the root lacks, made in the upper layer, below
	// the overlay's root only (an entry of the root is the bundle
	// author's to swap for a link meanwhile: never followed).
	ofd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("root overlay: %w", err)
	}
	defer unix.Close(ofd)
	for _, m := range r.Missing {
		if err := mkdirBeneath(ofd, m, uid, gid, false); err != nil {
			return false, fmt.Errorf("root overlay: /%s: %w", m, err)
		}
	}
	for _, m := range r.MissingFiles {
		if err := mkdirBeneath(ofd, m, uid, gid, true); err != nil {
			return false, fmt.Errorf("root overlay: /%s: %w", m, err)
		}
	}
	staged.Root = root
	if !plain {
		staged.Namespaces[userIdx] = h.path()
		staged.UserNS = true
	}
	r.Overlay = true
	return true, nil
}

// stagePoint makes a new directory of the op's stage directory to mount
// on.
func (op *Op) stagePoint() (string, error) {
	if op.staged == 0 {
		return "", errors.New("stage: nothing staged yet")
	}
	op.staged++
	dst := filepath.Join(stageDir(op.lock.store, op.ID), strconv.Itoa(op.staged))
	return dst, os.Mkdir(dst, 0o700)
}

// mkdirBeneath makes the directories of rel below dirfd (and rel itself as
// an empty file when file), following no link, owned by uid:gid.
func mkdirBeneath(dirfd int, rel string, uid, gid int, file bool) error {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return err
	}
	defer func() { unix.Close(cur) }()
	for i, p := range parts {
		last := i == len(parts)-1
		if last && file {
			fd, err := unix.Openat(cur, p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
			if err == nil {
				err = unix.Fchown(fd, uid, gid)
				unix.Close(fd)
			}
			if errors.Is(err, unix.EEXIST) {
				return nil
			}
			return err
		}
		made := false
		if err := unix.Mkdirat(cur, p, 0o755); err == nil {
			made = true
		} else if !errors.Is(err, unix.EEXIST) {
			return err
		}
		next, err := unix.Openat2(cur, p, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err != nil {
			return err
		}
		if made {
			if err := unix.Fchownat(next, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
				unix.Close(next)
				return err
			}
		}
		unix.Close(cur)
		cur = next
	}
	return nil
}

// mountsBelow returns the first mount point strictly below dir (as
// /proc/self/mountinfo shows it), or "".
func mountsBelow(dir string) (string, error) {
	mounts, err := readMountinfo()
	if err != nil {
		return "", err
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for _, m := range mounts {
		if strings.HasPrefix(m.point, prefix) {
			return m.point, nil
		}
	}
	return "", nil
}

// makePrivate: a mount made with mount(2) joins its parent's peer group
// (a state directory under a shared / on systemd hosts): made private,
// what is mounted below it later (libcontainer's work on the root) does
// not propagate into other mount namespaces. (The copy a shared parent
// propagates at mount time is the stage directory's to prevent, by being
// a private mount of its own: not done yet, docs/dev/status.md.)
func makePrivate(path string) error {
	if err := unix.Mount("", path, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("root overlay: %s: private: %w", path, err)
	}
	return nil
}
