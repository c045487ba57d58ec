package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/maka-runtime/maka/internal/printable"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/types"
	"github.com/urfave/cli/v2"
)

var eventsCommand = &cli.Command{
	Name:      "events",
	Usage:     "print the container's resource usage (stats), OOM events and violations as JSON lines",
	ArgsUsage: "<container-id>",
	Description: `Each line is {"type":"stats"|"oom"|"violation","id":...,"data":...}, in
runc's shape. With --stats one stats event is printed; otherwise one every
--interval, an "oom" event whenever the kernel's OOM killer acts, and a
"violation" event for each record of the monitor (the ones already recorded
first; data as in "maka violations --format json"), until the container
stops.

EXAMPLE:
       # maka events --stats box1`,
	Flags: []cli.Flag{
		&cli.DurationFlag{Name: "interval", Value: 5 * time.Second, Usage: "time between stats events"},
		&cli.BoolFlag{Name: "stats", Usage: "print the container's stats once and exit"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		interval := c.Duration("interval")
		if interval <= 0 {
			return fmt.Errorf("--interval: %s is not a positive duration", interval)
		}
		ctr, err := loadContainer(c)
		if err != nil {
			return err
		}
		status, err := ctr.Status()
		if err != nil {
			return err
		}
		if status == libmaka.Stopped {
			return fmt.Errorf("events %s: %w", ctr.ID(), libmaka.ErrNotRunning)
		}
		// Violation records carry what the sandbox chose: every rune
		// that would act on a terminal is a \u escape.
		enc := json.NewEncoder(printable.JSONWriter{W: os.Stdout})
		if c.Bool("stats") {
			ev, err := statsEvent(ctr)
			if err != nil {
				return err
			}
			return enc.Encode(ev)
		}
		return streamEvents(ctr, enc, interval)
	},
}

func streamEvents(ctr *libmaka.Container, enc *json.Encoder, interval time.Duration) error {
	oom, err := ctr.NotifyOOM()
	if err != nil {
		return fmt.Errorf("events %s: %w", ctr.ID(), err)
	}
	// The monitor's records, as they are appended (none without a journal).
	violations := make(chan monitor.Record, 16)
	if jf, err := followJournal(filepath.Join(ctr.StateDir(), monitor.JournalFile)); err == nil {
		go jf.run(violations)
	} else {
		close(violations)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		ev, err := statsEvent(ctr)
		if err != nil {
			if stopped(ctr) {
				return nil
			}
			return err
		}
		if err := enc.Encode(ev); err != nil {
			return err
		}
	wait:
		select {
		case _, ok := <-oom:
			if !ok {
				return nil // the cgroup is gone: the container stopped
			}
			if err := enc.Encode(types.Event{Type: "oom", ID: ctr.ID()}); err != nil {
				return err
			}
		case r, ok := <-violations:
			if !ok {
				violations = nil
				goto wait
			}
			if err := enc.Encode(types.Event{Type: "violation", ID: ctr.ID(), Data: r}); err != nil {
				return err
			}
			goto wait
		case <-tick.C:
		}
	}
}

func stopped(ctr *libmaka.Container) bool {
	s, err := ctr.Status()
	return err != nil || s == libmaka.Stopped
}

func statsEvent(ctr *libmaka.Container) (*types.Event, error) {
	st, err := ctr.Stats()
	if err != nil {
		if errors.Is(err, libcontainer.ErrNotRunning) {
			return nil, libmaka.ErrNotRunning
		}
		return nil, fmt.Errorf("events %s: %w", ctr.ID(), err)
	}
	return &types.Event{Type: "stats", ID: ctr.ID(), Data: convertStats(st)}, nil
}

// convertStats maps libcontainer's stats onto runc's event types, the
// shape containerd's runc shim decodes.
func convertStats(ls *libcontainer.Stats) *types.Stats {
	s := &types.Stats{NetworkInterfaces: ls.Interfaces}
	cg := ls.CgroupStats
	if cg == nil {
		return s
	}
	s.CPU = types.Cpu{
		Usage: types.CpuUsage{
			Total:        cg.CpuStats.CpuUsage.TotalUsage,
			Percpu:       cg.CpuStats.CpuUsage.PercpuUsage,
			PercpuKernel: cg.CpuStats.CpuUsage.PercpuUsageInKernelmode,
			PercpuUser:   cg.CpuStats.CpuUsage.PercpuUsageInUsermode,
			Kernel:       cg.CpuStats.CpuUsage.UsageInKernelmode,
			User:         cg.CpuStats.CpuUsage.UsageInUsermode,
		},
		Throttling: types.Throttling{
			Periods:          cg.CpuStats.ThrottlingData.Periods,
			ThrottledPeriods: cg.CpuStats.ThrottlingData.ThrottledPeriods,
			ThrottledTime:    cg.CpuStats.ThrottlingData.ThrottledTime,
		},
		PSI: cg.CpuStats.PSI,
	}
	s.CPUSet = types.CPUSet(cg.CPUSetStats)
	m := cg.MemoryStats
	s.Memory = types.Memory{
		Cache:     m.Cache,
		Usage:     memoryEntry(m.Usage),
		Swap:      memoryEntry(m.SwapUsage),
		Kernel:    memoryEntry(m.KernelUsage),
		KernelTCP: memoryEntry(m.KernelTCPUsage),
		Raw:       m.Stats,
		PSI:       m.PSI,
	}
	s.Pids = types.Pids{Current: cg.PidsStats.Current, Limit: cg.PidsStats.Limit}
	b := cg.BlkioStats
	s.Blkio = types.Blkio{
		IoServiceBytesRecursive: blkioEntries(b.IoServiceBytesRecursive),
		IoServicedRecursive:     blkioEntries(b.IoServicedRecursive),
		IoQueuedRecursive:       blkioEntries(b.IoQueuedRecursive),
		IoServiceTimeRecursive:  blkioEntries(b.IoServiceTimeRecursive),
		IoWaitTimeRecursive:     blkioEntries(b.IoWaitTimeRecursive),
		IoMergedRecursive:       blkioEntries(b.IoMergedRecursive),
		IoTimeRecursive:         blkioEntries(b.IoTimeRecursive),
		SectorsRecursive:        blkioEntries(b.SectorsRecursive),
		PSI:                     b.PSI,
	}
	s.Hugetlb = make(map[string]types.Hugetlb, len(cg.HugetlbStats))
	for k, v := range cg.HugetlbStats {
		s.Hugetlb[k] = types.Hugetlb{Usage: v.Usage, Max: v.MaxUsage, Failcnt: v.Failcnt}
	}
	return s
}

func memoryEntry(d cgroups.MemoryData) types.MemoryEntry {
	return types.MemoryEntry{Limit: d.Limit, Usage: d.Usage, Max: d.MaxUsage, Failcnt: d.Failcnt}
}

func blkioEntries(in []cgroups.BlkioStatEntry) []types.BlkioEntry {
	out := make([]types.BlkioEntry, len(in))
	for i, e := range in {
		out[i] = types.BlkioEntry(e)
	}
	return out
}
