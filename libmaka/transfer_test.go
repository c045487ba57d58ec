package libmaka

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// transferRoot makes a temp dir laid out like a sandbox's root (with
// /maka/work and /tmp) and returns it with an open descriptor on it, plus a
// host file outside it ("the host's secret") that no transfer may reach.
func transferRoot(t *testing.T) (dir string, rootfd int, secret string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "root")
	for _, d := range []string{"maka/work", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret = filepath.Join(base, "secret")
	if err := os.WriteFile(secret, []byte("host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/passwd"), []byte("sandbox passwd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return dir, fd, secret
}

// selfTarget maps the sandbox's 0 to the test's own ids, so chown works
// unprivileged, and 1000 more ids after it.
func selfTarget() Target {
	return Target{
		UIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(os.Getuid()), Size: 1}},
		GIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(os.Getgid()), Size: 1}},
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTemps fails if a transfer's temporary file is left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".maka-cp-") {
			t.Errorf("temporary file left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
}

func TestSandboxPath(t *testing.T) {
	for in, want := range map[string]string{
		"x":               "/maka/work/x",
		"a/../b":          "/maka/work/b",
		"../../../etc/x":  "/etc/x",
		"/tmp/./y":        "/tmp/y",
		"/../../etc/pass": "/etc/pass",
	} {
		got, err := sandboxPath(in)
		if err != nil || got != want {
			t.Errorf("sandboxPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a\x00b"} {
		if _, err := sandboxPath(bad); err == nil {
			t.Errorf("sandboxPath(%q) succeeded", bad)
		}
	}
}

func TestCopyInOutRoundTrip(t *testing.T) {
	dir, root, _ := transferRoot(t)
	tg := selfTarget()
	data := []byte("hello sandbox\n")
	fi, err := copyInAt(root, "/maka/work/f", bytes.NewReader(data), 0o4755, DefaultTransferLimit, tg)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "maka/work/f")); got != string(data) {
		t.Fatalf("content %q", got)
	}
	st, err := os.Stat(filepath.Join(dir, "maka/work/f"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != 0o755 {
		t.Errorf("mode %v, want 0755 (setuid dropped)", st.Mode())
	}
	if fi.Path != "/maka/work/f" || fi.Size != int64(len(data)) || fi.UID != 0 || fi.GID != 0 || fi.Mode != 0o755 {
		t.Errorf("CopyIn FileInfo %+v", fi)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if int(sys.Uid) != os.Getuid() || int(sys.Gid) != os.Getgid() {
		t.Errorf("host owner %d:%d, want the mapping of 0 (%d:%d)", sys.Uid, sys.Gid, os.Getuid(), os.Getgid())
	}
	noTemps(t, filepath.Join(dir, "maka/work"))

	var out bytes.Buffer
	fo, err := copyOutAt(root, "/maka/work/f", &out, DefaultTransferLimit, tg)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(data) || fo.Size != int64(len(data)) || fo.UID != 0 || fo.Mode != 0o755 {
		t.Errorf("CopyOut %q %+v", out.String(), fo)
	}
	if time.Since(fo.ModTime) > time.Minute {
		t.Errorf("ModTime %v", fo.ModTime)
	}

	// Replacing an existing file.
	if _, err := copyInAt(root, "/maka/work/f", strings.NewReader("v2"), 0o644, DefaultTransferLimit, tg); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "maka/work/f")); got != "v2" {
		t.Errorf("replaced content %q", got)
	}
}

// The sandbox's view of ids: a mapped host id shows as the container's; one
// the namespace does not map shows as 65534.
func TestTransferIDTranslation(t *testing.T) {
	m := idMap{{ContainerID: 0, HostID: 100000, Size: 65536}}
	if h, ok := m.toHost(0); !ok || h != 100000 {
		t.Errorf("toHost(0) = %d %v", h, ok)
	}
	if h, ok := m.toHost(65535); !ok || h != 165535 {
		t.Errorf("toHost(65535) = %d %v", h, ok)
	}
	if _, ok := m.toHost(65536); ok {
		t.Error("toHost(65536) mapped")
	}
	if c := m.toSandbox(100007); c != 7 {
		t.Errorf("toSandbox(100007) = %d", c)
	}
	if c := m.toSandbox(0); c != overflowID {
		t.Errorf("toSandbox(0) = %d, want overflow", c)
	}
	if c := (idMap{}).toSandbox(42); c != 42 {
		t.Errorf("identity toSandbox = %d", c)
	}
	// Unmapped 0: CopyIn refuses rather than giving the file to someone.
	_, root, _ := transferRoot(t)
	tg := Target{UIDMappings: []specs.LinuxIDMapping{{ContainerID: 1, HostID: 100001, Size: 1}}}
	if _, err := copyInAt(root, "/tmp/x", strings.NewReader("x"), 0o644, 10, tg); err == nil || !strings.Contains(err.Error(), "does not map uid 0") {
		t.Errorf("unmapped 0: %v", err)
	}
}

// Every planted symbolic link, wherever it is in the path, is refused in
// both directions, and the host file it points at is neither read nor
// written.
func TestTransferSymlinksNeverFollowed(t *testing.T) {
	dir, root, secret := transferRoot(t)
	tg := selfTarget()
	links := map[string]string{
		"tmp/abs":        secret,               // absolute host path
		"tmp/rel":        "../../secret",       // relative, climbing out
		"tmp/dotdot":     "..",                 // to the parent
		"tmp/passwd":     "/etc/passwd",        // inside the sandbox
		"tmp/dirlink":    "/",                  // a directory, used mid-path
		"tmp/hostdir":    filepath.Dir(secret), // host directory, mid-path
		"maka/work/self": ".",
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		"/tmp/abs", "/tmp/rel", "/tmp/dotdot/tmp/abs", "/tmp/passwd",
		"/tmp/dirlink/etc/passwd", "/tmp/hostdir/secret", "self/x", "/maka/work/self/self/x",
	}
	for _, p := range paths {
		var out bytes.Buffer
		sp, _ := sandboxPath(p)
		_, err := copyOutAt(root, sp, &out, DefaultTransferLimit, tg)
		if err == nil || !errors.Is(err, unix.ELOOP) {
			t.Errorf("CopyOut %s: %v, want a symbolic-link refusal", p, err)
		}
		if out.Len() != 0 {
			t.Errorf("CopyOut %s wrote %q", p, out.String())
		}
	}
	// Into a path with a link in a middle component: refused.
	for _, p := range []string{"/tmp/dirlink/etc/passwd", "/tmp/hostdir/secret", "/tmp/dotdot/x", "/maka/work/self/x"} {
		sp, _ := sandboxPath(p)
		if _, err := copyInAt(root, sp, strings.NewReader("pwned\n"), 0o644, DefaultTransferLimit, tg); err == nil || !errors.Is(err, unix.ELOOP) {
			t.Errorf("CopyIn %s: %v, want a symbolic-link refusal", p, err)
		}
	}
	// Into a link as the last component: the link is replaced by a regular
	// file; its target is untouched.
	for _, p := range []string{"/tmp/abs", "/tmp/rel", "/tmp/passwd"} {
		if _, err := copyInAt(root, p, strings.NewReader("new\n"), 0o644, DefaultTransferLimit, tg); err != nil {
			t.Errorf("CopyIn %s: %v", p, err)
			continue
		}
		st, err := os.Lstat(filepath.Join(dir, p))
		if err != nil || !st.Mode().IsRegular() {
			t.Errorf("%s after CopyIn: %v %v, want a regular file", p, st, err)
		}
	}
	if got := readFile(t, secret); got != "host secret\n" {
		t.Errorf("host file changed: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "etc/passwd")); got != "sandbox passwd\n" {
		t.Errorf("sandbox's /etc/passwd changed: %q", got)
	}
	noTemps(t, filepath.Join(dir, "tmp"))
}

// A hard link planted at the destination is replaced, not written through:
// the other name keeps its content.
func TestCopyInHardLinkNotWrittenThrough(t *testing.T) {
	dir, root, _ := transferRoot(t)
	other := filepath.Join(dir, "tmp/other")
	if err := os.WriteFile(other, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(other, filepath.Join(dir, "tmp/hl")); err != nil {
		t.Fatal(err)
	}
	if _, err := copyInAt(root, "/tmp/hl", strings.NewReader("new\n"), 0o644, DefaultTransferLimit, selfTarget()); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, other); got != "original\n" {
		t.Errorf("written through a hard link: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "tmp/hl")); got != "new\n" {
		t.Errorf("destination %q", got)
	}
}

// Only regular files move: a FIFO is refused at once (never opened, so
// nothing blocks), as are directories, devices and sockets.
func TestTransferNonRegular(t *testing.T) {
	dir, root, _ := transferRoot(t)
	tg := selfTarget()
	if err := unix.Mkfifo(filepath.Join(dir, "tmp/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := copyOutAt(root, "/tmp/fifo", &bytes.Buffer{}, DefaultTransferLimit, tg)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CopyOut blocked on a FIFO")
	}
	if _, err := copyOutAt(root, "/tmp", &bytes.Buffer{}, DefaultTransferLimit, tg); !errors.Is(err, ErrNotRegularFile) {
		t.Errorf("directory: %v", err)
	}
	if _, err := copyOutAt(root, "/", &bytes.Buffer{}, DefaultTransferLimit, tg); !errors.Is(err, ErrNotRegularFile) {
		t.Errorf("root: %v", err)
	}
	// CopyIn onto a directory or the root: refused, nothing created.
	if _, err := copyInAt(root, "/tmp", strings.NewReader("x"), 0o644, 10, tg); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("CopyIn onto a directory: %v", err)
	}
	if _, err := copyInAt(root, "/", strings.NewReader("x"), 0o644, 10, tg); err == nil {
		t.Error("CopyIn onto / succeeded")
	}
	// CopyIn onto a FIFO replaces it (rename), never opens it.
	done = make(chan error, 1)
	go func() {
		_, err := copyInAt(root, "/tmp/fifo", strings.NewReader("x"), 0o644, 10, tg)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("CopyIn onto a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CopyIn blocked on a FIFO")
	}
	noTemps(t, filepath.Join(dir, "tmp"))
	// Missing file and missing parent.
	if _, err := copyOutAt(root, "/tmp/nope", &bytes.Buffer{}, 10, tg); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := copyInAt(root, "/nodir/x", strings.NewReader("x"), 0o644, 10, tg); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing parent: %v", err)
	}
}

// Over the limit fails explicitly in both directions; CopyIn leaves no file
// (neither the destination nor a temporary one), CopyOut writes nothing.
func TestTransferLimit(t *testing.T) {
	dir, root, _ := transferRoot(t)
	tg := selfTarget()
	// Exactly the limit passes.
	if _, err := copyInAt(root, "/tmp/ok", bytes.NewReader(make([]byte, 100)), 0o644, 100, tg); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	_, err := copyInAt(root, "/tmp/big", bytes.NewReader(make([]byte, 101)), 0o644, 100, tg)
	var tl *TransferTooLargeError
	if !errors.Is(err, ErrTransferTooLarge) || !errors.As(err, &tl) || tl.Limit != 100 || tl.Path != "/tmp/big" {
		t.Fatalf("CopyIn over the limit: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "tmp/big")); !os.IsNotExist(err) {
		t.Errorf("partial file left: %v", err)
	}
	// Over the limit onto an existing file: the old content stays.
	if _, err := copyInAt(root, "/tmp/ok", bytes.NewReader(make([]byte, 500)), 0o644, 100, tg); !errors.Is(err, ErrTransferTooLarge) {
		t.Errorf("CopyIn over the limit onto a file: %v", err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "tmp/ok")); st == nil || st.Size() != 100 {
		t.Errorf("existing file changed by a refused transfer: %v", st)
	}
	noTemps(t, filepath.Join(dir, "tmp"))

	var out bytes.Buffer
	if _, err := copyOutAt(root, "/tmp/ok", &out, 99, tg); !errors.Is(err, ErrTransferTooLarge) || !errors.As(err, &tl) || tl.Size != 100 {
		t.Errorf("CopyOut over the limit: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("CopyOut over the limit wrote %d bytes", out.Len())
	}
	out.Reset()
	if fi, err := copyOutAt(root, "/tmp/ok", &out, 100, tg); err != nil || fi.Size != 100 || out.Len() != 100 {
		t.Errorf("CopyOut at the limit: %v %+v %d", err, fi, out.Len())
	}
}

// A file that grows past the limit while it is read stops the copy.
func TestCopyOutGrowing(t *testing.T) {
	dir, root, _ := transferRoot(t)
	p := filepath.Join(dir, "tmp/grow")
	if err := os.WriteFile(p, make([]byte, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	// The writer appends to the file as the first chunk arrives: the size
	// checked before the copy was under the limit, the data is not.
	w := &growingWriter{path: p}
	_, err := copyOutAt(root, "/tmp/grow", w, 1000, selfTarget())
	if !errors.Is(err, ErrTransferTooLarge) {
		t.Fatalf("grown file: %v (wrote %d)", err, w.n)
	}
	if w.n > 1000 {
		t.Errorf("wrote %d bytes, over the limit", w.n)
	}
}

type growingWriter struct {
	path  string
	n     int
	grown bool
}

func (g *growingWriter) Write(b []byte) (int, error) {
	if !g.grown {
		g.grown = true
		f, err := os.OpenFile(g.path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return 0, err
		}
		f.Write(make([]byte, 5000))
		f.Close()
	}
	g.n += len(b)
	return len(b), nil
}

func TestTransferStat(t *testing.T) {
	dir, root, _ := transferRoot(t)
	tg := selfTarget()
	os.Symlink("/etc", filepath.Join(dir, "tmp/l"))
	fi, err := statAt(root, "/tmp", tg)
	if err != nil || !fi.Mode.IsDir() {
		t.Errorf("stat /tmp: %+v %v", fi, err)
	}
	if fi, err = statAt(root, "/tmp/l", tg); err != nil || fi.Mode&fs.ModeSymlink == 0 {
		t.Errorf("stat /tmp/l: %+v %v", fi, err)
	}
	if _, err = statAt(root, "/tmp/l/passwd", tg); !errors.Is(err, unix.ELOOP) {
		t.Errorf("stat through a link: %v", err)
	}
}

// The thin /proc/PID/root part, on the test's own process (its root is the
// host's "/"), and its refusal of a pid whose start time is another's.
func TestTransferOpenRoot(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("via proc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start, err := procStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	tg := selfTarget()
	tg.Pid, tg.StartTime = os.Getpid(), start
	var out bytes.Buffer
	if _, err := CopyOut(tg, filepath.Join(dir, "f"), &out, 0); err != nil || out.String() != "via proc\n" {
		t.Fatalf("CopyOut via /proc/self/root: %q %v", out.String(), err)
	}
	if _, err := CopyIn(tg, filepath.Join(dir, "g"), strings.NewReader("in\n"), 0o600, 0); err != nil || readFile(t, filepath.Join(dir, "g")) != "in\n" {
		t.Fatalf("CopyIn via /proc/self/root: %v", err)
	}
	tg.StartTime = start + 1
	if _, err := CopyOut(tg, filepath.Join(dir, "f"), &out, 0); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("reused pid: %v", err)
	}
	if _, err := CopyOut(Target{Pid: 0}, "/x", &out, 0); err == nil {
		t.Error("pid 0 accepted")
	}
}

// CopyIn creates the file as the sandbox's root (filesystem ids switched on
// one thread): owned by it from the start, and only where it could write.
// Needs root (setfsuid).
func TestCopyInCreatesAsSandboxRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir, root, _ := transferRoot(t)
	tg := mappedTarget()
	// /maka/work is the sandbox's (0777 here); /etc is the host root's, 0755.
	if err := os.Chmod(filepath.Join(dir, "maka/work"), 0o777); err != nil {
		t.Fatal(err)
	}
	fi, err := copyInAt(root, "/maka/work/f", strings.NewReader("x"), 0o644, 10, tg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "maka/work/f"))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 100000 || sys.Gid != 100000 || fi.UID != 0 || fi.GID != 0 {
		t.Errorf("host owner %d:%d, sandbox's view %d:%d; want 100000:100000 and 0:0", sys.Uid, sys.Gid, fi.UID, fi.GID)
	}
	_, err = copyInAt(root, "/etc/f", strings.NewReader("x"), 0o644, 10, tg)
	if !errors.Is(err, unix.EACCES) || !strings.Contains(err.Error(), "not writable by the sandbox's root") {
		t.Errorf("into a directory the sandbox's root cannot write: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "etc/f")); !os.IsNotExist(err) {
		t.Errorf("file created anyway: %v", err)
	}
	noTemps(t, filepath.Join(dir, "etc"))
	// This goroutine's thread kept the host's root's ids: a file it
	// creates is root's.
	p := filepath.Join(dir, "etc/mine")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("caller's ids changed")
	}
}

// mappedTarget is a sandbox whose root is host id 100000 (no process: the
// tests reach its root through transferRoot's descriptor).
func mappedTarget() Target {
	m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 100000, Size: 65536}}
	return Target{UIDMappings: m, GIDMappings: m}
}
