package specconv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestRestrictedGetsAUserNamespaceFromThePool(t *testing.T) {
	s := sandboxSpec(t)
	b, err := ToBoundary(testHost, s, policy(t, libmaka.ProfileRestricted))
	if err != nil {
		t.Fatal(err)
	}
	if !b.Users.Namespace || b.Users.Source != libmaka.IDsFromPool || b.Users.Pool == nil || len(b.UIDMappings) != 0 {
		t.Fatalf("users = %+v, mappings %v: want a namespace with ids leased from the pool at create", b.Users, b.UIDMappings)
	}
	if containsNS(s.Linux.Namespaces, specs.UserNamespace) {
		t.Fatal("the caller's spec was modified")
	}
	b.Rootfs.Path = "/nonexistent/rootfs"
	if err := Place(b, policy(t, libmaka.ProfileRestricted), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := ToLibcontainer(testHost, b, Options{ID: "x"}); err == nil {
		t.Fatal("converted a pool boundary whose ids were never leased")
	}
	out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Config.UIDMappings) != 1 || out.Config.UIDMappings[0].HostID != int64(libmaka.DefaultIDPool.Start) || out.Config.UIDMappings[0].Size != 65536 {
		t.Fatalf("uid mappings %+v", out.Config.UIDMappings)
	}
}

func TestBaselineUserNamespaceOnlyWhenAsked(t *testing.T) {
	b, err := ToBoundary(testHost, sandboxSpec(t), policy(t, libmaka.ProfileBaseline))
	if err != nil {
		t.Fatal(err)
	}
	if b.Users.Namespace {
		t.Fatalf("baseline added a user namespace nobody asked for: %+v", b.Users)
	}
	s := sandboxSpec(t)
	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
	if b, err = ToBoundary(testHost, s, policy(t, libmaka.ProfileBaseline)); err != nil {
		t.Fatal(err)
	}
	if b.Users.Source != libmaka.IDsFromPool {
		t.Fatalf("a user namespace without mappings: users %+v, want ids from the pool", b.Users)
	}
}

func TestConfigMappingsCheckedAgainstPoolAndPolicy(t *testing.T) {
	m := func(host, size uint32) []specs.LinuxIDMapping {
		return []specs.LinuxIDMapping{{ContainerID: 0, HostID: host, Size: size}}
	}
	pool := libmaka.DefaultIDPool
	for _, tc := range []struct {
		name, profile string
		uids, gids    []specs.LinuxIDMapping
		noUserNS      bool
		uid           uint32
		field, msg    string // "" field: allowed
	}{
		{name: "kubelet's block under baseline", profile: "baseline", uids: m(65536*3, 65536), gids: m(65536*3, 65536)},
		{name: "restricted delegates nothing", profile: "restricted", uids: m(65536*3, 65536), gids: m(65536*3, 65536), field: "linux.uidMappings[0].hostID", msg: "not in a range"},
		{name: "the host's root", profile: "baseline", uids: m(0, 65536), gids: m(65536, 65536), field: "linux.uidMappings[0].hostID", msg: "host's root"},
		{name: "inside maka's pool", profile: "baseline", uids: m(pool.Start, 65536), gids: m(pool.Start, 65536), field: "linux.uidMappings[0].hostID", msg: "pool"},
		{name: "across the pool's edge", profile: "baseline", uids: m(pool.Start-10, 65536), gids: m(65536, 65536), field: "linux.uidMappings[0].hostID", msg: "pool"},
		{name: "past the last id", profile: "baseline", uids: m(1<<32-10, 65536), gids: m(65536, 65536), field: "linux.uidMappings[0]", msg: "last id"},
		{name: "empty", profile: "baseline", uids: m(65536, 0), gids: m(65536, 65536), field: "linux.uidMappings[0].size", msg: "no id"},
		{name: "uids only", profile: "baseline", uids: m(65536, 65536), field: "linux.gidMappings", msg: "both"},
		{name: "without a user namespace", profile: "baseline", uids: m(65536, 65536), gids: m(65536, 65536), noUserNS: true, field: "linux.uidMappings", msg: "need a user namespace"},
		{name: "unmapped process uid", profile: "baseline", uids: m(65536, 1000), gids: m(65536, 65536), uid: 1000, field: "process.user.uid", msg: "not mapped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sandboxSpec(t)
			if !tc.noUserNS {
				s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
			}
			s.Linux.UIDMappings, s.Linux.GIDMappings = tc.uids, tc.gids
			s.Process.User.UID = tc.uid
			b, err := ToBoundary(testHost, s, policy(t, tc.profile))
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if b.Users.Source != libmaka.IDsFromConfig {
					t.Fatalf("users %+v: want config.json's mappings", b.Users)
				}
				return
			}
			for _, it := range rejectedItems(t, err) {
				if it.Field == tc.field && strings.Contains(it.Message, tc.msg) {
					return
				}
			}
			t.Fatalf("want %s refused (%q), got %v", tc.field, tc.msg, err)
		})
	}
}

