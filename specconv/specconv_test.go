package specconv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runc/libcontainer/configs"
	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func exampleSpec(t testing.TB) *specs.Spec {
	t.Helper()
	s := rspecconv.Example()
	s.Process.Terminal = false
	return s
}

func TestLoadSpecErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadSpec(dir); err == nil || !strings.Contains(err.Error(), "config.json not found") {
		t.Fatalf("missing config.json: err = %v", err)
	}
	cases := map[string]string{
		`{"ociVersion": "1.0.0",`:           "line 1",
		"{\n \"process\": {\"args\": 3}\n}": "process.args",
		`{} {}`:                             "trailing data",
		`[1]`:                               "the document: expected an object, got an array",
		`{"process": {"args": [1]}}`:        "process.args: expected a string, got a number",
		`{"linux": {"uidMappings": [{"size": -1}]}}`: "linux.uidMappings.size: expected a whole number within range, got -1",
	}
	for doc, want := range cases {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSpec(dir)
		if err == nil || !strings.Contains(err.Error(), "malformed JSON") || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadSpec(%q): err = %v; want malformed JSON mentioning %q", doc, err, want)
		}
		// config.json's words, not specs-go's.
		for _, goWord := range []string{"Go ", "struct", "specs.", "[]", "uint32", "int64", "cannot unmarshal"} {
			if err != nil && strings.Contains(err.Error(), goWord) {
				t.Errorf("LoadSpec(%q): %v names Go's %q", doc, err, goWord)
			}
		}
	}
}

