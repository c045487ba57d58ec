package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	units "github.com/docker/go-units"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/cgroups"
	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
)

var updateCommand = &cli.Command{
	Name:      "update",
	Usage:     "change the resource limits of a running container",
	ArgsUsage: "<container-id>",
	Description: `The limits come from --resources (runtime-spec's linux.resources object as
JSON, from a file or "-" for stdin) and/or the single-value flags, which take
precedence. Only what is given changes.

Every value is held to the policy the container was created under (its
contract record): a value above a ceiling, "unlimited" (-1) where the policy
has a ceiling, and what maka's contract does not model (real-time CPU,
hugepages, per-device block IO, Intel RDT, cgroup files by name other than
memory.max, memory.swap.max, memory.low, memory.min, memory.high, pids.max,
cpu.max, cpu.weight, cpuset.cpus and cpuset.mems) are refused with
BOUNDARY_REJECTED, and nothing changes. Cgroup files by name are checked as
the fields they are; a CPU burst stays within the quota, and quota plus
burst within the CPU ceiling. An accepted update
republishes the contract's limits. Without --memory-swap, the swap beyond
memory stays what the contract says.

EXAMPLE:
       # maka update --memory 268435456 --pids-limit 100 box1
       # echo '{"cpu":{"quota":50000,"period":100000}}' | maka update -r - box1`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "resources", Aliases: []string{"r"}, Usage: `path to a linux.resources JSON file, or "-" for stdin`},
		&cli.StringFlag{Name: "blkio-weight", Usage: "block IO weight (10-1000; io.weight on cgroup v2)"},
		&cli.StringFlag{Name: "cpu-period", Usage: "CPU CFS period in microseconds"},
		&cli.StringFlag{Name: "cpu-quota", Usage: "CPU CFS quota in microseconds per period (-1: none, if the policy has no CPU ceiling)"},
		&cli.StringFlag{Name: "cpu-burst", Usage: "CPU burst in microseconds"},
		&cli.StringFlag{Name: "cpu-share", Usage: "CPU shares (relative weight; cpu.weight on cgroup v2)"},
		&cli.StringFlag{Name: "cpu-rt-period", Usage: "CPU realtime period in microseconds"},
		&cli.StringFlag{Name: "cpu-rt-runtime", Usage: "CPU realtime runtime in microseconds"},
		&cli.StringFlag{Name: "cpu-idle", Usage: "cpu.idle (0 or 1)"},
		&cli.StringFlag{Name: "cpuset-cpus", Usage: "CPUs to use (0-3, 0,1)"},
		&cli.StringFlag{Name: "cpuset-mems", Usage: "memory nodes to use (0-3, 0,1)"},
		&cli.StringFlag{Name: "memory", Usage: "memory limit in bytes (-1: none, if the policy has no memory ceiling)"},
		&cli.StringFlag{Name: "memory-reservation", Usage: "memory soft limit in bytes"},
		&cli.StringFlag{Name: "memory-swap", Usage: "memory plus swap limit in bytes (-1: unlimited swap, if the policy allows it)"},
		&cli.StringFlag{Name: "pids-limit", Usage: "maximum number of pids (0: one, -1: none if the policy has no pids ceiling; as runc)"},
		&cli.StringFlag{Name: "l3-cache-schema", Usage: "Intel RDT L3 cache schema (not supported)"},
		&cli.StringFlag{Name: "mem-bw-schema", Usage: "Intel RDT memory bandwidth schema (not supported)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		r, err := updateResources(c)
		if err != nil {
			return err
		}
		op, ctr, err := lockContainer(c)
		if err != nil {
			return err
		}
		defer op.End()
		policy, err := updatePolicy(op.Record, func() (*libmaka.Policy, error) { return loadPolicy(c) })
		if err != nil {
			return err
		}
		config := ctr.Config()
		if config.Cgroups == nil || config.Cgroups.Resources == nil {
			return fmt.Errorf("update %s: the container has no cgroup configuration", ctr.ID())
		}
		// Every value is held to the container's policy before anything
		// is written, as create's config.json is.
		next, items := checkUpdate(policy, enforcedOf(config.Cgroups.Resources), r, updateSourceName(c.IsSet))
		if len(items) > 0 {
			return &specconv.RejectedError{Verdict: specconv.Verdict{Profile: policy.Profile, Items: items, Source: "update"}}
		}
		cg, err := rspecconv.CreateCgroupConfig(&rspecconv.CreateOpts{
			CgroupName: ctr.ID(),
			Spec:       &specs.Spec{Linux: &specs.Linux{Resources: r}},
		}, nil)
		if err != nil {
			return fmt.Errorf("update %s: %w", ctr.ID(), err)
		}
		mergeResources(config.Cgroups.Resources, cg.Resources)
		// runc's memory.checkBeforeUpdate: a memory limit below what the
		// container uses now is refused instead of reclaiming (stricter
		// only); kept in the container's config until changed, as runc.
		if r.Memory != nil && r.Memory.CheckBeforeUpdate != nil {
			config.Cgroups.MemoryCheckBeforeUpdate = *r.Memory.CheckBeforeUpdate
		}
		// The checked values, exactly: memory+swap from the contract's
		// swap when only the memory changes, never an unset swap.
		next.apply(config.Cgroups.Resources)
		// As runc: update never changes the device rules.
		config.Cgroups.SkipDevices = true
		// The contract first (as create publishes before the cgroup
		// exists); put back if the kernel refuses the values.
		if err := ctr.CheckCgroup(); err != nil {
			return fmt.Errorf("update %s: %w", ctr.ID(), err)
		}
		var old *libmaka.Boundary
		if op.Record != nil && op.Record.Boundary != nil {
			old = op.Record.Boundary
			nb, err := contractAfterUpdate(old, next, r)
			if err != nil {
				return fmt.Errorf("update %s: %w", ctr.ID(), err)
			}
			if err := op.RepublishBoundary(nb); err != nil {
				return fmt.Errorf("update %s: %w", ctr.ID(), err)
			}
		}
		if err := ctr.Set(config); err != nil {
			if old != nil {
				if rerr := op.RepublishBoundary(old); rerr != nil {
					logrus.Warnf("update %s: %v", ctr.ID(), rerr)
				}
			}
			return fmt.Errorf("update %s: %w", ctr.ID(), err)
		}
		return nil
	},
}

