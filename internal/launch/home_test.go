package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

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

// openWatch reports every open of path for reading or writing (inotify
// IN_OPEN; an O_PATH open is not one): the witness that a FIFO or a device
// node was never opened. events drains what was seen so far.
func openWatch(t *testing.T, path string) (events func() int) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	return func() int {
		n := 0
		buf := make([]byte, 4096)
		for {
			m, err := unix.Read(fd, buf)
			if err != nil || m <= 0 {
				return n
			}
			for off := 0; off+unix.SizeofInotifyEvent <= m; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				if ev.Mask&unix.IN_OPEN != 0 {
					n++
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
}

// Issue 24: the HOME lookup opened the root's etc/passwd O_RDONLY before
// checking what it was, at every create and exec: a device node there ran
// its driver's open as host root, a FIFO was opened. Now it is pinned
// (O_PATH), checked, and opened only if it is a regular file on a data
// filesystem; a root, or a bind source at /etc, that is a FIFO is not
// opened either (it would block).
func TestHomeNeverOpensWhatIsNotAFile(t *testing.T) {
	home := func(b *libmaka.Boundary) string {
		t.Helper()
		done := make(chan string, 1)
		go func() {
			DeclareHome(b)
			done <- b.Process.Env[len(b.Process.Env)-1]
		}()
		select {
		case h := <-done:
			return h
		case <-time.After(5 * time.Second):
			t.Fatal("DeclareHome blocked")
			return ""
		}
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	passwd := filepath.Join(root, "etc/passwd")
	if err := unix.Mkfifo(passwd, 0o644); err != nil {
		t.Fatal(err)
	}
	opened := openWatch(t, passwd)
	if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: root}}); got != "HOME=/" {
		t.Errorf("FIFO: got %s, want HOME=/", got)
	}
	if n := opened(); n != 0 {
		t.Errorf("the FIFO at etc/passwd was opened %d times", n)
	}
	// A character device (1:3, null's numbers) where the host allows one.
	os.Remove(passwd)
	if err := unix.Mknod(passwd, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))); err != nil {
		t.Logf("mknod: %v (device case not run)", err)
	} else {
		opened := openWatch(t, passwd)
		if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: root}}); got != "HOME=/" {
			t.Errorf("device: got %s, want HOME=/", got)
		}
		if n := opened(); n != 0 {
			t.Errorf("the device node at etc/passwd was opened %d times", n)
		}
	}
	// A FIFO as the root, or as the source of a bind at /etc.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Releases an open that blocked (the test failed): O_NONBLOCK
		// for writing fails unless a reader waits, which it then frees.
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			unix.Close(fd)
		}
	})
	fopened := openWatch(t, fifo)
	if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: fifo}}); got != "HOME=/" {
		t.Errorf("FIFO root: got %s, want HOME=/", got)
	}
	if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: homeRoot(t)}, Mounts: []specs.Mount{{Destination: "/etc", Type: "bind", Source: fifo}}}); got != "HOME=/" {
		t.Errorf("FIFO bind at /etc: got %s, want HOME=/", got)
	}
	if n := fopened(); n != 0 {
		t.Errorf("a FIFO root or bind source was opened %d times", n)
	}
	// /proc's files are never read: a bind of /proc/self (whose "passwd"
	// does not exist, but whose "environ" would be read) at /etc.
	if got := home(&libmaka.Boundary{Rootfs: libmaka.Rootfs{Path: homeRoot(t)}, Mounts: []specs.Mount{{Destination: "/etc/passwd", Type: "bind", Source: "/proc/self/environ"}}}); got != "HOME=/" {
		t.Errorf("a proc file at /etc/passwd: got %s, want HOME=/", got)
	}
}
