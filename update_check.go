package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

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
	Burst  uint64 // cpu.max.burst in µs; 0: none
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
	if r.CpuBurst != nil {
		e.Burst = *r.CpuBurst
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
	// cpu.max.burst is written only once a burst was given: a kernel
	// without the file then never sees it.
	if e.Burst > 0 || r.CpuBurst != nil {
		burst := e.Burst
		r.CpuBurst = &burst
	}
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
	// A value given as a cgroup file by name is checked as the field it
	// is, and named as the caller gave it.
	aliases, refused := foldUpdateUnified(r, cur)
	reject := func(key, allow, format string, args ...any) {
		field := name(key)
		if a, ok := aliases[key]; ok {
			field = "--resources " + a
		}
		items = append(items, specconv.Item{Field: field, Message: fmt.Sprintf(format, args...), Allow: allow})
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
		for key, set := range map[string]bool{"cpu.realtimePeriod": c.RealtimePeriod != nil, "cpu.realtimeRuntime": c.RealtimeRuntime != nil} {
			if set {
				notModelled(key)
			}
		}
		// The burst as create holds it: at most the quota, and quota
		// plus burst within the CPU ceiling. A new quota or period is
		// held to the burst the cgroup already has.
		if c.Burst != nil {
			next.Burst = *c.Burst
		}
		if cpuOK && next.Burst > 0 && (c.Burst != nil || c.Quota != nil || c.Period != nil) {
			key := "cpu.burst"
			if c.Burst == nil {
				key = "cpu.quota"
			}
			switch cpus := float64(next.Quota+int64(next.Burst)) / float64(next.Period); {
			case next.Quota <= 0:
				reject(key, "", "a burst needs a CPU quota")
			case next.Burst > uint64(next.Quota):
				reject(key, "", "the burst (%d µs) is above the quota (%d µs): the kernel allows at most the quota", next.Burst, next.Quota)
			case ceil.Cpus > 0 && cpus > ceil.Cpus+1e-9:
				reject(key, fmt.Sprintf(`"maxLimits": {"cpus": %g}`, cpus),
					"quota and burst make %g CPUs in one period, more than %s allows (%g)", cpus, prof, ceil.Cpus)
			}
		}
	}

	// The cgroup files update keeps by name, held to the memory limit
	// (foldUpdateUnified read the others into their fields and refused
	// the rest).
	for _, k := range []string{"memory.high", "memory.min"} {
		v, ok := r.Unified[k]
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		if v != "max" && next.Memory != -1 && n > next.Memory {
			reject(fmt.Sprintf("unified[%q]", k), "", "%d is above the memory limit (%d)", n, next.Memory)
		}
	}
	for _, it := range refused {
		reject(it.key, "", "%s", it.why)
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
	cg.CPUBurst = nil
	if next.Burst > 0 {
		burst := next.Burst
		cg.CPUBurst = &burst
	}
	if v, ok := r.Unified["memory.min"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		cg.MemoryMin = &n
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

// foldUpdateUnified reads the cgroup files update --resources gives by
// name into the fields checkUpdate checks, as create does with
// config.json's: memory.max, memory.swap.max, pids.max, cpu.max (the
// limits), memory.low (the reservation), cpuset.cpus and cpuset.mems.
// memory.high, memory.min and a valid cpu.weight stay in r.Unified (held
// to the memory limit by checkUpdate); every other key, or a value that
// is no number, is refused. It returns, for each field it set, the
// unified key that gave it, so refusals name what the caller wrote.
func foldUpdateUnified(r *specs.LinuxResources, cur enforced) (aliases map[string]string, refused []refusal) {
	if len(r.Unified) == 0 {
		return nil, nil
	}
	aliases = map[string]string{}
	refuse := func(k, format string, args ...any) {
		refused = append(refused, refusal{fmt.Sprintf("unified[%q]", k), fmt.Sprintf(format, args...)})
	}
	// num reads a number or max (-1).
	num := func(k, v string) (int64, bool) {
		if v == "max" {
			return -1, true
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			refuse(k, "%q is not a number or max", v)
			return 0, false
		}
		return n, true
	}
	if r.Memory == nil {
		r.Memory = &specs.LinuxMemory{}
	}
	if r.CPU == nil {
		r.CPU = &specs.LinuxCPU{}
	}
	keys := make([]string, 0, len(r.Unified))
	for k := range r.Unified {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	keep := map[string]string{}
	var swapMax *int64
	for _, k := range keys {
		v := strings.TrimSpace(r.Unified[k])
		alias := fmt.Sprintf("unified[%q]", k)
		switch k {
		case "memory.max":
			if n, ok := num(k, v); ok {
				r.Memory.Limit, aliases["memory.limit"] = &n, alias
			}
		case "memory.swap.max":
			if n, ok := num(k, v); ok {
				swapMax, aliases["memory.swap"] = &n, alias
			}
		case "memory.low":
			if n, ok := num(k, v); ok && n >= 0 {
				r.Memory.Reservation, aliases["memory.reservation"] = &n, alias
			} else if ok {
				refuse(k, "max would protect more than the memory limit")
			}
		case "memory.min", "memory.high":
			if n, ok := num(k, v); ok && k == "memory.min" && n < 0 {
				refuse(k, "max would protect more than the memory limit")
			} else if ok && n == 0 && k == "memory.high" {
				refuse(k, "0 would throttle every allocation")
			} else if ok {
				keep[k] = v
			}
		case "pids.max":
			if n, ok := num(k, v); ok {
				r.Pids = &specs.LinuxPids{Limit: &n}
				aliases["pids.limit"] = alias
			}
		case "cpu.max":
			q, per, _ := strings.Cut(v, " ")
			quota, ok := num(k, q)
			if !ok {
				continue
			}
			r.CPU.Quota, aliases["cpu.quota"] = &quota, alias
			if per != "" {
				period, err := strconv.ParseUint(per, 10, 64)
				if err != nil {
					refuse(k, "%q is not a CPU period", per)
					continue
				}
				r.CPU.Period, aliases["cpu.period"] = &period, alias
			}
		case "cpu.weight":
			if n, err := strconv.ParseUint(v, 10, 64); err != nil || n < 1 || n > 10000 {
				refuse(k, "%q is not a weight between 1 and 10000", v)
			} else {
				keep[k] = strconv.FormatUint(n, 10)
			}
		case "cpuset.cpus":
			r.CPU.Cpus = v
		case "cpuset.mems":
			r.CPU.Mems = v
		default:
			refuse(k, "maka does not apply this cgroup file: only %s may be set by name, and they are checked as their fields are", strings.Join(specconv.UnifiedKeys(), ", "))
		}
	}
	if swapMax != nil {
		// memory.swap.max is the swap alone; OCI's swap (what update
		// checks) is memory+swap, or the swap alone for unlimited memory.
		mem := cur.Memory
		if r.Memory.Limit != nil {
			mem = *r.Memory.Limit
		}
		s := *swapMax
		if s >= 0 && mem != -1 {
			s += mem
		}
		r.Memory.Swap = &s
	}
	r.Unified = keep
	return aliases, refused
}

// refusal is an update key refused before checkUpdate's own checks.
type refusal struct{ key, why string }
