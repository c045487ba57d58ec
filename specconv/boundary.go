package specconv

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// Annotations maka reads from config.json.
const (
	// AnnotationProfile may tighten the policy's profile for one container.
	AnnotationProfile = "org.maka.profile"
	// AnnotationTimeout is the sandbox's lifetime in seconds.
	AnnotationTimeout = "org.maka.timeout"
)

// Item is one thing config.json asks for that the policy does not allow.
type Item struct {
	Field   string `json:"field"`   // the config.json field, e.g. process.capabilities.bounding[3]
	Message string `json:"message"` // what is wrong
	Allow   string `json:"allow"`   // the policy line that would allow it ("" if none may)
}

func (it Item) String() string {
	s := it.Field + ": " + it.Message
	if it.Allow != "" {
		s += " (policy: " + it.Allow + ")"
	}
	return s
}

// Verdict is the policy's answer for one config.json.
type Verdict struct {
	Allowed bool   `json:"allowed"`
	Profile string `json:"profile"`
	Items   []Item `json:"items"`
}

// RejectedError is returned when the verdict is negative.
type RejectedError struct{ Verdict Verdict }

// RejectedCode prefixes every rejection, for people and for scripts.
const RejectedCode = "BOUNDARY_REJECTED"

func (e *RejectedError) Error() string {
	lines := make([]string, len(e.Verdict.Items))
	for i, it := range e.Verdict.Items {
		lines[i] = "  " + it.String()
	}
	return fmt.Sprintf("%s: config.json asks for %d thing(s) profile %s does not allow:\n%s",
		RejectedCode, len(lines), e.Verdict.Profile, strings.Join(lines, "\n"))
}

// Runtime defaults maka adds where config.json is silent.
var (
	// restrictedTmpfs are the writable places of a restricted sandbox.
	restrictedTmpfs = []string{"/tmp", "/run", "/maka/work"}
	// runc's masked and read-only /proc and /sys paths.
	defaultMaskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	// Devices every container has (libcontainer creates them anyway).
	standardDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/console"}
	// Namespaces that must be private (network is governed by the network mode).
	mandatoryNamespaces = []specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace, specs.IPCNamespace, specs.UTSNamespace}
	// Filesystems mounted by the runtime for the container's own view.
	systemMountTypes = []string{"proc", "sysfs", "devpts", "mqueue", "cgroup", "cgroup2"}
	capSets          = []string{"bounding", "effective", "permitted", "inheritable", "ambient"}
)

const defaultCPUPeriod = 100000

// ToBoundary compiles spec under policy: it checks every item against the
// whitelist (all offending items at once, each naming its field), then
// applies the profile's defaults to a copy of spec and summarises it. The
// input spec is not modified.
func ToBoundary(spec *specs.Spec, policy *libmaka.Policy) (*libmaka.Boundary, error) {
	b, _, err := compile(spec, policy)
	return b, err
}

// Explain is ToBoundary for `maka boundary`: it returns the boundary (when
// config.json is well formed) and the verdict even when the verdict is no.
func Explain(spec *specs.Spec, policy *libmaka.Policy) (*libmaka.Boundary, Verdict, error) {
	b, v, err := compile(spec, policy)
	if _, rejected := err.(*RejectedError); rejected {
		err = nil
	}
	return b, v, err
}

func compile(spec *specs.Spec, policy *libmaka.Policy) (*libmaka.Boundary, Verdict, error) {
	if err := Validate(spec); err != nil {
		return nil, Verdict{}, err
	}
	c := &checker{policy: policy}
	if name := spec.Annotations[AnnotationProfile]; name != "" {
		if p, err := policy.Tighten(name); err != nil {
			// Checked against the policy as it is, and refused.
			c.reject(fmt.Sprintf("annotations[%q]", AnnotationProfile), "", "%v", err)
		} else {
			c.policy, policy = p, p
		}
	}
	ns, err := normalise(spec)
	if err != nil {
		return nil, Verdict{}, err
	}
	c.spec = ns
	c.run()
	v := Verdict{Allowed: len(c.items) == 0, Profile: policy.Profile, Items: c.items}
	if v.Items == nil {
		v.Items = []Item{}
	}
	b := summarise(ns, policy, c.timeout, c.defaultSeccomp)
	if !v.Allowed {
		return b, v, &RejectedError{Verdict: v}
	}
	return b, v, nil
}

