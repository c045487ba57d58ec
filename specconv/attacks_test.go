package specconv

import (
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// The ways past the checks an attacker's review found, each refused with
// its field: a standard device name on another device, a hugepage size
// shaped like a path (it names the cgroup file written), a read-only bind
// made writable by a later option, options smuggled after a comma, an
// idmap or shared propagation, joining a mount namespace.
func TestAttackerReviewRefusals(t *testing.T) {
	pol, err := libmaka.ParsePolicy([]byte(`{"profile": "baseline", "bindPaths": [{"path": "/opt/data", "mode": "ro"}], "devices": ["/dev/fuse"]}`))
	if err != nil {
		t.Fatal(err)
	}
	i64 := func(v int64) *int64 { return &v }
	bind := func(opts ...string) specs.Mount {
		return specs.Mount{Destination: "/data", Type: "bind", Source: "/opt/data", Options: opts}
	}
	cases := []struct {
		name, field string
		mutate      func(s *specs.Spec)
	}{
		{"a standard name on a disk", "linux.devices[0]", func(s *specs.Spec) {
			s.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/null", Type: "b", Major: 8, Minor: 0}}
		}},
		{"a rule for a block device with a char device's numbers", "linux.resources.devices[0]", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: true, Type: "b", Major: i64(1), Minor: i64(3), Access: "rwm"}}}
		}},
		{"a device path outside /dev", "linux.devices[0].path", func(s *specs.Spec) {
			s.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/../etc/fuse", Type: "c", Major: 10, Minor: 229}}
		}},
		{"a hugepage size naming memory.max", "linux.resources.hugepageLimits[0].pageSize", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{HugepageLimits: []specs.LinuxHugepageLimit{{Pagesize: "x/../memory", Limit: 1 << 62}}}
		}},
		{"ro then rw on a read-only bind", "mounts[7].options", func(s *specs.Spec) { s.Mounts = append(s.Mounts, bind("rbind", "ro", "rw")) }},
		{"ro then rrw on a read-only bind", "mounts[7].options", func(s *specs.Spec) { s.Mounts = append(s.Mounts, bind("rbind", "ro", "rrw")) }},
		{"an idmapped bind without a user namespace", "mounts[7].options", func(s *specs.Spec) { s.Mounts = append(s.Mounts, bind("rbind", "ro", "idmap")) }},
		{"a shared bind", "mounts[7].options[2]", func(s *specs.Spec) { s.Mounts = append(s.Mounts, bind("rbind", "ro", "rshared")) }},
		{"a second size after a comma", "mounts[7].options[1]", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/t", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=1m", "mode=1777,size=100g"}})
		}},
		{"joining a mount namespace", "linux.namespaces[0].path", func(s *specs.Spec) {
			s.Linux.Namespaces[0] = specs.LinuxNamespace{Type: specs.MountNamespace, Path: "/proc/1/ns/mnt"}
		}},
		{"a cpuset that is not a list", "linux.resources.cpu.cpus", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "0\nx"}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := sandboxSpec(t)
			s.Root.Readonly = true
			tc.mutate(s)
			_, err := ToBoundary(testHost, s, pol)
			for _, it := range rejectedItems(t, err) {
				if it.Field == tc.field {
					return
				}
			}
			t.Errorf("no item for %s: %v", tc.field, err)
		})
	}
}

// A read-only bind is read-only all the way down: rro is added, so what is
// mounted below its source stays read-only too.
func TestReadonlyBindIsRecursive(t *testing.T) {
	pol, _ := libmaka.ParsePolicy([]byte(`{"profile": "baseline", "bindPaths": [{"path": "/opt/data", "mode": "ro"}]}`))
	s := sandboxSpec(t)
	s.Mounts = append(s.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: "/opt/data", Options: []string{"rbind", "ro"}})
	b, err := ToBoundary(testHost, s, pol)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Mounts[len(b.Mounts)-1]
	if !readonlyOptions(m.Options) || m.Options[len(m.Options)-1] != "rro" {
		t.Errorf("options %v: want ro and rro", m.Options)
	}
}
