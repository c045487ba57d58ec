package libmaka

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// imageRoot is a small root like busybox's: no /run, no /maka, /var/run a
// symlink to /run, and a symlink that points out of the root.
func imageRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"proc", "tmp", "etc", "var/lib", "usr/bin", "mnt", "maka/work"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"bin": "usr/bin", "var/run": "../run", "escape": "/etc"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/sh"), []byte("#!"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestMissingMountpoints(t *testing.T) {
	root := imageRoot(t)
	missing, files, err := MissingMountpoints(root, []string{"/proc", "/tmp/", "/", "/run", "/maka/work/x", "/var/run/x", "/escape/hostname", "/run", "/.containerenv"}, nil,
		[]bool{false, false, false, false, false, false, false, false, true})
	if err != nil {
		t.Fatal(err)
	}
	// Resolved in the root as libcontainer resolves them: /var/run/x is
	// /run/x, /escape/hostname is the root's /etc/hostname, never the host's.
	want := []string{"etc/hostname", "maka/work/x", "run", "run/x"}
	if !slices.Equal(missing, want) || !slices.Equal(files, []string{".containerenv"}) {
		t.Fatalf("missing = %v %v, want %v [.containerenv]", missing, files, want)
	}
	if _, err := os.Stat(filepath.Join(root, "run")); err == nil {
		t.Fatal("the check created a mount point")
	}
	_, _, err = MissingMountpoints(root, []string{"/etc/passwd/x"}, []string{"mounts[3].destination"}, nil)
	if err == nil || !strings.Contains(err.Error(), "mounts[3].destination: /etc/passwd/x cannot be a mount point") {
		t.Fatalf("a path below a file: err = %v", err)
	}
}

func TestBuildRoot(t *testing.T) {
	rt, store := testStore(t)
	root := imageRoot(t)
	before := treeOf(t, root)
	op, err := rt.Begin("s", "create")
	if err != nil {
		t.Fatal(err)
	}
	b := &Boundary{
		Rootfs: Rootfs{Path: root, Readonly: true, Missing: []string{"etc/hostname", "run"}, MissingFiles: []string{"run/.containerenv"}},
		Mounts: []specs.Mount{{Destination: "/proc", Type: "proc"}, {Destination: "/run", Type: "tmpfs"}, {Destination: "/maka/work", Type: "tmpfs"}},
	}
	if err := op.BuildRoot(b, nil); err != nil {
		t.Fatal(err)
	}
	dir := b.Rootfs.Scaffold
	if dir != filepath.Join(rootsDir(store), "s") {
		t.Fatalf("scaffold %s", dir)
	}
	var binds []string
	for _, m := range b.Rootfs.Binds {
		if m.Source != filepath.Join(root, strings.TrimPrefix(m.Destination, "/")) || !slices.Contains(m.Options, "rro") || slices.Contains(m.Options, "ridmap") {
			t.Fatalf("bind %+v", m)
		}
		binds = append(binds, m.Destination)
	}
	// /etc is re-created entry by entry (its hostname is missing); /proc
	// is covered by a mount, /run is made, /mnt is empty, /maka holds only
	// a covered mount point: none is bound.
	want := []string{"/etc/passwd", "/usr", "/var"} // /tmp is empty: re-created
	slices.Sort(binds)
	if !slices.Equal(binds, want) {
		t.Fatalf("binds %v, want %v", binds, want)
	}
	for p, mode := range map[string]os.FileMode{"tmp": os.ModeDir | os.ModeSticky | 0o777, "proc": os.ModeDir | 0o755, "maka/work": os.ModeDir | 0o755, "etc/hostname": os.ModeDir | 0o755, "etc/passwd": 0o644, "run": os.ModeDir | 0o755, "run/.containerenv": 0o644, "mnt": os.ModeDir | 0o755} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil || fi.Mode() != mode {
			t.Fatalf("%s: %v %v, want %v", p, fi.Mode(), err, mode)
		}
	}
	for link, target := range map[string]string{"bin": "usr/bin", "escape": "/etc"} {
		if got, err := os.Readlink(filepath.Join(dir, link)); err != nil || got != target {
			t.Fatalf("%s -> %q (%v), want %q", link, got, err, target)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "etc/passwd")); fi.Size() != 0 {
		t.Fatal("the scaffold copied a file's content: it only holds mount points")
	}
	if after := treeOf(t, root); !slices.Equal(before, after) {
		t.Fatalf("the root was written:\n%v\n%v", before, after)
	}
	// The scaffold's path is searchable by the sandbox's unprivileged root.
	for d := dir; d != filepath.Dir(rt.StateDir); d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("%s: %v %v: not searchable by others", d, fi.Mode(), err)
		}
	}
	// Never published: End removes it.
	op.End()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a failed create kept its scaffold: %v", err)
	}
}