// EffectivePolicy is policy, tightened by the org.maka.profile annotation
// if config.json has one (it may never loosen it).
func EffectivePolicy(spec *specs.Spec, policy *libmaka.Policy) (*libmaka.Policy, error) {
	name := spec.Annotations[AnnotationProfile]
	if name == "" {
		return policy, nil
	}
	p, err := policy.Tighten(name)
	if err != nil {
		return nil, fmt.Errorf("annotations[%q]: %w", AnnotationProfile, err)
	}
	return p, nil
}

// normalise deep-copies spec so that defaults never leak into the caller's.
func normalise(spec *specs.Spec) (*specs.Spec, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	var out specs.Spec
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	if out.Linux == nil {
		out.Linux = &specs.Linux{}
	}
	return &out, nil
}

// checker walks the (copied) spec: it records what the policy refuses and
// fills in the defaults where the spec is silent.
type checker struct {
	policy  *libmaka.Policy
	spec    *specs.Spec
	items   []Item
	timeout int64
	// defaultSeccomp: config.json had no seccomp profile, maka's was added.
	defaultSeccomp bool
	// exec: checking a process exec'd into an existing container, whose
	// missing capabilities mean the container's own.
	exec bool
}

func (c *checker) reject(field, allow, format string, args ...any) {
	c.items = append(c.items, Item{Field: field, Message: fmt.Sprintf(format, args...), Allow: allow})
}

func (c *checker) profile() string { return "profile " + c.policy.Profile }

func (c *checker) run() {
	c.checkRoot()
	c.checkProcess()
	c.checkNamespaces()
	c.checkMounts()
	c.checkLimits()
	c.checkLinux()
	c.checkHooks()
	c.checkTimeout()
}

func (c *checker) checkRoot() {
	if !c.spec.Root.Readonly {
		if c.policy.WritableRootfs {
			return
		}
		c.reject("root.readonly", `"writableRootfs": true`, "a writable root filesystem is not allowed by %s: set root.readonly to true", c.profile())
	}
}

func (c *checker) checkProcess() {
	p := c.spec.Process
	if p.Capabilities == nil && !c.exec {
		// libcontainer leaves the capabilities alone when config.json has
		// none: the process would keep all of root's. No capabilities
		// declared means none at all.
		p.Capabilities = &specs.LinuxCapabilities{}
	}
	if caps := p.Capabilities; caps != nil {
		sets := map[string][]string{"bounding": caps.Bounding, "effective": caps.Effective, "permitted": caps.Permitted, "inheritable": caps.Inheritable, "ambient": caps.Ambient}
		for _, set := range capSets {
			for i, name := range sets[set] {
				if !c.policy.AllowsCapability(name) {
					c.reject(fmt.Sprintf("process.capabilities.%s[%d]", set, i), fmt.Sprintf(`"capabilities": [..., %q]`, name),
						"%s is not allowed by %s", name, c.profile())
				}
			}
		}
	}
	if c.policy.Profile == libmaka.ProfileRestricted {
		// Tightening needs no permission: restricted always sets no_new_privs.
		p.NoNewPrivileges = true
	}
}

// CheckExec holds a process to be exec'd into a container to the policy the
// container was created under: its capabilities must be allowed, and under
// restricted no_new_privs is forced on. p is modified in place.
func CheckExec(p *specs.Process, policy *libmaka.Policy) error {
	c := &checker{policy: policy, spec: &specs.Spec{Process: p}, exec: true}
	c.checkProcess()
	if len(c.items) == 0 {
		return nil
	}
	return &RejectedError{Verdict: Verdict{Profile: policy.Profile, Items: c.items}}
}

