package specconv

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// applyHint edits the policy file doc (a JSON object) the way a person
// following a BOUNDARY_REJECTED hint would: the hint's key is set to the
// hint's value, "[..., X]" meaning the current list plus X. It returns the
// new document.
func applyHint(t *testing.T, current *libmaka.Policy, doc, hint string) string {
	t.Helper()
	key, value, ok := strings.Cut(hint, ": ")
	if !ok {
		t.Fatalf("hint %q is not `\"key\": value`", hint)
	}
	key = strings.Trim(key, `"`)
	if rest, ok := strings.CutPrefix(value, "[..., "); ok {
		cur, _ := json.Marshal(current)
		var m map[string]json.RawMessage
		json.Unmarshal(cur, &m)
		var list []json.RawMessage
		json.Unmarshal(m[key], &list)
		var elems []string
		for _, e := range list {
			elems = append(elems, string(e))
		}
		value = "[" + strings.Join(append(elems, strings.TrimSuffix(rest, "]")), ", ") + "]"
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &file); err != nil {
		t.Fatal(err)
	}
	file[key] = json.RawMessage(value)
	out, err := json.Marshal(file)
	if err != nil {
		t.Fatalf("hint %q: %v", hint, err)
	}
	return string(out)
}

// policyDiff lists the keys (limits as "maxLimits.memory") in which two
// policies differ, ignoring where they were read from.
func policyDiff(a, b *libmaka.Policy) []string {
	flat := func(p *libmaka.Policy) map[string]string {
		data, _ := json.Marshal(p)
		var m map[string]json.RawMessage
		json.Unmarshal(data, &m)
		out := map[string]string{}
		for k, v := range m {
			if k == "source" || k == "modified" {
				continue
			}
			if k == "maxLimits" || k == "defaultLimits" {
				var l map[string]json.RawMessage
				json.Unmarshal(v, &l)
				for lk, lv := range l {
					out[k+"."+lk] = string(lv)
				}
				continue
			}
			out[k] = string(v)
		}
		return out
	}
	fa, fb := flat(a), flat(b)
	var diff []string
	for k := range fa {
		if fa[k] != fb[k] {
			diff = append(diff, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			diff = append(diff, k)
		}
	}
	sort.Strings(diff)
	return diff
}

// Every form of hint a BOUNDARY_REJECTED item gives is a complete, safe
// edit: added to the policy file, it changes exactly the key it names (no
// other item of the profile, no other ceiling) and the item goes away.
func TestRejectionHintsAreCompleteEdits(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		name   string
		policy string // the policy file before the edit
		field  string // the rejected config.json field
		key    string // the one policy key the hint must change
		edit   func(s *specs.Spec)
	}{
		{"capability", `{"profile": "restricted"}`, "process.capabilities.bounding[0]", "capabilities", func(s *specs.Spec) {
			s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_KILL"}}
		}},
		{"baseline capability", `{"profile": "baseline"}`, "process.capabilities.bounding[0]", "capabilities", func(s *specs.Spec) {
			s.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_SYS_NICE"}}
		}},
		{"netns", `{"profile": "restricted"}`, "linux.namespaces[1].path", "networkModes", func(s *specs.Spec) {
			setNetns(s, "/var/run/netns/n1")
		}},
		{"host network", `{"profile": "restricted"}`, "linux.namespaces", "networkModes", func(s *specs.Spec) {
			setNetns(s, "-")
		}},
		{"bind ro", `{"profile": "restricted"}`, "mounts[7].source", "bindPaths", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: "/srv/data", Options: []string{"rbind", "ro"}})
		}},
		{"bind rw", `{"profile": "restricted"}`, "mounts[7].source", "bindPaths", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: "/srv/data", Options: []string{"rbind"}})
		}},
		{"bind rw where ro is allowed", `{"profile": "restricted", "bindPaths": [{"path": "/srv", "mode": "ro"}]}`, "mounts[7].options", "bindPaths", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: "/srv/data", Options: []string{"rbind"}})
		}},
		{"device", `{"profile": "restricted"}`, "linux.devices[0]", "devices", func(s *specs.Spec) {
			s.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/fuse", Type: "c", Major: 10, Minor: 229}}
		}},
		{"sysctl", `{"profile": "restricted"}`, `linux.sysctl["net.ipv4.ip_forward"]`, "sysctls", func(s *specs.Spec) {
			s.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": "1"}
		}},
		{"hook", `{"profile": "baseline"}`, "hooks.prestart[0].path", "hookPaths", func(s *specs.Spec) {
			s.Hooks = &specs.Hooks{Prestart: []specs.Hook{{Path: "/bin/true"}}}
		}},
		{"memory", `{"profile": "restricted"}`, "linux.resources.memory.limit", "maxLimits.memory", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(8 << 30)}}
		}},
		{"unlimited swap", `{"profile": "restricted"}`, "linux.resources.memory.swap", "maxLimits.swap", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(1 << 30), Swap: i64(-1)}}
		}},
		{"swap", `{"profile": "restricted"}`, "linux.resources.memory.swap", "maxLimits.swap", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(1 << 30), Swap: i64(2 << 30)}}
		}},
		{"pids", `{"profile": "restricted"}`, "linux.resources.pids.limit", "maxLimits.pids", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(5000)}}
		}},
		{"cpus", `{"profile": "restricted"}`, "linux.resources.cpu.quota", "maxLimits.cpus", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: i64(650000), Period: u64(100000)}}
		}},
		{"baseline cpus", `{"profile": "baseline"}`, "linux.resources.cpu.quota", "maxLimits.cpus", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: i64(10000000), Period: u64(1000)}}
		}},
		{"tmpfs", `{"profile": "restricted"}`, "mounts[7].options[0]", "maxLimits.tmpfsSize", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/big", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=2g"}})
		}},
		{"timeout", `{"profile": "restricted"}`, fmt.Sprintf("annotations[%q]", AnnotationTimeout), "maxLimits.timeout", func(s *specs.Spec) {
			s.Annotations = map[string]string{AnnotationTimeout: "7200"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := libmaka.ParsePolicy([]byte(tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			s := sandboxSpec(t)
			tc.edit(s)
			_, v, err := Explain(testHost, s, before)
			if err != nil {
				t.Fatal(err)
			}
			var item *Item
			for i := range v.Items {
				if v.Items[i].Field == tc.field {
					item = &v.Items[i]
				}
			}
			if item == nil {
				t.Fatalf("no item for %s; items: %v", tc.field, v.Items)
			}
			if item.Allow == "" {
				t.Fatalf("item %s has no hint", item)
			}
			doc := applyHint(t, before, tc.policy, item.Allow)
			after, err := libmaka.ParsePolicy([]byte(doc))
			if err != nil {
				t.Fatalf("hint %q makes an invalid policy %s: %v", item.Allow, doc, err)
			}
			if diff := policyDiff(before, after); !reflect.DeepEqual(diff, []string{tc.key}) {
				t.Errorf("hint %q changed %v, want only %s", item.Allow, diff, tc.key)
			}
			s = sandboxSpec(t)
			tc.edit(s)
			_, v, err = Explain(testHost, s, after)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range v.Items {
				if it.Field == tc.field {
					t.Errorf("after the hint %q the item is still there: %s", item.Allow, it)
				}
			}
		})
	}
}

// setNetns joins the network namespace path, or ("-") drops the network
// namespace (the host's network).
func setNetns(s *specs.Spec, path string) {
	var ns []specs.LinuxNamespace
	for _, n := range s.Linux.Namespaces {
		if n.Type == specs.NetworkNamespace {
			if path == "-" {
				continue
			}
			n.Path = path
		}
		ns = append(ns, n)
	}
	s.Linux.Namespaces = ns
}
