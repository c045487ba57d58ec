package libmaka

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A limits object changes only the keys it names: the exact line a
// BOUNDARY_REJECTED hint suggests must not lift every other ceiling.
func TestPolicyLimitsMergeFieldByField(t *testing.T) {
	p, err := ParsePolicy([]byte(`{"maxLimits": {"memory": 8589934592}, "defaultLimits": {"pids": 100}}`))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := BuiltinPolicy(ProfileRestricted)
	want.MaxLimits.Memory = 8 << 30
	want.DefaultLimits.Pids = 100
	want.Modified = true
	if !reflect.DeepEqual(p, want) {
		t.Errorf("merged policy:\n got %+v\nwant %+v", p, want)
	}
	if p.MaxLimits.Pids != 1024 || p.MaxLimits.Cpus != 4 || p.MaxLimits.TmpfsSize != 1<<30 || p.MaxLimits.Timeout != 3600 {
		t.Errorf("ceilings the file did not name were lost: %+v", p.MaxLimits)
	}
}

func TestPolicyErrorsNameTheKey(t *testing.T) {
	for doc, want := range map[string]string{
		`{"maxLimits": {"memory": -5}}`:                          "maxLimits.memory: -5 is negative",
		`{"defaultLimits": {"pids": -1}}`:                        "defaultLimits.pids: -1 is negative",
		`{"maxLimits": {"swap": -2}}`:                            "maxLimits.swap: -2 is negative (-1 means unlimited)",
		`{"maxLimits": {"cpus": -0.5}}`:                          "maxLimits.cpus: -0.5 is negative",
		`{"defaultLimits": {"memory": 8589934592}}`:              "defaultLimits.memory: 8 GiB is above maxLimits.memory (4 GiB)",
		`{"defaultLimits": {"memory": 0}}`:                       "defaultLimits.memory: unlimited is above maxLimits.memory (4 GiB)",
		`{"defaultLimits": {"swap": -1}}`:                        "defaultLimits.swap: unlimited is above maxLimits.swap",
		`{"maxLimits": {"tmpfsSize": 1048576}}`:                  "defaultLimits.tmpfsSize: 128 MiB is above maxLimits.tmpfsSize (1 MiB)",
		`{"defaultLimits": {"timeout": 7200}}`:                   "defaultLimits.timeout: 7200 s is above maxLimits.timeout (3600 s)",
		`{"capabilities": ["CAP_SYS_ADMN"]}`:                     `capabilities[0]: "CAP_SYS_ADMN" is not a capability`,
		`{"capabilities": ["SYS_ADMIN"]}`:                        `capabilities[0]: "SYS_ADMIN" is not a capability`,
		`{"profile": "baseline"} {"profile": "restricted"}`:      "a second JSON document",
		`{"profile": "baseline"} x`:                              "unexpected data after the policy object",
		`{"maxLimits": {"memory": "4g"}}`:                        "maxLimits.memory: expected a number, got a string",
		`{"maxLimits": {"pids": 1.5}}`:                           "maxLimits.pids: expected a whole number within range, got 1.5",
		`{"maxLimits": []}`:                                      "maxLimits: expected an object, got an array",
		`{"hooks": "yes"}`:                                       "hooks: expected true or false, got a string",
		`{"capabilities": "CAP_KILL"}`:                           "capabilities: expected an array, got a string",
		`["restricted"]`:                                         "policy: expected an object, got an array",
		`{"maxLimits": {"memroy": 1}}`:                           `unknown key "memroy"`,
		``:                                                       "empty policy",
		`{"profile": `:                                           "malformed JSON",
		`{"bindPaths": [{"path": "/srv", "mode": "ro", "x":1}]}`: `unknown key "x"`,
		`{"maxCommandTimeout": 0}`:                               "maxCommandTimeout: 0 is not a timeout (seconds, 1 to 86400)",
		`{"maxCommandTimeout": -3}`:                              "maxCommandTimeout: -3 is not a timeout",
		`{"maxCommandTimeout": 86401}`:                           "maxCommandTimeout: 86401 is not a timeout",
		`{"maxCommandTimeout": "3m"}`:                            "maxCommandTimeout: expected a number, got a string",
	} {
		_, err := ParsePolicy([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePolicy(%s): err = %v, want one containing %q", doc, err, want)
			continue
		}
		for _, goName := range []string{"libmaka", "policyFile", "limitsFile", "Go struct", "int64", "float64", "[]string"} {
			if strings.Contains(err.Error(), goName) {
				t.Errorf("ParsePolicy(%s): error names Go's %q: %v", doc, goName, err)
			}
		}
	}
}

func TestPolicyValidFiles(t *testing.T) {
	for _, doc := range []string{
		`{"capabilities": ["CAP_NET_BIND_SERVICE", "CAP_SYS_ADMIN", "CAP_BPF", "CAP_CHECKPOINT_RESTORE"]}`,
		`{"profile": "baseline", "maxLimits": {"swap": 0}}`,
		`{"maxLimits": {"memory": 0, "pids": 0, "cpus": 0, "tmpfsSize": 0, "timeout": 0}, "defaultLimits": {"memory": 0}}`,
		`{"maxLimits": {"swap": -1}, "defaultLimits": {"swap": -1}}`,
		"{\"profile\": \"restricted\"}\n\n",
	} {
		if _, err := ParsePolicy([]byte(doc)); err != nil {
			t.Errorf("ParsePolicy(%s): %v", doc, err)
		}
	}
}

func TestPolicySourceAndModified(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "same.json")
	changed := filepath.Join(dir, "changed.json")
	os.WriteFile(same, []byte(`{"profile": "restricted", "maxLimits": {"memory": 4294967296}}`), 0o644)
	os.WriteFile(changed, []byte(`{"maxLimits": {"memory": 1073741824}}`), 0o644)
	p, err := LoadPolicy(same)
	if err != nil || p.Source != same || p.Modified {
		t.Errorf("same as built in: %+v, %v", p, err)
	}
	p, err = LoadPolicy(changed)
	if err != nil || p.Source != changed || !p.Modified {
		t.Fatalf("changed: %+v, %v", p, err)
	}
	if got, want := p.Describe(), "restricted (modified by "+changed+")"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	b, _ := BuiltinPolicy(ProfileBaseline)
	if got := b.Describe(); got != "baseline (built-in)" {
		t.Errorf("Describe() = %q", got)
	}
	_, err = LoadPolicy(filepath.Join(dir, "missing.json"))
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing explicit file: %v", err)
	}
	os.WriteFile(changed, []byte(`{"maxLimits": {"memory": -5}}`), 0o644)
	_, err = LoadPolicy(changed)
	if err == nil || err.Error() != "policy "+changed+": maxLimits.memory: -5 is negative" {
		t.Errorf("err = %v", err)
	}
}