func (c *checker) checkNamespaces() {
	l := c.spec.Linux
	have := map[specs.LinuxNamespaceType]int{}
	for i, n := range l.Namespaces {
		have[n.Type] = i
		field := fmt.Sprintf("linux.namespaces[%d]", i)
		if n.Path == "" {
			continue
		}
		switch n.Type {
		case specs.NetworkNamespace:
			if !c.policy.AllowsNetwork(libmaka.NetworkNetns) {
				c.reject(field+".path", `"networkModes": [..., "netns"]`, "joining the network namespace %s is not allowed by %s (network is closed)", n.Path, c.profile())
			}
		case specs.UserNamespace:
			c.reject(field+".path", "", "joining an existing user namespace is not allowed")
		default:
			if c.policy.Profile == libmaka.ProfileRestricted {
				c.reject(field+".path", "", "joining an existing %s namespace is not allowed by %s", n.Type, c.profile())
			}
		}
	}
	for _, t := range mandatoryNamespaces {
		if _, ok := have[t]; !ok {
			c.reject("linux.namespaces", "", "no %s namespace: sharing the host's is not allowed (add {\"type\": %q})", t, t)
		}
	}
	if _, ok := have[specs.NetworkNamespace]; !ok && !c.policy.AllowsNetwork(libmaka.NetworkHost) {
		c.reject("linux.namespaces", `"networkModes": [..., "host"]`, "no network namespace: the host's network is not allowed by %s (add {\"type\": \"network\"})", c.profile())
	}
	if _, ok := have[specs.CgroupNamespace]; !ok {
		// A private cgroup namespace only narrows the view: add it.
		l.Namespaces = append(l.Namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
}

func (c *checker) checkMounts() {
	declared := map[string]bool{}
	for i := range c.spec.Mounts {
		m := &c.spec.Mounts[i]
		field := fmt.Sprintf("mounts[%d]", i)
		declared[filepath.Clean(m.Destination)] = true
		switch {
		case isBind(m):
			c.checkBind(field, m)
		case m.Type == "tmpfs":
			c.sizeTmpfs(field, m)
		case slices.Contains(systemMountTypes, m.Type):
		default:
			c.reject(field+".type", "", "a %q mount is not allowed (only binds, tmpfs and the system filesystems %s)", m.Type, strings.Join(systemMountTypes, ", "))
		}
	}
	if c.policy.Profile != libmaka.ProfileRestricted {
		return
	}
	for _, dst := range restrictedTmpfs {
		if declared[dst] {
			continue
		}
		c.spec.Mounts = append(c.spec.Mounts, specs.Mount{
			Destination: dst, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"nosuid", "nodev", "mode=1777", "size=" + strconv.FormatInt(c.policy.DefaultLimits.TmpfsSize, 10)},
		})
	}
}

func isBind(m *specs.Mount) bool {
	return m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
}

func isReadonly(m *specs.Mount) bool {
	return slices.Contains(m.Options, "ro")
}

func (c *checker) checkBind(field string, m *specs.Mount) {
	src := filepath.Clean(m.Source)
	if !filepath.IsAbs(src) {
		c.reject(field+".source", "", "bind source %q is not an absolute host path", m.Source)
		return
	}
	rule := c.policy.BindRule(src)
	switch {
	case rule == "" && c.policy.BindRule(filepath.Dir(src)+"/x") == "" && isSensitive(c.policy, src):
		c.reject(field+".source", "", "binding the host path %s is never allowed: it is (or holds) a sensitive host path", src)
	case rule == "":
		mode := "ro"
		if !isReadonly(m) {
			mode = "rw"
		}
		c.reject(field+".source", fmt.Sprintf(`"bindPaths": [..., {"path": %q, "mode": %q}]`, src, mode), "binding the host path %s is not allowed by %s", src, c.profile())
	case rule == "ro" && !isReadonly(m):
		c.reject(field+".options", fmt.Sprintf(`"bindPaths": [..., {"path": %q, "mode": "rw"}]`, src), "%s may only be bound read-only by %s (add \"ro\" to the options)", src, c.profile())
	}
}

// isSensitive reports whether no policy could ever allow binding path.
func isSensitive(p *libmaka.Policy, path string) bool {
	probe := *p
	probe.BindPaths = []libmaka.PathRule{{Path: "/", Mode: "rw"}}
	return probe.BindRule(path) == ""
}

// sizeTmpfs gives a tmpfs without a size the profile's default, and
// refuses one above the largest.
func (c *checker) sizeTmpfs(field string, m *specs.Mount) {
	if filepath.Clean(m.Destination) == "/dev" {
		return // the device directory, a few KiB of nodes
	}
	max := c.policy.MaxLimits.TmpfsSize
	// The kernel takes the last size= option: so does the check.
	last := -1
	for j, o := range m.Options {
		if strings.HasPrefix(o, "size=") {
			last = j
		}
	}
	if last >= 0 {
		v := strings.TrimPrefix(m.Options[last], "size=")
		size, err := parseSize(v)
		if err != nil {
			c.reject(fmt.Sprintf("%s.options[%d]", field, last), "", "tmpfs size %q: %v", v, err)
			return
		}
		if max > 0 && size > max {
			c.reject(fmt.Sprintf("%s.options[%d]", field, last), fmt.Sprintf(`"maxLimits": {"tmpfsSize": %d}`, size),
				"a tmpfs of %s at %s exceeds the largest allowed by %s (%s)", libmaka.FormatSize(size), m.Destination, c.profile(), libmaka.FormatSize(max))
		}
		return
	}
	m.Options = append(m.Options, "size="+strconv.FormatInt(c.policy.DefaultLimits.TmpfsSize, 10))
}

// parseSize parses tmpfs sizes: bytes, or with a k, m or g suffix.
// Percentages of RAM are refused: they are not a declared bound.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "%"):
		return 0, fmt.Errorf("a percentage of RAM is not a fixed bound")
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "g"), strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("not a positive size")
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("too large")
	}
	return n * mult, nil
}

