package specconv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

func joinTypes(ts []specs.LinuxNamespaceType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// ownOOMScoreAdj is maka's own oom_score_adj: a sandbox may not ask to be
// killed later than the runtime that made it.
var ownOOMScoreAdj = func() int {
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return n
}

// Scheduling policies that do not raise the sandbox above the host's
// ordinary processes.
var fairSchedulers = []specs.LinuxSchedulerPolicy{specs.SchedOther, specs.SchedBatch, specs.SchedIdle}

// checkPriorities refuses what would let the sandbox run before, or be
// killed after, the host's own processes. libcontainer applies these in
// the init before it drops capabilities, so a sandbox without
// CAP_SYS_NICE would get them all the same.
func (c *checker) checkPriorities(p *specs.Process) {
	if a := p.OOMScoreAdj; a != nil {
		if own := ownOOMScoreAdj(); *a < own || *a > 1000 {
			c.reject("process.oomScoreAdj", "", "%d is outside %d..1000: a sandbox may not be killed after maka itself", *a, own)
		}
	}
	if s := p.Scheduler; s != nil {
		if !slices.Contains(fairSchedulers, s.Policy) {
			c.reject("process.scheduler.policy", "", "%s is not allowed: only SCHED_OTHER, SCHED_BATCH and SCHED_IDLE (no real-time scheduling)", s.Policy)
		}
		if s.Nice < 0 || s.Nice > 19 {
			c.reject("process.scheduler.nice", "", "%d is outside 0..19: a sandbox may not run before the host's processes", s.Nice)
		}
		if s.Priority != 0 || len(s.Flags) > 0 || s.Runtime != 0 || s.Deadline != 0 || s.Period != 0 {
			c.reject("process.scheduler", "", "priority, flags, runtime, deadline and period are for real-time policies, which are not allowed")
		}
	}
	if io := p.IOPriority; io != nil {
		if io.Class == specs.IOPRIO_CLASS_RT {
			c.reject("process.ioPriority.class", "", "the real-time I/O class is not allowed")
		} else if io.Class != specs.IOPRIO_CLASS_BE && io.Class != specs.IOPRIO_CLASS_IDLE {
			c.reject("process.ioPriority.class", "", "%q is not IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE", io.Class)
		}
		if io.Priority < 0 || io.Priority > 7 {
			c.reject("process.ioPriority.priority", "", "%d is outside 0..7", io.Priority)
		}
	}
	for i, rl := range p.Rlimits {
		field := fmt.Sprintf("process.rlimits[%d]", i)
		switch rl.Type {
		case "RLIMIT_RTPRIO", "RLIMIT_RTTIME":
			if rl.Hard > 0 || rl.Soft > 0 {
				c.reject(field, "", "%s above 0 allows real-time scheduling", rl.Type)
			}
		case "RLIMIT_NICE":
			if rl.Hard > 20 || rl.Soft > 20 {
				c.reject(field, "", "RLIMIT_NICE above 20 allows a priority above the host's processes")
			}
		}
		if rl.Soft > rl.Hard {
			c.reject(field+".soft", "", "the soft limit %d is above the hard limit %d", rl.Soft, rl.Hard)
		}
	}
}

// checkCgroup checks config.json's cgroupsPath against the policy's
// cgroupParents (libmaka's Policy.CgroupPath); Place fixes the path once
// the id is known.
func (c *checker) checkCgroup() {
	p := c.spec.Linux.CgroupsPath
	if p == "" {
		return
	}
	if _, err := c.policy.CgroupPath("check", p); err != nil {
		hint := ""
		if i := strings.LastIndexByte(p, '/'); i > 0 && filepath.IsAbs(p) && !strings.Contains(p, ":") {
			hint = fmt.Sprintf(`"cgroupParents": [..., %q]`, filepath.Clean(p[:i]))
		}
		c.reject("linux.cgroupsPath", hint, "%s", strings.TrimPrefix(err.Error(), "linux.cgroupsPath: "))
	}
}

// Place fixes the sandbox's cgroup once its id is known: config.json's
// cgroupsPath (b.Cgroup.Path as compiled) when the policy allows it
// (checked again), else /maka/<id>.
func Place(b *libmaka.Boundary, policy *libmaka.Policy, id string) error {
	p, err := policy.CgroupPath(id, b.Cgroup.Path)
	if err != nil {
		return err
	}
	b.Cgroup.Path = p
	return nil
}

// standardDeviceNumbers are the devices every container has (major,
// minor; -1: any minor): what a device cgroup rule may allow without a
// device of the policy's.
var standardDeviceNumbers = [][2]int64{{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}, {5, 1}, {5, 2}, {136, -1}}

// checkDeviceRules holds linux.resources.devices to the devices the
// sandbox may have: an allow rule must name a standard device or one of
// linux.devices that the policy allows.
func (c *checker) checkDeviceRules() {
	l := c.spec.Linux
	if l.Resources == nil {
		return
	}
	allowed := slices.Clone(standardDeviceNumbers)
	for _, d := range l.Devices {
		if slices.Contains(standardDevices, d.Path) || c.policy.AllowsDevice(d.Path) {
			allowed = append(allowed, [2]int64{d.Major, d.Minor})
		}
	}
	for i, d := range l.Resources.Devices {
		if !d.Allow {
			continue
		}
		field := fmt.Sprintf("linux.resources.devices[%d]", i)
		if d.Type == "" || d.Type == "a" || d.Major == nil || *d.Major < 0 {
			c.reject(field, "", "a rule allowing every device (%q) is not allowed", d.Access)
			continue
		}
		minor := int64(-1)
		if d.Minor != nil {
			minor = *d.Minor
		}
		// A rule for every minor (-1) needs an entry for every minor.
		ok := slices.ContainsFunc(allowed, func(a [2]int64) bool {
			return a[0] == *d.Major && (a[1] == -1 || a[1] == minor)
		})
		if !ok {
			c.reject(field, "", "a rule allowing %s %d:%s is not allowed by %s: it names no device the sandbox has (declare the device in linux.devices, which the policy's devices must allow)",
				d.Type, *d.Major, minorString(minor), c.profile())
		}
	}
}

func minorString(m int64) string {
	if m < 0 {
		return "*"
	}
	return strconv.FormatInt(m, 10)
}

// checkPropagation: a shared root would let the sandbox's mounts reach the
// host.
func (c *checker) checkPropagation() {
	switch p := c.spec.Linux.RootfsPropagation; p {
	case "", "private", "rprivate", "slave", "rslave":
	default:
		c.reject("linux.rootfsPropagation", "", "%q is not allowed: only private or slave (a shared root would pass the sandbox's mounts to the host)", p)
	}
}