func TestPoolProcessUserMustBeMapped(t *testing.T) {
	s := sandboxSpec(t)
	s.Process.User = specs.User{UID: 65536, GID: 0, AdditionalGids: []uint32{70000}}
	var fields []string
	for _, it := range rejectedItems(t, func() error { _, err := ToBoundary(testHost, s, policy(t, "restricted")); return err }()) {
		fields = append(fields, it.Field)
	}
	if strings.Join(fields, " ") != "process.user.uid process.user.additionalGids[0]" {
		t.Fatalf("refused %v", fields)
	}
}

func TestExecUserHeldToTheMapping(t *testing.T) {
	pol := policy(t, "restricted")
	b, err := ToBoundary(testHost, sandboxSpec(t), pol)
	if err != nil {
		t.Fatal(err)
	}
	testLease(b)
	p := &specs.Process{Args: []string{"id"}, Cwd: "/", User: specs.User{UID: 65536}}
	if err := CheckExec(testHost, p, pol, b); err == nil || !strings.Contains(err.Error(), "process.user.uid") {
		t.Fatalf("exec as an unmapped uid: %v", err)
	}
	p.User.UID = 1000
	if err := CheckExec(testHost, p, pol, b); err != nil {
		t.Fatal(err)
	}
}

func TestHostAccountsAndSubuidRangesKeptOutOfThePool(t *testing.T) {
	// The host's accounts (/etc/passwd, /etc/group) and subordinate
	// ranges (/etc/subuid; /etc/subgid is empty): libmaka reads them.
	host := hostWith(func(f *libmaka.HostFacts) {
		f.UIDs = []libmaka.HostIDUse{{File: "/etc/passwd", Name: "root", Start: 0, Size: 1}, {File: "/etc/passwd", Name: "alice", Start: 1000, Size: 1}}
		f.GIDs = []libmaka.HostIDUse{{File: "/etc/group", Name: "root", Start: 0, Size: 1}}
		f.SubUIDs = []libmaka.HostIDUse{{File: "/etc/subuid", Name: "alice", Start: 100000, Size: 65536}}
		f.SubGIDs = nil
	})
	root := searchableDir(t)
	pol := policy(t, "restricted")
	b, err := ToBoundary(host, sandboxSpec(t), pol)
	if err != nil {
		t.Fatal(err)
	}
	b.Rootfs.Path = root
	if err := CheckHost(host, b, pol, root, nil); err != nil {
		t.Fatalf("the default pool meets no account: %v", err)
	}
	// A pool over alice's subordinate range is the policy's mistake.
	pol.IDPool = libmaka.IDPool{Start: 65536, Size: 65536, Count: 4}
	b.Users.Pool = &pol.IDPool
	err = CheckHost(host, b, pol, root, nil)
	if err == nil || !strings.Contains(err.Error(), "policy idPool") || !strings.Contains(err.Error(), "alice") {
		t.Fatalf("a pool over alice's /etc/subuid range: %v", err)
	}
	// Config.json's own mapping over alice's uid.
	pol = policy(t, "baseline")
	pol.DelegatedIDs = []libmaka.IDRange{{Start: 1, Size: 1 << 20}}
	s := sandboxSpec(t)
	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
	s.Linux.UIDMappings = []specs.LinuxIDMapping{{HostID: 1, Size: 65536}}
	s.Linux.GIDMappings = []specs.LinuxIDMapping{{HostID: 200000, Size: 65536}}
	if b, err = ToBoundary(host, s, pol); err != nil {
		t.Fatal(err)
	}
	b.Rootfs.Path = root
	err = CheckHost(host, b, pol, root, nil)
	if err == nil || !strings.Contains(err.Error(), "linux.uidMappings[0]") || strings.Contains(err.Error(), "gidMappings") {
		t.Fatalf("a mapping over alice's uid: %v", err)
	}
}

