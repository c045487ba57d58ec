package libmaka

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestRootlessMode(t *testing.T) {
	for _, tc := range []struct {
		flag string
		euid int
		want bool
		err  string
	}{
		{"auto", 0, false, ""}, {"auto", 1000, true, ""}, {"", 1000, true, ""},
		{"true", 0, false, "runs as root"}, {"true", 1000, true, ""}, {"false", 0, false, ""},
		{"false", 1000, false, "not running as root"}, {"maybe", 0, false, "invalid value"},
	} {
		got, err := RootlessMode(tc.flag, tc.euid)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("RootlessMode(%q, %d) = %v, %v", tc.flag, tc.euid, got, err)
		}
	}
}

// fakeHost points the files CheckRootless reads at a directory.
func fakeHost(t *testing.T, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := []string{procSelfCgroup, maxUserNamespaces, unprivilegedUserns, apparmorRestrictUser, subuidPath, subgidPath, cgroupMount}
	oldLook := lookPath
	t.Cleanup(func() {
		procSelfCgroup, maxUserNamespaces, unprivilegedUserns, apparmorRestrictUser, subuidPath, subgidPath, cgroupMount = old[0], old[1], old[2], old[3], old[4], old[5], old[6]
		lookPath = oldLook
	})
	procSelfCgroup = filepath.Join(dir, "self-cgroup")
	maxUserNamespaces = filepath.Join(dir, "max_user_namespaces")
	unprivilegedUserns = filepath.Join(dir, "unprivileged_userns_clone")
	apparmorRestrictUser = filepath.Join(dir, "apparmor")
	subuidPath, subgidPath = filepath.Join(dir, "subuid"), filepath.Join(dir, "subgid")
	cgroupMount = filepath.Join(dir, "cgroup")
	lookPath = func(string) (string, error) { return "/usr/bin/newuidmap", nil }
}

func TestCheckRootlessNamesEachMissingPiece(t *testing.T) {
	fakeHost(t, map[string]string{
		"self-cgroup":                    "0::/user/maka\n",
		"max_user_namespaces":            "0\n",
		"unprivileged_userns_clone":      "0\n",
		"apparmor":                       "1\n",
		"cgroup/user/cgroup.controllers": "cpu io\n",
	})
	// The directories exist, but the files are ours only if we are root:
	// a delegated subtree must be the caller's.
	r, missing := CheckRootless()
	text := strings.Join(missing, "\n")
	for _, want := range []string{"user.max_user_namespaces is 0", "unprivileged ones are disabled", "AppArmor", "cgroup controllers: memory, pids are not available in /user"} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in:\n%s", want, text)
		}
	}
	if r.CgroupParent != "/user" {
		t.Errorf("cgroup parent %q, want /user", r.CgroupParent)
	}
}

func TestCheckRootlessWhenAllIsThere(t *testing.T) {
	fakeHost(t, map[string]string{
		"self-cgroup":                        "0::/user/maka\n",
		"max_user_namespaces":                "15000\n",
		"cgroup/user/cgroup.controllers":     "cpu io memory pids\n",
		"cgroup/user/cgroup.procs":           "",
		"cgroup/user/cgroup.subtree_control": "",
		"subuid":                             "someone:100000:65536\n" + itoa(os.Geteuid()) + ":200000:131072\n",
		"subgid":                             itoa(os.Geteuid()) + ":300000:65536\n",
	})
	r, missing := CheckRootless()
	if len(missing) > 0 {
		t.Fatalf("missing %v", missing)
	}
	if r.SubUIDs == nil || *r.SubUIDs != (IDRange{200000, 131072}) || *r.SubGIDs != (IDRange{300000, 65536}) {
		t.Fatalf("subordinate ids %+v %+v", r.SubUIDs, r.SubGIDs)
	}
	// Without newuidmap the ranges cannot be mapped: the user's own ids.
	lookPath = func(string) (string, error) { return "", errors.New("not found") }
	if r, _ := CheckRootless(); r.SubUIDs != nil {
		t.Fatal("subordinate ids without newuidmap")
	}
	// maka directly in the root cgroup: nothing is delegated.
	if err := os.WriteFile(procSelfCgroup, []byte("0::/maka\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, missing := CheckRootless(); len(missing) != 1 || !strings.Contains(missing[0], "directly below the cgroup root") {
		t.Fatalf("missing %v", missing)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestForRootless(t *testing.T) {
	base, _ := BuiltinPolicy(ProfileBaseline)
	r := &Rootless{UID: 1000, GID: 1000, CgroupParent: "/user.slice/u", SubUIDs: &IDRange{100000, 65536 * 3}, SubGIDs: &IDRange{300000, 65536 * 2}}
	p := base.ForRootless(r)
	if p.UserNamespace != UserNamespaceRequired || len(p.DelegatedIDs) != 0 || len(p.CgroupParents) != 1 || p.CgroupParents[0] != "/user.slice/u" {
		t.Fatalf("policy %+v", p)
	}
	owner := &IDOwner{UID: 1000, GID: 1000}
	if !reflect.DeepEqual(p.IDPool, IDPool{Start: 100000, GIDStart: 300000, Size: 65535, Count: 2, Owner: owner}) {
		t.Fatalf("pool %+v", p.IDPool)
	}
	// Container id 0 is the user, 1..65535 the block.
	uids, gids := p.IDPool.mappings(1)
	if !reflect.DeepEqual(uids, []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}, {ContainerID: 1, HostID: 165535, Size: 65535}}) ||
		!reflect.DeepEqual(gids, []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}, {ContainerID: 1, HostID: 365535, Size: 65535}}) {
		t.Fatalf("mappings %v %v", uids, gids)
	}
	if p.IDPool.ContainerIDs() != 65536 {
		t.Fatalf("container ids %d", p.IDPool.ContainerIDs())
	}
	if got, _ := p.CgroupPath("box", ""); got != "/user.slice/u/box" {
		t.Fatalf("cgroup %s, want the delegated subtree", got)
	}
	if _, err := p.CgroupPath("box", "/maka/box"); err == nil {
		t.Fatal("a rootless sandbox placed outside the delegated subtree")
	}
	if base.IDPool != DefaultIDPool || base.Rootless != nil {
		t.Fatal("ForRootless changed its receiver")
	}
	// A small subordinate range is one block of its size.
	r.SubUIDs, r.SubGIDs = &IDRange{100000, 1000}, &IDRange{100000, 5000}
	if p := base.ForRootless(r); !reflect.DeepEqual(p.IDPool, IDPool{Start: 100000, GIDStart: 100000, Size: 1000, Count: 1, Owner: owner}) {
		t.Fatalf("pool %+v", p.IDPool)
	}
	// An annotation tightening to restricted keeps the user's place.
	if q, _ := p.Tighten(ProfileRestricted); q.Rootless == nil || q.CgroupParents[0] != "/user.slice/u" {
		t.Fatalf("tightened %+v", q)
	}
}
