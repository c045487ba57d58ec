package monitor

import (
	"encoding/binary"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// isOpen reports whether name is one of the opens file audit watches.
func isOpen(name string) bool {
	switch name {
	case "open", "openat", "creat", "openat2":
		return true
	}
	return false
}

// writeFlags are the open flags that make an open a write.
const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// audit records a write-mode open aimed at a read-only part of the
// boundary, then lets the kernel answer it (it refuses it: EROFS). The path
// is read from the process's memory and resolved inside the container
// (its root and cwd through /proc, RESOLVE_IN_ROOT), never on the host.
func (m *Monitor) audit(fd int, n *seccompNotif, at time.Time, name string, hostPid, pid int, comm string) {
	// Answered whatever is recorded: the kernel then refuses the write.
	defer func() { _ = respond(fd, n.ID, 0) }()
	a := n.Data.Args
	dirfd, addr, flags := int32(unix.AT_FDCWD), a[0], a[1]
	switch name {
	case "openat":
		dirfd, addr, flags = int32(a[0]), a[1], a[2]
	case "creat":
		flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	case "openat2": // flags live in struct open_how, in memory
		dirfd, addr = int32(a[0]), a[1]
		b, err := readMem(hostPid, a[2], 8)
		if err != nil || len(b) < 8 {
			return
		}
		flags = binary.NativeEndian.Uint64(b)
	}
	if flags&writeFlags == 0 {
		return
	}
	p, err := readString(hostPid, addr)
	// The memory read must have been the notifying process's.
	if err != nil || p == "" || !idValid(fd, n.ID) {
		return
	}
	full, ok := containerPath(hostPid, dirfd, p)
	if !ok || !readOnlyTarget(hostPid, full, flags&unix.O_CREAT != 0) {
		return
	}
	m.violation(Record{
		Time: at, Type: TypeFile, Action: ActionAudit,
		Pid: pid, HostPid: hostPid, Comm: comm, Syscall: name, Path: full, Flags: flagNames(flags),
	}, hostPid)
}

// containerPath is p as the container sees it: absolute, or relative to
// the process's cwd or dirfd (their /proc links read from outside the
// container's mount namespace name them as the container does).
func containerPath(hostPid int, dirfd int32, p string) (string, bool) {
	if strings.HasPrefix(p, "/") {
		return p, true
	}
	link := "/proc/" + strconv.Itoa(hostPid) + "/cwd"
	if dirfd != unix.AT_FDCWD {
		link = "/proc/" + strconv.Itoa(hostPid) + "/fd/" + strconv.Itoa(int(dirfd))
	}
	base, err := os.Readlink(link)
	if err != nil || !strings.HasPrefix(base, "/") {
		return "", false
	}
	return strings.TrimSuffix(base, "/") + "/" + p, true
}

// readOnlyTarget reports whether the file p (or, for a file to create, its
// directory) is on a read-only mount of the container.
func readOnlyTarget(hostPid int, p string, creating bool) bool {
	root, err := unix.Open("/proc/"+strconv.Itoa(hostPid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(root)
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	f, err := unix.Openat2(root, p, how)
	if err == unix.ENOENT && creating {
		f, err = unix.Openat2(root, path.Dir(p), how)
	}
	if err != nil {
		return false
	}
	defer unix.Close(f)
	var st unix.Statfs_t
	if err := unix.Fstatfs(f, &st); err != nil {
		return false
	}
	return st.Flags&unix.ST_RDONLY != 0
}

// readMem reads n bytes at addr of a process's memory.
func readMem(hostPid int, addr uint64, n int) ([]byte, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(hostPid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	got, err := f.ReadAt(b, int64(addr))
	if got > 0 {
		return b[:got], nil
	}
	return nil, err
}

// readString reads a NUL-terminated string (at most PATH_MAX) at addr,
// a piece at a time: the string may end just before an unmapped page.
func readString(hostPid int, addr uint64) (string, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(hostPid) + "/mem")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var out []byte
	buf := make([]byte, 256)
	for len(out) < unix.PathMax {
		// Stop each read at a page boundary.
		want := 4096 - int((addr+uint64(len(out)))%4096)
		if want > len(buf) {
			want = len(buf)
		}
		n, err := f.ReadAt(buf[:want], int64(addr)+int64(len(out)))
		if n <= 0 {
			return "", err
		}
		if i := indexByte(buf[:n], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:n]...)
	}
	return "", unix.ENAMETOOLONG
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// flagNames prints the write-relevant open flags.
func flagNames(flags uint64) string {
	var names []string
	switch flags & unix.O_ACCMODE {
	case unix.O_WRONLY:
		names = append(names, "O_WRONLY")
	case unix.O_RDWR:
		names = append(names, "O_RDWR")
	default:
		names = append(names, "O_RDONLY")
	}
	if flags&unix.O_CREAT != 0 {
		names = append(names, "O_CREAT")
	}
	if flags&unix.O_TRUNC != 0 {
		names = append(names, "O_TRUNC")
	}
	if flags&unix.O_APPEND != 0 {
		names = append(names, "O_APPEND")
	}
	return strings.Join(names, "|")
}
