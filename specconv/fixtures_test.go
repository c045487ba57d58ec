package specconv

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// engineSpecs are the default config.json of the engines maka must serve,
// as they wrote them (tests/integration/fixtures/specs/capture.sh).
var engineSpecs = []string{"podman", "containerd"}

// engineSpec loads a captured default spec, with root.path pointed at a
// harmless empty directory. `ctr oci spec` has no process.args (ctr takes
// them from the image): such a spec gets a shell, as ctr would give it.
func engineSpec(t *testing.T, name string) *specs.Spec {
	t.Helper()
	path := filepath.Join("..", "tests", "integration", "fixtures", "specs", name+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpec(path, data)
	if err != nil {
		t.Fatal(err)
	}
	s.Root.Path = t.TempDir()
	if len(s.Process.Args) == 0 {
		s.Process.Args = []string{"sh"}
	}
	// `ctr oci spec` says cgroupsPath "/default" (the namespace); `ctr run`
	// gives each container /default/<id>.
	if s.Linux.CgroupsPath == "/default" {
		s.Linux.CgroupsPath = "/default/" + name
	}
	return s
}

func TestEngineDefaultSpecsPassBaseline(t *testing.T) {
	for _, name := range engineSpecs {
		t.Run(name, func(t *testing.T) {
			s := engineSpec(t, name)
			b, err := ToBoundary(testHost, s, policy(t, libmaka.ProfileBaseline))
			if err != nil {
				t.Fatalf("baseline refuses %s's default spec: %v", name, err)
			}
			// What the engine asked for is kept: its capabilities, its
			// writable root, its network namespace.
			want := slices.Clone(s.Process.Capabilities.Bounding)
			slices.Sort(want)
			if !slices.Equal(b.Process.Capabilities, want) {
				t.Errorf("capabilities = %v, want the spec's %v", b.Process.Capabilities, want)
			}
			if b.Rootfs.Readonly != s.Root.Readonly {
				t.Errorf("rootfs readonly = %v, spec says %v", b.Rootfs.Readonly, s.Root.Readonly)
			}
			netPath := ""
			for _, n := range s.Linux.Namespaces {
				if n.Type == specs.NetworkNamespace {
					netPath = n.Path
				}
			}
			if netPath == "" && b.Network.Mode != libmaka.NetworkClosed || netPath != "" && (b.Network.Mode != libmaka.NetworkNetns || b.Network.Path != netPath) {
				t.Errorf("network = %+v, spec's network namespace path %q", b.Network, netPath)
			}
			// The default limits where the spec is silent, its own where not.
			r := s.Linux.Resources
			wantPids := int64(256)
			if r != nil && r.Pids != nil && r.Pids.Limit != nil {
				wantPids = *r.Pids.Limit
			}
			if b.Limits.Memory != 1<<30 || b.Limits.Swap != 0 || b.Limits.Cpus != 2 || b.Limits.Pids != wantPids {
				t.Errorf("limits = %+v, want 1 GiB, no swap, 2 CPUs, %d pids", b.Limits, wantPids)
			}
			// The enforced spec converts for libcontainer.
			convertable(t, b, name)
		})
	}
}

// policyLine is what an Item's Allow holds: one line of a policy file.
var policyLine = regexp.MustCompile(`^"(capabilities|bindPaths|networkModes|devices|sysctls|hooks|writableRootfs|maxLimits|cgroupParents)": `)

func TestEngineDefaultSpecsAreRefusedByRestrictedItemByItem(t *testing.T) {
	for _, name := range engineSpecs {
		t.Run(name, func(t *testing.T) {
			s := engineSpec(t, name)
			_, err := ToBoundary(testHost, s, policy(t, libmaka.ProfileRestricted))
			items := rejectedItems(t, err)
			fields := map[string]bool{}
			for _, it := range items {
				fields[it.Field] = true
				if !policyLine.MatchString(it.Allow) {
					t.Errorf("item %s names no policy line that would allow it: %+v", it.Field, it)
				}
				if it.Capability == "" {
					if !strings.Contains(err.Error(), it.String()) {
						t.Errorf("the message does not carry item %q", it)
					}
				} else if !capabilityLine(err.Error(), it) {
					// One line per capability, naming its sets.
					t.Errorf("the message has no line for %s in %s:\n%s", it.Capability, it.CapSet, err)
				}
			}
			// Every capability of every set is an item of its own.
			caps := s.Process.Capabilities
			for set, names := range map[string][]string{"bounding": caps.Bounding, "effective": caps.Effective, "permitted": caps.Permitted} {
				for i, c := range names {
					f := "process.capabilities." + set + "[" + itoa(i) + "]"
					if !fields[f] {
						t.Errorf("no item for %s (%s)", f, c)
					}
				}
			}
			// A writable root is not refused: it gets a writable view of
			// the read-only root (TestWritableRootIsAView).
			if fields["root.readonly"] {
				t.Error("the writable root is refused, not given a writable view")
			}
			for i, m := range s.Mounts {
				if IsBind(&m) && !fields["mounts["+itoa(i)+"].source"] {
					t.Errorf("the bind of %s is not an item", m.Source)
				}
			}
			for i, n := range s.Linux.Namespaces {
				if n.Path != "" && !fields["linux.namespaces["+itoa(i)+"].path"] {
					t.Errorf("joining %s is not an item", n.Path)
				}
			}
			for k := range s.Linux.Sysctl {
				if !fields[`linux.sysctl["`+k+`"]`] {
					t.Errorf("the sysctl %s is not an item", k)
				}
			}
			// A policy made of exactly those lines admits the spec.
			p := policy(t, libmaka.ProfileRestricted)
			for _, it := range items {
				widen(t, p, it)
			}
			if _, err := ToBoundary(testHost, s, p); err != nil {
				t.Errorf("restricted widened by its own suggestions still refuses: %v", err)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// widen applies one suggested policy line to p, as a person editing the
// policy file would.
func widen(t *testing.T, p *libmaka.Policy, it Item) {
	t.Helper()
	doc := "{" + strings.ReplaceAll(it.Allow, "[..., ", "[") + "}"
	q, err := libmaka.ParsePolicy([]byte(`{"profile": "restricted", ` + doc[1:]))
	if err != nil {
		t.Fatalf("suggestion %q is not a policy line: %v", it.Allow, err)
	}
	p.Capabilities = union(p.Capabilities, q.Capabilities)
	p.NetworkModes = union(p.NetworkModes, q.NetworkModes)
	p.Sysctls = union(p.Sysctls, q.Sysctls)
	p.Devices = union(p.Devices, q.Devices)
	p.CgroupParents = union(p.CgroupParents, q.CgroupParents)
	for _, r := range q.BindPaths {
		if !slices.Contains(p.BindPaths, r) {
			p.BindPaths = append(p.BindPaths, r)
		}
	}
	p.WritableRootfs = p.WritableRootfs || q.WritableRootfs
	p.Hooks = p.Hooks || q.Hooks
	p.HookPaths = union(p.HookPaths, q.HookPaths)
	if strings.HasPrefix(it.Allow, `"maxLimits"`) {
		for _, l := range []struct{ dst, src *int64 }{{&p.MaxLimits.Memory, &q.MaxLimits.Memory}, {&p.MaxLimits.Pids, &q.MaxLimits.Pids}, {&p.MaxLimits.TmpfsSize, &q.MaxLimits.TmpfsSize}, {&p.MaxLimits.Timeout, &q.MaxLimits.Timeout}} {
			if *l.src > *l.dst {
				*l.dst = *l.src
			}
		}
		if q.MaxLimits.Cpus > p.MaxLimits.Cpus {
			p.MaxLimits.Cpus = q.MaxLimits.Cpus
		}
		if strings.Contains(it.Allow, `"swap"`) {
			p.MaxLimits.Swap = q.MaxLimits.Swap
		}
	}
}

// testLease gives b the pool's first block, as libmaka.Op.LeaseIDs does at
// create, when b asks for ids from the pool.
func testLease(b *libmaka.Boundary) *libmaka.Boundary {
	if b.Users.Source == libmaka.IDsFromPool && len(b.UIDMappings) == 0 {
		m := []specs.LinuxIDMapping{{HostID: b.Users.Pool.Start, Size: b.Users.Pool.Size}}
		b.UIDMappings, b.GIDMappings = m, m
	}
	return b
}

// capabilityLine: msg has the line of it's capability, naming its set.
func capabilityLine(msg string, it Item) bool {
	for _, l := range strings.Split(msg, "\n") {
		sets, ok := strings.CutPrefix(l, "  process.capabilities: "+it.Capability+" (")
		if !ok {
			continue
		}
		sets, _, _ = strings.Cut(sets, ")")
		return slices.Contains(strings.Split(sets, ", "), it.CapSet)
	}
	return false
}
