package specconv

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

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

// Scheduling policies that do not raise the sandbox above the host's
// ordinary processes.
var fairSchedulers = []specs.LinuxSchedulerPolicy{specs.SchedOther, specs.SchedBatch, specs.SchedIdle}

// checkPriorities refuses what would let the sandbox run before, or be
// killed after, the host's own processes. libcontainer applies these in
// the init before it drops capabilities, so a sandbox without
// CAP_SYS_NICE would get them all the same.
func (c *checker) checkPriorities(p *specs.Process) {
	if a := p.OOMScoreAdj; a != nil {
		low, why := c.facts.OOMScoreAdj, "a sandbox may not be killed after maka itself"
		if m := c.policy.OOMScoreAdjMin; m != nil {
			low, why = *m, "the policy's oomScoreAdjMin"
		}
		if *a < low || *a > 1000 {
			hint := ""
			if *a >= -999 && *a < low {
				hint = fmt.Sprintf(`"oomScoreAdjMin": %d`, *a)
			}
			c.reject("process.oomScoreAdj", hint, "%d is outside %d..1000 (%s)", *a, low, why)
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
		// What the kernel would refuse when libcontainer applies it
		// (prlimit, EPERM): refused now, before anything exists.
		if n := c.facts.NrOpen; rl.Type == "RLIMIT_NOFILE" && n > 0 && rl.Hard > n {
			c.reject(field+".hard", "", "%d is above the kernel's fs.nr_open (%d): no process may have more open files", rl.Hard, n)
		}
		if t, ok := rlimitTypes[rl.Type]; ok && c.policy.Rootless != nil {
			if own := c.facts.HardLimit(t); rl.Hard > own {
				c.reject(field+".hard", "", "%d is above maka's own hard limit of %s (%d): rootless maka cannot raise it", rl.Hard, rl.Type, own)
			}
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
// (checked again), else /maka/<id>. It also checks every bind source again
// with the id: a rule with {id} allowed any one name until now.
func Place(b *libmaka.Boundary, policy *libmaka.Policy, id string) error {
	if err := checkOwnBinds(b, policy, id); err != nil {
		return err
	}
	p, err := policy.CgroupPath(id, b.Cgroup.Path)
	if err != nil {
		return err
	}
	b.Cgroup.Path = p
	return nil
}

// checkOwnBinds holds each bind source (as CheckHost resolved it) to the
// policy's rules for container id: a bindPaths rule with a placeholder
// allows only this container's (or its pod's) own directory.
func checkOwnBinds(b *libmaka.Boundary, policy *libmaka.Policy, id string) error {
	owner := libmaka.BindOwnerOf(id, b.Annotations)
	var items []Item
	for i := range b.Mounts {
		m := &b.Mounts[i]
		if !IsBind(m) {
			continue
		}
		switch policy.BindRule(m.Source, owner) {
		case "":
			items = append(items, Item{Field: fmt.Sprintf("mounts[%d].source", i),
				Message: fmt.Sprintf("binding the host path %s is not allowed by profile %s for container %s: it is not this container's own (%s)", m.Source, policy.Profile, id, ownerString(owner))})
		case "ro":
			if !isReadonly(m) {
				items = append(items, Item{Field: fmt.Sprintf("mounts[%d].options", i),
					Message: fmt.Sprintf("%s may only be bound read-only by profile %s (add \"ro\" to the options)", m.Source, policy.Profile)})
			}
		}
	}
	if len(items) > 0 {
		return &RejectedError{Verdict: Verdict{Profile: policy.Profile, Items: items}}
	}
	return nil
}

// ownerString says what a {placeholder} stood for.
func ownerString(o libmaka.BindOwner) string {
	s := "{id} " + o.ID
	for _, v := range []struct{ name, v string }{{"{sandbox-id}", o.SandboxID}, {"{pod-uid}", o.PodUID}} {
		if v.v == "" {
			s += ", no " + v.name
		} else {
			s += ", " + v.name + " " + v.v
		}
	}
	return s
}

// deviceNode is a device's type ("c" or "b") and numbers (minor -1: any).
type deviceNode struct {
	typ          string
	major, minor int64
}

// ptsDevices are the terminals of the sandbox's own devpts.
var ptsDevices = deviceNode{"c", 136, -1}

// checkDeviceRules holds linux.resources.devices to the devices the
// sandbox has: an allow rule must name (type and numbers) a standard
// device, a pts, or one of linux.devices that the policy allows (whose
// numbers CheckHost compares with the host's node).
func (c *checker) checkDeviceRules() {
	l := c.spec.Linux
	if l.Resources == nil {
		return
	}
	allowed := []deviceNode{ptsDevices}
	for _, d := range standardDeviceNodes {
		allowed = append(allowed, d)
	}
	for _, d := range l.Devices {
		if _, std := standardDeviceNodes[d.Path]; !std && c.policy.AllowsDevice(d.Path) {
			allowed = append(allowed, deviceNode{d.Type, d.Major, d.Minor})
		}
	}
	for i, d := range l.Resources.Devices {
		if !d.Allow || ConsoleRule(d) {
			continue // a console rule is dropped (ToBoundary), never granted
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
		ok := slices.ContainsFunc(allowed, func(a deviceNode) bool {
			return a.typ == d.Type && a.major == *d.Major && (a.minor == -1 || a.minor == minor)
		})
		if !ok {
			c.reject(field, "", "a rule allowing %s %d:%s is not allowed by %s: it names no device the sandbox has (declare the device in linux.devices, which the policy's devices must allow)",
				d.Type, *d.Major, minorString(minor), c.profile())
		}
	}
}

// ConsoleRule reports whether d is an allow rule for the host's system
// console (c 5:1) alone, which containerd's default spec grants every
// container. No sandbox has that node (a terminal is its own pty, bound
// at /dev/console), so the rule could only serve a node the sandbox made
// itself: the host's console. It is dropped from the device cgroup and
// shown as dropped in the Boundary, rather than refused, so that an
// engine's default container still runs.
func ConsoleRule(d specs.LinuxDeviceCgroup) bool {
	return d.Allow && d.Type == "c" && d.Major != nil && *d.Major == 5 && d.Minor != nil && *d.Minor == 1
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

// Compiled when first used, not at package init: every start of maka (its
// init included) would pay for them, and `{1,64}` alone is a thousand
// allocations (GODEBUG=inittrace=1).
var (
	// hugepage sizes as the cgroup files name them (hugetlb.2MB.max).
	hugepageSize = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+(KB|MB|GB)$`) })
	// an RDMA device name, written as a line of rdma.max.
	rdmaDevice = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) })
	// a cpuset list: 0-3,5
	cpusetList = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)
	})
)

// checkCgroupValues checks the cgroup values besides the limits: each one
// names a cgroup file or is written into one, so a value shaped like a
// path (a hugepage size "x/../memory") would write another file.
func (c *checker) checkCgroupValues() {
	r := c.spec.Linux.Resources
	if r == nil {
		return
	}
	for i, h := range r.HugepageLimits {
		if !hugepageSize().MatchString(h.Pagesize) {
			c.reject(fmt.Sprintf("linux.resources.hugepageLimits[%d].pageSize", i), "", "%q is not a hugepage size such as 2MB or 1GB", h.Pagesize)
		}
	}
	for name := range r.Rdma {
		if !rdmaDevice().MatchString(name) {
			c.reject(fmt.Sprintf("linux.resources.rdma[%q]", name), "", "not an RDMA device name")
		}
	}
	if cpu := r.CPU; cpu != nil {
		for _, f := range []struct{ field, v string }{{"cpus", cpu.Cpus}, {"mems", cpu.Mems}} {
			if f.v != "" && !cpusetList().MatchString(f.v) {
				c.reject("linux.resources.cpu."+f.field, "", "%q is not a list such as 0-3,5", f.v)
			}
		}
	}
	if b := r.BlockIO; b != nil {
		if b.Weight != nil && (*b.Weight < 10 || *b.Weight > 1000) {
			c.reject("linux.resources.blockIO.weight", "", "%d is not between 10 and 1000", *b.Weight)
		}
		for i, w := range b.WeightDevice {
			if w.Weight != nil && (*w.Weight < 10 || *w.Weight > 1000) {
				c.reject(fmt.Sprintf("linux.resources.blockIO.weightDevice[%d].weight", i), "", "%d is not between 10 and 1000", *w.Weight)
			}
		}
		// The kernel refuses a rate of 0 (ERANGE): refused here, named.
		for _, l := range []struct {
			name string
			list []specs.LinuxThrottleDevice
		}{
			{"throttleReadBpsDevice", b.ThrottleReadBpsDevice}, {"throttleWriteBpsDevice", b.ThrottleWriteBpsDevice},
			{"throttleReadIOPSDevice", b.ThrottleReadIOPSDevice}, {"throttleWriteIOPSDevice", b.ThrottleWriteIOPSDevice},
		} {
			for i, d := range l.list {
				if d.Rate == 0 {
					c.reject(fmt.Sprintf("linux.resources.blockIO.%s[%d].rate", l.name, i), "", "0 is not a rate")
				}
			}
		}
	}
}

// mountFlags are the mount options any mount may have: each sets a flag,
// narrows (no, r-no...), or picks a private or slave propagation. Options
// that widen or reach the host (shared propagation, remount, idmap, the
// recursive clearing of nosuid/nodev/noexec) are refused.
var mountFlags = map[string]bool{
	"ro": true, "rw": true, "rro": true, "rrw": true, "bind": true, "rbind": true,
	"nosuid": true, "suid": true, "nodev": true, "dev": true, "noexec": true, "exec": true,
	"sync": true, "async": true, "dirsync": true, "nomand": true, "silent": true, "loud": true,
	"relatime": true, "norelatime": true, "noatime": true, "atime": true, "strictatime": true, "nostrictatime": true,
	"nodiratime": true, "diratime": true, "lazytime": true, "nolazytime": true, "nosymfollow": true,
	"rnosuid": true, "rnodev": true, "rnoexec": true, "rnoatime": true, "rnodiratime": true, "rrelatime": true,
	"rstrictatime": true, "rnosymfollow": true,
	"private": true, "rprivate": true, "slave": true, "rslave": true, "unbindable": true, "runbindable": true,
	"newinstance": true,
	// Podman's: the tmpfs starts with a copy of what the root has there.
	"tmpcopyup": true,
	// A bind mounted idmapped through the sandbox's own user namespace
	// (checkBind: binds only, and only with a user namespace).
	"idmap": true, "ridmap": true,
}

// mountData are the key=value options each filesystem type may have.
var mountData = map[string][]string{
	"tmpfs":  {"size", "nr_blocks", "nr_inodes", "mode", "uid", "gid", "huge"},
	"devpts": {"ptmxmode", "mode", "gid", "uid", "max"},
	"proc":   {"hidepid", "subset"},
}

// mountKind names a mount in a message: a bind by that word (config.json
// often gives it no type), else its type.
func mountKind(m *specs.Mount) string {
	switch {
	case IsBind(m):
		return "bind"
	case m.Type == "":
		return "typeless"
	}
	return m.Type
}

// dataOptionsOf says which key=value options a mount of type t takes.
func dataOptionsOf(t string) string {
	if keys := mountData[t]; len(keys) > 0 {
		return "it takes " + strings.Join(keys, ", ")
	}
	return "only tmpfs, devpts and proc mounts take key=value options here"
}

// checkMountOptions allowlists a mount's options. One option is one
// option: runc joins them with commas, so a comma inside one would smuggle
// more (a second size= after the checked one).
func (c *checker) checkMountOptions(field string, m *specs.Mount) {
	if idmapped(m) && !IsBind(m) {
		c.reject(field+".options", "", "only a bind may be mounted idmapped")
	}
	for j, o := range m.Options {
		opt := fmt.Sprintf("%s.options[%d]", field, j)
		k, _, data := strings.Cut(o, "=")
		switch {
		case strings.ContainsAny(o, ",\x00"):
			c.reject(opt, "", "%q holds more than one option", o)
		case data && !slices.Contains(mountData[m.Type], k):
			c.reject(opt, "", "%q is not an option a %s mount may have (%s)", o, mountKind(m), dataOptionsOf(m.Type))
		case !data && !mountFlags[o]:
			c.reject(opt, "", "the mount option %q is not allowed (shared propagation, remounts and options that clear nosuid, nodev or noexec below a mount are refused)", o)
		}
	}
}

// readonlyOptions reads options as runc applies them: the last of ro and rw
// wins, and rrw makes what is below writable again.
func readonlyOptions(opts []string) bool {
	ro := false
	for _, o := range opts {
		switch o {
		case "ro":
			ro = true
		case "rw":
			ro = false
		case "rrw":
			return false
		}
	}
	return ro
}

// checkHostRules checks on the host what the policy's hook and cgroup
// rules depend on (CheckHost's step, at create): each hook that runs on
// the host (checkHostHooks) and the cgroup the sandbox is placed in
// (checkHostCgroup). euid is maka's own (libmaka.HostFacts).
func checkHostRules(host libmaka.Host, euid uint32, b *libmaka.Boundary, reject func(field, format string, args ...any)) {
	checkHostHooks(host, euid, b, reject)
	checkHostCgroup(host, b, reject)
}

// checkHostHooks: a listed hook runs by its name as host root, so the name
// must stay the file the policy's author meant. The executable and every
// directory on its way (symlinks resolved) belong to root (or to maka's
// own user) and nobody else may write them (a sticky directory, /tmp, only
// keeps what others own out: the entry below it must be root's), so no
// other user can swap it between this check and its run.
func checkHostHooks(host libmaka.Host, euid uint32, b *libmaka.Boundary, reject func(field, format string, args ...any)) {
	if b.Hooks == nil {
		return
	}
	for _, kind := range hookKinds(b.Hooks) {
		if kind.name == "startContainer" {
			continue // the sandbox's own path
		}
		for i, hk := range kind.hooks {
			if err := trustedExecutable(host, euid, hk.Path); err != nil {
				reject(fmt.Sprintf("hooks.%s[%d].path", kind.name, i), "%s: %v", hk.Path, err)
			}
		}
	}
}

// trustedExecutable reports why path is not an executable only root (or
// maka's own user, euid) could have put there.
func trustedExecutable(host libmaka.Host, euid uint32, path string) error {
	resolved, err := host.Resolve(path)
	if err != nil {
		return errors.New(describePathError(err))
	}
	dir := "/"
	for _, c := range strings.Split(strings.TrimPrefix(resolved, "/"), "/") {
		st, err := host.Stat(dir)
		if err != nil {
			return errors.New(describePathError(err))
		}
		if st.UID != 0 && st.UID != euid {
			return fmt.Errorf("the directory %s belongs to uid %d: only root's files may run as a hook", dir, st.UID)
		}
		if st.Mode&0o022 != 0 && st.Mode&syscall.S_ISVTX == 0 {
			return fmt.Errorf("the directory %s is writable by others (mode %o): its entries could be swapped", dir, st.Mode&0o7777)
		}
		dir = filepath.Join(dir, c)
	}
	st, err := host.Stat(resolved)
	if err != nil {
		return errors.New(describePathError(err))
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return fmt.Errorf("%s is not a regular file", resolved)
	case st.UID != 0 && st.UID != euid:
		return fmt.Errorf("%s belongs to uid %d: only root's files may run as a hook", resolved, st.UID)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %o)", resolved, st.Mode&0o7777)
	case st.Mode&0o111 == 0:
		return fmt.Errorf("%s is not executable", resolved)
	}
	return nil
}

// checkHostCgroup: the sandbox's cgroup may not lie inside a cgroup that
// holds processes (another sandbox, a pod's container, a service): its
// limits would be spent by the newcomer, and its processes share the
// newcomer's. Nor may it be one that already holds processes: that
// refusal ends in runc's words for it, "(container's cgroup is not
// empty)", which runc's own suite and its users' scripts look for (runc
// says them for the cgroup itself only, never for a busy parent). Every
// existing cgroup from the target up to the hierarchy's root is read.
func checkHostCgroup(host libmaka.Host, b *libmaka.Boundary, reject func(field, format string, args ...any)) {
	p := b.Cgroup.Path
	// (A name holding ".." is a name: the shape check refuses ".."
	// components, and Clean below only shortens the walk up.)
	if p == "" || !filepath.IsAbs(p) {
		return // maka's own (Place), or refused by its shape
	}
	for d := filepath.Clean(p); d != "/"; d = filepath.Dir(d) {
		n, err := host.CgroupProcs(d)
		if err != nil {
			continue // not made yet (libcontainer makes it)
		}
		if n > 0 && d == filepath.Clean(p) {
			reject("linux.cgroupsPath", "%s already holds %d process(es): a sandbox gets a cgroup of its own (container's cgroup is not empty)", p, n)
		} else if n > 0 {
			reject("linux.cgroupsPath", "%s is inside %s, which holds %d process(es) (another sandbox or a service): a sandbox may not spend another's limits", p, d, n)
		}
	}
}

// Bounds of a time namespace's offsets (kernel/time/namespace.c): the
// clock with its offset must stay within 0..KTIME_SEC_MAX/2 seconds.
const ktimeSecMax = 9223372036 // KTIME_MAX / NSEC_PER_SEC

// checkTimeOffsets holds linux.timeOffsets to what the kernel takes when
// the init writes them into /proc/self/timens_offsets: a time namespace
// of the sandbox's own, only the monotonic and boottime clocks, and
// offsets that keep each clock within the kernel's range. libcontainer
// would fail inside the init, after the cgroup and namespaces exist.
func (c *checker) checkTimeOffsets(have map[specs.LinuxNamespaceType]int) {
	offs := c.spec.Linux.TimeOffsets
	if len(offs) == 0 {
		return
	}
	i, ok := have[specs.TimeNamespace]
	switch {
	case !ok:
		c.reject("linux.timeOffsets", "", `offsets need a time namespace of the sandbox's own (add {"type": "time"} to linux.namespaces)`)
		return
	case c.spec.Linux.Namespaces[i].Path != "":
		c.reject("linux.timeOffsets", "", "offsets cannot be set when joining an existing time namespace (linux.namespaces[%d].path)", i)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(offs)) {
		off, field := offs[name], "linux.timeOffsets."+name
		var now int64 // the clock's seconds (libmaka.HostFacts)
		switch name {
		case "monotonic":
			now = c.facts.Monotonic
		case "boottime":
			now = c.facts.Boottime
		default:
			c.reject(field, "", "%q is not a clock a time namespace offsets (monotonic, boottime)", name)
			continue
		}
		if off.Nanosecs >= 1e9 {
			c.reject(field+".nanosecs", "", "%d is not below 1000000000", off.Nanosecs)
		}
		if off.Secs < -now || off.Secs > ktimeSecMax/2-now {
			c.reject(field+".secs", "", "%d would take the %s clock (now %d s) outside 0..%d s, which the kernel refuses", off.Secs, name, now, int64(ktimeSecMax/2))
		}
	}
}
