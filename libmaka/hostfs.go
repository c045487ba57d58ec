package libmaka

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Host-side opens of paths someone else controls (issue 24, item 3).
//
// maka runs as host root. Opening a path is already acting on it: a device
// node's open runs its driver (/dev/watchdog: the host reboots when it is
// closed), a FIFO's open blocks or wakes a writer, and the files of kernel
// filesystems are interfaces, not data (proc's are regular files of size
// 0: /proc/kallsyms gives host root real kernel addresses, a read of
// /proc/kmsg drains the kernel log). So every open of a path that a
// sandbox, an image or a bundle's author controls goes through this file,
// in three steps:
//
//  1. pin: openat2 with O_PATH (no driver is called, no FIFO blocks,
//     nothing is read), the caller's resolve flags (RESOLVE_NO_SYMLINKS
//     or RESOLVE_IN_ROOT, always RESOLVE_NO_MAGICLINKS);
//  2. check, on that descriptor: fstat (only a regular file or a
//     directory may be opened) and fstatfs (no file of a kernel
//     filesystem, kernelFSNames' list);
//  3. reopen the pinned inode through /proc/self/fd/N (a directory:
//     openat(fd, ".")), only if it passed. Whatever the name has become
//     meanwhile, the reopen reaches the inode that was checked.
//
// What is created is created with O_CREAT|O_EXCL|O_NOFOLLOW relative to a
// pinned, checked directory (createIn, mkdirIn): a new inode, never one
// someone planted. hostfs_test.go lists every other open in the module and
// why it needs no check, so that a new one cannot bypass this file.

// ErrKernelFile is matched (errors.Is) when a path is on a kernel
// filesystem (proc, sysfs, cgroup...): maka never opens those for a
// sandbox, in either direction.
var ErrKernelFile = errors.New("a kernel interface, not data")

// Filesystem magics golang.org/x/sys/unix does not define.
const (
	configfsMagic = 0x62656570
	fusectlMagic  = 0x65735543
	mqueueMagic   = 0x19800202
)

// kernelFSNames are the filesystems whose files are kernel interfaces
// rather than data: reading one may have effects (kmsg), show the host's
// secrets to host root (kallsyms, kcore) or never end; writing one
// reconfigures the kernel. The directory copies skip mounts of them, every
// other transfer and the HOME lookup refuse them.
var kernelFSNames = map[int64]string{
	unix.PROC_SUPER_MAGIC:    "proc",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.CGROUP_SUPER_MAGIC:  "cgroup",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.BPF_FS_MAGIC:        "bpf",
	unix.DEVPTS_SUPER_MAGIC:  "devpts",
	configfsMagic:            "configfs",
	unix.BINFMTFS_MAGIC:      "binfmt_misc",
	unix.EFIVARFS_MAGIC:      "efivarfs",
	unix.PSTOREFS_MAGIC:      "pstore",
	unix.NSFS_MAGIC:          "nsfs",
	unix.SELINUX_MAGIC:       "selinuxfs",
	unix.SMACK_MAGIC:         "smackfs",
	fusectlMagic:             "fusectl",
	mqueueMagic:              "mqueue",
	unix.AUTOFS_SUPER_MAGIC:  "autofs",
}

// pinned is an O_PATH descriptor on an inode, with its type and
// filesystem as read from the descriptor.
type pinned struct {
	fd int
	// p names the path in errors.
	p  string
	st unix.Stat_t
	// fs is the kernel filesystem the inode is on (kernelFSNames), "" for
	// data; sfs is the descriptor's statfs.
	fs  string
	sfs unix.Statfs_t
}

// Resolve flags of pin's callers: never follow a link (a path in a
// sandbox), or resolve links inside the root as the sandbox would (the
// HOME lookup, as libcontainer resolves it); magic links never.
const (
	pinNoLinks = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS
	pinInRoot  = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS
)

