package libmaka

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sampleTree is a tree to build: path → "dir MODE" or "file MODE CONTENT".
// Directories are given their mode after what they hold was made.
var sampleTree = []struct {
	path, kind string
	mode       fs.FileMode
	data       string
}{
	{"", "dir", 0o750, ""},
	{"a.txt", "file", 0o644, "alpha\n"},
	{"run.sh", "file", 0o755, "#!/bin/sh\necho hi\n"},
	{"key", "file", 0o600, "private\n"},
	{"empty", "file", 0o640, ""},
	{"sub", "dir", 0o755, ""},
	{"sub/b.txt", "file", 0o600, "beta\n"},
	{"sub/deep", "dir", 0o700, ""},
	{"sub/deep/c.txt", "file", 0o444, "gamma\n"},
	{"sub/ro", "dir", 0o500, ""},
	{"sub/ro/d.txt", "file", 0o644, "delta\n"},
	{"emptydir", "dir", 0o711, ""},
}

// buildTree makes sampleTree at dir (which must not exist).
func buildTree(t *testing.T, dir string) {
	t.Helper()
	var dirs []string
	for _, e := range sampleTree {
		p := filepath.Join(dir, e.path)
		switch e.kind {
		case "dir":
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, e.path)
		case "file":
			if err := os.WriteFile(p, []byte(e.data), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, e.mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Deepest first, so a read-only directory is made so after its files.
	for i := len(dirs) - 1; i >= 0; i-- {
		for _, e := range sampleTree {
			if e.path == dirs[i] {
				if err := os.Chmod(filepath.Join(dir, e.path), e.mode); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// unlockOnCleanup makes every directory under dirs writable again when the
// test ends, before t.TempDir's removal: sampleTree's 0500 directory (and
// its copies) would stop it for a test not run as root.
func unlockOnCleanup(t *testing.T, dirs ...string) {
	t.Cleanup(func() {
		for _, d := range dirs {
			filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
				if err == nil && e.IsDir() {
					os.Chmod(p, 0o700)
				}
				return nil
			})
		}
	})
}

// snapshot describes every entry under dir (links not followed): its
// type, permission bits and, for a file, content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			to, _ := os.Readlink(p)
			m[rel] = "link " + to
		case fi.IsDir():
			m[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[rel] = fmt.Sprintf("file %o %q", fi.Mode()&^fs.ModeType, b)
		default:
			m[rel] = "other " + fi.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshots(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected %s (%s)", what, k, g)
		}
	}
}

func sha(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// skippedMap is a result's skipped entries by path.
func skippedMap(r DirResult) map[string]string {
	m := map[string]string{}
	for _, s := range r.Skipped {
		m[s.Path] = s.Reason
	}
	return m
}

func defDirLimits() dirLimits { return dirLimitsOf(0) }

// A nested tree goes in and comes back out identical: contents, permission
// bits (setuid dropped), empty files and directories, a read-only
// directory; owned by the sandbox's root inside; no temporary left.
func TestCopyDirRoundTrip(t *testing.T) {
	dir, root, _ := transferRoot(t)
	tg := selfTarget()
	src := filepath.Join(t.TempDir(), "tree")
	out := filepath.Join(t.TempDir(), "back")
	unlockOnCleanup(t, src, dir, out)
	buildTree(t, src)
	suid := filepath.Join(src, "suid")
	if err := os.WriteFile(suid, []byte("s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, src)
	want["suid"] = fmt.Sprintf("file %o %q", 0o755, "s")

	res, err := copyDirInAt(root, src, "/maka/work/tree", defDirLimits(), tg)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "maka/work/tree")
	sameSnapshots(t, "in", snapshot(t, in), want)
	var bytes int64
	for _, e := range sampleTree {
		bytes += int64(len(e.data))
	}
	if res.Dirs != 5 || res.Files != 8 || res.Bytes != bytes+1 || len(res.Skipped) != 0 {
		t.Errorf("CopyDirIn result %+v, want 5 dirs, 8 files, %d bytes", res, bytes+1)
	}
	st, _ := os.Stat(filepath.Join(in, "sub/deep/c.txt"))
	if sys := st.Sys().(*syscall.Stat_t); int(sys.Uid) != os.Getuid() || int(sys.Gid) != os.Getgid() {
		t.Errorf("owner %d:%d, want the mapping of 0", sys.Uid, sys.Gid)
	}
	noTemps(t, filepath.Join(dir, "maka/work"))

	res, err = copyDirOutAt(root, "/maka/work/tree", out, defDirLimits())
	if err != nil {
		t.Fatal(err)
	}
	sameSnapshots(t, "out", snapshot(t, out), want)
	if res.Dirs != 5 || res.Files != 8 || len(res.Skipped) != 0 {
		t.Errorf("CopyDirOut result %+v", res)
	}
	noTemps(t, filepath.Dir(out))
}

// Links of every shape inside the tree are skipped and reported, in both
// directions, never followed: the host files and directories they aim at
// are neither copied nor changed. A directory swapped for a link between
// the listing and the open (the program inside racing the copy) is seen
// as the link.
func TestCopyDirSymlinksNeverFollowed(t *testing.T) {
	dir, root, secret := transferRoot(t)
	tg := selfTarget()
	hostDir := filepath.Dir(secret)
	before := sha(t, secret)
	tree := filepath.Join(dir, "maka/work/tree")
	for _, d := range []string{"tree/sub", "tree/swap"} {
		if err := os.MkdirAll(filepath.Join(dir, "maka/work", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(tree, "ok"), []byte("ok\n"), 0o644)
	os.WriteFile(filepath.Join(tree, "swap/inner"), []byte("inner\n"), 0o644)
	links := map[string]string{
		"abs":       secret,                // absolute host path
		"rel":       "../../../../secret",  // relative, climbing out
		"dotdot":    "..",                  // the parent
		"procroot":  "/proc/self/root",     // a magic link's path
		"procfd":    "/proc/self/root/etc", // through it
		"hostdir":   hostDir,               // a directory, as a directory would be
		"sub/up":    "../../../../..",      // nested
		"sub/etc":   "/etc",
		"sub/local": "../ok", // inside the tree: still not followed
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(tree, name)); err != nil {
			t.Fatal(err)
		}
	}
	// tree/swap is a directory when listed, a link to the host's
	// directory when opened.
	testHookEntry = func(p string) {
		if p == "/maka/work/tree/swap" {
			if err := os.Rename(filepath.Join(tree, "swap"), filepath.Join(dir, "tmp/swapped")); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(hostDir, filepath.Join(tree, "swap")); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookEntry = nil }()

	out := filepath.Join(t.TempDir(), "out")
	res, err := copyDirOutAt(root, "/maka/work/tree", out, defDirLimits())
	testHookEntry = nil
	if err != nil {
		t.Fatal(err)
	}
	sk := skippedMap(res)
	for name := range links {
		if r := sk["/maka/work/tree/"+name]; !strings.Contains(r, "symbolic link, not followed") {
			t.Errorf("%s: skipped as %q, want a symbolic link", name, r)
		}
	}
	if r := sk["/maka/work/tree/swap"]; !strings.Contains(r, "symbolic link") {
		t.Errorf("swapped directory: skipped as %q; result %+v", r, res)
	}
	sameSnapshots(t, "out", snapshot(t, out), map[string]string{
		".":   "dir 755",
		"ok":  fmt.Sprintf("file 644 %q", "ok\n"),
		"sub": "dir 755",
	})
	if got := sha(t, secret); got != before {
		t.Error("host file changed")
	}

	// In: the host's own tree with links to host paths; none is followed
	// into the sandbox.
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "ok"), []byte("ok\n"), 0o644)
	for name, to := range map[string]string{"abs": secret, "etc": "/etc", "procroot": "/proc/self/root", "dotdot": ".."} {
		if err := os.Symlink(to, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	res, err = copyDirInAt(root, src, "/tmp/in", defDirLimits(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 4 || !strings.Contains(skippedMap(res)[filepath.Join(src, "etc")], "symbolic link") {
		t.Errorf("CopyDirIn skipped %+v", res.Skipped)
	}
	sameSnapshots(t, "in", snapshot(t, filepath.Join(dir, "tmp/in")), map[string]string{
		".":  "dir 755",
		"ok": fmt.Sprintf("file 644 %q", "ok\n"),
	})

	// In, to a destination whose parent is reached through a planted
	// link, or which is a planted link: refused, nothing written there.
	os.Symlink(hostDir, filepath.Join(dir, "tmp/hl"))
	for _, p := range []string{"/tmp/hl/x", "/tmp/hl"} {
		if _, err := copyDirInAt(root, src, p, defDirLimits(), tg); err == nil {
			t.Errorf("CopyDirIn to %s succeeded", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(hostDir, "x")); !os.IsNotExist(err) {
		t.Errorf("written through a link: %v", err)
	}
	if got := sha(t, secret); got != before {
		t.Error("host file changed")
	}
	noTemps(t, filepath.Join(dir, "tmp"))
	noTemps(t, hostDir)
}

// A FIFO (or a socket) in the tree is skipped without being opened: the
// copy does not block.
func TestCopyDirFIFOSkipped(t *testing.T) {
	dir, root, _ := transferRoot(t)
	tree := filepath.Join(dir, "tmp/t")
	os.Mkdir(tree, 0o755)
	if err := unix.Mkfifo(filepath.Join(tree, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	if err := unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(tree, "sock")}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree, "f"), []byte("f"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	done := make(chan error, 1)
	var res DirResult
	go func() {
		var err error
		res, err = copyDirOutAt(root, "/tmp/t", out, defDirLimits())
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CopyDirOut blocked on a FIFO")
	}
	sk := skippedMap(res)
	if sk["/tmp/t/fifo"] != "a FIFO, not copied" || sk["/tmp/t/sock"] != "a socket, not copied" || res.Files != 1 {
		t.Errorf("result %+v", res)
	}
	// And in, from a host tree holding a FIFO.
	go func() {
		var err error
		res, err = copyDirInAt(root, tree, "/maka/work/t", defDirLimits(), selfTarget())
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || len(res.Skipped) != 2 || res.Files != 1 {
			t.Errorf("CopyDirIn: %v %+v", err, res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CopyDirIn blocked on a FIFO")
	}
}

// Over any cap (bytes in all, entries, depth) fails with the typed error
// and leaves nothing on either side; at the cap passes.
func TestCopyDirCaps(t *testing.T) {
	dir, root, _ := transferRoot(t)
	tg := selfTarget()
	tree := filepath.Join(dir, "maka/work/t")
	os.MkdirAll(filepath.Join(tree, "s"), 0o755)
	for _, f := range []string{"a", "b", "s/c"} {
		os.WriteFile(filepath.Join(tree, f), make([]byte, 40), 0o644)
	}
	outDir := t.TempDir()
	check := func(what string, err error, unit string, size, limit int64) {
		t.Helper()
		var tl *TransferTooLargeError
		if !errors.Is(err, ErrTransferTooLarge) || !errors.As(err, &tl) || tl.Unit != unit || tl.Limit != limit || tl.Size < size {
			t.Errorf("%s: %v, want too large (%s, %d over %d)", what, err, unit, size, limit)
		}
		if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
			t.Errorf("%s: left %v on the host", what, ents)
		}
		noTemps(t, filepath.Join(dir, "maka/work"))
		if _, err := os.Lstat(filepath.Join(dir, "tmp/in")); !os.IsNotExist(err) {
			t.Errorf("%s: left /tmp/in in the sandbox", what)
		}
		noTemps(t, filepath.Join(dir, "tmp"))
	}
	lim := dirLimits{bytes: 119, entries: 100, depth: 10}
	_, err := copyDirOutAt(root, "/maka/work/t", filepath.Join(outDir, "o"), lim)
	check("bytes out", err, "", 120, 119)
	_, err = copyDirInAt(root, tree, "/tmp/in", lim, tg)
	check("bytes in", err, "", 120, 119)
	lim = dirLimits{bytes: 120, entries: 3, depth: 10}
	_, err = copyDirOutAt(root, "/maka/work/t", filepath.Join(outDir, "o"), lim)
	check("entries out", err, "entries", 4, 3)
	_, err = copyDirInAt(root, tree, "/tmp/in", lim, tg)
	check("entries in", err, "entries", 4, 3)
	// At the caps (120 bytes, 4 entries: a, b, s, s/c).
	lim = dirLimits{bytes: 120, entries: 4, depth: 1}
	if _, err := copyDirOutAt(root, "/maka/work/t", filepath.Join(outDir, "o"), lim); err != nil {
		t.Fatalf("at the caps: %v", err)
	}
	os.RemoveAll(filepath.Join(outDir, "o"))

	// Depth, with the real cap: 64 levels below the copied directory pass,
	// 65 fail.
	deep := filepath.Join(dir, "maka/work/deep")
	p := deep
	for range MaxTransferDepth {
		p = filepath.Join(p, "d")
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if res, err := copyDirOutAt(root, "/maka/work/deep", filepath.Join(outDir, "o"), defDirLimits()); err != nil || res.Dirs != MaxTransferDepth+1 {
		t.Fatalf("%d levels: %v %+v", MaxTransferDepth, err, res)
	}
	os.RemoveAll(filepath.Join(outDir, "o"))
	os.Mkdir(filepath.Join(p, "d"), 0o755)
	_, err = copyDirOutAt(root, "/maka/work/deep", filepath.Join(outDir, "o"), defDirLimits())
	check("depth out", err, "levels of directories", MaxTransferDepth+1, MaxTransferDepth)
	_, err = copyDirInAt(root, deep, "/tmp/in", defDirLimits(), tg)
	check("depth in", err, "levels of directories", MaxTransferDepth+1, MaxTransferDepth)
	if !strings.Contains(err.Error(), "transfer too large: 65 levels of directories or more, over the limit of 64 levels of directories") {
		t.Errorf("depth message: %v", err)
	}

	// The default caps of the exported API.
	if l := dirLimitsOf(0); l.bytes != 8<<20 || l.entries != 10000 || l.depth != 64 {
		t.Errorf("default caps %+v", l)
	}
}

// CopyDirOut creates its destination: an existing file, directory or link
// there is refused and left as it was; the source must be a directory,
// reached through no link.
func TestCopyDirOutDestination(t *testing.T) {
	dir, root, secret := transferRoot(t)
	os.MkdirAll(filepath.Join(dir, "tmp/t"), 0o755)
	os.WriteFile(filepath.Join(dir, "tmp/t/f"), []byte("new"), 0o644)
	host := t.TempDir()
	file := filepath.Join(host, "file")
	os.WriteFile(file, []byte("keep"), 0o644)
	if _, err := copyDirOutAt(root, "/tmp/t", file, defDirLimits()); err == nil || !strings.Contains(err.Error(), "exists and is not a directory") {
		t.Errorf("onto a file: %v", err)
	}
	if readFile(t, file) != "keep" {
		t.Error("file changed")
	}
	if _, err := copyDirOutAt(root, "/tmp/t", host, defDirLimits()); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("onto a directory: %v", err)
	}
	link := filepath.Join(host, "link")
	os.Symlink(filepath.Join(host, "target"), link)
	if _, err := copyDirOutAt(root, "/tmp/t", link, defDirLimits()); err == nil {
		t.Error("onto a dangling link succeeded")
	}
	if _, err := os.Lstat(filepath.Join(host, "target")); !os.IsNotExist(err) {
		t.Error("created through a link")
	}
	if _, err := copyDirOutAt(root, "/tmp/t", filepath.Join(host, "no/such"), defDirLimits()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing parent: %v", err)
	}
	if _, err := copyDirOutAt(root, "/tmp/t/f", filepath.Join(host, "o"), defDirLimits()); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("source a file: %v", err)
	}
	os.Symlink("/tmp/t", filepath.Join(dir, "tmp/l"))
	if _, err := copyDirOutAt(root, "/tmp/l", filepath.Join(host, "o"), defDirLimits()); !errors.Is(err, unix.ELOOP) {
		t.Errorf("source a link: %v", err)
	}
	// A kernel filesystem is not entered (the host's "/" as the root,
	// for its /proc).
	hostRoot, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(hostRoot)
	if _, err := copyDirOutAt(hostRoot, "/proc", filepath.Join(host, "o"), defDirLimits()); err == nil || !strings.Contains(err.Error(), "/proc: on a kernel filesystem (proc), not copied") {
		t.Errorf("/proc: %v", err)
	}
	noTemps(t, host)
	if readFile(t, secret) != "host secret\n" {
		t.Error("host file changed")
	}
}

// CopyDirIn never merges into nor replaces what exists at its destination;
// its source must be a directory.
func TestCopyDirInDestination(t *testing.T) {
	dir, root, _ := transferRoot(t)
	tg := selfTarget()
	src := filepath.Join(t.TempDir(), "src")
	unlockOnCleanup(t, src, dir)
	buildTree(t, src)
	os.Mkdir(filepath.Join(dir, "tmp/d"), 0o755)
	os.WriteFile(filepath.Join(dir, "tmp/f"), []byte("keep"), 0o644)
	os.Symlink("/etc", filepath.Join(dir, "tmp/l"))
	for p, msg := range map[string]string{
		"/tmp/d":       "already exists",
		"/tmp/f":       "exists (a regular file, not replaced)",
		"/tmp/l":       "exists (a symbolic link, not replaced)",
		"/":            "the sandbox's root directory",
		"/nodir/x":     "no such file",
		"/tmp/l/x":     "symbolic link",
		"/tmp/f/x":     "not a directory",
		"/maka/work/y": "",
	} {
		_, err := copyDirInAt(root, src, p, defDirLimits(), tg)
		if msg == "" {
			if err != nil {
				t.Errorf("%s: %v", p, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", p, err, msg)
		}
	}
	if readFile(t, filepath.Join(dir, "tmp/f")) != "keep" {
		t.Error("file replaced")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "tmp/d")); len(ents) != 0 {
		t.Errorf("merged into a directory: %v", ents)
	}
	if _, err := copyDirInAt(root, filepath.Join(src, "a.txt"), "/tmp/x", defDirLimits(), tg); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("source a file: %v", err)
	}
	noTemps(t, filepath.Join(dir, "tmp"))
}

// Through the exported API and /proc/PID/root (the test's own process).
func TestCopyDirOpenRoot(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	unlockOnCleanup(t, base)
	buildTree(t, src)
	tg := selfTarget()
	tg.Pid = os.Getpid()
	if _, err := CopyDirIn(tg, src, filepath.Join(base, "in"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := CopyDirOut(tg, filepath.Join(base, "in"), filepath.Join(base, "out"), 0); err != nil {
		t.Fatal(err)
	}
	sameSnapshots(t, "via /proc/self/root", snapshot(t, filepath.Join(base, "out")), snapshot(t, src))
	if _, err := CopyDirOut(tg, filepath.Join(base, "in"), filepath.Join(base, "small"), 10); !errors.Is(err, ErrTransferTooLarge) {
		t.Errorf("limit 10: %v", err)
	}
}

// CopyDirIn creates every entry as the sandbox's root, and only where it
// could write: into a directory it cannot, nothing is made. Needs root.
func TestCopyDirInAsSandboxRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir, root, _ := transferRoot(t)
	tg := mappedTarget()
	os.Chmod(filepath.Join(dir, "maka/work"), 0o777)
	src := filepath.Join(t.TempDir(), "src")
	buildTree(t, src)
	if _, err := copyDirInAt(root, src, "/maka/work/t", defDirLimits(), tg); err != nil {
		t.Fatal(err)
	}
	var owners []string
	filepath.WalkDir(filepath.Join(dir, "maka/work/t"), func(p string, d fs.DirEntry, err error) error {
		fi, _ := d.Info()
		if sys := fi.Sys().(*syscall.Stat_t); sys.Uid != 100000 || sys.Gid != 100000 {
			owners = append(owners, fmt.Sprintf("%s %d:%d", p, sys.Uid, sys.Gid))
		}
		return nil
	})
	sort.Strings(owners)
	if len(owners) != 0 {
		t.Errorf("not the sandbox root's: %v", owners)
	}
	_, err := copyDirInAt(root, src, "/etc/t", defDirLimits(), tg)
	if !errors.Is(err, unix.EACCES) || !strings.Contains(err.Error(), "not writable by the sandbox's root") {
		t.Errorf("into /etc: %v", err)
	}
	noTemps(t, filepath.Join(dir, "etc"))
	if _, err := os.Lstat(filepath.Join(dir, "etc/t")); !os.IsNotExist(err) {
		t.Error("created anyway")
	}
	// A failure part-way (the byte cap) removes the partial tree, as the
	// sandbox's root, read-only directories included.
	_, err = copyDirInAt(root, src, "/maka/work/u", dirLimits{bytes: 30, entries: 100, depth: 10}, tg)
	if !errors.Is(err, ErrTransferTooLarge) {
		t.Errorf("cap: %v", err)
	}
	noTemps(t, filepath.Join(dir, "maka/work"))
}