func TestLimitsStringSaysUnlimited(t *testing.T) {
	b, _ := BuiltinPolicy(ProfileBaseline)
	got := b.MaxLimits.String()
	want := "memory 64 GiB, swap unlimited, pids 32768, cpus 64, tmpfs 16 GiB, timeout unlimited"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	got = Limits{}.String()
	if strings.Contains(got, " 0") {
		t.Errorf("a zero limit printed as 0: %q", got)
	}
	r, _ := BuiltinPolicy(ProfileRestricted)
	if got := r.DefaultLimits.String(); got != "memory 1 GiB, swap none, pids 256, cpus 2, tmpfs 128 MiB, timeout 180 s" {
		t.Errorf("String() = %q", got)
	}
}

// A policy file that is not UTF-8 is refused: encoding/json would read a
// path or a capability with U+FFFD in place of its bytes.
func TestPolicyRefusesInvalidUTF8(t *testing.T) {
	_, err := ParsePolicy([]byte("{\"bindPaths\": [{\"path\": \"/srv/\xc3(\", \"mode\": \"ro\"}]}"))
	if err == nil || !strings.Contains(err.Error(), "malformed JSON: a byte that is not UTF-8 (at byte 30)") {
		t.Errorf("err = %v", err)
	}
}

// A bounded command's longest deadline: 180 s unless the policy says
// otherwise; a record written before the key existed reads as 180 s.
func TestPolicyCommandTimeout(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want time.Duration
	}{
		{`{}`, 180 * time.Second},
		{`{"profile": "baseline"}`, 180 * time.Second},
		{`{"maxCommandTimeout": 600}`, 600 * time.Second},
		{`{"profile": "baseline", "maxCommandTimeout": 5}`, 5 * time.Second},
	} {
		p, err := ParsePolicy([]byte(c.doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.CommandTimeout(); got != c.want {
			t.Errorf("%s: %s, want %s", c.doc, got, c.want)
		}
	}
	if got := (&Policy{}).CommandTimeout(); got != 180*time.Second {
		t.Errorf("a policy without the key: %s", got)
	}
	p, _ := ParsePolicy([]byte(`{"maxCommandTimeout": 600}`))
	if !p.Modified {
		t.Error("a policy that changes maxCommandTimeout is not marked modified")
	}
}
