package specconv

import (
	"testing"

	"github.com/opencontainers/cgroups"
)

func TestMergeResourcesUpsertsThrottleDevices(t *testing.T) {
	cur := &cgroups.Resources{BlkioThrottleReadBpsDevice: []*cgroups.ThrottleDevice{
		cgroups.NewThrottleDevice(7, 0, 100), cgroups.NewThrottleDevice(8, 0, 200),
	}}
	MergeResources(cur, &cgroups.Resources{BlkioThrottleReadBpsDevice: []*cgroups.ThrottleDevice{
		cgroups.NewThrottleDevice(8, 0, 300), cgroups.NewThrottleDevice(9, 1, 400),
	}})
	got := map[string]uint64{}
	for _, d := range cur.BlkioThrottleReadBpsDevice {
		got[d.String()] = d.Rate
	}
	if len(got) != 3 || got["7:0 100"] != 100 || got["8:0 300"] != 300 || got["9:1 400"] != 400 {
		t.Errorf("throttle devices after merge: %v", got)
	}
}

// An idle change alone leaves cpu.weight unwritten, as runc does: the
// kernel refuses a weight on an idle cgroup (runc's update.bats "update
// cgroup cpu.idle" on a container created with shares).
func TestMergeResourcesIdleWithoutShares(t *testing.T) {
	one := int64(1)
	cur := &cgroups.Resources{CpuShares: 100, CpuWeight: 4}
	MergeResources(cur, &cgroups.Resources{CPUIdle: &one})
	if cur.CpuWeight != 0 || cur.CpuShares != 0 || cur.CPUIdle == nil || *cur.CPUIdle != 1 {
		t.Errorf("idle alone: weight %d shares %d idle %v", cur.CpuWeight, cur.CpuShares, cur.CPUIdle)
	}
	cur = &cgroups.Resources{CpuShares: 100, CpuWeight: 4}
	MergeResources(cur, &cgroups.Resources{CPUIdle: &one, CpuShares: 200, CpuWeight: 8})
	if cur.CpuWeight != 8 {
		t.Errorf("idle with shares: weight %d, want 8", cur.CpuWeight)
	}
}

// A weight by name replaces shares and is replaced by them: the cgroup
// manager writes Unified last, so a weight left there would undo later
// shares.
func TestMergeResourcesWeightByName(t *testing.T) {
	cur := &cgroups.Resources{CpuWeight: 10, Unified: map[string]string{"cpu.weight": "42", "memory.min": "1"}}
	MergeResources(cur, &cgroups.Resources{CpuShares: 1024, CpuWeight: 39})
	if cur.CpuWeight != 39 || cur.Unified["cpu.weight"] != "" || cur.Unified["memory.min"] != "1" {
		t.Errorf("after shares: weight %d, unified %v", cur.CpuWeight, cur.Unified)
	}
	MergeResources(cur, &cgroups.Resources{Unified: map[string]string{"cpu.weight": "16"}})
	if cur.CpuWeight != 16 || cur.CpuShares != 0 || len(cur.Unified) != 1 {
		t.Errorf("after a weight by name: weight %d shares %d unified %v", cur.CpuWeight, cur.CpuShares, cur.Unified)
	}
}

func TestMergeResourcesOnlyChangesWhatIsSet(t *testing.T) {
	pids := int64(64)
	cur := &cgroups.Resources{Memory: 1 << 30, MemorySwap: 1 << 30, PidsLimit: &pids, CpuQuota: 200000, CpuPeriod: 100000}
	newPids := int64(10)
	MergeResources(cur, &cgroups.Resources{PidsLimit: &newPids, CpusetCpus: "0"})
	if cur.Memory != 1<<30 || cur.MemorySwap != 1<<30 || cur.CpuQuota != 200000 || cur.CpuPeriod != 100000 {
		t.Errorf("unrelated limits changed: %+v", cur)
	}
	if *cur.PidsLimit != 10 || cur.CpusetCpus != "0" {
		t.Errorf("update not applied: pids %d cpus %q", *cur.PidsLimit, cur.CpusetCpus)
	}
}

// Duplicates of one device (config.json may list one twice; the kernel
// keeps the last written): the update changes the last, as runc's upsert
// does (runc's update.bats "update per-device iops/bps values").
func TestMergeResourcesUpdatesTheLastDuplicate(t *testing.T) {
	cur := &cgroups.Resources{BlkioThrottleReadBpsDevice: []*cgroups.ThrottleDevice{
		cgroups.NewThrottleDevice(254, 0, 485760), cgroups.NewThrottleDevice(254, 0, 485760),
	}}
	MergeResources(cur, &cgroups.Resources{BlkioThrottleReadBpsDevice: []*cgroups.ThrottleDevice{cgroups.NewThrottleDevice(254, 0, 10485760)}})
	if l := cur.BlkioThrottleReadBpsDevice; len(l) != 2 || l[1].Rate != 10485760 {
		t.Errorf("after the update: %v %v", l[0], l[1])
	}
}