// The scaffold goes with its record; one no record names is removed by
// recover unless its create is still running.
func TestRootScaffoldLifetime(t *testing.T) {
	rt, store := testStore(t)
	root := imageRoot(t)
	build := func(id string, publish bool) *Op {
		op, err := rt.Begin(id, "create")
		if err != nil {
			t.Fatal(err)
		}
		b := &Boundary{Rootfs: Rootfs{Path: root, Readonly: true, Missing: []string{"run"}}}
		if err := op.BuildRoot(b, nil); err != nil {
			t.Fatal(err)
		}
		if publish {
			rec := testRecord(t, rt.Root, id, StageCreated, self(t))
			rec.Boundary = Hold(b)
			if err := op.publishFirst(rec); err != nil {
				t.Fatal(err)
			}
		}
		op.committed = true
		return op
	}
	build("dead", false).End()
	build("kept", true).End()
	busy := build("busy", false)
	reclaimRoots(store)
	exists := func(id string) bool {
		_, err := os.Stat(filepath.Join(rootsDir(store), id))
		return err == nil
	}
	if exists("dead") || !exists("kept") || !exists("busy") {
		t.Fatalf("after recover: dead %v kept %v busy %v", exists("dead"), exists("kept"), exists("busy"))
	}
	busy.End()
	lock, err := store.Lock("kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if err := lock.Drop(); err != nil {
		t.Fatal(err)
	}
	if exists("kept") {
		t.Fatal("the scaffold outlived its record")
	}
}

// With an idmapped root, the binds go through the sandbox's mapping and
// the scaffold's entries show the root's owners as the sandbox sees them.
func TestBuildRootIDMapped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	rt, _ := testStore(t)
	root := imageRoot(t)
	op, err := rt.Begin("m", "create")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 20, Size: 65536}}
	b := &Boundary{Rootfs: Rootfs{Path: root, Readonly: true, IDMapped: true}, UIDMappings: m, GIDMappings: m, Users: Users{Namespace: true}}
	if err := op.BuildRoot(b, nil); err != nil {
		t.Fatal(err)
	}
	for _, bind := range b.Rootfs.Binds {
		if !slices.Contains(bind.Options, "ridmap") {
			t.Fatalf("bind %+v is not idmapped", bind)
		}
	}
	for _, p := range []string{"", "etc", "bin"} {
		fi, err := os.Lstat(filepath.Join(b.Rootfs.Scaffold, p))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1<<20 || st.Gid != 1<<20 {
			t.Fatalf("/%s owned by %d:%d, want the sandbox's root %d", p, st.Uid, st.Gid, 1<<20)
		}
	}
}