// A relative bind source is the bundle's (runtime spec, runc): LoadSpec
// makes it absolute, so that the policy checks the host path the bind
// takes; other mounts' sources (tmpfs, proc) are names, left alone.
func TestLoadSpecRelativeBindSources(t *testing.T) {
	dir := t.TempDir()
	doc := `{"ociVersion": "1.0.0", "mounts": [
		{"destination": "/a", "type": "bind", "source": "."},
		{"destination": "/b", "source": "./config.json", "options": ["rbind", "ro"]},
		{"destination": "/c", "type": "bind", "source": "/abs"},
		{"destination": "/d", "type": "tmpfs", "source": "tmpfs"},
		{"destination": "/e", "type": "none", "source": "../up", "options": ["bind"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSpec(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{dir, filepath.Join(dir, "config.json"), "/abs", "tmpfs", filepath.Join(filepath.Dir(dir), "up")}
	for i, m := range s.Mounts {
		if m.Source != want[i] {
			t.Errorf("mounts[%d].source = %q, want %q", i, m.Source, want[i])
		}
	}
}

// The most hostile relative source climbs out of the bundle to a
// sensitive host path: resolved, it is checked as that path and refused,
// naming the field, as the absolute form is.
func TestRelativeBindSourceToHostPathRefused(t *testing.T) {
	dir := t.TempDir()
	s := exampleSpec(t)
	s.Mounts = append(s.Mounts, specs.Mount{Destination: "/x", Type: "bind", Source: strings.Repeat("../", 40) + "etc", Options: []string{"rbind", "ro"}})
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadSpec(dir)
	if err != nil {
		t.Fatal(err)
	}
	i := len(loaded.Mounts) - 1
	if loaded.Mounts[i].Source != "/etc" {
		t.Fatalf("source %q, want /etc", loaded.Mounts[i].Source)
	}
	_, err = ToBoundary(testHost, loaded, policy(t, "baseline"))
	field := fmt.Sprintf("mounts[%d].source", i)
	if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), "/etc") {
		t.Fatalf("err = %v, want a refusal naming %s and /etc", err, field)
	}
}

func TestValidateNamesFields(t *testing.T) {
	s := exampleSpec(t)
	s.Version = ""
	s.Process.Args = nil
	s.Process.Cwd = "relative"
	s.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_BOGUS"}}
	// What libcontainer would refuse only inside the init, after the cgroup.
	s.Process.Env = []string{"PATH=/bin", "NOEQUALS", "=x", "A=b\x00c", "EMPTY="}
	err := Validate(testHost, s)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, field := range []string{"ociVersion", "process.args", "process.cwd", "process.rlimits[0].type",
		`process.env[1]: "NOEQUALS" is not NAME=value`, `process.env[2]: "=x" has an empty name`, `process.env[3]: the variable "A" contains a NUL byte`} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
	if strings.Contains(err.Error(), "env[0]") || strings.Contains(err.Error(), "env[4]") {
		t.Errorf("error %q names a well-formed entry", err)
	}
	if err := Validate(testHost, &specs.Spec{Version: "1.0.0"}); err == nil || !strings.Contains(err.Error(), "root.path") || !strings.Contains(err.Error(), "process: must be set") {
		t.Errorf("empty spec: err = %v", err)
	}
}

// execve refuses any argument or variable over 128 KiB and more of them
// than a quarter of the stack limit (6 MiB at most): such a process cannot
// start, and is refused before anything exists (issue 28: a 20 MB
// process.args was created, then failed inside).
func TestValidateRefusesWhatExecveCannotTake(t *testing.T) {
	host := hostWith(func(f *libmaka.HostFacts) { f.StackLimit = 8 << 20 }) // Linux's default: 2 MiB of arguments
	s := exampleSpec(t)
	s.Process.Args = []string{"/bin/echo", strings.Repeat("a", 20<<20)}
	err := Validate(host, s)
	if err == nil || !strings.Contains(err.Error(), "process.args[1]") {
		t.Errorf("a 20 MB argument: err = %v, want process.args[1] named", err)
	}
	s = exampleSpec(t)
	s.Process.Args = []string{"/bin/echo"}
	for i := 0; i < 24; i++ {
		s.Process.Args = append(s.Process.Args, strings.Repeat("a", 120<<10))
	}
	s.Process.Env = append(s.Process.Env, strings.Repeat("B", 100)+"="+strings.Repeat("b", 200<<10))
	err = Validate(host, s)
	if err == nil || !strings.Contains(err.Error(), "process.args: ") || !strings.Contains(err.Error(), "process.env[") {
		t.Errorf("2.9 MiB of arguments and a 200 KiB variable: err = %v, want process.args and the env entry named", err)
	} else if len(err.Error()) > 1024 {
		t.Errorf("the error echoes config.json's values: %d bytes", len(err.Error()))
	}
	// The same under a 64 MiB stack limit set in process.rlimits: only the
	// variable is too long.
	s.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_STACK", Soft: 64 << 20, Hard: 64 << 20}}
	err = Validate(host, s)
	if err == nil || strings.Contains(err.Error(), "process.args: ") || !strings.Contains(err.Error(), "process.env[") {
		t.Errorf("under a 64 MiB stack: err = %v, want only the env entry named", err)
	}
	// What a process may have: 1 MiB of arguments, each under 128 KiB.
	s = exampleSpec(t)
	for i := 0; i < 8; i++ {
		s.Process.Args = append(s.Process.Args, strings.Repeat("a", 127<<10))
	}
	if err := Validate(host, s); err != nil {
		t.Errorf("1 MiB of arguments: %v", err)
	}
	// A malformed entry is quoted short, never whole.
	s.Process.Env = []string{strings.Repeat("x", 1<<20)}
	if err := Validate(host, s); err == nil || len(err.Error()) > 1024 {
		t.Errorf("a 1 MiB malformed entry: %d bytes of error", len(fmt.Sprint(err)))
	}
}

func TestToLibcontainerMovesPoststart(t *testing.T) {
	s := exampleSpec(t)
	s.Root.Path = t.TempDir()
	s.Hooks = &specs.Hooks{
		Prestart:      []specs.Hook{{Path: "/bin/true"}},
		CreateRuntime: []specs.Hook{{Path: "/bin/false"}},
		Poststart:     []specs.Hook{{Path: "/bin/true"}},
		Poststop:      []specs.Hook{{Path: "/bin/false"}},
	}
	p := policy(t, "baseline")
	p.HookPaths = []string{"/bin/true", "/bin/false"}
	b, err := ToBoundary(testHost, s, p)
	if err != nil {
		t.Fatal(err)
	}
	convertable(t, b, "c1")
	out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Poststart) != 1 || out.Poststart[0].Path != "/bin/true" {
		t.Errorf("Poststart = %+v", out.Poststart)
	}
	if out.Config.HasHook(configs.Poststart) {
		t.Error("poststart hooks left in libcontainer's config: it would run them at create")
	}
	// Poststop hooks are maka's too: a failing one is a warning.
	if out.Config.HasHook(configs.Poststop) {
		t.Error("poststop hooks left in libcontainer's config: a failing one would fail the delete")
	}
	if len(out.Poststop) != 1 || out.Poststop[0].Path != "/bin/false" {
		t.Errorf("Poststop = %+v", out.Poststop)
	}
	// Prestart hooks run first among the createRuntime ones, wrapped to
	// see "created"; the createRuntime hooks follow as given.
	if out.Config.HasHook(configs.Prestart) {
		t.Error("prestart hooks left in libcontainer's own list: they would see \"creating\"")
	}
	cr := out.Config.Hooks[configs.CreateRuntime]
	if len(cr) != 2 {
		t.Fatalf("createRuntime hooks = %d, want the prestart wrapper and one", len(cr))
	}
	if _, ok := cr[0].(configs.FuncHook); !ok {
		t.Errorf("createRuntime[0] is %T, want the prestart wrapper", cr[0])
	}
	if ch, ok := cr[1].(configs.CommandHook); !ok || ch.Path != "/bin/false" {
		t.Errorf("createRuntime[1] = %+v, want /bin/false", cr[1])
	}
	if out.Config.Cgroups.Path != "/maka/c1" {
		t.Errorf("cgroup path = %q, want /maka/c1", out.Config.Cgroups.Path)
	}
}

func TestToLibcontainerResources(t *testing.T) {
	s := exampleSpec(t)
	s.Root.Path = t.TempDir()
	mem, swap, pids := int64(64<<20), int64(64<<20), int64(64)
	quota, period := int64(50000), uint64(100000)
	s.Linux.Resources = &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &mem, Swap: &swap},
		Pids:   &specs.LinuxPids{Limit: &pids},
		CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
	}
	b, err := ToBoundary(testHost, s, policy(t, "baseline"))
	if err != nil {
		t.Fatal(err)
	}
	convertable(t, b, "c1")
	out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Config.Cgroups.Resources
	if r.Memory != mem || r.MemorySwap != swap || r.PidsLimit == nil || *r.PidsLimit != pids || r.CpuQuota != quota || r.CpuPeriod != period {
		t.Errorf("resources = %+v", r)
	}
}

// runc's cgroups.bats "resources.unified only" and "override": cgroup
// files by name reach the cgroup as the fields they are (the limits, the
// reservation, the cpuset) or, for memory.min, memory.high and cpu.weight,
// by name; a weight by name overrides shares, as runc writes it last.
func TestToLibcontainerUnifiedByName(t *testing.T) {
	free, err := libmaka.ParsePolicy([]byte(`{"profile": "baseline", "maxLimits": {"memory": 0, "pids": 0, "cpus": 0}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := exampleSpec(t)
	s.Root.Path = t.TempDir()
	limit, shares, quota, period, burst := int64(33554432), uint64(3333), int64(40000), uint64(100000), uint64(5000)
	s.Linux.Resources = &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &limit},
		CPU:    &specs.LinuxCPU{Shares: &shares, Quota: &quota, Period: &period, Burst: &burst},
		Unified: map[string]string{"memory.min": "131072", "memory.low": "524288", "memory.high": "20971520",
			"memory.max": "41943040", "pids.max": "99", "cpu.max": "10000 100000", "cpu.weight": "42", "cpuset.cpus": "0", "cpuset.mems": "0"},
	}
	b, err := ToBoundary(testHost, s, free)
	if err != nil {
		t.Fatal(err)
	}
	cg := b.Cgroup
	if cg.CPUShares != nil || *cg.CPUWeight != 42 || *cg.MemoryMin != 131072 || *cg.MemoryReservation != 524288 || *cg.MemoryHigh != 20971520 ||
		*cg.CPUBurst != 5000 || cg.Cpus != "0" || cg.Mems != "0" || b.Limits.Memory != 41943040 || b.Limits.Pids != 99 || b.Limits.Cpus != 0.1 {
		t.Errorf("contract: cgroup %+v limits %+v", cg, b.Limits)
	}
	convertable(t, b, "u1")
	out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Config.Cgroups.Resources
	want := map[string]string{"memory.min": "131072", "memory.high": "20971520", "cpu.weight": "42"}
	if !maps.Equal(r.Unified, want) {
		t.Errorf("unified %v, want %v", r.Unified, want)
	}
	if r.Memory != 41943040 || *r.PidsLimit != 99 || r.CpuQuota != 10000 || r.CpuPeriod != 100000 || r.CpuShares != 0 ||
		r.MemoryReservation != 524288 || *r.CpuBurst != 5000 || r.CpusetCpus != "0" || r.CpusetMems != "0" {
		t.Errorf("resources %+v", r)
	}
}

