package libmaka

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	spath "path"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// File transfers between the host and a sandbox (issue 13, item 4).
//
// Every path is resolved inside the sandbox, from a descriptor on the
// sandbox's root, with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_MAGICLINKS): a symbolic link anywhere in the path (first,
// middle or last component, absolute or relative, to a host path or not)
// makes the transfer fail instead of being followed, ".." cannot climb above
// the sandbox's root, and /proc's magic links are refused. The program
// inside owns everything under its writable mounts and may plant links
// there at any moment; descriptors (never a second lookup by name) are what
// make that harmless.

// DefaultTransferLimit caps one transfer when the caller gives no limit (the
// bubblewrap backend's 8 MiB).
const DefaultTransferLimit int64 = 8 << 20

// ContainerWorkDir is where relative transfer paths resolve, as relative
// working directories of commands do.
const ContainerWorkDir = "/maka/work"

// overflowID is what the kernel shows for an id the user namespace does not
// map (the default /proc/sys/kernel/overflowuid and overflowgid).
const overflowID = 65534

// Target is the sandbox a transfer reaches: its init process (whose root is
// the sandbox's root) and its user namespace's mappings, as maka state
// reports them. With no mappings the sandbox's ids are the host's.
type Target struct {
	// Pid is the sandbox's init, seen from the host.
	Pid int
	// StartTime, when not zero, is the init's start time in clock ticks
	// since boot (field 22 of /proc/PID/stat, libcontainer's
	// init_process_start): the transfer is refused if the process holding
	// Pid is another one (the init died and its pid was reused).
	StartTime uint64
	// UIDMappings and GIDMappings are the user namespace's.
	UIDMappings, GIDMappings []specs.LinuxIDMapping
}

// FileInfo describes a transferred file as the sandbox sees it: Path is the
// absolute path inside the sandbox, UID and GID are translated back through
// the user namespace's mappings (an id the namespace does not map shows as
// 65534, the kernel's overflow id, as it does inside), Mode and ModTime are
// the file's, and Size is the number of bytes transferred.
type FileInfo struct {
	Path    string
	Size    int64
	Mode    fs.FileMode
	UID     int
	GID     int
	ModTime time.Time
}

// ErrTransferTooLarge is matched (errors.Is) by every *TransferTooLargeError.
var ErrTransferTooLarge = errors.New("transfer too large")

// ErrNotRegularFile is matched (errors.Is) when the sandbox's path is not a
// regular file: transfers move one regular file (no directories, devices,
// FIFOs or sockets; a FIFO is refused before it is opened, so a transfer
// never blocks on one).
var ErrNotRegularFile = errors.New("not a regular file")

// TransferTooLargeError reports a transfer refused because it exceeds its
// limit. Size is the size seen (at least Limit+1 when the data was a stream
// or the file grew while it was read). Unit is what Size and Limit count:
// "" (bytes) for every single-file transfer; a directory transfer also caps
// "entries" and "levels of directories" (transfer_dir.go).
type TransferTooLargeError struct {
	Path  string
	Size  int64
	Limit int64
	Unit  string
}

func (e *TransferTooLargeError) Error() string {
	unit := e.Unit
	if unit == "" {
		unit = "bytes"
	}
	return fmt.Sprintf("%s: transfer too large: %d %s or more, over the limit of %d %s", e.Path, e.Size, unit, e.Limit, unit)
}

// Is makes errors.Is(err, ErrTransferTooLarge) true.
func (e *TransferTooLargeError) Is(target error) bool { return target == ErrTransferTooLarge }

// resolveFlags: never follow a link, never leave the root.
const resolveFlags = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// sandboxPath makes p absolute in the sandbox (relative: under
// /maka/work) and lexically clean. The result starts with "/".
func sandboxPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%q: path contains a NUL byte", p)
	}
	if !spath.IsAbs(p) {
		p = spath.Join(ContainerWorkDir, p)
	}
	return spath.Clean(p), nil
}