// treeOf lists every path of dir with its mode and size.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p+" "+fi.Mode().String()+" "+strings.Repeat("x", int(fi.Size()%7)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The filesystem comes from mountinfo (not statfs, which 9p answers with
// the server's type): this test's own temporary directory and /proc.
func TestIDMapSupport(t *testing.T) {
	if ok, why := IDMapSupport("/proc/self"); ok || !strings.Contains(why, "on proc, which maka does not idmap") {
		t.Fatalf("/proc: %v %q", ok, why)
	}
	mounts, err := readMountinfo()
	if err != nil || len(mounts) == 0 || mounts[0].fstype == "" {
		t.Fatalf("mountinfo: %v %v", mounts, err)
	}
}

// A tmpfs with tmpcopyup starts as a copy of the directory it covers: the
// scaffold binds the root's directory there, content and all, instead of
// an empty one (runc's mounts.bats "tmpcopyup").
func TestBuildRootTmpcopyup(t *testing.T) {
	rt, _ := testStore(t)
	root := imageRoot(t)
	if err := os.MkdirAll(filepath.Join(root, "dir1/dir2"), 0o777); err != nil {
		t.Fatal(err)
	}
	b := &Boundary{
		Rootfs: Rootfs{Path: root, Readonly: true, Missing: []string{"run"}},
		Mounts: []specs.Mount{{Destination: "/dir1", Type: "tmpfs", Options: []string{"tmpcopyup"}}, {Destination: "/tmp", Type: "tmpfs"}, {Destination: "/run", Type: "tmpfs"}},
	}
	binds := buildScaffold(t, rt, b)
	// Bound, or (holding only empty directories) re-created with them.
	if _, err := os.Stat(filepath.Join(b.Rootfs.Scaffold, "dir1/dir2")); err != nil && !slices.Contains(binds, "/dir1") {
		t.Errorf("binds %v, %v: /dir1 (tmpcopyup) neither bound nor re-created with its content", binds, err)
	}
	if slices.Contains(binds, "/tmp") {
		t.Errorf("binds %v: /tmp (covered, empty) bound", binds)
	}
}

// runc's mask.bats "[duplicate paths]": a masked entry of the root is not
// bound into the scaffold (the mask would be a second mount there, and what
// it hides would be reachable until the mask is made); the scaffold holds
// an empty mount point of its kind for the mask.
func TestBuildRootMaskedEntries(t *testing.T) {
	rt, _ := testStore(t)
	root := imageRoot(t)
	if err := os.Mkdir(filepath.Join(root, "testdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "testdir/secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "testfile"), []byte("Forbidden information!"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &Boundary{
		Rootfs:      Rootfs{Path: root, Readonly: true, Missing: []string{"run"}},
		Mounts:      []specs.Mount{{Destination: "/run", Type: "tmpfs"}},
		MaskedPaths: []string{"/proc/kcore", "/testdir", "/testfile", "/etc/passwd"},
	}
	for _, d := range buildScaffold(t, rt, b) {
		switch d {
		case "/testdir", "/testfile", "/etc/passwd":
			t.Errorf("masked %s bound from the root", d)
		}
	}
	for p, want := range map[string]os.FileMode{"testdir": os.ModeDir | 0o755, "testfile": 0o644} {
		fi, err := os.Lstat(filepath.Join(b.Rootfs.Scaffold, p))
		if err != nil || fi.Mode() != want || (!fi.IsDir() && fi.Size() != 0) {
			t.Fatalf("%s: %v %v, want an empty mount point %v", p, fi, err, want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(b.Rootfs.Scaffold, "testdir")); len(entries) != 0 {
		t.Errorf("masked /testdir holds %v", entries)
	}
}

// buildScaffold builds b's root scaffold in a create of id "s" (ended when
// the test ends) and returns the destinations bound from the root.
func buildScaffold(t *testing.T, rt *Runtime, b *Boundary) []string {
	t.Helper()
	op, err := rt.Begin("s", "create")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.End)
	if err := op.BuildRoot(b, nil); err != nil {
		t.Fatal(err)
	}
	var binds []string
	for _, m := range b.Rootfs.Binds {
		binds = append(binds, m.Destination)
	}
	return binds
}
