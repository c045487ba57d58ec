package main

import (
	"fmt"
	"sort"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// enforced is what the container's cgroup holds for the limits the contract
// models, in the contract's terms.
type enforced struct {
	Memory int64  // memory.max in bytes; -1: unlimited
	Swap   int64  // memory.swap.max: swap beyond memory, bytes; -1: unlimited
	Pids   int64  // pids.max; -1: unlimited
	Quota  int64  // cpu.max quota in µs per period; -1: unlimited
	Period uint64 // cpu.max period in µs
}

const defaultCPUPeriod = 100000

// enforcedOf reads libcontainer's cgroup configuration (what create or the
// last update wrote) in the contract's terms. An unset value is the
// kernel's default: unlimited.
func enforcedOf(r *cgroups.Resources) enforced {
	e := enforced{Memory: -1, Swap: -1, Pids: -1, Quota: -1, Period: defaultCPUPeriod}
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
	return e
}

// apply writes e into libcontainer's cgroup configuration, so that Set
// writes exactly these values (OCI's memory+swap, as libcontainer wants).
func (e enforced) apply(r *cgroups.Resources) {
	r.Memory = e.Memory
	switch {
	case e.Swap == -1:
		r.MemorySwap = -1
	case e.Memory == -1:
		r.MemorySwap = e.Swap // checkUpdate refused a swap of 0 here
	default:
		r.MemorySwap = e.Memory + e.Swap
	}
	pids := e.Pids
	r.PidsLimit = &pids
	r.CpuQuota, r.CpuPeriod = e.Quota, e.Period
}

// limits is the contract's view of e (0: unlimited, swap -1: unlimited);
// tmpfs and timeout stay as base has them.
func (e enforced) limits(base libmaka.Limits) libmaka.Limits {
	l := base
	l.Memory, l.Swap, l.Pids, l.Cpus = max(e.Memory, 0), e.Swap, max(e.Pids, 0), 0
	if e.Quota > 0 {
		l.Cpus = float64(e.Quota) / float64(e.Period)
	}
	return l
}

// checkUpdate holds an update to the policy the container was created
// under. It returns the values to enforce, or the items it refuses (each
// named by name(key): the flag, or the --resources key). Values maka's
// contract does not model are refused whatever their value, so an update
// can never reach the kernel with what create would not have allowed.
func checkUpdate(p *libmaka.Policy, cur enforced, r *specs.LinuxResources, name func(key string) string) (enforced, []specconv.Item) {
	var items []specconv.Item
	reject := func(key, allow, format string, args ...any) {
		items = append(items, specconv.Item{Field: name(key), Message: fmt.Sprintf(format, args...), Allow: allow})
	}
	prof := "profile " + p.Profile
	ceil := p.MaxLimits
	next := cur
	notModelled := func(key string) {
		reject(key, "", "not part of maka's contract: update cannot change it")
	}

	if m := r.Memory; m != nil {
		if m.Limit != nil {
			switch v := *m.Limit; {
			case v < -1:
				reject("memory.limit", "", "%d is negative (-1 means unlimited)", v)
			case v == 0:
				reject("memory.limit", "", "0 is not a limit: give a size in bytes")
			case v == -1 && ceil.Memory > 0:
				reject("memory.limit", "", "unlimited memory is not allowed by %s (largest: %s)", prof, libmaka.FormatSize(ceil.Memory))
			case ceil.Memory > 0 && v > ceil.Memory:
				reject("memory.limit", fmt.Sprintf(`"maxLimits": {"memory": %d}`, v),
					"%s exceeds the largest memory allowed by %s (%s)", libmaka.FormatSize(v), prof, libmaka.FormatSize(ceil.Memory))
			default:
				next.Memory = v
			}
		}
		// OCI's swap is memory+swap; the contract's (and the ceiling's)
		// is the swap alone. Without a swap value the contract's swap
		// stays what it was, whatever the memory becomes (but for
		// unlimited memory, below).
		if m.Swap != nil {
			switch s := *m.Swap; {
			case s < -1:
				reject("memory.swap", "", "%d is negative (-1 means unlimited swap)", s)
			case s == -1 && ceil.Swap >= 0:
				reject("memory.swap", `"maxLimits": {"swap": -1}`, "unlimited swap is not allowed by %s (largest: %s)", prof, libmaka.FormatSize(ceil.Swap))
			case s == -1:
				next.Swap = -1
			case next.Memory != -1 && s < next.Memory:
				reject("memory.swap", "", "memory+swap (%s) is smaller than the memory limit (%s): the value counts memory and swap together", libmaka.FormatSize(s), libmaka.FormatSize(next.Memory))
			default:
				beyond := s
				if next.Memory != -1 {
					beyond = s - next.Memory
				}
				if ceil.Swap >= 0 && beyond > ceil.Swap {
					reject("memory.swap", fmt.Sprintf(`"maxLimits": {"swap": %d}`, beyond),
						"%s of swap exceeds the largest allowed by %s (%s)", libmaka.FormatSize(beyond), prof, libmaka.FormatSize(ceil.Swap))
				} else {
					next.Swap = beyond
				}
			}
		}
		if m.Limit != nil && *m.Limit == -1 && m.Swap == nil && next.Memory == -1 && ceil.Swap < 0 {
			// As runc (libcontainer on cgroup v2): unlimited memory
			// without a swap value lifts the swap limit too, where the
			// policy allows unlimited swap; under a swap ceiling the
			// contract's swap stays.
			next.Swap = -1
		}
		if next.Memory == -1 && next.Swap == 0 {
			// libcontainer reads memory+swap 0 as "unset" and, with
			// unlimited memory, lifts the swap limit.
			reject("memory.limit", "", "unlimited memory without swap cannot be written: give a memory limit")
		}
		if m.Reservation != nil {
			switch v := *m.Reservation; {
			case v < -1:
				reject("memory.reservation", "", "%d is negative", v)
			case next.Memory != -1 && (v == -1 || v > next.Memory):
				reject("memory.reservation", "", "a reservation above the memory limit (%s) is not allowed", libmaka.FormatSize(next.Memory))
			}
		}
		for key, set := range map[string]bool{"memory.kernel": m.Kernel != nil, "memory.kernelTCP": m.KernelTCP != nil,
			"memory.swappiness": m.Swappiness != nil, "memory.disableOOMKiller": m.DisableOOMKiller != nil, "memory.useHierarchy": m.UseHierarchy != nil} {
			if set {
				notModelled(key)
			}
		}
	}

	if r.Pids != nil && r.Pids.Limit != nil {
		// As runc maps it (and create does): 0 is one pid, a negative
		// value unlimited.
		switch v := *r.Pids.Limit; {
		case v < 0 && ceil.Pids > 0:
			reject("pids.limit", "", "unlimited pids are not allowed by %s (largest: %d)", prof, ceil.Pids)
		case v < 0:
			next.Pids = -1
		case v == 0:
			next.Pids = 1
		case ceil.Pids > 0 && v > ceil.Pids:
			reject("pids.limit", fmt.Sprintf(`"maxLimits": {"pids": %d}`, v), "%d pids exceed the largest allowed by %s (%d)", v, prof, ceil.Pids)
		default:
			next.Pids = v
		}
	}

	if c := r.CPU; c != nil {
		cpuOK := true
		if c.Quota != nil {
			switch q := *c.Quota; {
			case q < -1:
				reject("cpu.quota", "", "%d is negative (-1 means unlimited)", q)
				cpuOK = false
			case q == 0:
				reject("cpu.quota", "", "0 is not a quota: give microseconds per period")
				cpuOK = false
			case q == -1 && ceil.Cpus > 0:
				reject("cpu.quota", "", "unlimited CPU is not allowed by %s (largest: %g)", prof, ceil.Cpus)
				cpuOK = false
			case q > 0 && q < 1000:
				reject("cpu.quota", "", "%d µs is below the kernel's smallest quota (1000 µs)", q)
				cpuOK = false
			default:
				next.Quota = q
			}
		}
		if c.Period != nil {
			if p := *c.Period; p < 1000 || p > 1000000 {
				reject("cpu.period", "", "%d µs is outside the kernel's range for a period (1000 to 1000000 µs)", p)
				cpuOK = false
			} else {
				next.Period = p
			}
		}
		if cpuOK && (c.Quota != nil || c.Period != nil) && next.Quota > 0 && ceil.Cpus > 0 {
			cpus := float64(next.Quota) / float64(next.Period)
			key := "cpu.period" // a shorter period alone raises the CPUs too
			if c.Quota != nil {
				key = "cpu.quota"
			}
			if cpus > ceil.Cpus {
				reject(key, fmt.Sprintf(`"maxLimits": {"cpus": %g}`, cpus),
					"%g CPUs exceed the largest allowed by %s (%g): quota %d µs per period %d µs", cpus, prof, ceil.Cpus, next.Quota, next.Period)
			}
		}
		if c.Shares != nil && *c.Shares != 0 && (*c.Shares < 2 || *c.Shares > 262144) {
			reject("cpu.shares", "", "%d is out of range (2 to 262144)", *c.Shares)
		}
		if c.Idle != nil && *c.Idle != 0 && *c.Idle != 1 {
			reject("cpu.idle", "", "%d is not 0 or 1", *c.Idle)
		}
		for key, set := range map[string]bool{"cpu.realtimePeriod": c.RealtimePeriod != nil, "cpu.realtimeRuntime": c.RealtimeRuntime != nil, "cpu.burst": c.Burst != nil} {
			if set {
				notModelled(key)
			}
		}
	}

	// Cgroup files by name would bypass every check above.
	keys := make([]string, 0, len(r.Unified))
	for k := range r.Unified {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		reject(fmt.Sprintf("unified[%q]", k), "", "cgroup files by name are not allowed: give the value by its field (memory.limit, memory.swap, pids.limit, cpu.quota) so that it is checked against %s", prof)
	}
	if len(r.HugepageLimits) > 0 {
		notModelled("hugepageLimits")
	}
	if r.Network != nil {
		notModelled("network")
	}
	if len(r.Rdma) > 0 {
		notModelled("rdma")
	}
	if len(r.Devices) > 0 {
		reject("devices", "", "device rules never change after create")
	}
	if b := r.BlockIO; b != nil {
		if b.LeafWeight != nil || len(b.WeightDevice) > 0 || len(b.ThrottleReadBpsDevice) > 0 || len(b.ThrottleWriteBpsDevice) > 0 ||
			len(b.ThrottleReadIOPSDevice) > 0 || len(b.ThrottleWriteIOPSDevice) > 0 {
			reject("blockIO", "", "only blockIO.weight may change: per-device rules and throttles are not part of maka's contract")
		}
	}
	// Several refusals of one map iteration: keep the output stable.
	sort.SliceStable(items, func(i, j int) bool { return items[i].Field < items[j].Field })
	return next, items
}

// updateFlags maps the --resources keys to the single-value flags that set
// them (a flag takes precedence, so it is what an item names).
var updateFlags = map[string]string{
	"memory.limit": "memory", "memory.swap": "memory-swap", "memory.reservation": "memory-reservation",
	"pids.limit": "pids-limit", "cpu.quota": "cpu-quota", "cpu.period": "cpu-period", "cpu.burst": "cpu-burst",
	"cpu.realtimePeriod": "cpu-rt-period", "cpu.realtimeRuntime": "cpu-rt-runtime", "cpu.shares": "cpu-share",
	"cpu.idle": "cpu-idle",
}

// updateSourceName names a key as the caller gave it.
func updateSourceName(isSet func(flag string) bool) func(key string) string {
	return func(key string) string {
		if f, ok := updateFlags[key]; ok && isSet(f) {
			return "--" + f
		}
		return "--resources " + key
	}
}

// contractAfterUpdate is the boundary b with the update applied: its
// limits and cgroup values, from which `maka boundary`, `state` and `recover
// --relaunch` (specconv.ToLibcontainer reads nothing else) all see what the
// cgroup now enforces.
func contractAfterUpdate(b *libmaka.Boundary, next enforced, r *specs.LinuxResources) (*libmaka.Boundary, error) {
	nb, err := libmaka.CopyBoundary(b)
	if err != nil {
		return nil, err
	}
	nb.Limits = next.limits(nb.Limits)
	nb.Cgroup.CPUPeriod = next.Period
	// The other values update accepts (checkUpdate refused the rest).
	cg := &nb.Cgroup
	if m := r.Memory; m != nil && m.Reservation != nil && *m.Reservation != 0 {
		cg.MemoryReservation = m.Reservation
	}
	if c := r.CPU; c != nil {
		if c.Shares != nil && *c.Shares != 0 {
			cg.CPUShares = c.Shares
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
	if w := r.BlockIO; w != nil && w.Weight != nil && *w.Weight != 0 {
		if cg.BlockIO == nil {
			cg.BlockIO = &specs.LinuxBlockIO{}
		}
		cg.BlockIO.Weight = w.Weight
	}
	return nb, nil
}

// updatePolicy is the policy the container was created under, as its
// record keeps it (not today's --policy: a looser file must not loosen a
// running sandbox). A record from a maka that kept only the profile gets
// that built-in profile; a container without a record, today's policy.
func updatePolicy(rec *libmaka.ContainerRecord, current func() (*libmaka.Policy, error)) (*libmaka.Policy, error) {
	switch {
	case rec != nil && rec.Policy != nil:
		return rec.Policy, nil
	case rec != nil && rec.Boundary != nil:
		return libmaka.BuiltinPolicy(rec.Boundary.Profile)
	}
	return current()
}