// The values by name and the burst are held like the fields they are.
func TestUnifiedByNameRefusals(t *testing.T) {
	for unified, want := range map[string]string{
		`{"memory.min": "2147483648"}`:                       `linux.resources.unified["memory.min"]: 2147483648 is above the memory limit 1073741824`,
		`{"memory.min": "max"}`:                              `linux.resources.unified["memory.min"]: max would protect more`,
		`{"memory.low": "2147483648"}`:                       `linux.resources.unified["memory.low"]: 2147483648 must be between 0 and the memory limit`,
		`{"cpu.weight": "10001"}`:                            `linux.resources.unified["cpu.weight"]: "10001" is not a weight between 1 and 10000`,
		`{"cpu.weight": "-1"}`:                               `"-1" is not a weight`,
		`{"io.max": "8:0 rbps=0"}`:                           `linux.resources.unified["io.max"]: "rbps=0" is not a rate`,
		`{"io.max": "8:0 rbps=1 iops=2"}`:                    `linux.resources.unified["io.max"]: "iops=2" is not a limit of io.max`,
		`{"io.max": "8 rbps=1"}`:                             `linux.resources.unified["io.max"]: "8" is not a device`,
		`{"io.latency": "8:0 target=10"}`:                    `linux.resources.unified["io.latency"]: maka does not apply this cgroup file`,
		`{"cpu.max": "100000 100000", "cpu.max.burst": "1"}`: `linux.resources.unified["cpu.max.burst"]: maka does not apply`,
	} {
		s := sandboxSpec(t)
		s.Linux.Resources = &specs.LinuxResources{}
		if err := json.Unmarshal([]byte(unified), &s.Linux.Resources.Unified); err != nil {
			t.Fatal(err)
		}
		_, err := ToBoundary(testHost, s, policy(t, "restricted"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", unified, err, want)
		}
	}
	for _, c := range []struct {
		quota int64
		burst uint64
		want  string
	}{
		{100000, 100001, "linux.resources.cpu.burst: the burst (100001 µs) is above the quota (100000 µs)"},
		{400000, 1000, `linux.resources.cpu.burst: quota and burst make 4.01 CPUs in one period, more than profile restricted allows (4) (policy: "maxLimits": {"cpus": 4.01})`},
		{-1, 1000, "linux.resources.cpu.quota: an unlimited CPU quota is not allowed"},
	} {
		s := sandboxSpec(t)
		period := uint64(100000)
		s.Linux.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: &c.quota, Period: &period, Burst: &c.burst}}
		_, err := ToBoundary(testHost, s, policy(t, "restricted"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("quota %d burst %d: err %v, want %q", c.quota, c.burst, err, c.want)
		}
	}
	// Within the ceiling a burst is allowed under restricted too.
	s := sandboxSpec(t)
	quota, period, burst := int64(100000), uint64(100000), uint64(100000)
	s.Linux.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: &quota, Period: &period, Burst: &burst}}
	if b, err := ToBoundary(testHost, s, policy(t, "restricted")); err != nil || *b.Cgroup.CPUBurst != burst {
		t.Errorf("1 CPU with a burst of 1: %v", err)
	}
}