// parseResourcesFile decodes update --resources's file: errors name the
// file and the key by JSON's terms, never Go's.
func parseResourcesFile(path string, data []byte) (*specs.LinuxResources, error) {
	if off := libmaka.InvalidUTF8(data); off >= 0 {
		return nil, fmt.Errorf("--resources %s: malformed JSON: a byte that is not UTF-8 (at byte %d): JSON text is UTF-8", path, off)
	}
	r := &specs.LinuxResources{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("--resources %s: %w", path, libmaka.JSONError(err, "resources"))
	}
	return r, nil
}

// updateResources reads --resources and applies the single-value flags.
func updateResources(c *cli.Context) (*specs.LinuxResources, error) {
	r := &specs.LinuxResources{}
	if path := c.String("resources"); path != "" {
		var data []byte
		var err error
		if path == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			return nil, fmt.Errorf("--resources: %w", err)
		}
		if r, err = parseResourcesFile(path, data); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{"l3-cache-schema", "mem-bw-schema"} {
		if c.IsSet(name) {
			return nil, fmt.Errorf("--%s: Intel RDT updates are not supported by maka", name)
		}
	}
	if r.CPU == nil {
		r.CPU = &specs.LinuxCPU{}
	}
	if r.Memory == nil {
		r.Memory = &specs.LinuxMemory{}
	}
	var err error
	setU := func(flag string, dst **uint64) {
		if err != nil || !c.IsSet(flag) {
			return
		}
		v, e := strconv.ParseUint(c.String(flag), 10, 64)
		if e != nil {
			err = fmt.Errorf("--%s: %q is not a non-negative integer", flag, c.String(flag))
			return
		}
		*dst = &v
	}
	setI := func(flag string, dst **int64) {
		if err != nil || !c.IsSet(flag) {
			return
		}
		v, e := strconv.ParseInt(c.String(flag), 10, 64)
		if e != nil {
			err = fmt.Errorf("--%s: %q is not an integer", flag, c.String(flag))
			return
		}
		*dst = &v
	}
	setU("cpu-period", &r.CPU.Period)
	setI("cpu-quota", &r.CPU.Quota)
	setU("cpu-burst", &r.CPU.Burst)
	setU("cpu-share", &r.CPU.Shares)
	setU("cpu-rt-period", &r.CPU.RealtimePeriod)
	setI("cpu-rt-runtime", &r.CPU.RealtimeRuntime)
	setI("cpu-idle", &r.CPU.Idle)
	// Memory sizes take runc's unit suffixes (k, m, g... as docker's RAMInBytes).
	setBytes := func(flag string, dst **int64) {
		if err != nil || !c.IsSet(flag) {
			return
		}
		s := c.String(flag)
		v := int64(-1)
		if s != "-1" {
			var e error
			if v, e = units.RAMInBytes(s); e != nil {
				err = fmt.Errorf("--%s: %q is not a size in bytes (e.g. 268435456, 256m, 1g, or -1)", flag, s)
				return
			}
		}
		*dst = &v
	}
	setBytes("memory", &r.Memory.Limit)
	setBytes("memory-reservation", &r.Memory.Reservation)
	setBytes("memory-swap", &r.Memory.Swap)
	if c.IsSet("cpuset-cpus") {
		r.CPU.Cpus = c.String("cpuset-cpus")
	}
	if c.IsSet("cpuset-mems") {
		r.CPU.Mems = c.String("cpuset-mems")
	}
	if c.IsSet("pids-limit") {
		var v *int64
		setI("pids-limit", &v)
		if v != nil {
			r.Pids = &specs.LinuxPids{Limit: v}
		}
	}
	if c.IsSet("blkio-weight") {
		var v *uint64
		setU("blkio-weight", &v)
		if v != nil {
			if !validBlkioWeight(*v) {
				return nil, fmt.Errorf("--blkio-weight: %d is out of range (10-1000, or 0 for no change)", *v)
			}
			w := uint16(*v)
			if r.BlockIO == nil {
				r.BlockIO = &specs.LinuxBlockIO{}
			}
			r.BlockIO.Weight = &w
		}
	}
	if err != nil {
		return nil, err
	}
	// libcontainer converts an out-of-range weight to a huge io.weight
	// (unsigned underflow) that the kernel rejects half-way through Set.
	if b := r.BlockIO; b != nil {
		if b.Weight != nil && !validBlkioWeight(uint64(*b.Weight)) {
			return nil, fmt.Errorf("--resources: blockIO.weight: %d is out of range (10-1000)", *b.Weight)
		}
		for i, wd := range b.WeightDevice {
			if wd.Weight != nil && !validBlkioWeight(uint64(*wd.Weight)) {
				return nil, fmt.Errorf("--resources: blockIO.weightDevice[%d].weight: %d is out of range (10-1000)", i, *wd.Weight)
			}
		}
	}
	return r, nil
}

