package libmaka

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hostRootFd is an O_PATH descriptor on the host's "/": the tests read the
// host's real /proc and /sys through the helper (read-only, and refused
// before anything is read).
func hostRootFd(t *testing.T) int {
	t.Helper()
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// kernelFiles are host files of kernel filesystems every Linux host has
// (proc, sysfs), the ones the issue names first.
func kernelFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{
		"/proc/kallsyms":            "proc",
		"/proc/version":             "proc",
		"/proc/sys/kernel/ostype":   "proc",
		"/sys/kernel/uevent_seqnum": "sysfs",
	}
	for p := range files {
		if _, err := os.Lstat(p); err != nil {
			t.Logf("%s: %v (not on this host)", p, err)
			delete(files, p)
		}
	}
	return files
}

// The helper refuses, on the O_PATH descriptor and without opening them
// for reading, FIFOs (without blocking), sockets, devices and the files of
// kernel filesystems; it reopens regular files and directories.
func TestHostfsRefusesWhatIsNotData(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{
		fifo:        "a FIFO, not copied",
		sock:        "a socket, not copied",
		"/dev/null": "a character device, not copied",
	}
	for p, fs := range kernelFiles(t) {
		refused[p] = "on a kernel filesystem (" + fs + "), not copied"
	}
	for p, want := range refused {
		done := make(chan error, 1)
		go func() {
			f, err := OpenHostSource(p)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p+": "+want) {
				t.Errorf("OpenHostSource(%s): %v, want %q", p, err, want)
			}
			if strings.Contains(want, "kernel") != errors.Is(err, ErrKernelFile) {
				t.Errorf("OpenHostSource(%s): %v: errors.Is(ErrKernelFile) wrong", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("OpenHostSource(%s) blocked", p)
		}
	}
	// A directory of a kernel filesystem as well.
	if _, err := OpenHostSource("/proc/self"); !errors.Is(err, ErrKernelFile) {
		t.Errorf("/proc/self: %v", err)
	}
	for _, p := range []string{reg, dir} {
		f, err := OpenHostSource(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		f.Close()
	}
}

// CopyOut and Stat refuse the files of kernel filesystems: proc's are
// regular files of size 0, so "regular and under the limit" let
// /proc/kallsyms through. Nothing is written to the destination.
func TestTransferKernelFiles(t *testing.T) {
	root := hostRootFd(t)
	tg := selfTarget()
	for p, fs := range kernelFiles(t) {
		var buf bytes.Buffer
		_, err := copyOutAt(root, p, &buf, DefaultTransferLimit, tg)
		want := p + ": on a kernel filesystem (" + fs + "), not copied"
		if !errors.Is(err, ErrKernelFile) || !strings.Contains(err.Error(), want) {
			t.Errorf("CopyOut %s: %v, want %q", p, err, want)
		}
		if buf.Len() != 0 {
			t.Errorf("CopyOut %s wrote %d bytes", p, buf.Len())
		}
		if _, err := statAt(root, p, tg); !errors.Is(err, ErrKernelFile) {
			t.Errorf("Stat %s: %v", p, err)
		}
	}
	// Into a kernel filesystem: refused, naming the directory, before
	// anything is created (proc would refuse the create anyway).
	_, err := copyInAt(root, "/proc/maka-x", strings.NewReader("x"), 0o644, 10, tg)
	if !errors.Is(err, ErrKernelFile) || !strings.Contains(err.Error(), "/proc/maka-x: /proc is on a kernel filesystem (proc)") {
		t.Errorf("CopyIn into /proc: %v", err)
	}
}

// A directory copy that meets a file of a kernel filesystem (a bind mount
// of /proc/kallsyms in the sandbox's /maka/work, say) skips it: checked per
// file, not only per directory.
func TestCopyDirSkipsKernelFile(t *testing.T) {
	src, err := os.Open("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := t.TempDir()
	ofd, err := unix.Open(out, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ofd)
	c := &treeCopy{lim: defDirLimits(), top: "/proc/self", sink: hostSink{}}
	if err := c.entry(int(src.Fd()), "status", "/proc/self/status", ofd, filepath.Join(out, "status"), 0); err != nil {
		t.Fatal(err)
	}
	if got := skippedMap(c.res)["/proc/self/status"]; got != "on a kernel filesystem (proc), not copied" {
		t.Errorf("skipped: %q (result %+v)", got, c.res)
	}
	if _, err := os.Lstat(filepath.Join(out, "status")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("copied: %v", err)
	}
}

// The HOME lookup reads the root's /etc/passwd by the root's resolved
// path: a root swapped for a link to the host's / meanwhile is refused,
// never read through (session 13's review: the lookup followed it).
func TestOpenRootFileRefusesASwappedRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root-of-the-image:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenRootFile(root, "etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	host := filepath.Join(dir, "host")
	if err := os.MkdirAll(filepath.Join(host, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "etc/passwd"), []byte("root:x:0:0::/host-secret:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(root, root+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, root); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenRootFile(root, "etc/passwd"); err == nil {
		f.Close()
		t.Error("a root swapped for a link to a host directory: its passwd was opened")
	}
}
