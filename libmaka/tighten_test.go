package libmaka

import "testing"

// An annotation asking for restricted gets the stricter of the policy file
// and restricted, item by item: never restricted's own larger ceilings.
func TestTightenKeepsTheFilesStricterItems(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"profile": "baseline", "audit": "files",
		"defaultLimits": {"memory": 268435456, "pids": 64},
		"maxLimits": {"memory": 268435456, "pids": 64}}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Tighten(ProfileRestricted)
	if err != nil {
		t.Fatal(err)
	}
	if r.Profile != ProfileRestricted || r.MaxLimits.Memory != 268435456 || r.MaxLimits.Pids != 64 ||
		r.DefaultLimits.Memory != 268435456 || r.DefaultLimits.Pids != 64 || r.Audit != "files" {
		t.Errorf("tightened = %+v", r)
	}
	if len(r.Capabilities) != 0 || len(r.BindPaths) != 0 || r.WritableRootfs || r.Hooks || r.OnViolation != "kill" {
		t.Errorf("restricted's own items lost: %+v", r)
	}
	if r.MaxLimits.Cpus != 4 || r.MaxLimits.Swap != 0 || r.MaxLimits.Timeout != 3600 {
		t.Errorf("baseline's looser items leaked: %+v", r.MaxLimits)
	}
}
