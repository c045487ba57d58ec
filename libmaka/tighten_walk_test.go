package libmaka

import (
	"reflect"
	"slices"
	"testing"
)

// The org.maka.profile annotation may only tighten: for every field of
// Policy, the tightened policy is no looser than the policy file's nor
// than the named profile's. The walk covers every field by reflection, so
// a field added to Policy fails here until it says how it is tightened
// (in meetRestricted) and how to tell looser from stricter (below).
func TestTightenNeverLoosensAnyField(t *testing.T) {
	own := ownOOMScoreAdj()
	oomMin := func(p *Policy) int {
		if p.OOMScoreAdjMin == nil {
			return own
		}
		return *p.OOMScoreAdjMin
	}
	subset := func(a, b []string) bool { // every item of a is in b
		for _, s := range a {
			if !slices.Contains(b, s) {
				return false
			}
		}
		return true
	}
	// limitNoLooser: each limit of r at most a's (0: none; swap -1: none).
	limitNoLooser := func(r, a Limits) bool {
		le := func(x, y int64) bool { return y == 0 || (x != 0 && x <= y) }
		swap := a.Swap < 0 || (r.Swap >= 0 && r.Swap <= a.Swap)
		cpus := a.Cpus == 0 || (r.Cpus != 0 && r.Cpus <= a.Cpus)
		return le(r.Memory, a.Memory) && le(r.Pids, a.Pids) && le(r.TmpfsSize, a.TmpfsSize) && le(r.Timeout, a.Timeout) && swap && cpus
	}
	// noLooser[field](r, a): r's field is at least as strict as a's.
	noLooser := map[string]func(r, a *Policy) bool{
		"Capabilities": func(r, a *Policy) bool { return subset(r.Capabilities, a.Capabilities) },
		"BindPaths": func(r, a *Policy) bool {
			for _, b := range r.BindPaths {
				if m := a.BindRule(b.Path, BindOwner{}); m == "" || (b.Mode == "rw" && m != "rw") {
					return false
				}
			}
			return true
		},
		"NetworkModes":   func(r, a *Policy) bool { return subset(r.NetworkModes, a.NetworkModes) },
		"Devices":        func(r, a *Policy) bool { return subset(r.Devices, a.Devices) },
		"Sysctls":        func(r, a *Policy) bool { return subset(r.Sysctls, a.Sysctls) },
		"HookPaths":      func(r, a *Policy) bool { return subset(r.HookPaths, a.HookPaths) },
		"Hooks":          func(r, a *Policy) bool { return !r.Hooks || a.Hooks },
		"WritableRootfs": func(r, a *Policy) bool { return !r.WritableRootfs || a.WritableRootfs },
		"CgroupParents":  func(r, a *Policy) bool { return subset(r.CgroupParents, a.CgroupParents) },
		"OOMScoreAdjMin": func(r, a *Policy) bool { return oomMin(r) >= oomMin(a) },
		"UserNamespace": func(r, a *Policy) bool {
			return r.UserNamespace == UserNamespaceRequired || a.UserNamespace == UserNamespaceOptional
		},
		"DelegatedIDs": func(r, a *Policy) bool {
			for _, d := range r.DelegatedIDs {
				if !slices.ContainsFunc(a.DelegatedIDs, func(x IDRange) bool {
					return d.Start >= x.Start && uint64(d.Start)+uint64(d.Size) <= uint64(x.Start)+uint64(x.Size)
				}) {
					return false
				}
			}
			return true
		},
		"DefaultLimits":     func(r, a *Policy) bool { return limitNoLooser(r.DefaultLimits, a.DefaultLimits) },
		"MaxLimits":         func(r, a *Policy) bool { return limitNoLooser(r.MaxLimits, a.MaxLimits) },
		"MaxCommandTimeout": func(r, a *Policy) bool { return r.CommandTimeout() <= a.CommandTimeout() },
		"OnViolation":       func(r, a *Policy) bool { return r.OnViolation == "kill" || a.OnViolation == "deny" },
		"Audit":             func(r, a *Policy) bool { return r.Audit == "files" || a.Audit == "" },
		"Egress":            func(r, a *Policy) bool { return subset(r.Egress, a.Egress) },
		"EgressLimits": func(r, a *Policy) bool {
			x, y := r.EgressLimits, a.EgressLimits
			return x.Connections <= y.Connections && x.IdleTimeout <= y.IdleTimeout && (y.Bytes == 0 || (x.Bytes != 0 && x.Bytes <= y.Bytes))
		},
		"OnEgressRefusal": func(r, a *Policy) bool { return r.OnEgressRefusal == "kill" || a.OnEgressRefusal == "deny" },
	}
	// Fields that are not a strictness: the tightened policy keeps the
	// file's (its pool, its rootless user, where it was read from).
	fromFile := map[string]bool{"IDPool": true, "Rootless": true, "Source": true, "Modified": true}
	typ := reflect.TypeOf(Policy{})
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if _, ok := noLooser[name]; !ok && !fromFile[name] && name != "Profile" {
			t.Errorf("Policy.%s: nothing says how org.maka.profile tightens it (meetRestricted) and how to tell looser (this test)", name)
		}
	}
	restricted, _ := BuiltinPolicy(ProfileRestricted)
	for _, doc := range []string{
		`{"profile": "baseline"}`,
		// baseline, every item stricter than restricted's where it can be
		`{"profile": "baseline", "maxCommandTimeout": 30, "oomScoreAdjMin": 500, "capabilities": ["CAP_KILL"],
		  "networkModes": ["closed"], "sysctls": [], "hooks": false, "writableRootfs": false, "cgroupParents": ["/k8s.io"],
		  "onViolation": "kill", "audit": "files", "userNamespace": "required", "delegatedIDs": [],
		  "bindPaths": [{"path": "/srv/data", "mode": "ro"}],
		  "defaultLimits": {"memory": 1048576, "swap": 0, "pids": 8, "cpus": 0.5, "tmpfsSize": 1048576, "timeout": 10},
		  "maxLimits": {"memory": 2097152, "swap": 0, "pids": 16, "cpus": 1, "tmpfsSize": 2097152, "timeout": 20}}`,
		// baseline with a few items looser than restricted's, some stricter
		`{"profile": "baseline", "maxCommandTimeout": 600, "oomScoreAdjMin": -500, "devices": ["/dev/fuse"],
		  "defaultLimits": {"timeout": 0}, "maxLimits": {"memory": 0, "swap": -1, "pids": 0, "cpus": 0, "timeout": 0}}`,
		`{"profile": "baseline", "maxCommandTimeout": 30, "defaultLimits": {"memory": 104857600}, "maxLimits": {"timeout": 60}}`,
		`{"profile": "baseline", "egress": ["*.example.com:443", "192.0.2.0/24:80"], "egressLimits": {"connections": 8, "idleTimeout": 9999, "bytes": 1000},
		  "onEgressRefusal": "kill"}`,
	} {
		p, err := ParsePolicy([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		p.Source = "/etc/maka/test.json"
		r, err := p.Tighten(ProfileRestricted)
		if err != nil {
			t.Fatal(err)
		}
		if r.Profile != ProfileRestricted {
			t.Errorf("%s: profile %s", doc, r.Profile)
		}
		for name, ok := range noLooser {
			if !ok(r, p) {
				t.Errorf("%s: %s looser than the policy file's: %v, file %v", doc, name,
					reflect.ValueOf(*r).FieldByName(name), reflect.ValueOf(*p).FieldByName(name))
			}
			if !ok(r, restricted) {
				t.Errorf("%s: %s looser than restricted's: %v, restricted %v", doc, name,
					reflect.ValueOf(*r).FieldByName(name), reflect.ValueOf(*restricted).FieldByName(name))
			}
		}
		for name := range fromFile {
			if got, want := reflect.ValueOf(*r).FieldByName(name).Interface(), reflect.ValueOf(*p).FieldByName(name).Interface(); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s = %v, want the file's %v", doc, name, got, want)
			}
		}
		if err := r.validate(); err != nil {
			t.Errorf("%s: the tightened policy is not a valid policy: %v", doc, err)
		}
	}
}
