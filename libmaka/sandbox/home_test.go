package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// homeRoot is a root whose /etc/passwd has root at /root and uid 1000 at
// /home/u.
func homeRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	passwd := "root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\nu2:x:1000:1000::/second:/bin/sh\n"
	if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestDeclareHome(t *testing.T) {
	root := homeRoot(t)
	for _, tc := range []struct {
		name  string
		env   []string
		uid   uint32
		want  []string
		added bool
	}{
		{"none: the user's, from the root's passwd", []string{"PATH=/bin"}, 0, []string{"PATH=/bin", "HOME=/root"}, true},
		{"another user: the first entry of its uid", []string{"PATH=/bin"}, 1000, []string{"PATH=/bin", "HOME=/home/u"}, true},
		{"a uid without an entry: /", nil, 4242, []string{"HOME=/"}, true},
		{"declared: kept as it is", []string{"HOME=/x", "PATH=/bin"}, 0, []string{"HOME=/x", "PATH=/bin"}, false},
		{"empty: replaced, as libcontainer does", []string{"HOME=", "PATH=/bin"}, 0, []string{"PATH=/bin", "HOME=/root"}, true},
		{"the last one counts: empty after a value", []string{"HOME=/x", "HOME="}, 0, []string{"HOME=/root"}, true},
		{"the last one counts: a value after an empty one", []string{"HOME=", "HOME=/y"}, 0, []string{"HOME=/y"}, false},
		{"one entry per name, the last, in the order of the last ones", []string{"A=1", "B=2", "A=3", "HOME=/h", "C="}, 0, []string{"B=2", "A=3", "HOME=/h", "C="}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: root}, Process: libmaka.Process{Env: slices.Clone(tc.env), UID: tc.uid}}
			DeclareHome(b)
			if !slices.Equal(b.Process.Env, tc.want) || b.Process.HomeAdded != tc.added {
				t.Errorf("env %q uid %d: got %q added %v, want %q added %v", tc.env, tc.uid, b.Process.Env, b.Process.HomeAdded, tc.want, tc.added)
			}
		})
	}
}

// The root is the sandbox's, possibly hostile: its /etc/passwd is read
// inside it (a symlink resolved within the root, never to the host's), only
// if it is a regular file (a FIFO must not hang maka), and a mount covering
// it decides instead.
func TestDeclareHomeHostileRoot(t *testing.T) {
	home := func(b *libmaka.Boundary) string {
		t.Helper()
		DeclareHome(b)
		return b.Process.Env[len(b.Process.Env)-1]
	}
	// An absolute symlink: resolved in the root (/other), not on the host.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "other"), []byte("root:x:0:0::/inside:/bin/sh\n"), 0o644)
	if err := os.Symlink("/other", filepath.Join(root, "etc/passwd")); err != nil {
		t.Fatal(err)
	}
	if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: root}}); got != "HOME=/inside" {
		t.Errorf("absolute symlink: got %s, want HOME=/inside (resolved in the root)", got)
	}
	// A symlink climbing out stays in the root: no passwd there, so /.
	os.Remove(filepath.Join(root, "etc/passwd"))
	os.Symlink("../../../../../../etc/passwd", filepath.Join(root, "etc/passwd"))
	if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: root}}); got != "HOME=/" {
		t.Errorf("climbing symlink: got %s, want HOME=/", got)
	}
	// A FIFO: not read (it would block).
	os.Remove(filepath.Join(root, "etc/passwd"))
	if err := unix.Mkfifo(filepath.Join(root, "etc/passwd"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: root}}); got != "HOME=/" {
		t.Errorf("FIFO: got %s, want HOME=/", got)
	}
	// No root at all: /.
	if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: filepath.Join(root, "missing")}}); got != "HOME=/" {
		t.Errorf("missing root: got %s, want HOME=/", got)
	}
	// Mounts over /etc/passwd or /etc decide, the last one winning.
	good := homeRoot(t)
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "pw"), []byte("root:x:0:0::/bound:/bin/sh\n"), 0o644)
	for _, tc := range []struct {
		name   string
		mounts []specs.Mount
		want   string
	}{
		{"a bind of a file at /etc/passwd", []specs.Mount{{Destination: "/etc/passwd", Type: "bind", Source: filepath.Join(other, "pw")}}, "HOME=/bound"},
		{"a tmpfs at /etc: no passwd", []specs.Mount{{Destination: "/etc", Type: "tmpfs", Source: "tmpfs"}}, "HOME=/"},
		{"a bind of a directory at /etc", []specs.Mount{{Destination: "/etc/", Source: homeRoot(t) + "/etc", Options: []string{"rbind"}}}, "HOME=/root"},
		{"a tmpfs at /etc, then a bind of the file", []specs.Mount{{Destination: "/etc", Type: "tmpfs"}, {Destination: "/etc/passwd", Type: "bind", Source: filepath.Join(other, "pw")}}, "HOME=/bound"},
		{"elsewhere: the root's", []specs.Mount{{Destination: "/etc2", Type: "tmpfs"}}, "HOME=/root"},
	} {
		if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: good}, Mounts: tc.mounts}); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestExecHome(t *testing.T) {
	root := homeRoot(t)
	added := &libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: root}, Process: libmaka.Process{Env: []string{"PATH=/bin"}}}
	DeclareHome(added) // HOME=/root, added
	declared := &libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: root}, Process: libmaka.Process{Env: []string{"PATH=/bin", "HOME=/mine"}}}
	DeclareHome(declared)
	for _, tc := range []struct {
		name      string
		b         *libmaka.Boundary
		env       []string
		uid       uint32
		inherited bool
		overrides []string
		want      []string
	}{
		{"the init's user: the contract's HOME", added, added.Process.Env, 0, true, nil, []string{"PATH=/bin", "HOME=/root"}},
		{"another user: its own home, as under runc", added, added.Process.Env, 1000, true, nil, []string{"PATH=/bin", "HOME=/home/u"}},
		{"another user with --env HOME: the override", added, MergeEnv(added.Process.Env, []string{"HOME=/o"}), 1000, true, []string{"HOME=/o"}, []string{"PATH=/bin", "HOME=/o"}},
		{"--env HOME= (empty): the user's", added, MergeEnv(added.Process.Env, []string{"HOME="}), 1000, true, []string{"HOME="}, []string{"PATH=/bin", "HOME=/home/u"}},
		{"config.json declared HOME: kept for every user", declared, declared.Process.Env, 1000, true, nil, []string{"PATH=/bin", "HOME=/mine"}},
		{"--process without HOME: the user's", added, []string{"A=b"}, 1000, false, nil, []string{"A=b", "HOME=/home/u"}},
		{"--process with HOME: kept", added, []string{"HOME=/p"}, 1000, false, nil, []string{"HOME=/p"}},
		{"no contract (an old record): as it is", nil, []string{"A=b"}, 0, true, nil, []string{"A=b"}},
	} {
		env := slices.Clone(tc.env)
		if got := ExecHome(env, tc.b, tc.uid, tc.inherited, tc.overrides); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		if !slices.Equal(env, tc.env) {
			t.Errorf("%s: the caller's env was modified: %q", tc.name, env)
		}
	}
}
