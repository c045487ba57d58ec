package specconv

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func policy(t testing.TB, profile string) *libmaka.Policy {
	t.Helper()
	p, err := libmaka.BuiltinPolicy(profile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sandboxSpec is runc's example spec without capabilities: what restricted accepts.
func sandboxSpec(t testing.TB) *specs.Spec {
	s := exampleSpec(t)
	s.Process.Capabilities = nil
	return s
}

func TestRestrictedDefaults(t *testing.T) {
	s := sandboxSpec(t)
	s.Process.NoNewPrivileges = false
	b, err := ToBoundary(testHost, s, policy(t, libmaka.ProfileRestricted))
	if err != nil {
		t.Fatal(err)
	}
	if b.Profile != "restricted" || !b.Rootfs.Readonly || b.Network.Mode != libmaka.NetworkClosed {
		t.Errorf("profile %q rootfs %+v network %+v", b.Profile, b.Rootfs, b.Network)
	}
	want := libmaka.Limits{Memory: 1 << 30, Swap: 0, Pids: 256, Cpus: 2, TmpfsSize: 128 << 20, Timeout: 180}
	if b.Limits != want {
		t.Errorf("limits = %+v, want %+v", b.Limits, want)
	}
	sizes := map[string]int64{}
	for _, w := range b.Writable {
		sizes[w.Path] = w.Size
	}
	for _, p := range []string{"/tmp", "/run", "/maka/work"} {
		if sizes[p] != 128<<20 {
			t.Errorf("writable %s: size %d, want 128 MiB (all: %v)", p, sizes[p], sizes)
		}
	}
	if len(b.Process.Capabilities) != 0 || !b.Process.NoNewPrivileges || !b.Process.NewSession {
		t.Errorf("process = %+v", b.Process)
	}
	s.Root.Path = t.TempDir()
	b.Rootfs.Path = s.Root.Path
	enforced := convertable(t, b, "x")
	r := enforced.Linux.Resources
	if r.Unified != nil {
		t.Errorf("unified reached the kernel: %v", r.Unified)
	}
	if *r.Memory.Limit != 1<<30 || *r.Memory.Swap != 1<<30 || *r.Pids.Limit != 256 || *r.CPU.Quota != 200000 || *r.CPU.Period != 100000 {
		t.Errorf("enforced resources = mem %d swap %d pids %d cpu %d/%d", *r.Memory.Limit, *r.Memory.Swap, *r.Pids.Limit, *r.CPU.Quota, *r.CPU.Period)
	}
	if !containsNS(enforced.Linux.Namespaces, specs.CgroupNamespace) {
		t.Error("no private cgroup namespace in the enforced spec")
	}
	if s.Process.NoNewPrivileges || len(s.Mounts) != 7 {
		t.Error("ToBoundary modified its input")
	}
}

// convertable gives b an absolute root and a cgroup (as create does), and
// checks it converts for libcontainer; it returns the OCI document built
// from the Boundary alone.
func convertable(t testing.TB, b *libmaka.Boundary, id string) *specs.Spec {
	t.Helper()
	if !filepath.IsAbs(b.Rootfs.Path) {
		b.Rootfs.Path = t.TempDir()
	}
	if b.Cgroup.Path == "" {
		b.Cgroup.Path = libmaka.OwnCgroupParent + "/" + id
	}
	if _, err := ToLibcontainer(testHost, testLease(b), Options{ID: id}); err != nil {
		t.Fatalf("the boundary does not convert: %v", err)
	}
	spec, err := SpecOf(testHost, b)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func containsNS(ns []specs.LinuxNamespace, t specs.LinuxNamespaceType) bool {
	for _, n := range ns {
		if n.Type == t {
			return true
		}
	}
	return false
}

func rejectedItems(t *testing.T, err error) []Item {
	t.Helper()
	var rej *RejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("want a rejection, got %v", err)
	}
	if !strings.HasPrefix(err.Error(), "BOUNDARY_REJECTED: ") {
		t.Errorf("message does not start with the code: %q", err)
	}
	return rej.Verdict.Items
}

func TestRestrictedRejectsEveryCapabilityWithItsField(t *testing.T) {
	items := rejectedItems(t, func() error { _, err := ToBoundary(testHost, exampleSpec(t), policy(t, "restricted")); return err }())
	if len(items) != 9 {
		t.Fatalf("got %d items, want 9 (3 capabilities x 3 sets): %v", len(items), items)
	}
	first := items[0]
	if first.Field != "process.capabilities.bounding[0]" || !strings.Contains(first.Message, "CAP_AUDIT_WRITE is not allowed by profile restricted") || !strings.Contains(first.Allow, `"capabilities"`) {
		t.Errorf("first item = %+v", first)
	}
	if _, err := ToBoundary(testHost, exampleSpec(t), policy(t, "baseline")); err != nil {
		t.Errorf("baseline rejects runc's default capabilities: %v", err)
	}
}

func TestEveryPolicyItemIsReported(t *testing.T) {
	s := sandboxSpec(t)
	big := int64(64 << 30)
	pids := int64(100000)
	quota := int64(1600000)
	s.Root.Readonly = false
	s.Linux.Resources = &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &big},
		Pids:   &specs.LinuxPids{Limit: &pids},
		CPU:    &specs.LinuxCPU{Quota: &quota},
	}
	s.Mounts = append(s.Mounts,
		specs.Mount{Destination: "/host", Type: "bind", Source: "/etc", Options: []string{"rbind", "ro"}},
		specs.Mount{Destination: "/data", Type: "bind", Source: "/srv/data", Options: []string{"rbind"}},
		specs.Mount{Destination: "/big", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=8g"}},
		specs.Mount{Destination: "/disk", Type: "ext4", Source: "/dev/sda1"},
	)
	s.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/kvm", Type: "c", Major: 10, Minor: 232}}
	s.Linux.Sysctl = map[string]string{"kernel.panic": "1"}
	s.Linux.Namespaces = []specs.LinuxNamespace{{Type: specs.MountNamespace}, {Type: specs.NetworkNamespace, Path: "/var/run/netns/x"}}
	s.Hooks = &specs.Hooks{Prestart: []specs.Hook{{Path: "/bin/true"}}}
	s.Annotations = map[string]string{AnnotationTimeout: "99999"}
	_, err := ToBoundary(testHost, s, policy(t, "restricted"))
	items := rejectedItems(t, err)
	fields := map[string]bool{}
	for _, it := range items {
		fields[it.Field] = true
	}
	for _, want := range []string{
		"linux.resources.memory.limit", "linux.resources.pids.limit", "linux.resources.cpu.quota",
		"mounts[7].source", "mounts[8].source", "mounts[9].options[0]", "mounts[10].type",
		"linux.devices[0]", `linux.sysctl["kernel.panic"]`, "linux.namespaces[1].path", "linux.namespaces",
		"hooks.prestart[0].path", `annotations["org.maka.timeout"]`,
	} {
		if !fields[want] {
			t.Errorf("no item for %s; items: %v", want, items)
		}
	}
	if !strings.Contains(err.Error(), "never allowed") {
		t.Errorf("binding /etc should be refused as never allowed: %v", err)
	}
}

func TestBindRules(t *testing.T) {
	p := policy(t, "restricted")
	p.BindPaths = []libmaka.PathRule{{Path: "/srv/ro", Mode: "ro"}, {Path: "/srv/rw", Mode: "rw"}}
	cases := []struct {
		src, opt string
		ok       bool
	}{
		{"/srv/ro/x", "ro", true}, {"/srv/ro/x", "rw", false}, {"/srv/rw", "rw", true},
		{"/srv", "ro", false}, {"/etc/passwd", "ro", false}, {"/", "ro", false}, {"/proc/1/root", "ro", false},
	}
	for _, c := range cases {
		s := sandboxSpec(t)
		s.Mounts = append(s.Mounts, specs.Mount{Destination: "/mnt", Type: "bind", Source: c.src, Options: []string{"rbind", c.opt}})
		_, err := ToBoundary(testHost, s, p)
		if (err == nil) != c.ok {
			t.Errorf("bind %s (%s): err = %v, want ok=%v", c.src, c.opt, err, c.ok)
		}
	}
}

func TestBaselineAllowsNetnsAndWritableRoot(t *testing.T) {
	s := exampleSpec(t)
	s.Root.Readonly = false
	for i := range s.Linux.Namespaces {
		if s.Linux.Namespaces[i].Type == specs.NetworkNamespace {
			s.Linux.Namespaces[i].Path = "/var/run/netns/cni-1"
		}
	}
	b, err := ToBoundary(testHost, s, policy(t, "baseline"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Network.Mode != libmaka.NetworkNetns || b.Network.Path != "/var/run/netns/cni-1" || b.Rootfs.Readonly {
		t.Errorf("network %+v rootfs %+v", b.Network, b.Rootfs)
	}
	if !reflect.DeepEqual(b.Process.Capabilities, []string{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}) {
		t.Errorf("capabilities = %v", b.Process.Capabilities)
	}
	// restricted's other defaults, but no lifetime: an engine's container
	// may be a service.
	want := libmaka.Limits{Memory: 1 << 30, Swap: 0, Pids: 256, Cpus: 2, TmpfsSize: 128 << 20, Timeout: 0}
	if b.Limits != want {
		t.Errorf("limits = %+v, want %+v", b.Limits, want)
	}
	s.Annotations = map[string]string{AnnotationTimeout: "600"}
	if b, err = ToBoundary(testHost, s, policy(t, "baseline")); err != nil || b.Limits.Timeout != 600 {
		t.Errorf("org.maka.timeout 600 under baseline: %v, timeout %d", err, b.Limits.Timeout)
	}
	// A policy that sets a longest lifetime enforces it on the silent.
	p := policy(t, "baseline")
	p.MaxLimits.Timeout = 900
	s.Annotations = nil
	if b, err = ToBoundary(testHost, s, p); err != nil || b.Limits.Timeout != 900 {
		t.Errorf("baseline with maxLimits.timeout 900, no annotation: %v, timeout %d", err, b.Limits.Timeout)
	}
}

func TestAnnotationOnlyTightens(t *testing.T) {
	s := exampleSpec(t)
	s.Annotations = map[string]string{AnnotationProfile: "restricted"}
	if _, err := ToBoundary(testHost, s, policy(t, "baseline")); err == nil {
		t.Error("annotation restricted did not tighten baseline")
	}
	s = sandboxSpec(t)
	s.Annotations = map[string]string{AnnotationProfile: "baseline"}
	_, err := ToBoundary(testHost, s, policy(t, "restricted"))
	if err == nil || !strings.Contains(err.Error(), "only tighten") || !strings.Contains(err.Error(), AnnotationProfile) {
		t.Errorf("loosening annotation: err = %v", err)
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := libmaka.ParsePolicy([]byte(`{"profile":"restricted","capabilities":["CAP_NET_BIND_SERVICE"],"defaultLimits":{"pids":10,"cpus":1,"tmpfsSize":1048576,"timeout":60},"maxLimits":{"memory":1073741824,"pids":10,"cpus":1,"tmpfsSize":1048576,"timeout":60}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !p.AllowsCapability("CAP_NET_BIND_SERVICE") || p.MaxLimits.Pids != 10 || p.OnViolation != "kill" {
		t.Errorf("policy = %+v", p)
	}
	for doc, want := range map[string]string{
		`{"profile":"lax"}`:                        "unknown profile",
		`{"capabilitys":[]}`:                       "capabilitys",
		`{"bindPaths":[{"path":"x","mode":"ro"}]}`: "bindPaths[0].path",
		`{"bindPaths":[{"path":"/x","mode":"w"}]}`: "bindPaths[0].mode",
		`{"networkModes":["open"]}`:                "networkModes[0]",
		`{"onViolation":"ignore"}`:                 "onViolation",
		`{"capabilities":["sys_admin"]}`:           "capabilities[0]",
		`{"maxLimits":{"memory":-5}}`:              "maxLimits",
	} {
		if _, err := libmaka.ParsePolicy([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePolicy(%s): err = %v, want one naming %q", doc, err, want)
		}
	}
}

// FuzzParsePolicy: no policy document panics; every error names a field or
// says the document is malformed.
func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(`{"profile":"baseline","bindPaths":[{"path":"/srv","mode":"ro"}],"sysctls":["net.*"]}`))
	f.Add([]byte(`{"maxLimits":{"cpus":0.5}}`))
	f.Add([]byte("{\"bindPaths\":[{\"path\":\"/srv/\xc3(\",\"mode\":\"ro\"}]}"))
	f.Add([]byte(`{`))
	f.Add([]byte(`{"idPool":{"start":65536,"count":4},"delegatedIDs":[{"start":100000,"size":65536}],"userNamespace":"optional"}`))
	f.Add([]byte(`{"idPool":{"start":0},"delegatedIDs":[{"start":1073741824,"size":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := libmaka.ParsePolicy(data)
		if err != nil {
			if !strings.Contains(err.Error(), ":") && !strings.Contains(err.Error(), "profile") && !strings.HasPrefix(err.Error(), "unknown key ") {
				t.Fatalf("error names nothing: %v", err)
			}
			for _, goWord := range []string{"libmaka.", "Go struct", "[]string", "uint32", "int64"} {
				if strings.Contains(err.Error(), goWord) {
					t.Fatalf("error speaks Go (%q): %v", goWord, err)
				}
			}
			return
		}
		// A policy that parses was UTF-8: it means what its bytes say.
		if !utf8.Valid(data) {
			t.Fatalf("a policy that is not UTF-8 parsed: %q", data)
		}
		// A policy that parses never maps a sandbox onto the host's root,
		// and never delegates ids of maka's own pool.
		if p.IDPool.Start == 0 || p.IDPool.Size == 0 || p.IDPool.Count == 0 || p.IDPool.End() > 1<<32-1 {
			t.Fatalf("id pool %+v accepted", p.IDPool)
		}
		for _, r := range p.DelegatedIDs {
			if r.Start == 0 || r.Size == 0 || p.IDPool.Overlaps(r.Start, r.Size) {
				t.Fatalf("delegated range %+v accepted with pool %+v", r, p.IDPool)
			}
		}
		// Every capability a policy grants is one the kernel knows: a
		// misspelt name is refused, never silently granted as nothing.
		for _, c := range p.Capabilities {
			if !libmaka.KnownCapability(c) {
				t.Fatalf("unknown capability %q accepted", c)
			}
		}
		if p.UserNamespace != libmaka.UserNamespaceRequired && p.UserNamespace != libmaka.UserNamespaceOptional {
			t.Fatalf("userNamespace %q accepted", p.UserNamespace)
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatal(err)
		}
		_, _, _ = Explain(testHost, sandboxSpec(t), p)
	})
}

// FuzzToBoundary: any config.json compiles or is refused with named
// fields, and an allowed one gives the kernel nothing beyond the policy:
// the libcontainer configuration built from the Boundary keeps every
// resource within the ceilings (a CPU burst too), writes no unified key
// but memory.high and memory.min (at most the memory limit) and cpu.weight,
// mounts only the root's own system filesystems (read-only /sys and
// cgroup), tmpfs and allowed binds, keeps the masked and read-only floors,
// holds only allowed capabilities and joins no namespace the policy does
// not allow.
func FuzzToBoundary(f *testing.F) {
	// The host's facts taken once: every input is checked against the same.
	host := fakeHost{Host: testHost, facts: testHost.Facts()}
	base, _ := json.Marshal(sandboxSpec(f))
	f.Add(base, true)
	f.Add(base, false)
	f.Add([]byte(`{"ociVersion":"1.3.0","process":{"args":["sh"],"cwd":"/","capabilities":{"bounding":["CAP_SYS_ADMIN"]}},"root":{"path":"r"},"linux":{"resources":{"memory":{"limit":-1,"swap":-1}}},"mounts":[{"destination":"/x","type":"tmpfs","options":["size=10%"]}]}`), false)
	f.Fuzz(func(t *testing.T, data []byte, restricted bool) {
		spec, err := ParseSpec("config.json", data)
		if err != nil {
			return
		}
		profile := "baseline"
		if restricted {
			profile = "restricted"
		}
		pol := policy(t, profile)
		b, v, err := Explain(host, spec, pol)
		if err != nil {
			if !strings.Contains(err.Error(), ": ") {
				t.Fatalf("error names no field: %v", err)
			}
			return
		}
		for _, it := range v.Items {
			if it.Field == "" || it.Message == "" {
				t.Fatalf("item without field or message: %+v", it)
			}
		}
		if !v.Allowed {
			return
		}
		if b.Limits.Memory <= 0 {
			t.Fatalf("allowed boundary without a memory limit: %+v", b.Limits)
		}
		b.Rootfs.Path = "/nonexistent/rootfs"
		if err := Place(b, pol, "fuzz"); err != nil {
			t.Fatalf("allowed boundary has a cgroup path the policy refuses: %v", err)
		}
		out, err := ToLibcontainer(host, testLease(b), Options{ID: "fuzz"})
		if err != nil {
			return // libcontainer's own refusal (e.g. a mount it cannot make)
		}
		checkEnforced(t, pol, out.Config)
	})
}

// checkEnforced asserts FuzzToBoundary's invariants on what libcontainer
// would be handed.
func checkEnforced(t *testing.T, pol *libmaka.Policy, cfg *configs.Config) {
	t.Helper()
	r, max := cfg.Cgroups.Resources, pol.MaxLimits
	switch {
	case r.Memory <= 0 || (max.Memory > 0 && r.Memory > max.Memory):
		t.Fatalf("memory %d outside (0, %d]", r.Memory, max.Memory)
	case max.Swap >= 0 && (r.MemorySwap < r.Memory || r.MemorySwap-r.Memory > max.Swap):
		t.Fatalf("memory+swap %d with memory %d exceeds swap %d", r.MemorySwap, r.Memory, max.Swap)
	case r.PidsLimit == nil || *r.PidsLimit <= 0 || (max.Pids > 0 && *r.PidsLimit > max.Pids):
		t.Fatalf("pids %v outside (0, %d]", r.PidsLimit, max.Pids)
	case r.CpuQuota <= 0 || r.CpuPeriod == 0 || (max.Cpus > 0 && float64(r.CpuQuota)/float64(r.CpuPeriod) > max.Cpus+1e-9):
		t.Fatalf("cpu %d/%d exceeds %g CPUs", r.CpuQuota, r.CpuPeriod, max.Cpus)
	case r.CpuRtRuntime != 0 || r.CpuRtPeriod != 0:
		t.Fatal("real-time CPU time reached the cgroup")
	case r.CpuBurst != nil && (*r.CpuBurst > uint64(r.CpuQuota) ||
		(max.Cpus > 0 && float64(uint64(r.CpuQuota)+*r.CpuBurst)/float64(r.CpuPeriod) > max.Cpus+1e-9)):
		t.Fatalf("burst %d with cpu %d/%d exceeds the quota or %g CPUs", *r.CpuBurst, r.CpuQuota, r.CpuPeriod, max.Cpus)
	case r.MemoryReservation < 0 || r.MemoryReservation > r.Memory:
		t.Fatalf("memory.low %d outside [0, %d]", r.MemoryReservation, r.Memory)
	}
	if cfg.Seccomp == nil || cfg.Seccomp.DefaultAction == configs.Allow || cfg.Seccomp.DefaultAction == configs.Log {
		t.Fatalf("seccomp %+v: not default-deny", cfg.Seccomp)
	}
	for _, sc := range cfg.Seccomp.Syscalls {
		if (sc.Name == "io_uring_setup" || sc.Name == "io_uring_enter") && (sc.Action == configs.Allow || sc.Action == configs.Log) {
			t.Fatalf("%s allowed", sc.Name)
		}
	}
	for k, v := range r.Unified {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case k == "memory.high" && (v == "max" || (err == nil && n > 0 && n <= r.Memory)):
		case k == "memory.min" && err == nil && n >= 0 && n <= r.Memory:
		case k == "memory.oom.group" && (v == "0" || v == "1"):
		case k == "cpu.weight" && err == nil && n >= 1 && n <= 10000 && r.CpuShares == 0:
		default:
			t.Fatalf("unified %s=%q reached the cgroup", k, v)
		}
	}
	if !strings.HasPrefix(cfg.Cgroups.Path, libmaka.OwnCgroupParent+"/") && !slices.ContainsFunc(pol.CgroupParents, func(p string) bool {
		return strings.HasPrefix(cfg.Cgroups.Path, p+"/")
	}) {
		t.Fatalf("cgroup %s is below no parent the policy allows", cfg.Cgroups.Path)
	}
	for _, m := range cfg.Mounts {
		switch {
		case m.IsBind():
			if pol.BindRule(m.Source, libmaka.BindOwner{ID: "fuzz"}) == "" && pol.BindRule(m.Source, libmaka.BindOwner{}) == "" {
				t.Fatalf("bind of %s, which the policy does not allow", m.Source)
			}
		case m.Device == "tmpfs":
		case systemMountPlaces[m.Device] != "":
			if filepath.Clean(m.Destination) != systemMountPlaces[m.Device] {
				t.Fatalf("%s mounted at %s", m.Device, m.Destination)
			}
			if (m.Device == "sysfs" || m.Device == "cgroup" || m.Device == "cgroup2") && m.Flags&unix.MS_RDONLY == 0 {
				t.Fatalf("%s at %s is writable", m.Device, m.Destination)
			}
		default:
			t.Fatalf("mount of type %q at %s", m.Device, m.Destination)
		}
	}
	for _, p := range defaultMaskedPaths {
		if !slices.Contains(cfg.MaskPaths, p) {
			t.Fatalf("masked path %s missing", p)
		}
	}
	for _, p := range defaultReadonlyPaths {
		if !slices.Contains(cfg.ReadonlyPaths, p) {
			t.Fatalf("read-only path %s missing", p)
		}
	}
	if c := cfg.Capabilities; c != nil {
		for _, set := range [][]string{c.Bounding, c.Effective, c.Permitted, c.Inheritable, c.Ambient} {
			for _, name := range set {
				if !pol.AllowsCapability(name) {
					t.Fatalf("capability %s not in the policy", name)
				}
			}
		}
	}
	userns := slices.ContainsFunc(cfg.Namespaces, func(ns configs.Namespace) bool { return ns.Type == configs.NEWUSER })
	if pol.UserNamespace == libmaka.UserNamespaceRequired && !userns {
		t.Fatal("no user namespace under a policy that requires one")
	}
	for _, m := range append(slices.Clone(cfg.UIDMappings), cfg.GIDMappings...) {
		inPool := pol.IDPool.Contains(uint32(m.HostID), uint32(m.Size))
		delegated := slices.ContainsFunc(pol.DelegatedIDs, func(r libmaka.IDRange) bool {
			return m.HostID >= int64(r.Start) && m.HostID+m.Size <= int64(r.Start)+int64(r.Size)
		})
		if m.HostID == 0 || (!inPool && !delegated) {
			t.Fatalf("mapping %+v: host ids neither leased from the pool nor delegated", m)
		}
	}
	for _, ns := range cfg.Namespaces {
		if ns.Path == "" {
			continue
		}
		if ns.Type == configs.NEWUSER || pol.Profile == libmaka.ProfileRestricted ||
			(ns.Type == configs.NEWNET && !pol.AllowsNetwork(libmaka.NetworkNetns)) {
			t.Fatalf("joins %s namespace %s", ns.Type, ns.Path)
		}
	}
}

func TestDefaultSeccompWhenConfigHasNone(t *testing.T) {
	b, err := ToBoundary(testHost, sandboxSpec(t), policy(t, "restricted"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Syscalls.Profile != "default" || b.Syscalls.Denied+b.Syscalls.Watched < 40 || b.Seccomp == nil {
		t.Fatalf("syscalls = %+v", b.Syscalls)
	}
	// It compiles with libcontainer's converter.
	convertable(t, b, "x")
	out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Config.Seccomp == nil || len(out.Config.Seccomp.Syscalls) < 40 {
		t.Fatalf("libcontainer seccomp = %+v", out.Config.Seccomp)
	}
	// A profile from config.json is kept as it is (it must let the init
	// statx: seccomp_init.go).
	s := sandboxSpec(t)
	s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActErrno,
		Syscalls: []specs.LinuxSyscall{{Names: []string{"statx"}, Action: specs.ActAllow}}}
	b, err = ToBoundary(testHost, s, policy(t, "restricted"))
	if err != nil || b.Syscalls.Profile != "config" || b.Seccomp.DefaultAction != specs.ActErrno {
		t.Fatalf("config profile replaced: %+v, %v", b.Syscalls, err)
	}
}

func TestNoCapabilitiesDeclaredMeansNone(t *testing.T) {
	for _, profile := range []string{"restricted", "baseline"} {
		b, err := ToBoundary(testHost, sandboxSpec(t), policy(t, profile))
		if err != nil {
			t.Fatal(err)
		}
		c := ProcessOf(b).Capabilities
		if c == nil || len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) != 0 {
			t.Errorf("%s: enforced capabilities = %+v, want an empty (not nil) set", profile, c)
		}
	}
}

func TestCheckExec(t *testing.T) {
	p := &specs.Process{Args: []string{"sh"}, Cwd: "/", Capabilities: &specs.LinuxCapabilities{Effective: []string{"CAP_SYS_ADMIN"}}}
	err := CheckExec(testHost, p, policy(t, "restricted"), nil)
	items := rejectedItems(t, err)
	if len(items) != 1 || items[0].Field != "process.capabilities.effective[0]" {
		t.Errorf("items = %v", items)
	}
	p = &specs.Process{Args: []string{"sh"}, Cwd: "/"}
	if err := CheckExec(testHost, p, policy(t, "restricted"), nil); err != nil || !p.NoNewPrivileges || p.Capabilities != nil {
		t.Errorf("plain exec: err %v, nnp %v, caps %+v", err, p.NoNewPrivileges, p.Capabilities)
	}
}

// An exec'd process is held to the container's init where the policy would
// allow more: no_new_privs stays on, no other AppArmor profile. (Capabilities
// the policy allows may be added, as runc's exec --cap does.)
func TestCheckExecHeldToTheBoundary(t *testing.T) {
	b := &libmaka.Boundary{Process: libmaka.Process{Capabilities: []string{"CAP_CHOWN"}, NoNewPrivileges: true}}
	p := &specs.Process{Args: []string{"sh"}, Cwd: "/", ApparmorProfile: "unconfined",
		Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN", "CAP_NET_RAW"}}}
	items := rejectedItems(t, CheckExec(testHost, p, policy(t, "baseline"), b))
	var fields []string
	for _, it := range items {
		fields = append(fields, it.Field)
	}
	if strings.Join(fields, " ") != "process.apparmorProfile" {
		t.Errorf("items = %v", items)
	}
	if !p.NoNewPrivileges {
		t.Error("no_new_privs not forced on as the init has it")
	}
}

func TestTmpfsLastSizeCounts(t *testing.T) {
	s := sandboxSpec(t)
	s.Mounts = append(s.Mounts, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1m", "size=4g"}})
	items := rejectedItems(t, func() error { _, err := ToBoundary(testHost, s, policy(t, "restricted")); return err }())
	if len(items) != 1 || items[0].Field != "mounts[7].options[1]" {
		t.Errorf("items = %v", items)
	}
}

// pids.limit as runc maps it: absent is the policy's default, 0 is one pid
// (runc writes pids.max 1), a negative value is unlimited where the policy
// has no pids ceiling and refused where it has one.
func TestPidsLimitAsRuncMapsIt(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	free := policy(t, "baseline")
	free.MaxLimits.Pids = 0
	for _, c := range []struct {
		limit  *int64
		p      *libmaka.Policy
		want   int64 // the contract's pids (0: unlimited)
		refuse string
	}{
		{nil, policy(t, "restricted"), 256, ""},
		{i64(0), policy(t, "restricted"), 1, ""},
		{i64(7), policy(t, "restricted"), 7, ""},
		{i64(-1), policy(t, "restricted"), 0, "unlimited pids are not allowed"},
		{i64(-9), policy(t, "restricted"), 0, "unlimited pids are not allowed"},
		{i64(-1), free, 0, ""},
		{i64(-9), free, 0, ""},
		{i64(0), free, 1, ""},
	} {
		s := sandboxSpec(t)
		s.Linux.Resources = &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: c.limit}}
		b, err := ToBoundary(testHost, s, c.p)
		name := "absent"
		if c.limit != nil {
			name = fmt.Sprint(*c.limit)
		}
		if c.refuse != "" {
			if err == nil || !strings.Contains(err.Error(), "linux.resources.pids.limit") || !strings.Contains(err.Error(), c.refuse) {
				t.Errorf("pids.limit %s under %s: err %v, want %q", name, c.p.Profile, err, c.refuse)
			}
			continue
		}
		if err != nil {
			t.Errorf("pids.limit %s under %s: %v", name, c.p.Profile, err)
			continue
		}
		if b.Limits.Pids != c.want {
			t.Errorf("pids.limit %s under %s: contract pids %d, want %d", name, c.p.Profile, b.Limits.Pids, c.want)
		}
	}
}

// root.readonly false under a policy that never lets the root be written
// is a writable view, not a refusal: the root stays read-only in the
// Boundary (its lower layer), the view is marked, and libcontainer is told
// to leave the overlay writable. Rootless maka has no host root to build
// the overlay with: refused, naming the field.
func TestWritableRootIsAView(t *testing.T) {
	s := sandboxSpec(t)
	s.Root.Readonly = false
	b, err := ToBoundary(testHost, s, policy(t, "restricted"))
	if err != nil {
		t.Fatal(err)
	}
	if !b.Rootfs.Readonly || !b.Rootfs.WritableView {
		t.Errorf("rootfs %+v: want read-only with a writable view", b.Rootfs)
	}
	// Under baseline (writableRootfs) the engine's root is written as is.
	b, err = ToBoundary(testHost, exampleSpecWritable(t), policy(t, "baseline"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Rootfs.Readonly || b.Rootfs.WritableView {
		t.Errorf("baseline rootfs %+v: want the root itself writable", b.Rootfs)
	}
	rootless := policy(t, "restricted")
	rootless.Rootless = &libmaka.Rootless{UID: 1000, GID: 1000}
	s = sandboxSpec(t)
	s.Root.Readonly = false
	_, err = ToBoundary(testHost, s, rootless)
	items := rejectedItems(t, err)
	if len(items) != 1 || items[0].Field != "root.readonly" || !strings.Contains(items[0].Message, "rootless") {
		t.Errorf("rootless: items %v, want root.readonly's refusal naming rootless", items)
	}
}

func exampleSpecWritable(t *testing.T) *specs.Spec {
	s := exampleSpec(t)
	s.Root.Readonly = false
	return s
}

// The host's UTS namespace only comes with the host's network (a
// hostNetwork pod through containerd), where the policy allows that, and
// without a name of the sandbox's own; every other namespace of the
// mandatory four stays private whatever the network.
func TestHostUTSOnlyWithHostNetwork(t *testing.T) {
	without := func(s *specs.Spec, types ...specs.LinuxNamespaceType) {
		var keep []specs.LinuxNamespace
		for _, n := range s.Linux.Namespaces {
			if !slices.Contains(types, n.Type) {
				keep = append(keep, n)
			}
		}
		s.Linux.Namespaces = keep
	}
	hostNet := policy(t, "baseline")
	hostNet.NetworkModes = append(hostNet.NetworkModes, libmaka.NetworkHost)
	wide := policy(t, "baseline")
	wide.NetworkModes = append(wide.NetworkModes, libmaka.NetworkHost)
	wide.Capabilities = append(wide.Capabilities, "CAP_SYS_ADMIN")
	wide.Sysctls = append(wide.Sysctls, "kernel.domainname")
	for _, tc := range []struct {
		name   string
		pol    *libmaka.Policy
		change func(*specs.Spec)
		field  string // "" allowed
	}{
		{"host network and host uts", hostNet, func(s *specs.Spec) { s.Hostname = ""; without(s, specs.NetworkNamespace, specs.UTSNamespace) }, ""},
		{"host uts with a network namespace", hostNet, func(s *specs.Spec) { s.Hostname = ""; without(s, specs.UTSNamespace) }, "linux.namespaces"},
		{"host uts, the policy without the host's network", policy(t, "baseline"), func(s *specs.Spec) { s.Hostname = ""; without(s, specs.NetworkNamespace, specs.UTSNamespace) }, "linux.namespaces"},
		{"host uts with a hostname", hostNet, func(s *specs.Spec) { s.Hostname = "box"; without(s, specs.NetworkNamespace, specs.UTSNamespace) }, "hostname"},
		{"host uts with a domainname", hostNet, func(s *specs.Spec) {
			s.Hostname = ""
			s.Domainname = "example"
			without(s, specs.NetworkNamespace, specs.UTSNamespace)
		}, "domainname"},
		{"host ipc with the host's network", hostNet, func(s *specs.Spec) { s.Hostname = ""; without(s, specs.NetworkNamespace, specs.IPCNamespace) }, "linux.namespaces"},
		{"host pid with the host's network", hostNet, func(s *specs.Spec) { s.Hostname = ""; without(s, specs.NetworkNamespace, specs.PIDNamespace) }, "linux.namespaces"},
		// Without a user namespace of its own, nothing that could name
		// the host (the attacker review of s24).
		{"host uts, no user namespace, CAP_SYS_ADMIN", wide, func(s *specs.Spec) {
			s.Hostname = ""
			without(s, specs.NetworkNamespace, specs.UTSNamespace, specs.UserNamespace)
			s.Linux.UIDMappings, s.Linux.GIDMappings = nil, nil
			s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_SYS_ADMIN"}}
		}, "process.capabilities"},
		{"host uts, no user namespace, kernel.domainname", wide, func(s *specs.Spec) {
			s.Hostname = ""
			without(s, specs.NetworkNamespace, specs.UTSNamespace, specs.UserNamespace)
			s.Linux.UIDMappings, s.Linux.GIDMappings = nil, nil
			s.Linux.Sysctl = map[string]string{"kernel.domainname": "evil"}
		}, `linux.sysctl["kernel.domainname"]`},
		{"host uts, no user namespace, no capability", wide, func(s *specs.Spec) {
			s.Hostname = ""
			without(s, specs.NetworkNamespace, specs.UTSNamespace, specs.UserNamespace)
			s.Linux.UIDMappings, s.Linux.GIDMappings = nil, nil
		}, ""},
		{"own uts, no user namespace, CAP_SYS_ADMIN", wide, func(s *specs.Spec) {
			without(s, specs.NetworkNamespace, specs.UserNamespace)
			s.Linux.UIDMappings, s.Linux.GIDMappings = nil, nil
			s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_SYS_ADMIN"}}
			s.Linux.Sysctl = map[string]string{"kernel.domainname": "box"}
		}, ""},
	} {
		s := sandboxSpec(t)
		s.Root.Path = t.TempDir()
		tc.change(s)
		_, err := ToBoundary(testHost, s, tc.pol)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field+":")):
			t.Errorf("%s: %v, want a refusal of %s", tc.name, err, tc.field)
		}
	}
}

// An exec'd process in a sandbox with the host's uts namespace and no user
// namespace of its own is held to the init's rule: no CAP_SYS_ADMIN, which
// would be the host's over the host's name (the attacker review of s25).
func TestCheckExecHostUTSNoSysAdmin(t *testing.T) {
	wide := policy(t, "baseline")
	wide.Capabilities = append(wide.Capabilities, "CAP_SYS_ADMIN")
	for _, tc := range []struct {
		name   string
		ns     []string
		refuse bool
	}{
		{"host uts, no user namespace", []string{"pid", "mount", "ipc"}, true},
		{"host uts, a user namespace", []string{"pid", "mount", "ipc", "user"}, false},
		{"own uts, no user namespace", []string{"pid", "mount", "ipc", "uts"}, false},
	} {
		b := &libmaka.Boundary{}
		for _, n := range tc.ns {
			b.Namespaces = append(b.Namespaces, libmaka.Namespace{Type: n})
		}
		p := &specs.Process{Args: []string{"sh"}, Cwd: "/", Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_SYS_ADMIN"}}}
		err := CheckExec(testHost, p, wide, b)
		if refused := err != nil && strings.Contains(err.Error(), "CAP_SYS_ADMIN with the host's uts namespace"); refused != tc.refuse {
			t.Errorf("%s: %v, want refused: %v", tc.name, err, tc.refuse)
		}
	}
}
