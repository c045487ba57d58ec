package specconv

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// `maka update` is held by the checker create's config.json is held by:
// the update's values, laid over what the cgroup holds, go through
// foldUnified and checkLimitValues (the limits), checkCgroupValues (cpuset
// lists, weights) and refuseUnmodelled, and are named as the caller gave
// them. What update leaves out, or gives as 0 (unset, as create and runc
// read it), stays what the cgroup holds. Values create fixes for the
// sandbox's life (device rules, hugepage and RDMA limits) are refused:
// update cannot change them. Per-device block IO entries are upserted by
// device, as runc does.

// Enforced is what a container's cgroup holds for the limits the contract
// models, in the contract's terms.
type Enforced struct {
	Memory int64  // memory.max in bytes; -1: unlimited
	Swap   int64  // memory.swap.max: swap beyond memory, bytes; -1: unlimited
	Pids   int64  // pids.max; -1: unlimited
	Quota  int64  // cpu.max quota in µs per period; -1: unlimited
	Period uint64 // cpu.max period in µs
	Burst  uint64 // cpu.max.burst in µs; 0: none
}

// EnforcedOf reads libcontainer's cgroup configuration (what create or the
// last update wrote) in the contract's terms. An unset value is the
// kernel's default: unlimited.
func EnforcedOf(r *cgroups.Resources) Enforced {
	e := Enforced{Memory: -1, Swap: -1, Pids: -1, Quota: -1, Period: defaultCPUPeriod}
	if r.Memory > 0 {
		e.Memory = r.Memory
	}
	if r.MemorySwap > 0 && e.Memory > 0 {
		e.Swap = r.MemorySwap - r.Memory
	} else if r.MemorySwap > 0 {
		e.Swap = r.MemorySwap // unlimited memory: swap as is, as libcontainer writes it
	}
	if r.PidsLimit != nil && *r.PidsLimit > 0 {
		e.Pids = *r.PidsLimit
	}
	if r.CpuQuota > 0 {
		e.Quota = r.CpuQuota
	}
	if r.CpuPeriod > 0 {
		e.Period = r.CpuPeriod
	}
	if r.CpuBurst != nil {
		e.Burst = *r.CpuBurst
	}
	return e
}

// Apply writes e into libcontainer's cgroup configuration, so that Set
// writes exactly these values (OCI's memory+swap, as libcontainer wants).
func (e Enforced) Apply(r *cgroups.Resources) {
	r.Memory = e.Memory
	switch {
	case e.Swap == -1:
		r.MemorySwap = -1
	case e.Memory == -1:
		r.MemorySwap = -1 // the checker refused a bounded swap here
	default:
		r.MemorySwap = e.Memory + e.Swap
	}
	pids := e.Pids
	r.PidsLimit = &pids
	r.CpuQuota, r.CpuPeriod = e.Quota, e.Period
	// cpu.max.burst is written only once a burst was given: a kernel
	// without the file then never sees it.
	if e.Burst > 0 || r.CpuBurst != nil {
		burst := e.Burst
		r.CpuBurst = &burst
	}
}

// Limits is the contract's view of e (0: unlimited, swap -1: unlimited);
// tmpfs and timeout stay as base has them.
func (e Enforced) Limits(base libmaka.Limits) libmaka.Limits {
	l := base
	l.Memory, l.Swap, l.Pids, l.Cpus = max(e.Memory, 0), e.Swap, max(e.Pids, 0), 0
	if e.Quota > 0 {
		l.Cpus = float64(e.Quota) / float64(e.Period)
	}
	return l
}

// ParseResources decodes update --resources's file (path as the caller
// named it): errors name the file and the key by JSON's terms, never Go's.
func ParseResources(path string, data []byte) (*specs.LinuxResources, error) {
	if off := libmaka.InvalidUTF8(data); off >= 0 {
		return nil, fmt.Errorf("--resources %s: malformed JSON: a byte that is not UTF-8 (at byte %d): JSON text is UTF-8", path, off)
	}
	r := &specs.LinuxResources{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("--resources %s: %w", path, libmaka.JSONError(err, "resources"))
	}
	return r, nil
}

// fixedAtCreate are the resources update cannot change (create checks
// them; the cgroup keeps them for the sandbox's life).
func fixedAtCreate(r *specs.LinuxResources, reject func(key, format string, args ...any)) {
	if len(r.Devices) > 0 {
		reject("devices", "device rules never change after create")
	}
	if len(r.HugepageLimits) > 0 {
		reject("hugepageLimits", "fixed at create: update cannot change it")
	}
	if len(r.Rdma) > 0 {
		reject("rdma", "fixed at create: update cannot change it")
	}
	// Per-device weights and throttles may change, as runc's update
	// changes them: like the weight they only share or narrow (create
	// holds them to the same checks); the leaf weights are cgroup v1's.
	if b := r.BlockIO; b != nil {
		leaf := b.LeafWeight != nil
		for _, w := range b.WeightDevice {
			leaf = leaf || w.LeafWeight != nil
		}
		if leaf {
			reject("blockIO", "leaf weights are cgroup v1's: update cannot set them")
		}
	}
}