func (c *checker) checkLimits() {
	l := c.spec.Linux
	if l.Resources == nil {
		l.Resources = &specs.LinuxResources{}
	}
	r := l.Resources
	def, max := c.policy.DefaultLimits, c.policy.MaxLimits
	if r.Memory == nil {
		r.Memory = &specs.LinuxMemory{}
	}
	switch {
	case r.Memory.Limit == nil || *r.Memory.Limit <= 0:
		v := def.Memory
		r.Memory.Limit = &v
	case max.Memory > 0 && *r.Memory.Limit > max.Memory:
		c.reject("linux.resources.memory.limit", fmt.Sprintf(`"maxLimits": {"memory": %d}`, *r.Memory.Limit),
			"%s exceeds the largest memory allowed by %s (%s)", libmaka.FormatSize(*r.Memory.Limit), c.profile(), libmaka.FormatSize(max.Memory))
	}
	mem := *r.Memory.Limit
	// OCI's swap is memory+swap; the contract's is the swap alone.
	switch {
	case r.Memory.Swap == nil:
		v := mem + def.Swap
		if def.Swap < 0 {
			v = -1
		}
		r.Memory.Swap = &v
	case *r.Memory.Swap == -1 && max.Swap >= 0:
		c.reject("linux.resources.memory.swap", `"maxLimits": {"swap": -1}`, "unlimited swap is not allowed by %s (largest: %s)", c.profile(), libmaka.FormatSize(max.Swap))
	case *r.Memory.Swap >= 0 && *r.Memory.Swap-mem > max.Swap && max.Swap >= 0:
		c.reject("linux.resources.memory.swap", fmt.Sprintf(`"maxLimits": {"swap": %d}`, *r.Memory.Swap-mem),
			"%s of swap exceeds the largest allowed by %s (%s)", libmaka.FormatSize(*r.Memory.Swap-mem), c.profile(), libmaka.FormatSize(max.Swap))
	}
	if r.Pids == nil {
		r.Pids = &specs.LinuxPids{}
	}
	switch {
	case r.Pids.Limit == nil || *r.Pids.Limit <= 0:
		v := def.Pids
		r.Pids.Limit = &v
	case max.Pids > 0 && *r.Pids.Limit > max.Pids:
		c.reject("linux.resources.pids.limit", fmt.Sprintf(`"maxLimits": {"pids": %d}`, *r.Pids.Limit),
			"%d pids exceed the largest allowed by %s (%d)", *r.Pids.Limit, c.profile(), max.Pids)
	}
	if r.CPU == nil {
		r.CPU = &specs.LinuxCPU{}
	}
	if r.CPU.Period == nil || *r.CPU.Period == 0 {
		p := uint64(defaultCPUPeriod)
		r.CPU.Period = &p
	}
	switch {
	case r.CPU.Quota == nil || *r.CPU.Quota <= 0:
		q := int64(def.Cpus * float64(*r.CPU.Period))
		r.CPU.Quota = &q
	case max.Cpus > 0 && float64(*r.CPU.Quota)/float64(*r.CPU.Period) > max.Cpus:
		c.reject("linux.resources.cpu.quota", fmt.Sprintf(`"maxLimits": {"cpus": %g}`, float64(*r.CPU.Quota)/float64(*r.CPU.Period)),
			"%g CPUs exceed the largest allowed by %s (%g)", float64(*r.CPU.Quota)/float64(*r.CPU.Period), c.profile(), max.Cpus)
	}
}

