package libmaka

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A path with a symlink in it (one swapped in after the check) is
// refused, naming the field; the real path opens.
func TestOpenHostPathRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "etc")); err != nil {
		t.Fatal(err)
	}
	h, err := OpenHostPath("mounts[0].source", real, HostBindSource, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	for _, p := range []string{filepath.Join(dir, "link"), filepath.Join(dir, "link", "."), filepath.Join(dir, "etc")} {
		_, err := OpenHostPath("mounts[0].source", p, HostBindSource, "", nil)
		if err == nil || !strings.Contains(err.Error(), "mounts[0].source: ") || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("%s: %v, want a refusal naming the field and the symlink", p, err)
		}
	}
	if _, err := OpenHostPath("root.path", "relative", HostDir, "", nil); err == nil {
		t.Error("a relative path opened")
	}
}

// An entry of the root swapped for a symlink (to a host directory), or a
// directory swapped for a file, after the scaffold read it is refused when
// it is opened to be staged; ".." and absolute names never leave the root.
func TestOpenBeneathRefusesSwappedEntries(t *testing.T) {
	root := t.TempDir()
	host := t.TempDir()
	for _, d := range []string{"etc", "usr"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rootfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rootfd)
	open := func(rel string, dir bool) error {
		h, err := OpenBeneath("root.path", filepath.Join(root, rel), rootfd, rel, dir)
		h.Close()
		return err
	}
	if err := open("etc", true); err != nil {
		t.Fatalf("etc as read: %v", err)
	}
	if err := open("file", false); err != nil {
		t.Fatalf("file as read: %v", err)
	}
	// The swap: etc is now a link to a host directory.
	if err := os.Rename(filepath.Join(root, "etc"), filepath.Join(root, "etc.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := open("etc", true); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("etc swapped for a link: err = %v, want it refused as a symlink", err)
	}
	if err := os.Symlink(host, filepath.Join(root, "usr", "lib")); err != nil {
		t.Fatal(err)
	}
	if err := open("usr/lib", true); err == nil {
		t.Error("usr/lib, a link: opened")
	}
	if err := open("file", true); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Errorf("a file where a directory was read: err = %v", err)
	}
	for _, rel := range []string{"../" + filepath.Base(host), host} {
		if err := open(rel, true); err == nil {
			t.Errorf("%s: opened outside the root", rel)
		}
	}
}

func TestOpenHostPathChecksType(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenHostPath("root.path", f, HostDir, "", nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file as the root: %v", err)
	}
	if h, err := OpenHostPath("mounts[0].source", f, HostBindSource, "", nil); err != nil {
		t.Errorf("a file as a bind source: %v", err)
	} else {
		h.Close()
	}
	if _, err := OpenHostPath("root.path", "/dev/null", HostDir, "", nil); err == nil {
		t.Error("a device as the root")
	}
}

// maka's state dirs are refused by device and inode: themselves, below
// them, above them (but /).
func TestOpenHostPathNever(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "a", "state")
	below := filepath.Join(state, "x")
	other := filepath.Join(dir, "other")
	for _, d := range []string{below, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	never := NeverOf(state)
	for _, p := range []string{state, below, filepath.Join(dir, "a"), dir} {
		if _, err := OpenHostPath("mounts[1].source", p, HostBindSource, "", never); err == nil || !strings.Contains(err.Error(), "maka's own state") {
			t.Errorf("%s: %v, want maka's own state refused", p, err)
		}
	}
	h, err := OpenHostPath("mounts[1].source", other, HostBindSource, "", never)
	if err != nil {
		t.Fatalf("a path beside the state dir: %v", err)
	}
	h.Close()
	// Another root named by a store of the state dir is never too.
	otherRoot := filepath.Join(dir, "otherroot")
	if err := os.MkdirAll(filepath.Join(state, "0123456789abcdef"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(otherRoot, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "0123456789abcdef", "root"), []byte(otherRoot), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenHostPath("root.path", otherRoot, HostDir, "", NeverOf(state)); err == nil {
		t.Error("another invocation's --root opened")
	}
}

// A namespace path must be a namespace file, and never the host's own.
func TestOpenHostPathNamespace(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "net")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenHostPath("linux.namespaces[0].path", f, HostNamespace, "network", nil); err == nil || !strings.Contains(err.Error(), "not a namespace") {
		t.Errorf("a regular file as a namespace: %v", err)
	}
	// A symlink to the host's namespace: the link itself, not a namespace.
	l := filepath.Join(dir, "link")
	if err := os.Symlink("/proc/self/ns/net", l); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenHostPath("linux.namespaces[0].path", l, HostNamespace, "network", nil); err == nil || !strings.Contains(err.Error(), "not a namespace") {
		t.Errorf("a symlink to the host's namespace: %v", err)
	}
	// The kernel's own link, named directly: followed, and the host's.
	if _, err := OpenHostPath("linux.namespaces[0].path", "/proc/self/ns/net", HostNamespace, "network", nil); err == nil || !strings.Contains(err.Error(), "host's own network namespace") {
		t.Errorf("the host's namespace: %v", err)
	}
	// A namespace of another type than its entry's: refused here, naming
	// the field, not by the init's setns.
	if _, err := OpenHostPath("linux.namespaces[0].path", "/proc/self/ns/ipc", HostNamespace, "network", nil); err == nil || !strings.Contains(err.Error(), "linux.namespaces[0].path: /proc/self/ns/ipc is an ipc namespace, not a network namespace") {
		t.Errorf("an ipc namespace as the network's: %v", err)
	}
}

// The callers of OpenHostPath and of the mount system calls: a new place
// that mounts a host path must open it through OpenHostPath, and be listed
// here once it does.
func TestHostPathCallers(t *testing.T) {
	wantOpen := []string{"libmaka/hostpath.go:StageBoundary"}
	// open_tree, move_mount; the overlay of the staged root; its
	// propagation; the scaffold (maka's own directory) staged nosuid,nodev.
	wantMount := []string{"libmaka/hostpath.go:Stage", "libmaka/overlayroot.go:BuildOverlayRoot", "libmaka/overlayroot.go:makePrivate", "libmaka/rootfs.go:stageScaffold"}
	var gotOpen, gotMount []string
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "build" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var name string
				switch fun := call.Fun.(type) {
				case *ast.Ident:
					name = fun.Name
				case *ast.SelectorExpr:
					name = fun.Sel.Name
				}
				where := rel + ":" + fn.Name.Name
				switch name {
				case "OpenHostPath":
					if !slices.Contains(gotOpen, where) {
						gotOpen = append(gotOpen, where)
					}
				case "OpenTree", "MoveMount", "Mount", "Fsmount":
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "unix" || x.Name == "syscall") && !slices.Contains(gotMount, where) {
							gotMount = append(gotMount, where)
						}
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(gotOpen)
	slices.Sort(gotMount)
	if !slices.Equal(gotOpen, wantOpen) {
		t.Errorf("OpenHostPath's callers are %v, want %v: a new one opens host paths for a mount; list it here", gotOpen, wantOpen)
	}
	if !slices.Equal(gotMount, wantMount) {
		t.Errorf("mounts are made in %v, want %v: a mount of a host path must be staged from a descriptor OpenHostPath checked (Op.Stage)", gotMount, wantMount)
	}
}