// validBlkioWeight: 0 (unset) or cgroup v1's blkio.weight range 10-1000.
func validBlkioWeight(w uint64) bool {
	return w == 0 || (w >= 10 && w <= 1000)
}

// mergeResources copies onto cur every limit that upd sets.
func mergeResources(cur, upd *cgroups.Resources) {
	if upd.Memory != 0 {
		cur.Memory = upd.Memory
	}
	if upd.MemoryReservation != 0 {
		cur.MemoryReservation = upd.MemoryReservation
	}
	if upd.MemorySwap != 0 {
		cur.MemorySwap = upd.MemorySwap
	}
	if upd.MemorySwappiness != nil {
		cur.MemorySwappiness = upd.MemorySwappiness
	}
	if upd.CpuShares != 0 {
		cur.CpuShares = upd.CpuShares
	}
	if upd.CpuWeight != 0 {
		// Shares given now replace a weight given by name before (which,
		// kept in Unified, the cgroup manager would write last).
		cur.CpuWeight = upd.CpuWeight
		delete(cur.Unified, "cpu.weight")
	}
	if v, ok := upd.Unified["cpu.weight"]; ok {
		// A weight by name (checkUpdate checked it) is kept as the weight
		// itself, so that shares given later replace it.
		w, _ := strconv.ParseUint(v, 10, 64)
		cur.CpuWeight, cur.CpuShares = w, 0
		delete(cur.Unified, "cpu.weight")
	}
	if upd.CpuQuota != 0 {
		cur.CpuQuota = upd.CpuQuota
	}
	if upd.CpuPeriod != 0 {
		cur.CpuPeriod = upd.CpuPeriod
	}
	if upd.CpuBurst != nil {
		cur.CpuBurst = upd.CpuBurst
	}
	if upd.CpuRtRuntime != 0 {
		cur.CpuRtRuntime = upd.CpuRtRuntime
	}
	if upd.CpuRtPeriod != 0 {
		cur.CpuRtPeriod = upd.CpuRtPeriod
	}
	if upd.CPUIdle != nil {
		cur.CPUIdle = upd.CPUIdle
		// As runc: an idle change without shares does not write
		// cpu.weight again (the kernel refuses a weight on an idle
		// cgroup: EINVAL, half-way through the update).
		if _, byName := upd.Unified["cpu.weight"]; upd.CpuShares == 0 && upd.CpuWeight == 0 && !byName {
			cur.CpuShares, cur.CpuWeight = 0, 0
			delete(cur.Unified, "cpu.weight")
		}
	}
	if upd.CpusetCpus != "" {
		cur.CpusetCpus = upd.CpusetCpus
	}
	if upd.CpusetMems != "" {
		cur.CpusetMems = upd.CpusetMems
	}
	if upd.PidsLimit != nil {
		cur.PidsLimit = upd.PidsLimit
	}
	if upd.BlkioWeight != 0 {
		cur.BlkioWeight = upd.BlkioWeight
	}
	// Per-device entries: update the device's entry or add one (as runc).
	for _, wd := range upd.BlkioWeightDevice {
		cur.BlkioWeightDevice = upsertWeightDevice(cur.BlkioWeightDevice, wd)
	}
	for _, td := range upd.BlkioThrottleReadBpsDevice {
		cur.BlkioThrottleReadBpsDevice = upsertThrottleDevice(cur.BlkioThrottleReadBpsDevice, td)
	}
	for _, td := range upd.BlkioThrottleWriteBpsDevice {
		cur.BlkioThrottleWriteBpsDevice = upsertThrottleDevice(cur.BlkioThrottleWriteBpsDevice, td)
	}
	for _, td := range upd.BlkioThrottleReadIOPSDevice {
		cur.BlkioThrottleReadIOPSDevice = upsertThrottleDevice(cur.BlkioThrottleReadIOPSDevice, td)
	}
	for _, td := range upd.BlkioThrottleWriteIOPSDevice {
		cur.BlkioThrottleWriteIOPSDevice = upsertThrottleDevice(cur.BlkioThrottleWriteIOPSDevice, td)
	}
	if len(upd.HugetlbLimit) > 0 {
		cur.HugetlbLimit = upd.HugetlbLimit
	}
	for k, v := range upd.Unified {
		if k == "cpu.weight" {
			continue // above
		}
		if cur.Unified == nil {
			cur.Unified = map[string]string{}
		}
		cur.Unified[k] = v
	}
}

func upsertWeightDevice(list []*cgroups.WeightDevice, wd *cgroups.WeightDevice) []*cgroups.WeightDevice {
	for i, d := range list {
		if d.Major == wd.Major && d.Minor == wd.Minor {
			list[i] = wd
			return list
		}
	}
	return append(list, wd)
}

func upsertThrottleDevice(list []*cgroups.ThrottleDevice, td *cgroups.ThrottleDevice) []*cgroups.ThrottleDevice {
	for i, d := range list {
		if d.Major == td.Major && d.Minor == td.Minor {
			list[i] = td
			return list
		}
	}
	return append(list, td)
}