func (c *checker) checkLinux() {
	l := c.spec.Linux
	for i, d := range l.Devices {
		if !slices.Contains(standardDevices, d.Path) && !c.policy.AllowsDevice(d.Path) {
			c.reject(fmt.Sprintf("linux.devices[%d]", i), fmt.Sprintf(`"devices": [..., %q]`, d.Path), "the device %s is not allowed by %s", d.Path, c.profile())
		}
	}
	if l.Resources != nil {
		for i, d := range l.Resources.Devices {
			if d.Allow && (d.Type == "" || d.Type == "a" || d.Major == nil) {
				c.reject(fmt.Sprintf("linux.resources.devices[%d]", i), "", "a rule allowing every device (%q) is not allowed", d.Access)
			}
		}
	}
	names := make([]string, 0, len(l.Sysctl))
	for k := range l.Sysctl {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !c.policy.AllowsSysctl(k) {
			c.reject(fmt.Sprintf("linux.sysctl[%q]", k), fmt.Sprintf(`"sysctls": [..., %q]`, k), "the sysctl %s is not allowed by %s", k, c.profile())
		}
	}
	if l.Seccomp == nil {
		l.Seccomp = DefaultSeccomp(c.policy.Audit == "files")
		c.defaultSeccomp = true
	} else {
		// No profile may let the process make namespaces (nested user
		// namespaces above all), whichever profile config.json brings.
		denyNamespaceCreation(l.Seccomp)
	}
	if c.policy.Profile == libmaka.ProfileRestricted {
		l.MaskedPaths = union(l.MaskedPaths, defaultMaskedPaths)
		l.ReadonlyPaths = union(l.ReadonlyPaths, defaultReadonlyPaths)
	}
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (c *checker) checkHooks() {
	h := c.spec.Hooks
	if h == nil || c.policy.Hooks {
		return
	}
	for _, kind := range []struct {
		name  string
		hooks []specs.Hook
	}{{"prestart", h.Prestart}, {"createRuntime", h.CreateRuntime}, {"createContainer", h.CreateContainer},
		{"startContainer", h.StartContainer}, {"poststart", h.Poststart}, {"poststop", h.Poststop}} {
		for i, hk := range kind.hooks {
			c.reject(fmt.Sprintf("hooks.%s[%d]", kind.name, i), `"hooks": true`, "the hook %s is not allowed by %s (hooks run on the host)", hk.Path, c.profile())
		}
	}
}

func (c *checker) checkTimeout() {
	max := c.policy.MaxLimits.Timeout
	c.timeout = c.policy.DefaultLimits.Timeout
	if max > 0 && (c.timeout == 0 || c.timeout > max) {
		c.timeout = max // a policy with a longest lifetime always enforces one
	}
	s, ok := c.spec.Annotations[AnnotationTimeout]
	if !ok {
		return
	}
	field := fmt.Sprintf("annotations[%q]", AnnotationTimeout)
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil || n <= 0:
		c.reject(field, "", "%q is not a positive number of seconds", s)
	case max > 0 && n > max:
		c.reject(field, fmt.Sprintf(`"maxLimits": {"timeout": %d}`, n), "%d s exceeds the longest allowed by %s (%d s)", n, c.profile(), max)
	default:
		c.timeout = n
	}
}