// CheckUpdate holds an update r to the policy p the container was created
// under, from what its cgroup holds (cur), with create's checker. It
// returns the limits to enforce and r as checked (cgroup files by name
// read into their fields; only memory.high, memory.min, cpu.weight and
// memory.oom.group
// left by name), or the items it refuses, each named by name(key): key is
// r's own JSON path ("memory.limit"; unified["memory.max"] is named
// "--resources unified[...]" whatever name says). r is not modified.
func CheckUpdate(p *libmaka.Policy, cur Enforced, r *specs.LinuxResources, name func(key string) string) (Enforced, *specs.LinuxResources, []Item) {
	full, err := copyResources(r)
	if err != nil {
		// r came from JSON: it always encodes.
		return cur, nil, []Item{{Field: name("resources"), Message: err.Error()}}
	}
	c := &checker{policy: p, spec: &specs.Spec{Linux: &specs.Linux{Resources: full}}}
	fixedAtCreate(full, func(key, format string, args ...any) {
		c.reject("linux.resources."+key, "", format, args...)
	})
	refuseUnmodelled(reflect.ValueOf(full), "linux.resources", "linux.resources", func(field, note string) {
		c.reject(field, "", "maka does not apply this field: %s", note)
	})
	if full.Memory == nil {
		full.Memory = &specs.LinuxMemory{}
	}
	if full.Pids == nil {
		full.Pids = &specs.LinuxPids{}
	}
	if full.CPU == nil {
		full.CPU = &specs.LinuxCPU{}
	}
	m, cpu := full.Memory, full.CPU
	f := limitFields{
		memory: "linux.resources.memory.limit", swap: "linux.resources.memory.swap",
		pids: "linux.resources.pids.limit", quota: "linux.resources.cpu.quota", period: "linux.resources.cpu.period",
		reservation: "linux.resources.memory.reservation", burst: "linux.resources.cpu.burst",
	}
	// The memory limit first: a swap given by name (memory.swap.max, the
	// swap alone) counts from it.
	if m.Limit == nil || *m.Limit == 0 {
		v := cur.Memory
		m.Limit = &v
	}
	c.foldUnified(full, &f)
	quotaGiven := cpu.Quota != nil && *cpu.Quota != 0
	periodGiven := cpu.Period != nil && *cpu.Period != 0
	burstGiven := cpu.Burst != nil
	if m.Swap == nil || *m.Swap == 0 {
		// Without a swap value the contract's swap (beyond the memory)
		// stays, whatever the memory becomes; unlimited memory has no
		// bounded swap (checkLimitValues).
		m.Swap = nil
		if *m.Limit > 0 {
			v := int64(-1)
			if cur.Swap >= 0 {
				v = *m.Limit + cur.Swap
			}
			m.Swap = &v
		}
	}
	if full.Pids.Limit == nil {
		v := cur.Pids
		full.Pids.Limit = &v
	}
	if !periodGiven {
		v := cur.Period
		cpu.Period = &v
	}
	if !quotaGiven {
		v := cur.Quota
		cpu.Quota = &v
		if periodGiven {
			f.quota = f.period // a shorter period alone raises the CPUs too
		}
	}
	if !burstGiven {
		if cur.Burst > 0 {
			v := cur.Burst
			cpu.Burst = &v
		}
		f.burst = f.quota // the burst the cgroup has, held to a new quota
	}
	c.checkLimitValues(full, f)
	c.checkCgroupValues()
	if len(c.items) > 0 {
		items := make([]Item, len(c.items))
		for i, it := range c.items {
			key := strings.TrimPrefix(strings.TrimPrefix(it.Field, "linux.resources"), ".")
			if strings.HasPrefix(key, "unified[") {
				it.Field = "--resources " + key
			} else {
				it.Field = name(key)
			}
			items[i] = it
		}
		// Keep the output stable (foldUnified reads map keys sorted).
		sort.SliceStable(items, func(i, j int) bool { return items[i].Field < items[j].Field })
		return cur, nil, items
	}
	next := Enforced{Memory: *m.Limit, Swap: -1, Pids: *full.Pids.Limit, Quota: *cpu.Quota, Period: *cpu.Period}
	if next.Memory == 0 {
		next.Memory = -1
	}
	if next.Memory > 0 && *m.Swap >= 0 {
		next.Swap = *m.Swap - next.Memory
	}
	if next.Pids == 0 {
		next.Pids = -1
	}
	if next.Quota == 0 {
		next.Quota = -1
	}
	if cpu.Burst != nil {
		next.Burst = *cpu.Burst
	}
	return next, full, nil
}