// pin opens name relative to dirfd (unix.AT_FDCWD: the caller's host
// path) with O_PATH and the resolve flags, and reads its type and
// filesystem. follow false adds O_NOFOLLOW: a symbolic link as the last
// component is pinned as itself (openat2 returns the link rather than
// failing, even with RESOLVE_NO_SYMLINKS). Nothing is opened for reading
// or writing. p names the path in errors.
func pin(dirfd int, name string, follow bool, resolve uint64, p string) (*pinned, error) {
	if name == "" {
		name = "."
	}
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	var fd int
	var err error
	for {
		fd, err = unix.Openat2(dirfd, name, &unix.OpenHow{Flags: flags, Resolve: resolve})
		// EAGAIN: a concurrent rename; retried as openat2(2) advises.
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	x := &pinned{fd: fd, p: p}
	if err := unix.Fstat(fd, &x.st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err := unix.Fstatfs(fd, &x.sfs); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: statfs: %w", p, err)
	}
	x.fs = kernelFSNames[int64(x.sfs.Type)]
	return x, nil
}

// Close releases the descriptor.
func (x *pinned) Close() { unix.Close(x.fd) }

func (x *pinned) typ() uint32 { return x.st.Mode & unix.S_IFMT }

// refusal says why the pinned inode may not be opened: "" when it may (a
// regular file or a directory on a data filesystem).
func (x *pinned) refusal() string {
	if x.fs != "" {
		return "on a kernel filesystem (" + x.fs + ")"
	}
	switch x.typ() {
	case unix.S_IFREG, unix.S_IFDIR:
		return ""
	}
	return typeName(x.st.Mode)
}

// check fails, naming the path and the reason, when the inode may not be
// opened; what is refused for its type matches ErrNotRegularFile, what is
// refused for its filesystem ErrKernelFile. verb completes the sentence
// ("not copied", "not read").
func (x *pinned) check(verb string) error {
	if x.fs != "" {
		return fmt.Errorf("%s: %s, %s: %w", x.p, x.refusal(), verb, ErrKernelFile)
	}
	if r := x.refusal(); r != "" {
		return fmt.Errorf("%s: %s, %s: %w", x.p, r, verb, ErrNotRegularFile)
	}
	return nil
}

// openFile reopens a pinned regular file for reading, once it passed
// check.
func (x *pinned) openFile(verb string) (*os.File, error) {
	if err := x.check(verb); err != nil {
		return nil, err
	}
	if x.typ() != unix.S_IFREG {
		return nil, fmt.Errorf("%s: %s, %s: %w", x.p, typeName(x.st.Mode), verb, ErrNotRegularFile)
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(x.fd), unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: reopen for reading: %w", x.p, err)
	}
	return os.NewFile(uintptr(fd), x.p), nil
}

// openDir reopens a pinned directory for reading (listing, and as the
// directory descriptor of *at calls), once it passed check; what is refused
// is "not copied" (every caller copies).
func (x *pinned) openDir() (*os.File, error) {
	fd, err := x.openDirFd("not copied")
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), x.p), nil
}

// openDirFd is openDir's descriptor.
func (x *pinned) openDirFd(verb string) (int, error) {
	if err := x.check(verb); err != nil {
		return -1, err
	}
	if x.typ() != unix.S_IFDIR {
		return -1, fmt.Errorf("%s: %s, not a directory: %w", x.p, typeName(x.st.Mode), unix.ENOTDIR)
	}
	fd, err := unix.Openat(x.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: open directory: %w", x.p, err)
	}
	return fd, nil
}

// createIn creates name in the directory dfd (pinned and checked by the
// caller): a new regular file (O_EXCL, no link followed), open for writing.
func createIn(dfd int, name string, perm uint32) (int, error) {
	return unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
}

// mkdirIn creates the directory name in dfd and opens it for reading,
// through no link; the name is pinned again and checked, since someone
// who can write dfd may have replaced it between the two calls.
func mkdirIn(dfd int, name string, perm uint32) (int, error) {
	if err := unix.Mkdirat(dfd, name, perm); err != nil {
		return -1, err
	}
	return openSubdir(dfd, name, name)
}

// openSubdir opens the directory name, one component in dfd, for reading:
// pinned without following a link, refused unless it is a directory on a
// data filesystem. It returns the descriptor (the caller closes it).
func openSubdir(dfd int, name, p string) (int, error) {
	x, err := pin(dfd, name, false, unix.RESOLVE_BENEATH|pinNoLinks, p)
	if err != nil {
		return -1, err
	}
	defer x.Close()
	if x.typ() == unix.S_IFLNK {
		return -1, unix.ELOOP
	}
	return x.openDirFd("not opened")
}

// OpenHostSource opens the caller's host path src for a copy into a
// sandbox: resolved as the host resolves it (it is the caller's own path;
// links are followed, magic links are not), then checked on an O_PATH
// descriptor before anything is opened for reading: a regular file or a
// directory on a data filesystem is reopened for reading; a FIFO (whose
// open would block), a device (whose open runs its driver), a socket or a
// file of a kernel filesystem is refused, naming the path, without being
// opened.
func OpenHostSource(src string) (*os.File, error) {
	x, err := pin(unix.AT_FDCWD, src, true, unix.RESOLVE_NO_MAGICLINKS, src)
	if err != nil {
		return nil, resolveErr(src, err)
	}
	defer x.Close()
	if x.typ() == unix.S_IFDIR {
		return x.openDir()
	}
	return x.openFile("not copied")
}

// OpenRootFile opens the file rel inside the host directory root as a
// process whose root is root would reach it (links resolved inside root,
// never out of it; no magic link), for reading, only if it is a regular
// file on a data filesystem; anything else is refused without being
// opened. root itself is a path the host check resolved (the Boundary's
// root or bind source): it is opened without following any link, so a
// root swapped for a link to a host directory since is refused, not read
// through. It must be a directory on a data filesystem. The HOME lookup
// reads a root's /etc/passwd with it.
func OpenRootFile(root, rel string) (*os.File, error) {
	r, err := pin(unix.AT_FDCWD, root, true, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS, root)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	defer r.Close()
	if err := r.check("not read"); err != nil {
		return nil, err
	}
	if r.typ() != unix.S_IFDIR {
		return nil, fmt.Errorf("%s: %s, not a directory: %w", root, typeName(r.st.Mode), unix.ENOTDIR)
	}
	x, err := pin(r.fd, rel, true, pinInRoot, rel)
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %w", rel, root, err)
	}
	defer x.Close()
	return x.openFile("not read")
}
