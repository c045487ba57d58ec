package libmaka

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	spath "path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Directory transfers: CopyDirOut and CopyDirIn copy a tree, as docker cp
// does for a directory, under the rules of the single-file transfers
// (transfer.go) plus these:
//
// The tree is walked one component at a time. Every entry is opened
// relative to its parent directory's descriptor with openat2(O_PATH|
// O_NOFOLLOW, RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS):
// the descriptor is the entry itself, never what a link points at, and its
// type is read from that descriptor. Only a directory or a regular file is
// then reopened from it, for reading; symbolic links, FIFOs, sockets and
// devices are skipped and reported, never followed nor opened. A name the
// program inside swaps for a link between the listing and the open is seen
// as the link it has become, and skipped; a swap after the open changes
// nothing, since the descriptor pins the inode. No path string is looked up
// twice.
//
// What is created is created relative to directory descriptors too
// (mkdirat; O_CREAT|O_EXCL|O_NOFOLLOW), inside a new directory with a
// temporary name (.maka-cp-…) next to the destination, which is renamed
// into place (RENAME_NOREPLACE) only once the whole tree is copied: a
// failed or refused transfer removes it (by descriptors, never following a
// link) and leaves nothing. The destination must not exist: a directory is
// copied as a new one, never merged into an existing one.
//
// The caps are on the whole tree: bytes of all files together (the
// transfer limit, default 8 MiB), entries (every name in the tree, skipped
// ones included: MaxTransferEntries) and nesting (MaxTransferDepth).
// Crossing any fails with a *TransferTooLargeError, never a silent
// truncation.

// MaxTransferEntries caps the names a directory transfer visits (skipped
// ones included), so that a tree of many empty files cannot make one
// transfer unbounded.
const MaxTransferEntries = 10000

// MaxTransferDepth caps how deep directories nest below the one copied: the
// walk holds a descriptor per level.
const MaxTransferDepth = 64

// removeDepth bounds the removal of a failed transfer's temporary tree,
// which the program inside may grow meanwhile; what is deeper is left.
const removeDepth = 2 * MaxTransferDepth

// SkippedEntry is a name a directory transfer did not copy, and why.
type SkippedEntry struct {
	// Path is the entry's path on the side it was read from: absolute in
	// the sandbox for CopyDirOut, the host path for CopyDirIn.
	Path string
	// Reason says what the entry is ("a symbolic link, not followed", "a
	// FIFO, not copied", ...).
	Reason string
}

// DirResult reports a directory transfer: the directories (the copied one
// included) and regular files created, the bytes copied, and what was
// skipped.
type DirResult struct {
	Dirs, Files int
	Bytes       int64
	Skipped     []SkippedEntry
}

// dirLimits are a directory transfer's caps (smaller in tests).
type dirLimits struct {
	bytes          int64
	entries, depth int
}

func dirLimitsOf(limit int64) dirLimits {
	return dirLimits{bytes: limitOf(limit), entries: MaxTransferEntries, depth: MaxTransferDepth}
}

// beneathFlags: one component below a directory descriptor, no link.
const beneathFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// treeSink is the side a tree is written to.
type treeSink interface {
	// mkdir creates the directory name in parent (0700 while it is
	// filled) and opens it for reading, through no link.
	mkdir(parent int, name string) (int, error)
	// create creates name in parent, a new regular file (0600 while it
	// is written).
	create(parent int, name string) (int, error)
	// done gives a finished file or directory its owner and permission
	// bits.
	done(fd int, perm uint32) error
	// rename moves from to to in dir, refusing to replace anything.
	rename(dir int, from, to string) error
	// remove deletes name in dir and everything under it (best effort).
	remove(dir int, name string)
	// explain words a failure to create dst.
	explain(dst string, err error) error
}

// hostSink writes on the host as the caller.
type hostSink struct{}

func (hostSink) mkdir(parent int, name string) (int, error) { return mkdirIn(parent, name, 0o700) }

func (hostSink) create(parent int, name string) (int, error) { return createIn(parent, name, 0o600) }

func (hostSink) done(fd int, perm uint32) error { return unix.Fchmod(fd, perm) }