// openRoot opens the sandbox's root as a directory descriptor through
// /proc/PID/root, with a pidfd opened first: the pidfd pins the process
// (its pid cannot be reused while the pidfd names a live or unreaped
// process), so if the process is still alive after the root and its start
// time were read, both were the process's. A start time other than
// t.StartTime means the pid already belonged to another process.
func openRoot(t Target) (*os.File, error) {
	if t.Pid <= 0 {
		return nil, fmt.Errorf("sandbox has no init process (pid %d)", t.Pid)
	}
	pidfd, err := unix.PidfdOpen(t.Pid, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox init %d: pidfd_open: %w", t.Pid, err)
	}
	defer unix.Close(pidfd)
	rootPath := "/proc/" + strconv.Itoa(t.Pid) + "/root"
	fd, err := unix.Open(rootPath, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox init %d: open %s: %w", t.Pid, rootPath, err)
	}
	root := os.NewFile(uintptr(fd), rootPath)
	start, err := procStartTime(t.Pid)
	if err == nil && t.StartTime != 0 && start != t.StartTime {
		err = fmt.Errorf("sandbox init %d: started at %d, not %d: the pid belongs to another process", t.Pid, start, t.StartTime)
	}
	if err == nil {
		if e := unix.PidfdSendSignal(pidfd, 0, nil, 0); e != nil {
			err = fmt.Errorf("sandbox init %d exited while its root was opened: %w", t.Pid, ErrNotRunning)
		}
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// procStartTime reads field 22 of /proc/PID/stat (after the command's
// closing parenthesis, which may itself contain spaces and parentheses).
func procStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// resolveErr names the path and says why the lookup failed in words a user
// can act on.
func resolveErr(p string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s: a component is a symbolic link, which transfers never follow: %w", p, err)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%s: the path escapes the sandbox's root: %w", p, err)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%s: openat2 is not supported by this kernel (Linux 5.6 or later is required): %w", p, err)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// idMap translates between host and sandbox ids.
type idMap []specs.LinuxIDMapping

// toHost is the host id of the sandbox's id (identity without a mapping).
func (m idMap) toHost(id uint32) (int, bool) {
	if len(m) == 0 {
		return int(id), true
	}
	for _, e := range m {
		if id >= e.ContainerID && uint64(id) < uint64(e.ContainerID)+uint64(e.Size) {
			return int(e.HostID + (id - e.ContainerID)), true
		}
	}
	return 0, false
}

// toSandbox is the sandbox's view of a host id (the overflow id when the
// namespace does not map it).
func (m idMap) toSandbox(id uint32) int {
	if len(m) == 0 {
		return int(id)
	}
	for _, e := range m {
		if id >= e.HostID && uint64(id) < uint64(e.HostID)+uint64(e.Size) {
			return int(e.ContainerID + (id - e.HostID))
		}
	}
	return overflowID
}

func fileInfoOf(p string, st *unix.Stat_t, size int64, t Target) FileInfo {
	return FileInfo{
		Path:    p,
		Size:    size,
		Mode:    fs.FileMode(st.Mode & 0o777),
		UID:     idMap(t.UIDMappings).toSandbox(st.Uid),
		GID:     idMap(t.GIDMappings).toSandbox(st.Gid),
		ModTime: time.Unix(st.Mtim.Unix()),
	}
}

func limitOf(limit int64) int64 {
	if limit <= 0 {
		return DefaultTransferLimit
	}
	return limit
}

// CopyOut writes the sandbox's regular file at path (relative: under
// /maka/work) to w. The file's size is checked against limit (<= 0: the
// default, 8 MiB) before anything is written to w; a file that grows past
// the limit while it is read stops the copy with a *TransferTooLargeError
// after at most limit bytes were written (a caller that must not keep a
// partial copy writes to a temporary file, as maka cp does). Anything but a
// regular file is refused with ErrNotRegularFile without being opened for
// reading. The FileInfo is the sandbox's view.
func CopyOut(t Target, name string, w io.Writer, limit int64) (FileInfo, error) {
	return atRoot(t, name, func(root int, p string) (FileInfo, error) {
		return copyOutAt(root, p, w, limitOf(limit), t)
	})
}

// atRoot resolves name in the sandbox (sandboxPath) and calls f with the
// sandbox's root, opened for the call (openRoot).
func atRoot[R any](t Target, name string, f func(root int, p string) (R, error)) (R, error) {
	var zero R
	p, err := sandboxPath(name)
	if err != nil {
		return zero, err
	}
	root, err := openRoot(t)
	if err != nil {
		return zero, err
	}
	defer root.Close()
	return f(int(root.Fd()), p)
}

// copyOutAt is CopyOut from an open root directory (p absolute and clean).
func copyOutAt(root int, p string, w io.Writer, limit int64, t Target) (FileInfo, error) {
	// Pinned first (hostfs.go): nothing is opened for reading (a FIFO does
	// not block, a device's driver is not called, a proc file is not
	// read) until the inode is known to be a regular file on a data
	// filesystem. The O_PATH descriptor pins that inode, so the reopen
	// reaches the same file whatever the sandbox does meanwhile.
	x, err := pin(root, p[1:], false, resolveFlags, p)
	if err != nil {
		return FileInfo{}, resolveErr(p, err)
	}
	defer x.Close()
	if x.typ() == unix.S_IFLNK {
		// O_PATH|O_NOFOLLOW pinned the link itself.
		return FileInfo{}, resolveErr(p, unix.ELOOP)
	}
	if err := x.check("not copied"); err != nil {
		return FileInfo{}, err
	}
	if x.typ() != unix.S_IFREG {
		return FileInfo{}, fmt.Errorf("%s: %s, not copied: %w", p, typeName(x.st.Mode), ErrNotRegularFile)
	}
	if x.st.Size > limit {
		return FileInfo{}, &TransferTooLargeError{Path: p, Size: x.st.Size, Limit: limit}
	}
	f, err := x.openFile("not copied")
	if err != nil {
		return FileInfo{}, err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, limit))
	if err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", p, err)
	}
	// One more byte means the file grew past the limit while it was read.
	var one [1]byte
	if m, _ := f.Read(one[:]); m > 0 {
		return FileInfo{}, &TransferTooLargeError{Path: p, Size: n + int64(m), Limit: limit}
	}
	return fileInfoOf(p, &x.st, n, t), nil
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return "not a regular file"
}

