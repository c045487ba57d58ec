package libmaka

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The account files as specconv's rules see them: /etc/passwd's and
// /etc/group's ids (one each), /etc/subuid's and /etc/subgid's ranges;
// comments, blank and malformed lines are skipped.
func TestParseIDUses(t *testing.T) {
	passwd := "root:x:0:0::/root:/bin/sh\n# a comment\n\nalice:x:1000:1000::/home/alice:/bin/sh\nbroken:x\nbad:x:notanid:0::/:/bin/sh\n"
	want := []HostIDUse{{"/etc/passwd", "root", 0, 1}, {"/etc/passwd", "alice", 1000, 1}}
	if got := parseIDUses("/etc/passwd", strings.NewReader(passwd), true); !reflect.DeepEqual(got, want) {
		t.Errorf("passwd: %+v, want %+v", got, want)
	}
	sub := "alice:100000:65536\nbob:165536\n#carol:1:2\ndave:x:5\n"
	want = []HostIDUse{{"/etc/subuid", "alice", 100000, 65536}}
	if got := parseIDUses("/etc/subuid", strings.NewReader(sub), false); !reflect.DeepEqual(got, want) {
		t.Errorf("subuid: %+v, want %+v", got, want)
	}
	if got := readIDUses(filepath.Join(t.TempDir(), "none"), true); got != nil {
		t.Errorf("a missing file: %+v, want none", got)
	}
}

// ThisHost answers what this process and the kernel say.
func TestThisHost(t *testing.T) {
	h := ThisHost()
	f := h.Facts()
	if f.EUID != uint32(os.Geteuid()) {
		t.Errorf("EUID %d, want %d", f.EUID, os.Geteuid())
	}
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		t.Fatal(err)
	}
	if got := f.HardLimit(unix.RLIMIT_NOFILE); got != r.Max {
		t.Errorf("hard RLIMIT_NOFILE %d, want %d", got, r.Max)
	}
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &r); err != nil {
		t.Fatal(err)
	}
	if f.StackLimit != r.Cur {
		t.Errorf("StackLimit %d, want %d", f.StackLimit, r.Cur)
	}
	if f.Monotonic <= 0 || f.Boottime < f.Monotonic {
		t.Errorf("clocks: monotonic %d, boottime %d", f.Monotonic, f.Boottime)
	}
	if f.OOMScoreAdj != ownOOMScoreAdj() {
		t.Errorf("OOMScoreAdj %d, tighten.go's %d: one reader", f.OOMScoreAdj, ownOOMScoreAdj())
	}
	// Facts are the caller's: changing them changes no later answer.
	f.HardLimits[unix.RLIMIT_NOFILE] = 1
	if h.Facts().HardLimit(unix.RLIMIT_NOFILE) == 1 {
		t.Error("a caller's change to its facts reached the next caller")
	}
	if got := (&HostFacts{}).HardLimit(unix.RLIMIT_CORE); got != unix.RLIM_INFINITY {
		t.Errorf("an unknown limit: %d, want RLIM_INFINITY", got)
	}

	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, dir+"/link"); err != nil {
		t.Fatal(err)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.Resolve(dir + "/link"); err != nil || got != resolved {
		t.Errorf("Resolve: %q, %v, want %q", got, err, resolved)
	}
	st, err := h.Stat(dir + "/link")
	if err != nil || !st.IsDir() || st.UID != uint32(os.Geteuid()) || st.Mode&0o7777 != 0o700 {
		t.Errorf("Stat: %+v, %v", st, err)
	}
	var pe *os.PathError
	if _, err := h.Stat(dir + "/none"); !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing path: %v, want an *os.PathError for ENOENT", err)
	}
	if _, err := h.CgroupProcs("/maka-no-such-cgroup/x"); err == nil {
		t.Error("CgroupProcs of a missing cgroup: no error")
	}
}

// A cgroup's processes are the pids its cgroup.procs lists (specconv's
// busy-cgroup rule counts them from the target up to the root).
func TestCgroupProcsCounts(t *testing.T) {
	root := t.TempDir()
	for dir, procs := range map[string]string{"kubepods": "", "kubepods/pod/ctr": "4242\n4243\n"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "cgroup.procs"), []byte(procs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for path, want := range map[string]int{"/kubepods": 0, "/kubepods/pod/ctr": 2} {
		if n, err := cgroupProcsIn(root, path); err != nil || n != want {
			t.Errorf("%s: %d, %v; want %d", path, n, err, want)
		}
	}
	if _, err := cgroupProcsIn(root, "/kubepods/pod"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cgroup without cgroup.procs (not made yet): %v, want ErrNotExist", err)
	}
}

// SELinux is seen in the kernel's filesystems as well as by go-selinux: a
// read-only or unmounted selinuxfs must not drop labels (the attacker
// review of s24).
func TestKernelHasSELinux(t *testing.T) {
	dir := t.TempDir()
	with := filepath.Join(dir, "with")
	without := filepath.Join(dir, "without")
	if err := os.WriteFile(with, []byte("nodev\tsysfs\nnodev\ttmpfs\nnodev\tselinuxfs\n\text4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(without, []byte("nodev\tsysfs\nnodev\tsecurityfs\n\text4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{with: true, without: false, filepath.Join(dir, "missing"): true} {
		if got := kernelHasSELinux(path); got != want {
			t.Errorf("kernelHasSELinux(%s) = %v, want %v", filepath.Base(path), got, want)
		}
	}
	defer func(p string) { procFilesystems = p }(procFilesystems)
	procFilesystems = with
	if !ThisHost().SELinux() {
		t.Error("a kernel with selinuxfs registered: SELinux() false, labels would be dropped")
	}
}

// A recursive bind of /sys carries every mount below it; masking the top
// ones hides the rest.
func TestTopMounts(t *testing.T) {
	got := topMounts([]string{"/sys/fs/cgroup/x", "/sys/kernel/debug/tracing", "/sys/fs/cgroup", "/sys/fs/cgroup-a",
		"/sys/kernel/debug", "/sys/fs/bpf", "/sys/fs/bpf"})
	want := []string{"/sys/fs/bpf", "/sys/fs/cgroup", "/sys/fs/cgroup-a", "/sys/kernel/debug"}
	if !slices.Equal(got, want) {
		t.Fatalf("topMounts = %q, want %q", got, want)
	}
}