func (hostSink) rename(dir int, from, to string) error {
	return unix.Renameat2(dir, from, dir, to, unix.RENAME_NOREPLACE)
}

func (hostSink) remove(dir int, name string) { removeTree(dir, name, 0) }

func (hostSink) explain(dst string, err error) error { return fmt.Errorf("%s: create: %w", dst, err) }

// sandboxSink writes in the sandbox as its root (asSandboxRoot), where
// its root could.
type sandboxSink struct{ uid, gid int }

func (s sandboxSink) mkdir(parent int, name string) (fd int, err error) {
	err = asSandboxRoot(s.uid, s.gid, func() (e error) {
		fd, e = mkdirIn(parent, name, 0o700)
		return e
	})
	return fd, err
}

func (s sandboxSink) create(parent int, name string) (fd int, err error) {
	err = asSandboxRoot(s.uid, s.gid, func() (e error) {
		fd, e = createIn(parent, name, 0o600)
		return e
	})
	return fd, err
}

// done: owner before mode, as CopyIn (chown clears setuid and setgid).
func (s sandboxSink) done(fd int, perm uint32) error {
	if err := unix.Fchown(fd, s.uid, s.gid); err != nil {
		return fmt.Errorf("chown to the sandbox's root (%d:%d): %w", s.uid, s.gid, err)
	}
	return unix.Fchmod(fd, perm)
}

func (s sandboxSink) rename(dir int, from, to string) error {
	return asSandboxRoot(s.uid, s.gid, func() error { return unix.Renameat2(dir, from, dir, to, unix.RENAME_NOREPLACE) })
}

func (s sandboxSink) remove(dir int, name string) {
	_ = asSandboxRoot(s.uid, s.gid, func() error { removeTree(dir, name, 0); return nil })
}

func (sandboxSink) explain(dst string, err error) error {
	switch {
	case errors.Is(err, unix.EROFS):
		return fmt.Errorf("%s: read-only file system; transfers write only into the sandbox's writable mounts: %w", dst, err)
	case errors.Is(err, unix.EACCES):
		return fmt.Errorf("%s: %s is not writable by the sandbox's root: %w", dst, spath.Dir(dst), err)
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s: replaced by a symbolic link while it was created, not followed: %w", dst, err)
	}
	return fmt.Errorf("%s: create: %w", dst, err)
}

// removeTree deletes name in dfd and, when it is a directory, what it
// holds, by descriptors only: unlinkat never follows a link, and a
// directory is entered only through openSubdir (no link, no kernel
// filesystem). Errors
// are ignored (best effort: what could not be removed stays).
func removeTree(dfd int, name string, depth int) {
	err := unix.Unlinkat(dfd, name, 0)
	if err == nil || !errors.Is(err, unix.EISDIR) || depth > removeDepth {
		return
	}
	fd, err := openSubdir(dfd, name, name)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), name)
	// A finished directory may have lost its owner's write bit.
	_ = unix.Fchmod(fd, 0o700) // best effort: removal is
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			removeTree(fd, n, depth+1)
		}
		if err != nil || len(names) == 0 {
			break
		}
	}
	f.Close()
	_ = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
}

// testHookEntry, when set (tests only), runs after a directory was listed
// and before its entry at path p is opened: the window in which the
// program inside may swap a name for a link.
var testHookEntry func(p string)

// treeCopy copies one tree into a sink.
type treeCopy struct {
	lim     dirLimits
	top     string // the source's path, named by the byte and entry caps
	sink    treeSink
	res     DirResult
	entries int
}

func (c *treeCopy) skip(p, reason string) {
	c.res.Skipped = append(c.res.Skipped, SkippedEntry{Path: p, Reason: reason})
}