// Stat reports the sandbox's view of path (relative: under /maka/work)
// without following a symbolic link anywhere in it; a link as the last
// component is reported as a link (Mode has fs.ModeSymlink), a directory
// with fs.ModeDir. Size is the file's size.
func Stat(t Target, name string) (FileInfo, error) {
	return atRoot(t, name, func(root int, p string) (FileInfo, error) {
		return statAt(root, p, t)
	})
}

// statAt is Stat from an open root directory (p absolute and clean): the
// path is pinned (hostfs.go), never opened, and a path on a kernel
// filesystem is refused (ErrKernelFile), as every transfer refuses it.
func statAt(root int, p string, t Target) (FileInfo, error) {
	x, err := pin(root, p[1:], false, resolveFlags, p)
	if err != nil {
		return FileInfo{}, resolveErr(p, err)
	}
	defer x.Close()
	if x.fs != "" {
		return FileInfo{}, fmt.Errorf("%s: %s: %w", p, x.refusal(), ErrKernelFile)
	}
	st := x.st
	fi := fileInfoOf(p, &st, st.Size, t)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		fi.Mode |= fs.ModeDir
	case unix.S_IFLNK:
		fi.Mode |= fs.ModeSymlink
	case unix.S_IFREG:
	default:
		fi.Mode |= fs.ModeIrregular
	}
	return fi, nil
}

