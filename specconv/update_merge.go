package specconv

import (
	"slices"
	"strconv"

	"github.com/opencontainers/cgroups"
)

// MergeResources copies onto cur every limit that upd sets.
func MergeResources(cur, upd *cgroups.Resources) {
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
		// A weight by name (CheckUpdate checked it) is kept as the weight
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

// The upserts change a device's last entry: of duplicates the kernel keeps
// the last written (runc's upsert does the same).
func upsertWeightDevice(list []*cgroups.WeightDevice, wd *cgroups.WeightDevice) []*cgroups.WeightDevice {
	for i, d := range slices.Backward(list) {
		if d.Major == wd.Major && d.Minor == wd.Minor {
			list[i] = wd
			return list
		}
	}
	return append(list, wd)
}

func upsertThrottleDevice(list []*cgroups.ThrottleDevice, td *cgroups.ThrottleDevice) []*cgroups.ThrottleDevice {
	for i, d := range slices.Backward(list) {
		if d.Major == td.Major && d.Minor == td.Minor {
			list[i] = td
			return list
		}
	}
	return append(list, td)
}