// run copies the directory src (p its source path, perm its permission
// bits) to dst, a new name in the directory parent (dst is the full path,
// for errors): into a temporary directory next to it, renamed to dst once
// complete, removed on any failure.
func (c *treeCopy) run(src *os.File, parent int, dst string, perm uint32) (res DirResult, err error) {
	var tmp string
	out := -1
	for range 16 {
		var rnd [8]byte
		if _, err = rand.Read(rnd[:]); err != nil {
			return DirResult{}, err
		}
		tmp = ".maka-cp-" + hex.EncodeToString(rnd[:])
		if out, err = c.sink.mkdir(parent, tmp); !errors.Is(err, unix.EEXIST) {
			break
		}
	}
	if err != nil {
		// mkdir may have made the name before its open failed (the name
		// swapped meanwhile): removed without following anything.
		if !errors.Is(err, unix.EEXIST) {
			c.sink.remove(parent, tmp)
		}
		return DirResult{}, c.sink.explain(dst, err)
	}
	defer func() {
		unix.Close(out)
		if err != nil {
			c.sink.remove(parent, tmp)
		}
	}()
	c.res.Dirs++
	if err = c.dir(src, c.top, out, dst, 0); err != nil {
		return DirResult{}, err
	}
	if err = c.sink.done(out, perm); err != nil {
		return DirResult{}, fmt.Errorf("%s: %w", dst, err)
	}
	if err = c.sink.rename(parent, tmp, filepath.Base(dst)); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return DirResult{}, fmt.Errorf("%s: created by someone else during the copy; not replaced: %w", dst, err)
		}
		return DirResult{}, fmt.Errorf("%s: rename into place: %w", dst, err)
	}
	return c.res, nil
}

// dir copies the entries of the directory src (source path p, nested depth
// levels below the top) into the directory out (destination path dp).
func (c *treeCopy) dir(src *os.File, p string, out int, dp string, depth int) error {
	for {
		names, err := src.Readdirnames(256)
		for _, name := range names {
			if err := c.entry(int(src.Fd()), name, spath.Join(p, name), out, spath.Join(dp, name), depth); err != nil {
				return err
			}
		}
		if err == io.EOF || (err == nil && len(names) == 0) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: read directory: %w", p, err)
		}
	}
}

// entry copies name, in the source directory sdir, into out.
func (c *treeCopy) entry(sdir int, name, p string, out int, dp string, depth int) error {
	c.entries++
	if c.entries > c.lim.entries {
		return &TransferTooLargeError{Path: c.top, Size: int64(c.entries), Limit: int64(c.lim.entries), Unit: "entries"}
	}
	if testHookEntry != nil {
		testHookEntry(p)
	}
	// Pinned (hostfs.go) with O_NOFOLLOW: a link is pinned as itself, a
	// FIFO does not block, a device's driver is not called, and nothing
	// is read before its type and filesystem are known.
	x, err := pin(sdir, name, false, beneathFlags, p)
	if errors.Is(err, unix.ENOENT) {
		c.skip(p, "removed during the copy")
		return nil
	}
	if err != nil {
		return resolveErr(p, err)
	}
	defer x.Close()
	perm := x.st.Mode & 0o777
	switch {
	case x.typ() == unix.S_IFLNK:
		c.skip(p, "a symbolic link, not followed")
	case x.refusal() != "":
		// A FIFO, socket or device, or anything on a kernel filesystem
		// (a mount of proc, a bind of /proc/kallsyms).
		c.skip(p, x.refusal()+", not copied")
	case x.typ() == unix.S_IFDIR:
		return c.subdir(x, name, p, out, dp, depth+1, perm)
	default:
		return c.file(x, name, p, out, dp, perm)
	}
	return nil
}

func (c *treeCopy) subdir(x *pinned, name, p string, out int, dp string, depth int, perm uint32) error {
	if depth > c.lim.depth {
		return &TransferTooLargeError{Path: p, Size: int64(depth), Limit: int64(c.lim.depth), Unit: "levels of directories"}
	}
	src, err := x.openDir()
	if err != nil {
		return err
	}
	defer src.Close()
	dfd, err := c.sink.mkdir(out, name)
	if err != nil {
		return c.sink.explain(dp, err)
	}
	defer unix.Close(dfd)
	c.res.Dirs++
	if err := c.dir(src, p, dfd, dp, depth); err != nil {
		return err
	}
	if err := c.sink.done(dfd, perm); err != nil {
		return fmt.Errorf("%s: %w", dp, err)
	}
	return nil
}