// CopyIn writes r, at most limit bytes (<= 0: the default, 8 MiB), as the
// regular file path in the sandbox (relative: under /maka/work), with the
// permission bits of mode (setuid, setgid and sticky are dropped), owned by
// the sandbox's root (the host ids its user namespace maps 0 to) so the
// program inside can use it.
//
// The parent directory is resolved without following any link and must be
// on a writable mount (a read-only one is refused, naming the path, before
// anything is created). The data goes to a new file created with O_EXCL
// under a temporary name in that directory, then renamed over path: a
// symbolic link, FIFO or hard link planted at path is replaced, never
// written through, and a transfer that fails (too large, out of space,
// reader error) removes its temporary file, so it leaves nothing behind. A
// directory at path is refused.
func CopyIn(t Target, name string, r io.Reader, mode fs.FileMode, limit int64) (FileInfo, error) {
	return atRoot(t, name, func(root int, p string) (FileInfo, error) {
		return copyInAt(root, p, r, mode, limitOf(limit), t)
	})
}

// copyInAt is CopyIn into an open root directory (p absolute and clean).
func copyInAt(root int, p string, r io.Reader, mode fs.FileMode, limit int64, t Target) (_ FileInfo, err error) {
	if p == "/" {
		return FileInfo{}, fmt.Errorf("%s: is the sandbox's root directory", p)
	}
	uid, gid, err := sandboxRootIDs(t, p)
	if err != nil {
		return FileInfo{}, err
	}
	dir, base := spath.Split(p)
	dfd, err := openWritableParent(root, p)
	if err != nil {
		return FileInfo{}, err
	}
	defer unix.Close(dfd)
	var old unix.Stat_t
	if e := unix.Fstatat(dfd, base, &old, unix.AT_SYMLINK_NOFOLLOW); e == nil && old.Mode&unix.S_IFMT == unix.S_IFDIR {
		return FileInfo{}, fmt.Errorf("%s: is a directory (transfers write one regular file; name the file)", p)
	}

	var tmp string
	var fd int
	for range 16 {
		var rnd [8]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return FileInfo{}, err
		}
		tmp = ".maka-cp-" + hex.EncodeToString(rnd[:])
		err = asSandboxRoot(uid, gid, func() (e error) {
			fd, e = createIn(dfd, tmp, 0o600)
			return e
		})
		if !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, unix.EROFS) {
			return FileInfo{}, fmt.Errorf("%s: read-only file system; transfers write only into the sandbox's writable mounts: %w", p, err)
		}
		if errors.Is(err, unix.EACCES) {
			return FileInfo{}, fmt.Errorf("%s: %s is not writable by the sandbox's root: %w", p, spath.Clean(dir), err)
		}
		return FileInfo{}, fmt.Errorf("%s: create: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer func() {
		f.Close()
		if err != nil {
			// By name, but the name is ours (O_EXCL) and single-component
			// under a pinned directory: if the sandbox renamed something
			// else onto it, unlinking that removes only a name in the
			// sandbox's own writable directory.
			_ = asSandboxRoot(uid, gid, func() error { return unix.Unlinkat(dfd, tmp, 0) })
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	n, err := io.Copy(w, io.LimitReader(r, limit))
	if err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", p, err)
	}
	var one [1]byte
	if m, _ := io.ReadFull(r, one[:]); m > 0 {
		return FileInfo{}, &TransferTooLargeError{Path: p, Size: n + int64(m), Limit: limit}
	}
	if err = w.Flush(); err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", p, err)
	}
	// Owner before mode: chown clears setuid and setgid, and the mode is
	// the caller's permission bits only. (asSandboxRoot made the file the
	// sandbox root's already; this also holds where the ids are not
	// switched, without a user namespace.)
	if err = unix.Fchown(fd, uid, gid); err != nil {
		return FileInfo{}, fmt.Errorf("%s: chown to the sandbox's root (%d:%d): %w", p, uid, gid, err)
	}
	if err = unix.Fchmod(fd, uint32(mode.Perm())); err != nil {
		return FileInfo{}, fmt.Errorf("%s: chmod: %w", p, err)
	}
	var st unix.Stat_t
	if err = unix.Fstat(fd, &st); err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", p, err)
	}
	if err = asSandboxRoot(uid, gid, func() error { return unix.Renameat(dfd, tmp, dfd, base) }); err != nil {
		return FileInfo{}, fmt.Errorf("%s: rename into place: %w", p, err)
	}
	return fileInfoOf(p, &st, n, t), nil
}

