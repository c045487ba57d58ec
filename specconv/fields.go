package specconv

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// How maka treats a field of config.json.
const (
	// Modelled: the field has a place in the Boundary, is checked against
	// the policy, and is applied from there.
	Modelled = "modelled"
	// Refused: a non-empty value is a BOUNDARY_REJECTED item.
	Refused = "refused"
	// Ignored: the value never reaches the kernel, for the reason given.
	Ignored = "ignored"
)

// FieldClass is one row of the classification of runtime-spec's Spec.
// Whole: the class covers every field below this one (a refused or ignored
// object, or a modelled one that is checked as a unit).
type FieldClass struct {
	Path  string // JSON path without indexes, e.g. linux.resources.memory.limit
	Class string
	Whole bool
	Note  string
}

// fieldClasses classifies every field of runtime-spec's Spec.
// TestFieldClassesComplete walks the specs types: a field that is missing
// here (a runtime-spec upgrade) fails it until it is classified, and the
// checker refuses it meanwhile (unclassified means refused).
var fieldClasses = []FieldClass{
	{"ociVersion", Ignored, false, "checked to be set; maka applies runtime-spec 1.x"},
	{"process", Modelled, false, "the sandbox's init"},
	{"process.terminal", Modelled, false, "a console for the init"},
	{"process.consoleSize", Modelled, true, "the console's initial size"},
	{"process.user", Modelled, false, "the identity the init runs with"},
	{"process.user.uid", Modelled, false, ""},
	{"process.user.gid", Modelled, false, ""},
	{"process.user.umask", Modelled, false, ""},
	{"process.user.additionalGids", Modelled, false, ""},
	{"process.user.username", Ignored, false, "Windows only"},
	{"process.args", Modelled, false, ""},
	{"process.commandLine", Refused, false, "Windows only"},
	{"process.env", Modelled, false, "as declared, one entry per name (the last); HOME, when missing or empty, added to the contract from the root's /etc/passwd, as runc adds it"},
	{"process.cwd", Modelled, false, "must exist in the root"},
	{"process.capabilities", Modelled, true, "each name checked against the policy's capabilities"},
	{"process.rlimits", Modelled, true, "RLIMIT_RTPRIO and RLIMIT_RTTIME above 0 and RLIMIT_NICE above 20 are refused (real-time scheduling, priority above the host's); so is what the kernel would refuse at start: a soft limit above its hard limit, an RLIMIT_NOFILE above `fs.nr_open`, and under rootless maka a hard limit above maka's own (at create and at exec, before anything exists)"},
	{"process.noNewPrivileges", Modelled, false, "forced on under restricted"},
	{"process.apparmorProfile", Modelled, false, "an AppArmor profile can only confine (without one the process is unconfined, as under runc); exec may only repeat the init's"},
	{"process.oomScoreAdj", Modelled, false, "refused below maka's own, or the policy's oomScoreAdjMin (a sandbox may not be the last the OOM killer picks)"},
	{"process.scheduler", Modelled, true, "real-time and deadline policies, flags and a negative nice are refused"},
	{"process.selinuxLabel", Modelled, false, "an SELinux label; exec may only repeat the init's; applied where the host has SELinux"},
	{"process.ioPriority", Modelled, true, "the real-time class is refused"},
	{"process.execCPUAffinity", Modelled, true, "affinity, which the kernel keeps within the sandbox's cpuset"},
	{"root", Modelled, false, ""},
	{"root.path", Modelled, false, "resolved, then checked like a bind source (never /, /etc, ... nor maka's own state)"},
	{"root.readonly", Modelled, false, "false: the root itself is written only under the policy's writableRootfs; otherwise the sandbox sees a writable view of it (writes land in a tmpfs of its own)"},
	{"hostname", Modelled, false, "in the sandbox's own UTS namespace (none with the host's: see linux.namespaces)"},
	{"domainname", Modelled, false, "in the sandbox's own UTS namespace (none with the host's: see linux.namespaces)"},
	{"mounts", Modelled, false, "binds against bindPaths, tmpfs sizes against the ceilings, system filesystems at their own places only"},
	{"mounts.destination", Modelled, false, ""},
	{"mounts.type", Modelled, false, ""},
	{"mounts.source", Modelled, false, ""},
	{"mounts.options", Modelled, false, "an allowlist: flags that narrow, private or slave propagation, and per type the data options (tmpfs size, nr_blocks, nr_inodes bounded); one option per entry"},
	{"mounts.uidMappings", Refused, true, "a mount's own mapping; the idmap and ridmap options map a bind through the sandbox's"},
	{"mounts.gidMappings", Refused, true, "as mounts.uidMappings"},
	{"hooks", Modelled, true, "run on the host: only executables the policy lists (hookPaths)"},
	{"annotations", Modelled, false, "org.maka.* are read and checked; the others are kept as the container's labels"},
	{"linux", Modelled, false, ""},
	{"linux.uidMappings", Modelled, true, "a user namespace's own mapping: each range must lie in one the policy delegates (delegatedIDs), outside maka's pool, the host's root and every host account; without one, maka leases a block from its pool"},
	{"linux.gidMappings", Modelled, true, "as linux.uidMappings"},
	{"linux.sysctl", Modelled, false, "each name against the policy's sysctls"},
	{"linux.resources", Modelled, false, ""},
	{"linux.resources.devices", Modelled, true, "each allow rule must name a device the sandbox may have"},
	{"linux.resources.memory", Modelled, false, ""},
	{"linux.resources.memory.limit", Modelled, false, "limits.memory, within maxLimits"},
	{"linux.resources.memory.reservation", Modelled, false, "memory.low, at most the memory limit"},
	{"linux.resources.memory.swap", Modelled, false, "limits.swap (memory+swap in OCI), within maxLimits"},
	{"linux.resources.memory.kernel", Refused, false, "cgroup v1 only"},
	{"linux.resources.memory.kernelTCP", Refused, false, "cgroup v1 only"},
	{"linux.resources.memory.swappiness", Refused, false, "cgroup v1 only"},
	{"linux.resources.memory.disableOOMKiller", Refused, false, "a sandbox over its memory is killed, never paused"},
	{"linux.resources.memory.useHierarchy", Ignored, false, "cgroup v1 only; v2 is always hierarchical"},
	{"linux.resources.memory.checkBeforeUpdate", Ignored, false, "applies to update only"},
	{"linux.resources.cpu", Modelled, false, ""},
	{"linux.resources.cpu.shares", Modelled, false, "cpu.weight, a share among siblings"},
	{"linux.resources.cpu.quota", Modelled, false, "limits.cpus, within maxLimits"},
	{"linux.resources.cpu.burst", Modelled, false, "at most the quota, and quota plus burst within the policy's CPU ceiling"},
	{"linux.resources.cpu.period", Modelled, false, "1 ms to 1 s"},
	{"linux.resources.cpu.realtimeRuntime", Refused, false, "real-time scheduling"},
	{"linux.resources.cpu.realtimePeriod", Refused, false, "real-time scheduling"},
	{"linux.resources.cpu.cpus", Modelled, false, "a cpuset list only narrows"},
	{"linux.resources.cpu.mems", Modelled, false, "a cpuset list only narrows"},
	{"linux.resources.cpu.idle", Modelled, false, "only lowers the sandbox's priority"},
	{"linux.resources.pids", Modelled, false, ""},
	{"linux.resources.pids.limit", Modelled, false, "limits.pids, within maxLimits; 0 is one pid and a negative value unlimited, as runc maps them"},
	{"linux.resources.blockIO", Modelled, true, "weights (10 to 1000) and throttles only share or narrow"},
	{"linux.resources.hugepageLimits", Modelled, true, "hugetlb limits only narrow; page sizes such as 2MB (the size names the cgroup file written)"},
	{"linux.resources.network", Refused, true, "cgroup v1 only"},
	{"linux.resources.rdma", Modelled, true, "rdma limits only narrow; device names checked"},
	{"linux.resources.unified", Modelled, false, "memory.max, memory.swap.max, pids.max and cpu.max are read as the limits above, memory.low as the reservation, cpuset.cpus and cpuset.mems as cpu.cpus and cpu.mems, io.max as blockIO's throttles, and checked the same way; memory.high and memory.min (at most the memory limit), cpu.weight (1 to 10000, instead of shares) and memory.oom.group (0 or 1) are kept; other keys are refused"},
	{"linux.cgroupsPath", Modelled, false, "only below the policy's cgroupParents; the cgroup must not exist yet"},
	{"linux.namespaces", Modelled, true, "pid, mount, ipc, uts private (uts may be the host's with the host's network, where the policy allows it, and without a hostname: a hostNetwork pod); network by the policy's networkModes; a time namespace when asked for; never joining a mount or user namespace, nor the host's own; restricted joins none"},
	{"linux.devices", Modelled, true, "a standard name must be the standard device; any other must be allowed by the policy's devices and be the host's node of that name"},
	{"linux.netDevices", Refused, true, "moves a host interface into the sandbox"},
	{"linux.seccomp", Modelled, true, "may only narrow maka's allowlist"},
	{"linux.rootfsPropagation", Modelled, false, "private or slave only"},
	{"linux.maskedPaths", Modelled, false, "added to runc's masked paths, never instead of them"},
	{"linux.readonlyPaths", Modelled, false, "added to runc's read-only paths, never instead of them"},
	{"linux.mountLabel", Modelled, false, "an SELinux label only confines further; applied where the host has SELinux (without it the kernel refuses the mount option, and the label confines nothing)"},
	{"linux.intelRdt", Refused, true, "not supported (resctrl is host-wide)"},
	{"linux.memoryPolicy", Refused, true, "not supported"},
	{"linux.personality", Refused, true, "not supported"},
	{"linux.timeOffsets", Modelled, true, "offsets of the monotonic and boottime clocks, with a time namespace of the sandbox's own; refused at create where the kernel would refuse them (a clock taken below 0 or past its range)"},
	{"solaris", Refused, true, "not a Linux container"},
	{"windows", Refused, true, "not a Linux container"},
	{"vm", Refused, true, "maka runs containers, not virtual machines"},
	{"zos", Refused, true, "not a Linux container"},
	{"freebsd", Refused, true, "not a Linux container"},
}

