package main

import (
	"fmt"
	"io"
	"os"
	"strconv"

	units "github.com/docker/go-units"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/specconv"
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
contract record), by create's own checker: update refuses exactly what
config.json's linux.resources would be refused. 0 is "not set" (the value
stays). A value above a ceiling, "unlimited" (-1) where the policy
has a ceiling, and what maka's contract does not model (real-time CPU,
hugepages, Intel RDT, cgroup files by name other than memory.max,
memory.swap.max, memory.low, memory.min, memory.high, pids.max, cpu.max,
cpu.weight, memory.oom.group, cpuset.cpus, cpuset.mems and io.max) are refused with
BOUNDARY_REJECTED, and nothing changes (hugepages, RDMA and device rules are
fixed at create). Per-device block IO weights and throttles (and io.max by
name) replace the device's entries, as runc's do. Cgroup files by name are checked as
the fields they are; a CPU burst stays within the quota, and quota plus
burst within the CPU ceiling. An accepted update republishes the whole
contract (the record and maka.json). Without --memory-swap, the swap
beyond memory stays what the contract says.

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
		policy, err := specconv.UpdatePolicy(op.Record, func() (*libmaka.Policy, error) { return loadPolicy(c) })
		if err != nil {
			return err
		}
		config := ctr.Config()
		if config.Cgroups == nil || config.Cgroups.Resources == nil {
			return fmt.Errorf("update %s: the container has no cgroup configuration", ctr.ID())
		}
		// Every value is held to the container's policy before anything
		// is written, by create's own checker.
		next, checked, items := specconv.CheckUpdate(policy, specconv.EnforcedOf(config.Cgroups.Resources), r, updateSourceName(c.IsSet))
		if len(items) > 0 {
			return &specconv.RejectedError{Verdict: specconv.Verdict{Profile: policy.Profile, Items: items, Source: "update"}}
		}
		cg, err := rspecconv.CreateCgroupConfig(&rspecconv.CreateOpts{
			CgroupName: ctr.ID(),
			Spec:       &specs.Spec{Linux: &specs.Linux{Resources: checked}},
		}, nil)
		if err != nil {
			return fmt.Errorf("update %s: %w", ctr.ID(), err)
		}
		specconv.MergeResources(config.Cgroups.Resources, cg.Resources)
		// runc's memory.checkBeforeUpdate: a memory limit below what the
		// container uses now is refused instead of reclaiming (stricter
		// only); kept in the container's config until changed, as runc.
		if r.Memory != nil && r.Memory.CheckBeforeUpdate != nil {
			config.Cgroups.MemoryCheckBeforeUpdate = *r.Memory.CheckBeforeUpdate
		}
		// The checked values, exactly: memory+swap from the contract's
		// swap when only the memory changes, never an unset swap.
		next.Apply(config.Cgroups.Resources)
		// As runc: update never changes the device rules.
		config.Cgroups.SkipDevices = true
		// The contract first (as create publishes before the cgroup
		// exists); put back if the kernel refuses the values.
		if err := ctr.CheckCgroup(); err != nil {
			return fmt.Errorf("update %s: %w", ctr.ID(), err)
		}
		var old *libmaka.Boundary
		if op.Record != nil {
			if old, err = op.Record.Boundary.Get(); err != nil {
				return fmt.Errorf("update %s: the contract record: %w", ctr.ID(), err)
			}
		}
		if old != nil {
			nb, err := specconv.ContractAfterUpdate(old, next, checked)
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
		if r, err = specconv.ParseResources(path, data); err != nil {
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
			// Held to 10-1000 by the checker, as config.json's weight.
			w := uint16(min(*v, 65535))
			if r.BlockIO == nil {
				r.BlockIO = &specs.LinuxBlockIO{}
			}
			r.BlockIO.Weight = &w
		}
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// updateFlags maps the --resources keys to the single-value flags that set
// them (a flag takes precedence, so it is what an item names).
var updateFlags = map[string]string{
	"memory.limit": "memory", "memory.swap": "memory-swap", "memory.reservation": "memory-reservation",
	"pids.limit": "pids-limit", "cpu.quota": "cpu-quota", "cpu.period": "cpu-period", "cpu.burst": "cpu-burst",
	"cpu.realtimePeriod": "cpu-rt-period", "cpu.realtimeRuntime": "cpu-rt-runtime", "cpu.shares": "cpu-share",
	"cpu.idle": "cpu-idle", "cpu.cpus": "cpuset-cpus", "cpu.mems": "cpuset-mems", "blockIO.weight": "blkio-weight",
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