// sandboxRootIDs are the host ids the sandbox's user namespace maps 0 to:
// what a transfer in writes as (p names the transfer in errors).
func sandboxRootIDs(t Target, p string) (uid, gid int, err error) {
	uid, ok := idMap(t.UIDMappings).toHost(0)
	if !ok {
		return 0, 0, fmt.Errorf("%s: the sandbox's user namespace does not map uid 0", p)
	}
	gid, ok = idMap(t.GIDMappings).toHost(0)
	if !ok {
		return 0, 0, fmt.Errorf("%s: the sandbox's user namespace does not map gid 0", p)
	}
	return uid, gid, nil
}

// openWritableParent pins p's parent directory in the sandbox (O_PATH, no
// link followed) and refuses it when it is on a kernel filesystem or a
// read-only mount, naming the path, before anything is created. The
// caller closes the descriptor.
func openWritableParent(root int, p string) (int, error) {
	dir := spath.Dir(p)
	x, err := pin(root, strings.TrimPrefix(dir, "/"), false, resolveFlags, p)
	if err != nil {
		return -1, resolveErr(p, err)
	}
	switch {
	case x.typ() == unix.S_IFLNK:
		err = resolveErr(p, unix.ELOOP)
	case x.typ() != unix.S_IFDIR:
		err = fmt.Errorf("%s: %s is %s, not a directory: %w", p, dir, typeName(x.st.Mode), unix.ENOTDIR)
	case x.fs != "":
		err = fmt.Errorf("%s: %s is %s; transfers write only into the sandbox's writable mounts: %w", p, dir, x.refusal(), ErrKernelFile)
	case x.sfs.Flags&unix.ST_RDONLY != 0:
		err = fmt.Errorf("%s: %s is on a read-only mount; transfers write only into the sandbox's writable mounts (such as /maka/work and /tmp): %w", p, dir, unix.EROFS)
	}
	if err != nil {
		x.Close()
		return -1, err
	}
	return x.fd, nil
}

// asSandboxRoot runs fn with the calling thread's filesystem ids switched
// to uid and gid, the sandbox's root as the host sees it (directly when
// they are the caller's). Two reasons: a tmpfs mounted inside the sandbox's
// user namespace refuses (EOVERFLOW) to create or rename an entry for a
// caller whose ids that namespace does not map, which the host's root's are
// not; and with a non-zero fsuid the kernel drops the filesystem
// capabilities (CAP_DAC_OVERRIDE, CAP_FOWNER...), so CopyIn creates,
// renames and removes only where the sandbox's own root could. setfsuid
// and setfsgid change the calling thread only: fn runs on a goroutine
// locked to its thread, and a thread whose ids could not be restored is
// discarded (the goroutine exits still locked).
func asSandboxRoot(uid, gid int, fn func() error) error {
	if uid == os.Geteuid() && gid == os.Getegid() {
		return fn()
	}
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		prevGID, _ := unix.SetfsgidRetGid(gid)
		prevUID, _ := unix.SetfsuidRetUid(uid)
		var err error
		// setfsuid and setfsgid return the previous value: calling them
		// again with the same ids reads the current ones.
		if cur, _ := unix.SetfsuidRetUid(uid); cur != uid {
			err = fmt.Errorf("setfsuid(%d): %w", uid, unix.EPERM)
		} else if cur, _ := unix.SetfsgidRetGid(gid); cur != gid {
			err = fmt.Errorf("setfsgid(%d): %w", gid, unix.EPERM)
		} else {
			err = fn()
		}
		// Back to the previous ids: setfsuid cannot fail for a caller
		// that could switch away from them.
		_, _ = unix.SetfsuidRetUid(prevUID)
		_, _ = unix.SetfsgidRetGid(prevGID)
		okU, _ := unix.SetfsuidRetUid(prevUID)
		okG, _ := unix.SetfsgidRetGid(prevGID)
		if okU == prevUID && okG == prevGID {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}