func copyResources(r *specs.LinuxResources) (*specs.LinuxResources, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var out specs.LinuxResources
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ContractAfterUpdate is the boundary b with the update applied: next
// (CheckUpdate's limits) and r (CheckUpdate's checked resources), from
// which `maka boundary`, `state` and `recover --relaunch` (ToLibcontainer
// reads nothing else) all see what the cgroup now enforces.
func ContractAfterUpdate(b *libmaka.Boundary, next Enforced, r *specs.LinuxResources) (*libmaka.Boundary, error) {
	nb, err := libmaka.CopyBoundary(b)
	if err != nil {
		return nil, err
	}
	nb.Limits = next.Limits(nb.Limits)
	nb.Cgroup.CPUPeriod = next.Period
	cg := &nb.Cgroup
	if m := r.Memory; m != nil && m.Reservation != nil && *m.Reservation != 0 {
		cg.MemoryReservation = m.Reservation
	}
	cg.CPUBurst = nil
	if next.Burst > 0 {
		burst := next.Burst
		cg.CPUBurst = &burst
	}
	if v, ok := r.Unified["memory.min"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		cg.MemoryMin = &n
	}
	if v, ok := r.Unified["memory.oom.group"]; ok {
		g := v == "1"
		cg.MemoryOOMGroup = &g
	}
	if v, ok := r.Unified["memory.high"]; ok {
		n := int64(-1)
		if v != "max" {
			n, _ = strconv.ParseInt(v, 10, 64)
		}
		cg.MemoryHigh = &n
	}
	if v, ok := r.Unified["cpu.weight"]; ok {
		n, _ := strconv.ParseUint(v, 10, 64)
		cg.CPUWeight, cg.CPUShares = &n, nil
	}
	if c := r.CPU; c != nil {
		if c.Shares != nil && *c.Shares != 0 {
			cg.CPUShares, cg.CPUWeight = c.Shares, nil
		}
		if c.Cpus != "" {
			cg.Cpus = c.Cpus
		}
		if c.Mems != "" {
			cg.Mems = c.Mems
		}
		if c.Idle != nil {
			cg.CPUIdle = c.Idle
		}
	}
	if w := r.BlockIO; w != nil {
		if cg.BlockIO == nil {
			cg.BlockIO = &specs.LinuxBlockIO{}
		}
		io := cg.BlockIO
		if w.Weight != nil && *w.Weight != 0 {
			io.Weight = w.Weight
		}
		// By device, as MergeResources writes them to the cgroup.
		for _, d := range w.WeightDevice {
			io.WeightDevice = upsertDevice(io.WeightDevice, d, func(e specs.LinuxWeightDevice) (int64, int64) { return e.Major, e.Minor })
		}
		for _, l := range []struct {
			cur *[]specs.LinuxThrottleDevice
			upd []specs.LinuxThrottleDevice
		}{
			{&io.ThrottleReadBpsDevice, w.ThrottleReadBpsDevice}, {&io.ThrottleWriteBpsDevice, w.ThrottleWriteBpsDevice},
			{&io.ThrottleReadIOPSDevice, w.ThrottleReadIOPSDevice}, {&io.ThrottleWriteIOPSDevice, w.ThrottleWriteIOPSDevice},
		} {
			for _, d := range l.upd {
				*l.cur = upsertDevice(*l.cur, d, func(e specs.LinuxThrottleDevice) (int64, int64) { return e.Major, e.Minor })
			}
		}
		if reflect.ValueOf(*io).IsZero() {
			cg.BlockIO = nil
		}
	}
	return nb, nil
}

// upsertDevice replaces list's last entry for d's device with d (of
// duplicates the kernel keeps the last written), or appends d.
func upsertDevice[T any](list []T, d T, dev func(T) (int64, int64)) []T {
	ma, mi := dev(d)
	for i, e := range slices.Backward(list) {
		if a, b := dev(e); a == ma && b == mi {
			list[i] = d
			return list
		}
	}
	return append(list, d)
}

// UpdatePolicy is the policy the container was created under, as its
// record keeps it (not today's --policy: a looser file must not loosen a
// running sandbox). A record from a maka that kept only the profile gets
// that built-in profile; a container without a record, today's policy.
func UpdatePolicy(rec *libmaka.ContainerRecord, current func() (*libmaka.Policy, error)) (*libmaka.Policy, error) {
	if rec != nil {
		p, err := libmaka.RecordedPolicy(&rec.Policy, &rec.Boundary)
		if err != nil || p != nil {
			return p, err
		}
	}
	return current()
}