// summarise reads the normalised spec back as a contract.
func summarise(s *specs.Spec, policy *libmaka.Policy, timeout int64, defaultSeccomp bool) *libmaka.Boundary {
	b := &libmaka.Boundary{
		Profile:  policy.Profile,
		Rootfs:   libmaka.Rootfs{Path: s.Root.Path, Readonly: s.Root.Readonly},
		ReadOnly: []libmaka.BindMount{},
		Writable: []libmaka.WritableMount{},
		Spec:     s,
	}
	for i := range s.Mounts {
		m := &s.Mounts[i]
		switch {
		case isBind(m) && isReadonly(m):
			b.ReadOnly = append(b.ReadOnly, libmaka.BindMount{Source: m.Source, Destination: m.Destination})
		case isBind(m):
			b.Writable = append(b.Writable, libmaka.WritableMount{Path: m.Destination, Kind: "bind", Source: m.Source})
		case m.Type == "tmpfs" && filepath.Clean(m.Destination) != "/dev" && !isReadonly(m):
			w := libmaka.WritableMount{Path: m.Destination, Kind: "tmpfs"}
			for _, o := range m.Options { // the last size= wins, as in the kernel
				if v, ok := strings.CutPrefix(o, "size="); ok {
					w.Size, _ = parseSize(v)
				}
			}
			b.Writable = append(b.Writable, w)
		}
	}
	b.Network = libmaka.Network{Mode: libmaka.NetworkHost}
	for _, n := range s.Linux.Namespaces {
		b.Namespaces = append(b.Namespaces, libmaka.Namespace{Type: string(n.Type), Path: n.Path})
		if n.Type == specs.NetworkNamespace {
			b.Network = libmaka.Network{Mode: libmaka.NetworkClosed}
			if n.Path != "" {
				b.Network = libmaka.Network{Mode: libmaka.NetworkNetns, Path: n.Path}
			}
		}
	}
	r := s.Linux.Resources
	b.Limits = libmaka.Limits{TmpfsSize: policy.DefaultLimits.TmpfsSize, Timeout: timeout}
	if r != nil {
		if r.Memory != nil && r.Memory.Limit != nil {
			b.Limits.Memory = *r.Memory.Limit
			if r.Memory.Swap != nil {
				b.Limits.Swap = *r.Memory.Swap - *r.Memory.Limit
				if *r.Memory.Swap < 0 {
					b.Limits.Swap = -1
				}
			}
		}
		if r.Pids != nil && r.Pids.Limit != nil {
			b.Limits.Pids = *r.Pids.Limit
		}
		if r.CPU != nil && r.CPU.Quota != nil && r.CPU.Period != nil && *r.CPU.Period > 0 {
			b.Limits.Cpus = float64(*r.CPU.Quota) / float64(*r.CPU.Period)
		}
	}
	p := s.Process
	b.Process = libmaka.Process{
		Args: p.Args, Cwd: p.Cwd, UID: p.User.UID, GID: p.User.GID, Env: p.Env,
		Capabilities: []string{}, NoNewPrivileges: p.NoNewPrivileges, Terminal: p.Terminal,
		NewSession: true, // libcontainer's init always calls setsid
	}
	if b.Process.Env == nil {
		b.Process.Env = []string{}
	}
	if caps := p.Capabilities; caps != nil {
		for _, set := range [][]string{caps.Bounding, caps.Effective, caps.Permitted, caps.Inheritable, caps.Ambient} {
			b.Process.Capabilities = union(b.Process.Capabilities, set)
		}
		sort.Strings(b.Process.Capabilities)
	}
	b.Syscalls = libmaka.Syscalls{Profile: "none"}
	if sc := s.Linux.Seccomp; sc != nil {
		b.Syscalls = libmaka.Syscalls{Profile: "config", DefaultAction: string(sc.DefaultAction)}
		if defaultSeccomp {
			b.Syscalls.Profile = "default"
		}
		for _, rule := range sc.Syscalls {
			if rule.Action != specs.ActAllow && len(rule.Args) == 0 {
				b.Syscalls.Denied += len(rule.Names)
			}
		}
	}
	return b
}