func (c *treeCopy) file(x *pinned, name, p string, out int, dp string, perm uint32) error {
	room := c.lim.bytes - c.res.Bytes
	if x.st.Size > room {
		return &TransferTooLargeError{Path: c.top, Size: c.res.Bytes + x.st.Size, Limit: c.lim.bytes}
	}
	// Reopened from the pinned descriptor: the same inode, whatever the
	// name has become since.
	in, err := x.openFile("not copied")
	if err != nil {
		return err
	}
	defer in.Close()
	wfd, err := c.sink.create(out, name)
	if err != nil {
		return c.sink.explain(dp, err)
	}
	w := os.NewFile(uintptr(wfd), dp)
	defer w.Close()
	n, err := io.Copy(w, io.LimitReader(in, room))
	c.res.Bytes += n
	if err != nil {
		return fmt.Errorf("%s: copy to %s: %w", p, dp, err)
	}
	// One more byte: the file grew past what is left of the cap.
	var one [1]byte
	if m, _ := in.Read(one[:]); m > 0 {
		return &TransferTooLargeError{Path: c.top, Size: c.res.Bytes + int64(m), Limit: c.lim.bytes}
	}
	c.res.Files++
	if err := c.sink.done(wfd, perm); err != nil {
		return fmt.Errorf("%s: %w", dp, err)
	}
	return nil
}

// CopyDirOut copies the sandbox's directory at name (relative: under
// /maka/work) to dst on the host, a new directory: dst must not exist
// (neither a directory, which is never merged into, nor anything else) and
// its parent must. Directories and regular files are copied with their
// permission bits (setuid, setgid and sticky dropped), owned by the caller;
// symbolic links, FIFOs, sockets, devices and mounts of kernel filesystems
// (proc, sysfs, cgroup...) are skipped and listed in the result. Over the
// caps (limit bytes in all, <= 0: 8 MiB; MaxTransferEntries;
// MaxTransferDepth) fails with a *TransferTooLargeError. Any failure
// leaves nothing at dst. dst itself is the caller's host path, resolved as
// the host resolves it; below it, nothing is looked up by name.
func CopyDirOut(t Target, name string, dst string, limit int64) (DirResult, error) {
	return atRoot(t, name, func(root int, p string) (DirResult, error) {
		return copyDirOutAt(root, p, dst, dirLimitsOf(limit))
	})
}

// copyDirOutAt is CopyDirOut from an open root directory (p absolute and
// clean).
func copyDirOutAt(root int, p string, dst string, lim dirLimits) (DirResult, error) {
	x, err := pin(root, p[1:], false, resolveFlags, p)
	if err != nil {
		return DirResult{}, resolveErr(p, err)
	}
	defer x.Close()
	if x.typ() == unix.S_IFLNK {
		return DirResult{}, resolveErr(p, unix.ELOOP)
	}
	if x.typ() != unix.S_IFDIR {
		return DirResult{}, fmt.Errorf("%s: %s, not a directory: %w", p, typeName(x.st.Mode), unix.ENOTDIR)
	}
	src, err := x.openDir()
	if err != nil {
		return DirResult{}, err
	}
	defer src.Close()

	dst = filepath.Clean(dst)
	if fi, err := os.Lstat(dst); err == nil {
		if fi.IsDir() {
			return DirResult{}, fmt.Errorf("%s: already exists; a directory is copied out as a new directory, never merged into one: %w", dst, unix.EEXIST)
		}
		return DirResult{}, fmt.Errorf("%s: exists and is not a directory: %w", dst, unix.EEXIST)
	} else if !errors.Is(err, os.ErrNotExist) {
		return DirResult{}, fmt.Errorf("%s: %w", dst, unwrapPathError(err))
	}
	parent, err := hostParent(dst)
	if err != nil {
		return DirResult{}, err
	}
	defer parent.Close()
	perm := x.st.Mode & 0o777
	c := &treeCopy{lim: lim, top: p, sink: hostSink{}}
	return c.run(src, parent.fd, dst, perm)
}