var fieldClassIndex = func() map[string]FieldClass {
	m := make(map[string]FieldClass, len(fieldClasses))
	for _, f := range fieldClasses {
		m[f.Path] = f
	}
	return m
}()

// FieldClasses returns the classification table, sorted by path.
func FieldClasses() []FieldClass {
	out := append([]FieldClass(nil), fieldClasses...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// classOf is the class of a field path: its own row, or an ancestor's
// Whole row. A field with neither is refused.
func classOf(path string) FieldClass {
	if f, ok := fieldClassIndex[path]; ok {
		return f
	}
	for p := path; ; {
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
		if f, ok := fieldClassIndex[p]; ok && f.Whole {
			return f
		}
	}
	return FieldClass{Path: path, Class: Refused, Note: "not classified by this version of maka"}
}

// refuseUnmodelled reports every non-empty field of v (config.json's
// document) that maka does not model: refused fields with their path
// (indexes included) and why. Modelled objects are walked into; their
// values are checked by the checker itself.
func refuseUnmodelled(v reflect.Value, path, field string, reject func(field, note string)) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			refuseUnmodelled(v.Index(i), path, fmt.Sprintf("%s[%d]", field, i), reject)
		}
		return
	case reflect.Map:
		if v.Type().Elem().Kind() != reflect.Struct {
			return
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			refuseUnmodelled(v.MapIndex(k), path, fmt.Sprintf("%s[%q]", field, k.String()), reject)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		fv := v.Field(i)
		if !f.IsExported() || fv.IsZero() {
			continue
		}
		name := jsonName(f)
		if name == "" { // embedded without a JSON name: its fields are inline
			refuseUnmodelled(fv, path, field, reject)
			continue
		}
		p, fl := join(path, name), join(field, name)
		switch c := classOf(p); c.Class {
		case Refused:
			reject(fl, c.Note)
		case Modelled:
			if !c.Whole {
				refuseUnmodelled(fv, p, fl, reject)
			}
		}
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || (name == "" && f.Anonymous) {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}
