package specconv

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
)

const mib = int64(1) << 20 //nolint:unused // the tests' unit

// u1 as update.bats creates it: 128 MiB, no swap, 100 pids, 0.5 CPU.
func u1Resources() *cgroups.Resources {
	pids := int64(100)
	return &cgroups.Resources{Memory: 128 * mib, MemorySwap: 128 * mib, PidsLimit: &pids, CpuQuota: 50000, CpuPeriod: 100000}
}

func mustPolicy(t *testing.T, doc string) *libmaka.Policy {
	t.Helper()
	p, err := libmaka.ParsePolicy([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func resourcesDoc(t *testing.T, doc string) *specs.LinuxResources {
	t.Helper()
	var r specs.LinuxResources
	if err := json.Unmarshal([]byte(doc), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func fromResources(key string) string { return "--resources " + key }

// Every update that would lift or pass a ceiling, or that maka does not
// model, is refused naming the key.
func TestCheckUpdateRefuses(t *testing.T) {
	for _, profile := range []string{`{"profile": "restricted"}`, `{"profile": "baseline"}`} {
		p := mustPolicy(t, profile)
		for doc, want := range map[string]string{
			`{"memory": {"limit": -1}}`:                                                     "memory.limit: unlimited memory is not allowed by profile " + p.Profile,
			`{"memory": {"limit": -5}}`:                                                     "memory.limit: unlimited memory is not allowed by profile " + p.Profile,
			`{"memory": {"limit": 9223372036854775807}}`:                                    "memory.limit: ",
			`{"memory": {"limit": 67108864, "swap": 33554432}}`:                             "memory.swap: 33554432 is less than the memory limit 67108864",
			`{"memory": {"swap": -7}}`:                                                      "memory.swap: -7 is negative",
			`{"memory": {"reservation": 1073741824}}`:                                       "memory.reservation: 1073741824 must be between 0 and the memory limit",
			`{"memory": {"kernel": 1}}`:                                                     "memory.kernel: maka does not apply this field: cgroup v1 only",
			`{"pids": {"limit": -1}}`:                                                       "pids.limit: unlimited pids are not allowed",
			`{"pids": {"limit": -9}}`:                                                       "pids.limit: unlimited pids are not allowed",
			`{"pids": {"limit": 100000}}`:                                                   "pids.limit: 100000 pids exceed the largest allowed",
			`{"cpu": {"quota": -1}}`:                                                        "cpu.quota: an unlimited CPU quota is not allowed",
			`{"cpu": {"quota": 1000000000000}}`:                                             "cpu.quota: 1e+07 CPUs exceed the largest allowed",
			`{"cpu": {"period": 1}}`:                                                        "cpu.period: 1 µs is not a CPU period between 1000 and 1000000",
			`{"cpu": {"period": 1000, "quota": 100000}}`:                                    "cpu.quota: 100 CPUs exceed",
			`{"cpu": {"realtimeRuntime": 950000}}`:                                          "cpu.realtimeRuntime: maka does not apply this field: real-time scheduling",
			`{"cpu": {"realtimePeriod": 1000000}}`:                                          "cpu.realtimePeriod: maka does not apply this field: real-time scheduling",
			`{"cpu": {"burst": 60000}}`:                                                     "cpu.burst: the burst (60000 µs) is above the quota (50000 µs)",
			`{"cpu": {"shares": 1}}`:                                                        "cpu.shares: 1 is not between 2 and 262144",
			`{"unified": {"memory.max": "max"}}`:                                            `unified["memory.max"]: unlimited memory is not allowed by profile`,
			`{"unified": {"pids.max": "100000"}}`:                                           `unified["pids.max"]: 100000 pids exceed the largest allowed`,
			`{"unified": {"cpu.max": "max"}}`:                                               `unified["cpu.max"]: an unlimited CPU quota is not allowed`,
			`{"unified": {"io.max": "8:0 rbps=0"}}`:                                         `unified["io.max"]: "rbps=0" is not a rate`,
			`{"unified": {"io.latency": "8:0 target=10"}}`:                                  `unified["io.latency"]: maka does not apply this cgroup file`,
			`{"unified": {"memory.min": "1073741824"}}`:                                     `unified["memory.min"]: 1073741824 is above the memory limit`,
			`{"unified": {"memory.min": "max"}}`:                                            `unified["memory.min"]: max would protect more than the memory limit`,
			`{"unified": {"memory.low": "1073741824"}}`:                                     `unified["memory.low"]: 1073741824 must be between 0 and the memory limit`,
			`{"unified": {"memory.high": "0"}}`:                                             `unified["memory.high"]: 0 would throttle every allocation`,
			`{"unified": {"cpu.weight": "0"}}`:                                              `unified["cpu.weight"]: "0" is not a weight between 1 and 10000`,
			`{"unified": {"pids.max": "ten"}}`:                                              `unified["pids.max"]: "ten" is not a number or max`,
			`{"hugepageLimits": [{"pageSize": "2MB", "limit": 1}]}`:                         "hugepageLimits: fixed at create: update cannot change it",
			`{"blockIO": {"throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 0}]}}`: "blockIO.throttleReadBpsDevice[0].rate: 0 is not a rate",
			`{"devices": [{"allow": true, "access": "rwm"}]}`:                               "devices: device rules never change",
		} {
			_, _, items := CheckUpdate(p, EnforcedOf(u1Resources()), resourcesDoc(t, doc), fromResources)
			var all []string
			for _, it := range items {
				all = append(all, it.String())
			}
			got := strings.Join(all, "\n")
			if !strings.Contains(got, "--resources "+want) {
				t.Errorf("%s %s: items %q, want one containing %q", p.Profile, doc, got, want)
			}
		}
	}
	// Swap beyond the ceiling; unlimited swap under restricted.
	p := mustPolicy(t, `{"profile": "restricted"}`)
	for doc, want := range map[string]string{
		`{"memory": {"swap": -1}}`:                    `memory.swap: unlimited swap is not allowed by profile restricted (largest: 0 B) (policy: "maxLimits": {"swap": -1})`,
		`{"memory": {"swap": 268435456}}`:             `memory.swap: 128 MiB of swap exceeds the largest allowed by profile restricted (0 B) (policy: "maxLimits": {"swap": 134217728})`,
		`{"memory": {"limit": 8589934592}}`:           `memory.limit: 8 GiB exceeds the largest memory allowed by profile restricted (4 GiB) (policy: "maxLimits": {"memory": 8589934592})`,
		`{"cpu": {"period": 10000}}`:                  `cpu.period: 5 CPUs exceed the largest allowed by profile restricted (4)`,
		`{"cpu": {"quota": 300000, "burst": 200000}}`: `cpu.burst: quota and burst make 5 CPUs in one period, more than profile restricted allows (4) (policy: "maxLimits": {"cpus": 5})`,
		`{"unified": {"cpu.max": "50000 10000"}}`:     `unified["cpu.max"]: 5 CPUs exceed the largest allowed by profile restricted (4)`,
	} {
		_, _, items := CheckUpdate(p, EnforcedOf(u1Resources()), resourcesDoc(t, doc), fromResources)
		if len(items) != 1 || !strings.Contains(items[0].String(), want) {
			t.Errorf("%s: items %v, want one containing %q", doc, items, want)
		}
	}
}

// A burst the cgroup has holds a new quota: the kernel refuses a quota
// below it, and quota plus burst stays within the ceiling.
func TestCheckUpdateBurstHoldsTheQuota(t *testing.T) {
	p := mustPolicy(t, `{"profile": "restricted"}`)
	cur := EnforcedOf(u1Resources())
	cur.Burst = 40000
	for doc, want := range map[string]string{
		`{"cpu": {"quota": 30000}}`:  "cpu.quota: the burst (40000 µs) is above the quota (30000 µs)",
		`{"cpu": {"quota": -1}}`:     "cpu.quota: an unlimited CPU quota is not allowed",
		`{"cpu": {"quota": 390000}}`: "cpu.quota: quota and burst make 4.3 CPUs",
	} {
		_, _, items := CheckUpdate(p, cur, resourcesDoc(t, doc), fromResources)
		if len(items) == 0 || !strings.Contains(items[0].String(), want) {
			t.Errorf("%s: items %v, want the first containing %q", doc, items, want)
		}
	}
	next, _, items := CheckUpdate(p, cur, resourcesDoc(t, `{"cpu": {"quota": 200000, "burst": 200000}}`), fromResources)
	if len(items) > 0 || next.Quota != 200000 || next.Burst != 200000 {
		t.Errorf("4 CPUs with the burst: items %v, next %+v", items, next)
	}
	var r cgroups.Resources
	next.Apply(&r)
	if r.CpuBurst == nil || *r.CpuBurst != 200000 {
		t.Errorf("burst written %v", r.CpuBurst)
	}
	// Without a burst ever given, cpu.max.burst is never written.
	r = cgroups.Resources{}
	EnforcedOf(u1Resources()).Apply(&r)
	if r.CpuBurst != nil {
		t.Errorf("burst %d written though none was given", *r.CpuBurst)
	}
}

// runc's update.bats: cgroup files by name are read as the fields they
// are and checked like them; cpu.weight, memory.min and memory.high are
// kept by name.
func TestCheckUpdateUnified(t *testing.T) {
	free := mustPolicy(t, `{"profile": "baseline", "maxLimits": {"memory": 0, "pids": 0, "cpus": 0}}`)
	r := resourcesDoc(t, `{"unified": {"cpu.max": "max 100000", "cpu.weight": "16", "pids.max": "10", "memory.max": "209715200", "memory.swap.max": "0", "memory.min": "1048576", "memory.low": "2097152", "cpuset.cpus": "1"}}`)
	next, checked, items := CheckUpdate(free, EnforcedOf(u1Resources()), r, fromResources)
	if len(items) > 0 {
		t.Fatal(items)
	}
	r = checked
	if next.Quota != -1 || next.Period != 100000 || next.Pids != 10 || next.Memory != 200*mib || next.Swap != 0 {
		t.Errorf("next %+v", next)
	}
	if len(r.Unified) != 2 || r.Unified["cpu.weight"] != "16" || r.Unified["memory.min"] != "1048576" {
		t.Errorf("kept by name: %v", r.Unified)
	}
	if *r.Memory.Reservation != 2*mib || r.CPU.Cpus != "1" {
		t.Errorf("memory.low as %v, cpuset.cpus as %q", r.Memory.Reservation, r.CPU.Cpus)
	}
	nb, err := ContractAfterUpdate(&libmaka.Boundary{Cgroup: libmaka.Cgroup{CPUShares: new(uint64)}}, next, r)
	if err != nil {
		t.Fatal(err)
	}
	if cg := nb.Cgroup; cg.CPUShares != nil || *cg.CPUWeight != 16 || *cg.MemoryMin != mib || *cg.MemoryReservation != 2*mib || cg.Cpus != "1" {
		t.Errorf("contract cgroup %+v", cg)
	}
	// memory.swap.max is the swap alone; with unlimited memory there is
	// no swap limit to write (create refuses it too).
	r = resourcesDoc(t, `{"unified": {"memory.max": "max", "memory.swap.max": "1048576"}}`)
	if _, _, items = CheckUpdate(free, EnforcedOf(u1Resources()), r, fromResources); len(items) != 1 || !strings.Contains(items[0].String(), "a swap limit needs a memory limit") {
		t.Errorf("items %v", items)
	}
}

// A flag names the item by the flag.
func TestCheckUpdateNamesTheFlag(t *testing.T) {
	p := mustPolicy(t, `{"profile": "restricted"}`)
	name := func(key string) string {
		if key == "memory.limit" {
			return "--memory"
		}
		return "--resources " + key
	}
	_, _, items := CheckUpdate(p, EnforcedOf(u1Resources()), resourcesDoc(t, `{"memory": {"limit": -1}}`), name)
	if len(items) != 1 || items[0].String() != `--memory: unlimited memory is not allowed by profile restricted (largest: 4 GiB) (policy: "maxLimits": {"memory": 0})` {
		t.Errorf("items = %v", items)
	}
}

// Accepted updates: --memory alone keeps the contract's swap (none), so
// libcontainer's memory+swap follows the memory instead of turning the old
// memory+swap into swap.
func TestCheckUpdateAccepts(t *testing.T) {
	p := mustPolicy(t, `{"profile": "restricted", "maxLimits": {"swap": 1073741824}}`)
	cur := EnforcedOf(u1Resources())
	next, _, items := CheckUpdate(p, cur, resourcesDoc(t, `{"memory": {"limit": 67108864}}`), fromResources)
	if len(items) > 0 {
		t.Fatal(items)
	}
	var r cgroups.Resources
	next.Apply(&r)
	if r.Memory != 64*mib || r.MemorySwap != 64*mib {
		t.Errorf("memory %d, memory+swap %d: want 64 MiB both (no swap)", r.Memory, r.MemorySwap)
	}
	next, _, items = CheckUpdate(p, cur, resourcesDoc(t, `{"memory": {"limit": 209715200, "swap": 314572800}, "pids": {"limit": 300}, "cpu": {"quota": 150000}}`), fromResources)
	if len(items) > 0 {
		t.Fatal(items)
	}
	want := libmaka.Limits{Memory: 200 * mib, Swap: 100 * mib, Pids: 300, Cpus: 1.5, TmpfsSize: 7, Timeout: 9}
	if got := next.Limits(libmaka.Limits{TmpfsSize: 7, Timeout: 9}); got != want {
		t.Errorf("limits %+v, want %+v", got, want)
	}
	// pids.limit 0 is one pid, as runc maps it (pids.max 1).
	next, _, items = CheckUpdate(p, cur, resourcesDoc(t, `{"pids": {"limit": 0}}`), fromResources)
	if len(items) > 0 || next.Pids != 1 {
		t.Errorf("pids 0: items %v, pids.max %d, want 1", items, next.Pids)
	}
	// A policy without ceilings lets -1 (any negative) through, as runc does.
	for _, v := range []string{"-1", "-9"} {
		next, _, items = CheckUpdate(mustPolicy(t, `{"profile": "baseline", "maxLimits": {"pids": 0}}`), cur, resourcesDoc(t, `{"pids": {"limit": `+v+`}}`), fromResources)
		if len(items) > 0 || next.Pids != -1 {
			t.Errorf("pids %s: items %v, pids.max %d, want unlimited", v, items, next.Pids)
		}
	}
	// A policy without ceilings lets -1 through, as runc does.
	free := mustPolicy(t, `{"profile": "baseline", "maxLimits": {"memory": 0, "pids": 0, "cpus": 0}, "defaultLimits": {}}`)
	next, _, items = CheckUpdate(free, cur, resourcesDoc(t, `{"memory": {"limit": -1, "swap": -1}, "pids": {"limit": -1}, "cpu": {"quota": -1}}`), fromResources)
	if len(items) > 0 {
		t.Fatal(items)
	}
	if l := next.Limits(libmaka.Limits{}); l != (libmaka.Limits{Swap: -1}) {
		t.Errorf("limits %+v, want all unlimited", l)
	}
	// ... but not unlimited memory where the policy bounds swap: the
	// kernel's swap limit is written only with a memory limit, so it
	// would lift the swap ceiling (create refuses it too).
	_, _, items = CheckUpdate(mustPolicy(t, `{"profile": "restricted", "maxLimits": {"memory": 0}}`), cur, resourcesDoc(t, `{"memory": {"limit": -1}}`), fromResources)
	if len(items) != 1 || !strings.Contains(items[0].Message, "would lift the swap ceiling") {
		t.Errorf("items = %v", items)
	}
	// Unlimited memory without a swap value lifts the swap limit too, as
	// runc does, where the policy allows unlimited swap (runc's
	// update.bats: --memory -1 after --memory-swap).
	withSwap := Enforced{Memory: 50 * mib, Swap: 42 * mib, Pids: -1, Quota: -1, Period: defaultCPUPeriod}
	next, _, items = CheckUpdate(free, withSwap, resourcesDoc(t, `{"memory": {"limit": -1}}`), fromResources)
	if len(items) > 0 || next.Memory != -1 || next.Swap != -1 {
		t.Errorf("memory -1 under no swap ceiling: items %v, memory %d swap %d, want both unlimited", items, next.Memory, next.Swap)
	}
	// Memory alone keeps the contract's swap beyond it.
	next, _, items = CheckUpdate(free, withSwap, resourcesDoc(t, `{"memory": {"limit": 104857600}}`), fromResources)
	if len(items) > 0 || next.Memory != 100*mib || next.Swap != 42*mib {
		t.Errorf("memory alone: items %v, memory %d swap %d, want swap kept", items, next.Memory, next.Swap)
	}
	// 0 is "unset" (as create and runc read it): nothing changes.
	next, _, items = CheckUpdate(p, cur, resourcesDoc(t, `{"memory": {"limit": 0, "swap": 0}, "cpu": {"quota": 0, "period": 0}}`), fromResources)
	if len(items) > 0 || next != cur {
		t.Errorf("zeros: items %v, next %+v, want %+v", items, next, cur)
	}
}

// The republished contract and its relaunch spec say what is enforced.
func TestContractAfterUpdate(t *testing.T) {
	b := &libmaka.Boundary{Profile: "restricted", Limits: libmaka.Limits{Memory: 128 * mib, Pids: 100, Cpus: 0.5, TmpfsSize: 5, Timeout: 6},
		Rootfs: libmaka.Rootfs{Path: "/r", Readonly: true}, Cgroup: libmaka.Cgroup{Path: "/maka/x", CPUPeriod: 100000},
		Process: libmaka.Process{Args: []string{"sh"}, Cwd: "/"}}
	next := Enforced{Memory: 200 * mib, Swap: 0, Pids: 300, Quota: 150000, Period: 100000}
	nb, err := ContractAfterUpdate(b, next, resourcesDoc(t, `{"cpu": {"shares": 512}}`))
	if err != nil {
		t.Fatal(err)
	}
	if nb.Limits != (libmaka.Limits{Memory: 200 * mib, Pids: 300, Cpus: 1.5, TmpfsSize: 5, Timeout: 6}) {
		t.Errorf("limits %+v", nb.Limits)
	}
	// What a relaunch would write: specconv builds it from the boundary.
	spec, err := SpecOf(testHost, nb)
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Linux.Resources
	if *r.Memory.Limit != 200*mib || *r.Memory.Swap != 200*mib || *r.Pids.Limit != 300 || *r.CPU.Quota != 150000 || *r.CPU.Shares != 512 {
		t.Errorf("relaunch resources %+v %+v %+v", r.Memory, r.Pids, r.CPU)
	}
	if b.Limits.Memory != 128*mib || b.Cgroup.CPUShares != nil {
		t.Error("the old boundary was changed in place")
	}
}

// A --resources document of the wrong shape is named by key, not by Go type.
func TestResourcesJSONErrorNamesTheKey(t *testing.T) {
	var r specs.LinuxResources
	err := libmaka.JSONError(json.Unmarshal([]byte(`{"memory": {"limit": "max"}}`), &r), "resources")
	if err == nil || err.Error() != "memory.limit: expected a number, got a string" {
		t.Errorf("err = %v", err)
	}
}

// A --resources file that is not UTF-8 is refused, not read with U+FFFD
// in place of its bytes (as config.json and process.json are).
func TestResourcesFileRefusesInvalidUTF8(t *testing.T) {
	_, err := ParseResources("r.json", []byte("{\"cpu\": {\"cpus\": \"0\xff\"}}"))
	if err == nil || !strings.Contains(err.Error(), "--resources r.json: malformed JSON: a byte that is not UTF-8 (at byte 19)") {
		t.Errorf("err = %v", err)
	}
}

// Per-device weights and throttles change by update as runc changes them:
// upserted by device in the contract (duplicates of one device are one
// entry), io.max by name read into the throttles.
func TestCheckUpdatePerDeviceBlockIO(t *testing.T) {
	p := mustPolicy(t, `{"profile": "baseline"}`)
	b := &libmaka.Boundary{Profile: "baseline", Rootfs: libmaka.Rootfs{Path: "/r", Readonly: true},
		Cgroup: libmaka.Cgroup{Path: "/maka/x", CPUPeriod: 100000, BlockIO: &specs.LinuxBlockIO{
			ThrottleReadBpsDevice: []specs.LinuxThrottleDevice{throttle(254, 0, 485760)}}},
		Process: libmaka.Process{Args: []string{"sh"}, Cwd: "/"}}
	doc := `{"blockIO": {"weightDevice": [{"major": 254, "minor": 0, "weight": 222}],
		"throttleReadBpsDevice": [{"major": 254, "minor": 0, "rate": 10485760}],
		"throttleWriteIOPSDevice": [{"major": 254, "minor": 0, "rate": 900}]},
		"unified": {"io.max": "7:1 riops=333 wiops=max\n7:2 rbps=5"}}`
	next, checked, items := CheckUpdate(p, EnforcedOf(u1Resources()), resourcesDoc(t, doc), fromResources)
	if len(items) > 0 {
		t.Fatalf("refused: %v", items)
	}
	if len(checked.Unified) != 0 {
		t.Errorf("io.max left by name: %v", checked.Unified)
	}
	nb, err := ContractAfterUpdate(b, next, checked)
	if err != nil {
		t.Fatal(err)
	}
	io := nb.Cgroup.BlockIO
	got, _ := json.Marshal(io)
	want := `{"weightDevice":[{"major":254,"minor":0,"weight":222}],` +
		`"throttleReadBpsDevice":[{"major":254,"minor":0,"rate":10485760},{"major":7,"minor":2,"rate":5}],` +
		`"throttleReadIOPSDevice":[{"major":7,"minor":1,"rate":333}],` +
		`"throttleWriteIOPSDevice":[{"major":254,"minor":0,"rate":900},{"major":7,"minor":1,"rate":18446744073709551615}]}`
	if string(got) != want {
		t.Errorf("blockIO after update\n got %s\nwant %s", got, want)
	}
	if len(b.Cgroup.BlockIO.ThrottleReadBpsDevice) != 1 || b.Cgroup.BlockIO.ThrottleReadBpsDevice[0].Rate != 485760 {
		t.Error("the old boundary was changed in place")
	}
}

func throttle(major, minor int64, rate uint64) specs.LinuxThrottleDevice {
	d := specs.LinuxThrottleDevice{Rate: rate}
	d.Major, d.Minor = major, minor
	return d
}