func TestRootNotSearchableBySandboxRootIsRefused(t *testing.T) {
	dir := t.TempDir()
	root := dir + "/rootfs"
	if err := mkdirMode(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	pol := policy(t, "restricted")
	b, err := ToBoundary(testHost, sandboxSpec(t), pol)
	if err != nil {
		t.Fatal(err)
	}
	b.Rootfs.Path = root
	err = CheckHost(testHost, b, pol, dir, nil)
	if err == nil || !strings.Contains(err.Error(), "root.path") || !strings.Contains(err.Error(), "chmod o+x "+dir) {
		t.Fatalf("a root below a 0700 directory: %v", err)
	}
}

func mkdirMode(p string, m os.FileMode) error {
	if err := os.Mkdir(p, m); err != nil {
		return err
	}
	return os.Chmod(p, m)
}
func chmod(p string, m os.FileMode) error { return os.Chmod(p, m) }

// searchableDir is a temporary directory that it and its parent are
// searchable by others (0711): a user namespace's root can reach it.
func searchableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A writable bind in a sandbox with a pool block is written by ids that own
// nothing on the host: refused unless idmapped (or read-only).
func TestWritableBindNeedsIdmapInAUserNamespace(t *testing.T) {
	src := searchableDir(t)
	pol := policy(t, "baseline")
	pol.BindPaths = []libmaka.PathRule{{Path: filepath.Dir(src), Mode: "rw"}}
	for _, tc := range []struct {
		opts []string
		ok   bool
	}{{[]string{"rbind", "rw"}, false}, {[]string{"rbind", "rw", "idmap"}, true}, {[]string{"rbind", "ro"}, true}} {
		s := sandboxSpec(t)
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
		s.Root.Path = src
		s.Mounts = append(s.Mounts, specs.Mount{Destination: "/mnt", Type: "bind", Source: src, Options: tc.opts})
		b, err := ToBoundary(testHost, s, pol)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckHost(testHost, b, pol, src, nil)
		if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), fmt.Sprintf("mounts[%d].options: %s belongs to host uid", len(s.Mounts)-1, src))) {
			t.Errorf("options %v: %v", tc.opts, err)
		}
	}
	// Without a user namespace, idmap has no mapping to go through.
	s := sandboxSpec(t)
	s.Mounts = append(s.Mounts, specs.Mount{Destination: "/mnt", Type: "bind", Source: src, Options: []string{"rbind", "ro", "idmap"}})
	if _, err := ToBoundary(testHost, s, pol); err == nil || !strings.Contains(err.Error(), `"idmap" needs a user namespace`) {
		t.Fatalf("idmap without a user namespace: %v", err)
	}
}

// A rootless maka's user without subordinate ranges: the sandbox maps the
// user's own ids alone, devpts loses gid=5, and only that mapping may come
// from config.json.
func TestRootlessOwnIDs(t *testing.T) {
	pol := policy(t, "restricted").ForRootless(&libmaka.Rootless{UID: 1000, GID: 1001, CgroupParent: "/u"})
	s := sandboxSpec(t)
	b, err := ToBoundary(testHost, s, pol)
	if err != nil {
		t.Fatal(err)
	}
	if b.Users.Source != libmaka.IDsOwn || len(b.UIDMappings) != 1 || b.UIDMappings[0] != (specs.LinuxIDMapping{HostID: 1000, Size: 1}) || b.GIDMappings[0] != (specs.LinuxIDMapping{HostID: 1001, Size: 1}) {
		t.Fatalf("users %+v, mappings %v %v", b.Users, b.UIDMappings, b.GIDMappings)
	}
	for _, m := range b.Mounts {
		if m.Type == "devpts" && slices.ContainsFunc(m.Options, func(o string) bool { return strings.HasPrefix(o, "gid=") }) {
			t.Fatalf("devpts options %v", m.Options)
		}
	}
	if err := Place(b, pol, "box"); err != nil || b.Cgroup.Path != "/u/box" {
		t.Fatalf("cgroup %s, %v", b.Cgroup.Path, err)
	}
	s.Process.User.UID = 1
	if _, err := ToBoundary(testHost, s, pol); err == nil || !strings.Contains(err.Error(), "process.user.uid: 1 is not mapped") {
		t.Fatalf("uid 1 with the user's own ids alone: %v", err)
	}
	s = sandboxSpec(t)
	s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
	s.Linux.UIDMappings = []specs.LinuxIDMapping{{HostID: 1000, Size: 1}}
	s.Linux.GIDMappings = []specs.LinuxIDMapping{{HostID: 1001, Size: 1}}
	if b, err := ToBoundary(testHost, s, pol); err != nil || b.Users.Source != libmaka.IDsOwn {
		t.Fatalf("spec --rootless's mapping: %v", err)
	}
	s.Linux.UIDMappings = []specs.LinuxIDMapping{{HostID: 100000, Size: 65536}}
	if _, err := ToBoundary(testHost, s, pol); err == nil || !strings.Contains(err.Error(), "linux.uidMappings[0].hostID") {
		t.Fatalf("another mapping under rootless: %v", err)
	}
}
