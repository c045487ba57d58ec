package monitor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/maka-runtime/maka/libmaka/egress"
)

// PeakFile holds what the monitor saw of the container when it stopped:
// its peak usage and, if the monitor destroyed it, how fast it died.
const PeakFile = "peak.json"

// Peak is the content of peak.json, written once when the container stops
// (while its cgroup still exists).
type Peak struct {
	Time   time.Time `json:"time"`   // when it was written
	Memory int64     `json:"memory"` // bytes (memory.peak)
	Pids   int64     `json:"pids"`   // pids.peak
	// Tmpfs: each writable tmpfs of the boundary the monitor could hold.
	Tmpfs []TmpfsUse `json:"tmpfs,omitempty"`
	// Killed: the sandbox was destroyed by the monitor (kill mode or the
	// timeout), and how long it took to empty.
	Killed *KillTiming `json:"killed,omitempty"`
	// Egress: the egress proxy's counters (a sandbox under egress):
	// connections and bytes each way per destination, refusals by reason.
	Egress *egress.Snapshot `json:"egress,omitempty"`
}

// TmpfsUse is the use of one writable tmpfs. The kernel keeps no peak per
// mount: Peak is the largest of the monitor's samples (every
// TmpfsSampleInterval) and the final value, so a burst shorter than the
// interval can be missed.
type TmpfsUse struct {
	Path    string `json:"path"`    // as the container sees it
	Size    int64  `json:"size"`    // bytes: the mount's size
	Used    int64  `json:"used"`    // bytes in use when the container stopped
	Peak    int64  `json:"peak"`    // bytes: the largest sample
	Samples int    `json:"samples"` // how many samples Peak is the largest of (the final one included)
}

// observe adds one sample of used bytes.
func (u *TmpfsUse) observe(used int64) {
	u.Used = used
	if used > u.Peak {
		u.Peak = used
	}
	u.Samples++
}

// KillTiming is how long a sandbox took to die after the monitor decided to
// destroy it.
type KillTiming struct {
	// Violation is when the violating notification (seccomp notification,
	// cgroup event or timer) reached the monitor: the record's time.
	Violation time.Time `json:"violation"`
	// Empty is when the monitor saw the cgroup empty (cgroup.events
	// "populated 0", signalled by inotify), EmptyAfterMs the time between.
	// Both are missing if it was still not empty when the monitor gave up
	// waiting (KillWait).
	Empty        *time.Time `json:"empty,omitempty"`
	EmptyAfterMs *float64   `json:"emptyAfterMs,omitempty"`
}

func newKillTiming(violation, empty time.Time, emptied bool) *KillTiming {
	k := &KillTiming{Violation: violation}
	if emptied {
		ms := float64(empty.Sub(violation).Microseconds()) / 1000
		e := empty
		k.Empty, k.EmptyAfterMs = &e, &ms
	}
	return k
}

func writePeak(stateDir, cgroupDir string, tmpfs []TmpfsUse, killed *KillTiming, eg *egress.Snapshot) error {
	if _, err := os.Stat(cgroupDir); err != nil {
		return err
	}
	p := Peak{
		Time:   time.Now().UTC(),
		Memory: readInt(filepath.Join(cgroupDir, "memory.peak")),
		Pids:   readInt(filepath.Join(cgroupDir, "pids.peak")),
		Tmpfs:  tmpfs,
		Egress: eg,
		Killed: killed,
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp := filepath.Join(stateDir, PeakFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(stateDir, PeakFile))
}