func TestNewProcess(t *testing.T) {
	p := &specs.Process{
		Args: []string{"sh"}, Cwd: "/", Env: []string{"A=1"},
		User:    specs.User{UID: 1000, GID: 100, AdditionalGids: []uint32{5, 6}},
		Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 512}},
	}
	lp, err := NewProcess(testHost, p, true)
	if err != nil {
		t.Fatal(err)
	}
	if !lp.Init || lp.UID != 1000 || lp.GID != 100 || len(lp.AdditionalGroups) != 2 || lp.Cwd != "/" {
		t.Errorf("process = %+v", lp)
	}
	if len(lp.Rlimits) != 1 || lp.Rlimits[0].Type != 7 || lp.Rlimits[0].Soft != 512 {
		t.Errorf("rlimits = %+v", lp.Rlimits)
	}
	if _, err := NewProcess(testHost, &specs.Process{Cwd: "/"}, false); err == nil || !strings.Contains(err.Error(), "process.args") {
		t.Errorf("empty args: err = %v", err)
	}
}

// goInternals matches what an error must never show a user: Go's type and
// struct-field names, encoding/json's own prefix.
var goInternals = regexp.MustCompile(`specs\.|libmaka\.|Go value|Go struct|struct field|(^|[^.\w])json: `)

// FuzzParseSpec: any byte string either decodes or gives an error naming
// config.json; what decodes either converts or gives an error; nothing panics.
func FuzzParseSpec(f *testing.F) {
	base, _ := json.Marshal(rspecconv.Example())
	f.Add(base)
	f.Add([]byte(`{"ociVersion":"1.3.0","process":{"args":["sh"],"cwd":"/"},"root":{"path":"rootfs"},"linux":{}}`))
	f.Add([]byte(`{"process":{"rlimits":[{"type":"RLIMIT_X"}]}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := ParseSpec("config.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			if goInternals.MatchString(strings.TrimPrefix(err.Error(), "config.json: ")) {
				t.Fatalf("error names Go internals: %v", err)
			}
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("a document that is not UTF-8 accepted")
		}
		// What parses means one thing: encoded and parsed again, it
		// encodes to the same bytes.
		a, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseSpec("config.json", a)
		if err != nil {
			t.Fatalf("re-encoded spec refused: %v", err)
		}
		if b, _ := json.Marshal(again); !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the spec:\n%s\n%s", a, b)
		}
		if err := Validate(testHost, spec); err != nil {
			if !strings.Contains(err.Error(), ": ") {
				t.Fatalf("validation error names no field: %v", err)
			}
			return
		}
		if spec.Process != nil {
			_, _ = NewProcess(testHost, spec.Process, true)
		}
	})
}

// A config.json with a byte that is not UTF-8 is refused, naming where:
// encoding/json would turn it into U+FFFD and the sandbox would get a
// hostname (or an argument, a path) other than the one written.
func TestParseSpecRefusesInvalidUTF8(t *testing.T) {
	_, err := ParseSpec("config.json", []byte("{\n\"hostname\": \"a\xff\xfe\"}"))
	if err == nil || !strings.Contains(err.Error(), "not UTF-8") || !strings.Contains(err.Error(), "line 2, column 15") {
		t.Fatalf("err = %v", err)
	}
	if _, err := ParseSpec("config.json", []byte(`{"hostname": "caf\u00e9 café"}`)); err != nil {
		t.Fatalf("valid UTF-8 refused: %v", err)
	}
}

// The init's address-space limits are left to maka (applied once the init
// is parked, its filter loaded): libcontainer would apply them before the
// init compiles its seccomp filter, which then fails under a 1 GiB
// RLIMIT_AS. An exec'd process keeps them all.
func TestInitRlimitsDeferred(t *testing.T) {
	p := &specs.Process{
		Args: []string{"sh"}, Cwd: "/",
		Rlimits: []specs.POSIXRlimit{
			{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 512},
			{Type: "RLIMIT_AS", Hard: 2 << 30, Soft: 1 << 30},
			{Type: "RLIMIT_DATA", Hard: 3 << 30, Soft: 3 << 30},
		},
	}
	types := func(rls []configs.Rlimit) (out []int) {
		for _, rl := range rls {
			out = append(out, rl.Type)
		}
		return out
	}
	lp, err := NewProcess(testHost, p, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := types(lp.Rlimits); !slices.Equal(got, []int{unix.RLIMIT_NOFILE}) {
		t.Errorf("init's rlimits for libcontainer = %v, want only RLIMIT_NOFILE", got)
	}
	// (libcontainer v1.5.3 takes rlimits from the process only: its
	// config's Rlimits stay empty.)
	if lp, _ = NewProcess(testHost, p, false); len(lp.Rlimits) != 3 {
		t.Errorf("exec's rlimits = %v, want all three", lp.Rlimits)
	}
	got := InitRlimits(p)
	if len(got) != 2 || got[0] != (configs.Rlimit{Type: unix.RLIMIT_AS, Hard: 2 << 30, Soft: 1 << 30}) || got[1].Type != unix.RLIMIT_DATA {
		t.Errorf("InitRlimits = %+v", got)
	}
}

// The filter libcontainer compiles holds only the architectures the
// running kernel can present (kernelArchs); the contract keeps the
// profile's list, and no architecture is ever added.
func TestToLibcontainerSeccompArchs(t *testing.T) {
	native, ok := kernelSeccompArchs[runtime.GOARCH]
	if !ok {
		t.Skipf("no kernel architectures known for %s", runtime.GOARCH)
	}
	for _, tc := range []struct {
		name  string
		archs []specs.Arch // config.json's; nil: maka's own profile
		want  []string
	}{
		{"maka's profile", nil, native},
		{"a profile without the 32-bit ABI", []specs.Arch{specs.ArchX86_64, specs.ArchAARCH64}, []string{native[0]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := exampleSpec(t)
			s.Root.Path = t.TempDir()
			p := policy(t, "baseline")
			if tc.archs != nil {
				s.Linux.Seccomp = DefaultSeccomp(false)
				s.Linux.Seccomp.Architectures = tc.archs
				if runtime.GOARCH == "arm64" {
					s.Linux.Seccomp.Architectures = []specs.Arch{specs.ArchAARCH64, specs.ArchX86_64}
				}
			}
			b, err := ToBoundary(testHost, s, p)
			if err != nil {
				t.Fatal(err)
			}
			if b.Seccomp == nil {
				t.Fatal("no seccomp profile in the boundary")
			}
			contract := slices.Clone(b.Seccomp.Architectures)
			convertable(t, b, "c1")
			out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "c1"})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Config.Seccomp.Architectures; !slices.Equal(got, tc.want) {
				t.Errorf("libcontainer's architectures = %q, want %q", got, tc.want)
			}
			if !slices.Equal(b.Seccomp.Architectures, contract) {
				t.Errorf("the contract's architectures changed: %q, was %q", b.Seccomp.Architectures, contract)
			}
		})
	}
}

func TestKernelArchsNeverAdds(t *testing.T) {
	native := kernelSeccompArchs[runtime.GOARCH]
	if native == nil {
		t.Skip()
	}
	for _, in := range [][]string{nil, {}, {"arm"}, {native[0]}, {"mips", native[len(native)-1], "riscv64", native[0]}} {
		got := kernelArchs(in)
		for _, a := range got {
			if !slices.Contains(in, a) || !slices.Contains(native, a) {
				t.Errorf("kernelArchs(%q) = %q: %s was not asked for, or is not the kernel's", in, got, a)
			}
		}
		for _, a := range in {
			if slices.Contains(native, a) && !slices.Contains(got, a) {
				t.Errorf("kernelArchs(%q) = %q dropped the kernel's %s", in, got, a)
			}
		}
	}
}

// An SELinux label confines only under SELinux: on a host without it the
// labels stay in the contract and stay out of libcontainer's config (the
// kernel refuses a mount with context=, runtime-tools' linux_mount_label);
// on a host with it they are applied, init and exec alike.
func TestSELinuxLabelsOnlyWhereSELinuxIs(t *testing.T) {
	const mountLabel = "system_u:object_r:svirt_sandbox_file_t:s0:c715,c811"
	const procLabel = "system_u:system_r:svirt_lxc_net_t:s0:c715,c811"
	s := exampleSpec(t)
	s.Root.Path = t.TempDir()
	s.Linux.MountLabel = mountLabel
	s.Process.SelinuxLabel = procLabel
	b, err := ToBoundary(testHost, s, policy(t, "baseline"))
	if err != nil {
		t.Fatal(err)
	}
	if b.MountLabel != mountLabel || b.Process.SelinuxLabel != procLabel {
		t.Fatalf("the contract lost the labels: %q %q", b.MountLabel, b.Process.SelinuxLabel)
	}
	convertable(t, b, "l1")
	for _, on := range []bool{false, true} {
		host := fakeHost{Host: testHost, facts: testHost.Facts(), selinux: &on}
		out, err := ToLibcontainer(host, testLease(b), Options{ID: "l1"})
		if err != nil {
			t.Fatal(err)
		}
		wantMount, wantProc := "", ""
		if on {
			wantMount, wantProc = mountLabel, procLabel
		}
		if out.Config.MountLabel != wantMount || out.Config.ProcessLabel != wantProc {
			t.Errorf("SELinux %v: libcontainer's labels %q %q, want %q %q", on, out.Config.MountLabel, out.Config.ProcessLabel, wantMount, wantProc)
		}
		p, err := NewProcess(host, ProcessOf(b), false)
		if err != nil {
			t.Fatal(err)
		}
		if p.Label != wantProc {
			t.Errorf("SELinux %v: exec's label %q, want %q", on, p.Label, wantProc)
		}
	}
}

// The kubelet (1.32 and later, cgroup v2, singleProcessOOMKill false: the
// default) sets memory.oom.group to 1 in every container's
// linux.resources.unified, so that the OOM killer ends the container as a
// whole. It lifts no limit: maka keeps it, in the contract and in the
// cgroup; any value but 0 or 1 is refused.
func TestToLibcontainerMemoryOOMGroup(t *testing.T) {
	for _, profile := range []string{`{"profile": "baseline"}`} {
		pol, err := libmaka.ParsePolicy([]byte(profile))
		if err != nil {
			t.Fatal(err)
		}
		s := exampleSpec(t)
		s.Root.Path = t.TempDir()
		s.Linux.Resources = &specs.LinuxResources{Unified: map[string]string{"memory.oom.group": "1"}}
		b, err := ToBoundary(testHost, s, pol)
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		if g := b.Cgroup.MemoryOOMGroup; g == nil || !*g {
			t.Errorf("%s: contract memoryOOMGroup %v, want true", profile, g)
		}
		convertable(t, b, "u1")
		out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "u1"})
		if err != nil {
			t.Fatal(err)
		}
		if v := out.Config.Cgroups.Unified["memory.oom.group"]; v != "1" {
			t.Errorf("%s: unified %v, want memory.oom.group 1", profile, out.Config.Cgroups.Unified)
		}
		for _, bad := range []string{"2", "yes", "-1"} {
			s.Linux.Resources = &specs.LinuxResources{Unified: map[string]string{"memory.oom.group": bad}}
			if _, err := ToBoundary(testHost, s, pol); err == nil || !strings.Contains(err.Error(), `unified["memory.oom.group"]`) {
				t.Errorf("%s: memory.oom.group %q: %v, want a refusal naming it", profile, bad, err)
			}
		}
	}
}

// A hostNetwork pod's shape (the host's network and uts namespaces) under
// maka's user namespace: the kernel refuses it a sysfs of its own, so its
// /sys is the host's, bound recursively read-only and private (as runc
// gives a rootless container without a network namespace), with the
// sandbox's own cgroup filesystem mounted over /sys/fs/cgroup after it
// (added where config.json has none, moved after /sys where it came
// first) and every other host mount below /sys masked: the attacker
// review of s25 found the host's whole cgroup tree, securityfs and bpffs
// visible through the first form. With a network namespace of its own the
// sandbox keeps its own sysfs.
func TestHostNetworkSysfsIsTheHostsReadOnly(t *testing.T) {
	pol, err := libmaka.ParsePolicy([]byte(`{"profile": "baseline", "networkModes": ["closed", "netns", "host"], "userNamespace": "required"}`))
	if err != nil {
		t.Fatal(err)
	}
	host := fakeHost{Host: testHost, facts: testHost.Facts(), sys: []string{"/sys/fs/cgroup", "/sys/kernel/security", "/sys/fs/bpf"}}
	for _, tc := range []struct {
		name    string
		hostNet bool
		cgroup  string // "": none; "first": before /sys; "after"
	}{
		{"own network", false, "after"},
		{"host network, cgroup after /sys", true, "after"},
		{"host network, no cgroup mount", true, ""},
		{"host network, cgroup before /sys", true, "first"},
	} {
		s := exampleSpec(t)
		s.Root.Path = t.TempDir()
		if tc.hostNet {
			s.Hostname = ""
			s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool {
				return n.Type == specs.NetworkNamespace || n.Type == specs.UTSNamespace
			})
		}
		var cg []specs.Mount
		s.Mounts = slices.DeleteFunc(s.Mounts, func(m specs.Mount) bool {
			if m.Type == "cgroup" || m.Type == "cgroup2" {
				cg = append(cg, m)
				return true
			}
			return false
		})
		if len(cg) == 0 {
			cg = []specs.Mount{{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"ro"}}}
		}
		switch tc.cgroup {
		case "after":
			s.Mounts = append(s.Mounts, cg...)
		case "first":
			s.Mounts = append(cg, s.Mounts...)
		}
		b, err := ToBoundary(testHost, s, pol)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		convertable(t, b, "hn")
		out, err := ToLibcontainer(host, testLease(b), Options{ID: "hn"})
		if err != nil {
			t.Fatal(err)
		}
		sys, cgAfter := -1, false
		for i, m := range out.Config.Mounts {
			switch m.Destination {
			case "/sys":
				sys = i
			case "/sys/fs/cgroup":
				cgAfter = sys >= 0 && (m.Device == "cgroup" || m.Device == "cgroup2")
			}
		}
		if sys < 0 {
			t.Fatalf("%s: no /sys mount", tc.name)
		}
		m := out.Config.Mounts[sys]
		if !tc.hostNet {
			if m.Device != "sysfs" {
				t.Errorf("%s: /sys is %q from %q, want a sysfs of its own", tc.name, m.Device, m.Source)
			}
			continue
		}
		const want = unix.MS_BIND | unix.MS_REC | unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV
		if m.Device != "bind" || m.Source != "/sys" || m.Flags&want != want ||
			m.RecAttr == nil || m.RecAttr.Attr_set&unix.MOUNT_ATTR_RDONLY == 0 {
			t.Errorf("%s: /sys is %+v (rec %+v), want the host's /sys bound recursively read-only", tc.name, m, m.RecAttr)
		}
		if !slices.ContainsFunc(m.PropagationFlags, func(p int) bool { return p&unix.MS_PRIVATE != 0 }) {
			t.Errorf("%s: /sys propagation %v, want private", tc.name, m.PropagationFlags)
		}
		if !cgAfter {
			t.Errorf("%s: no cgroup filesystem over /sys/fs/cgroup after /sys", tc.name)
		}
		for _, p := range []string{"/sys/kernel/security", "/sys/fs/bpf"} {
			if !slices.Contains(out.Config.MaskPaths, p) {
				t.Errorf("%s: the host's %s is not masked (%v)", tc.name, p, out.Config.MaskPaths)
			}
		}
		if slices.Contains(out.Config.MaskPaths, "/sys/fs/cgroup") {
			t.Errorf("%s: /sys/fs/cgroup masked: the sandbox's own cgroup mount would be hidden", tc.name)
		}
	}
}