// hostParent pins the caller's host path dst's parent directory (resolved
// as the host resolves it), refusing one on a kernel filesystem: a copy
// out never writes into one.
func hostParent(dst string) (*pinned, error) {
	dir := filepath.Dir(dst)
	x, err := pin(unix.AT_FDCWD, dir, true, unix.RESOLVE_NO_MAGICLINKS, dst)
	if err != nil {
		return nil, fmt.Errorf("%s: parent directory %s: %w", dst, dir, err)
	}
	switch {
	case x.typ() != unix.S_IFDIR:
		err = fmt.Errorf("%s: parent directory %s: %s: %w", dst, dir, typeName(x.st.Mode), unix.ENOTDIR)
	case x.fs != "":
		err = fmt.Errorf("%s: parent directory %s is %s, not written: %w", dst, dir, x.refusal(), ErrKernelFile)
	}
	if err != nil {
		x.Close()
		return nil, err
	}
	return x, nil
}

// CopyDirIn copies the host's directory src to name in the sandbox
// (relative: under /maka/work), a new directory: name must not exist in
// the sandbox (a directory is never merged into; a link there is not
// followed) and its parent must be on a writable mount where the sandbox's
// root may write. Directories and regular files are copied with their
// permission bits (setuid, setgid and sticky dropped), created as the
// sandbox's root and owned by it, as CopyIn; symbolic links, FIFOs,
// sockets, devices and mounts of kernel filesystems in src are skipped and
// listed in the result. Over the caps (limit bytes in all, <= 0: 8 MiB;
// MaxTransferEntries; MaxTransferDepth) fails with a
// *TransferTooLargeError. The tree is built under a temporary name next to
// name and renamed into place once complete; a failure removes it, leaving
// nothing, except what the program inside moved out of it meanwhile (its
// own doing, in its own writable mounts). src itself is the caller's host
// path, resolved as the host resolves it; below it, no link is followed.
func CopyDirIn(t Target, src string, name string, limit int64) (DirResult, error) {
	return atRoot(t, name, func(root int, p string) (DirResult, error) {
		return copyDirInAt(root, src, p, dirLimitsOf(limit), t)
	})
}

// copyDirInAt is CopyDirIn into an open root directory (p absolute and
// clean).
func copyDirInAt(root int, src string, p string, lim dirLimits, t Target) (DirResult, error) {
	if p == "/" {
		return DirResult{}, fmt.Errorf("%s: is the sandbox's root directory", p)
	}
	uid, gid, err := sandboxRootIDs(t, p)
	if err != nil {
		return DirResult{}, err
	}
	// The caller's own path, resolved as the host resolves it, but
	// pinned and checked before it is opened (hostfs.go).
	x, err := pin(unix.AT_FDCWD, src, true, unix.RESOLVE_NO_MAGICLINKS, src)
	if err != nil {
		return DirResult{}, resolveErr(src, err)
	}
	defer x.Close()
	if x.typ() != unix.S_IFDIR {
		return DirResult{}, fmt.Errorf("%s: not a directory: %w", src, unix.ENOTDIR)
	}
	srcf, err := x.openDir()
	if err != nil {
		return DirResult{}, err
	}
	defer srcf.Close()

	dfd, err := openWritableParent(root, p)
	if err != nil {
		return DirResult{}, err
	}
	defer unix.Close(dfd)
	var old unix.Stat_t
	if err := unix.Fstatat(dfd, spath.Base(p), &old, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if old.Mode&unix.S_IFMT == unix.S_IFDIR {
			return DirResult{}, fmt.Errorf("%s: already exists; a directory is copied in as a new directory, never merged into one: %w", p, unix.EEXIST)
		}
		kind := "a regular file"
		if old.Mode&unix.S_IFMT != unix.S_IFREG {
			kind = typeName(old.Mode)
		}
		return DirResult{}, fmt.Errorf("%s: exists (%s, not replaced); a directory is copied in as a new directory: %w", p, kind, unix.EEXIST)
	}
	c := &treeCopy{lim: lim, top: src, sink: sandboxSink{uid: uid, gid: gid}}
	return c.run(srcf, dfd, p, x.st.Mode&0o777)
}

// unwrapPathError drops *fs.PathError's operation and path: the caller
// names the path itself.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
