package specconv

import (
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// sameVerdictDocs are linux.resources documents both create (config.json)
// and update (--resources) take.
var sameVerdictDocs = []string{
	`{}`,
	`{"memory": {"limit": 134217728}}`, `{"memory": {"limit": -1}}`, `{"memory": {"limit": 8589934592}}`,
	`{"memory": {"limit": 134217728, "swap": 268435456}}`, `{"memory": {"limit": 134217728, "swap": 67108864}}`,
	`{"memory": {"swap": -1}}`, `{"memory": {"limit": -1, "swap": 1048576}}`,
	`{"memory": {"reservation": 67108864}}`, `{"memory": {"reservation": 8589934592}}`, `{"memory": {"reservation": -1}}`,
	`{"memory": {"limit": -1, "reservation": 8589934592}}`,
	`{"pids": {"limit": 0}}`, `{"pids": {"limit": -1}}`, `{"pids": {"limit": 100}}`, `{"pids": {"limit": 100000}}`,
	`{"cpu": {"quota": 50000, "period": 100000}}`, `{"cpu": {"quota": -1}}`, `{"cpu": {"quota": 500}}`, `{"cpu": {"quota": 1000000}}`,
	`{"cpu": {"period": 500}}`, `{"cpu": {"period": 50000}}`, `{"cpu": {"period": 10000, "quota": 50000}}`, `{"cpu": {"quota": 50000, "burst": 60000}}`,
	`{"cpu": {"quota": 300000, "burst": 200000}}`, `{"cpu": {"quota": 100000, "burst": 50000}}`,
	`{"cpu": {"shares": 1}}`, `{"cpu": {"shares": 1024}}`, `{"cpu": {"idle": 2}}`, `{"cpu": {"idle": 1}}`,
	`{"cpu": {"cpus": "0-1"}}`, `{"cpu": {"cpus": "0-"}}`, `{"cpu": {"mems": "0,x"}}`, `{"cpu": {"realtimeRuntime": 1000}}`,
	`{"unified": {"memory.max": "max"}}`, `{"unified": {"memory.max": "0"}}`, `{"unified": {"memory.min": "1048576"}}`,
	`{"unified": {"memory.min": "8589934592"}}`, `{"unified": {"memory.max": "max", "memory.min": "8589934592"}}`,
	`{"unified": {"memory.high": "0"}}`, `{"unified": {"memory.high": "8589934592"}}`, `{"unified": {"cpu.weight": "0"}}`,
	`{"unified": {"cpu.weight": "100"}}`, `{"unified": {"cpuset.cpus": "0-"}}`, `{"unified": {"cpu.max": "max"}}`,
	`{"unified": {"cpu.max": "50000 10000"}}`, `{"unified": {"io.max": "x"}}`, `{"unified": {"pids.max": "ten"}}`,
	`{"unified": {"memory.swap.max": "1048576"}}`, `{"unified": {"memory.low": "max"}}`,
	`{"memory": {"kernel": 1}}`, `{"memory": {"swappiness": 10}}`, `{"blockIO": {"weight": 5}}`, `{"blockIO": {"weight": 500}}`,
}

// update refuses exactly what create refuses: each document through both
// paths, under policies with and without ceilings, from the state create
// gives a container whose config.json sets no limit (the policy's
// defaults), so that what a document leaves out is the same on both.
// (A period given alone differs in what it leaves out: create's default
// quota is CPUs at that period, update keeps the cgroup's quota in µs, as
// runc; both then hold the result to the same ceiling.) Before the one
// checker, update took cpuset lists create refuses ("0-", "0,x"), a swap
// limit with unlimited memory, and left blockIO.weight to the flags.
func TestUpdateRefusesWhatCreateRefuses(t *testing.T) {
	for _, doc := range []string{`{"profile": "restricted"}`, `{"profile": "restricted", "maxLimits": {"swap": 1073741824}}`,
		`{"profile": "baseline", "maxLimits": {"memory": 0, "swap": -1, "pids": 0, "cpus": 0}}`} {
		p := mustPolicy(t, doc)
		for _, rdoc := range sameVerdictDocs {
			_, v, err := Explain(testHost, limitSpec(t, resourcesDoc(t, rdoc)), p)
			if err != nil {
				t.Fatal(err)
			}
			// The same items, field for field: create's under
			// linux.resources, update's as --resources names them.
			var created, updated []string
			for _, it := range v.Items {
				created = append(created, strings.Replace(it.String(), "linux.resources.", "--resources ", 1))
			}
			def := p.DefaultLimits
			pids, quota := def.Pids, int64(def.Cpus*100000)
			cur := EnforcedOf(&cgroups.Resources{Memory: def.Memory, MemorySwap: def.Memory + def.Swap, PidsLimit: &pids, CpuQuota: quota, CpuPeriod: 100000})
			_, _, items := CheckUpdate(p, cur, resourcesDoc(t, rdoc), fromResources)
			for _, it := range items {
				updated = append(updated, it.String())
			}
			slices.Sort(created)
			slices.Sort(updated)
			if !slices.Equal(created, updated) {
				t.Errorf("%s, %s:\ncreate %q\nupdate %q", doc, rdoc, strings.Join(created, "; "), strings.Join(updated, "; "))
			}
		}
	}
}

// limitSpec is a config.json every policy takes, with resources r.
func limitSpec(t *testing.T, r *specs.LinuxResources) *specs.Spec {
	var ns []specs.LinuxNamespace
	for _, n := range []specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.NetworkNamespace} {
		ns = append(ns, specs.LinuxNamespace{Type: n})
	}
	return &specs.Spec{Version: "1.0.2", Root: &specs.Root{Path: t.TempDir(), Readonly: true},
		Process: &specs.Process{Args: []string{"sh"}, Cwd: "/", NoNewPrivileges: true},
		Linux:   &specs.Linux{Namespaces: ns, Resources: r}}
}

// What create fixes for the sandbox's life, update refuses whatever the
// value (create checks each; the cgroup keeps it).
func TestUpdateRefusesWhatIsFixedAtCreate(t *testing.T) {
	p := mustPolicy(t, `{"profile": "baseline"}`)
	for doc, want := range map[string]string{
		`{"devices": [{"allow": false, "access": "rwm"}]}`:      "--resources devices: device rules never change after create",
		`{"hugepageLimits": [{"pageSize": "2MB", "limit": 1}]}`: "--resources hugepageLimits: fixed at create",
		`{"rdma": {"mlx5_0": {"hcaHandles": 1}}}`:               "--resources rdma: fixed at create",
		`{"blockIO": {"leafWeight": 500}}`:                      "--resources blockIO: leaf weights are cgroup v1's",
		`{"network": {"classID": 1}}`:                           "--resources network: maka does not apply this field",
	} {
		_, _, items := CheckUpdate(p, EnforcedOf(u1Resources()), resourcesDoc(t, doc), fromResources)
		if len(items) == 0 || !strings.Contains(items[0].String(), want) {
			t.Errorf("%s: items %v, want %q", doc, items, want)
		}
	}
}
