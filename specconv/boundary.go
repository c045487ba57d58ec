package specconv

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/maka-runtime/maka/internal/printable"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/cgroups/devices/config"
	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
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
	// Capability and CapSet are set for a capability refused in one of
	// process.capabilities' sets: the error message gives one line per
	// capability (a default one is in three or four sets), while the JSON
	// keeps one item per field.
	Capability string `json:"-"`
	CapSet     string `json:"-"`
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
	// Source is what asked: config.json (when empty), an exec'd process,
	// an update.
	Source string `json:"source,omitempty"`
}

// RejectedError is returned when the verdict is negative.
type RejectedError struct{ Verdict Verdict }

// RejectedCode prefixes every rejection, for people and for scripts.
const RejectedCode = "BOUNDARY_REJECTED"

// firstLineMax bounds the first line of a rejection: conmon and the
// shims pass on a short message whole, and a reader sees the count and
// the first reasons there even when the rest is cut.
const firstLineMax = 200

// Error gives a first line with the count and the first reasons (at most
// firstLineMax bytes), then one line per refused thing: a capability once,
// naming its sets, anything else once per field. `maka boundary` and the
// JSON log keep the full list, one item per field.
func (e *RejectedError) Error() string { return e.text(0) }

// ClientTextMax bounds a rejection as maka hands it to a client (stderr,
// the log's error line): conmon reads the runtime's stderr once, up to
// 8191 bytes, after the runtime exited, and passes what it read inside its
// own JSON line; three quarters of that leaves room for a warning written
// before. Podman's default container under restricted (48 items, 4-5 KB)
// fits whole. The full list stays in `maka boundary` and in the JSON log's
// items.
const ClientTextMax = 6144

// ClientText is the rejection bounded to max bytes, escaped for a
// terminal (printable.Text): the first line, then as many whole item
// lines as fit, then how many more there are and where they all are. A
// client that passes max bytes on whole never cuts a line, nor a
// character inside one.
func (e *RejectedError) ClientText(max int) string {
	return e.text(max)
}

func (e *RejectedError) text(max int) string {
	v := e.Verdict
	groups := groupItems(v.Items)
	lines := make([]string, 0, len(groups)+1)
	// Bounded, the text is measured as a client receives it: escaped.
	esc := func(s string) string { return s }
	if max > 0 {
		esc = printable.Text
	}
	lines = append(lines, esc(firstLine(v, groups)))
	size := len(lines[0])
	for i, g := range groups {
		line := esc("  " + g.line)
		if max > 0 {
			size += 1 + len(line)
			// The note on the lines left out must still fit after
			// the last line kept.
			reserve := 0
			if left := len(groups) - i - 1; left > 0 {
				reserve = 1 + len(moreNote(left))
			}
			if size+reserve > max {
				lines = append(lines, moreNote(len(groups)-i))
				break
			}
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// moreNote ends a bounded rejection: how many lines were left out, and
// where every item is.
func moreNote(left int) string {
	return fmt.Sprintf("  ... and %d more: `maka boundary` on the bundle lists every item (so does the JSON log's items field)", left)
}

// itemGroup is one line of a rejection: one item, or one capability with
// every set it was refused in.
type itemGroup struct {
	capability string   // "" for an item that is not a capability
	sets       []string // the capability's sets, in config.json's order
	first      Item
	line       string
}

func groupItems(items []Item) []*itemGroup {
	var groups []*itemGroup
	byCap := map[string]*itemGroup{}
	for _, it := range items {
		if it.Capability == "" {
			groups = append(groups, &itemGroup{first: it, line: it.String()})
			continue
		}
		g := byCap[it.Capability]
		if g == nil {
			g = &itemGroup{capability: it.Capability, first: it}
			byCap[it.Capability] = g
			groups = append(groups, g)
		}
		if !slices.Contains(g.sets, it.CapSet) {
			g.sets = append(g.sets, it.CapSet)
		}
	}
	for _, g := range groups {
		if g.capability == "" {
			continue
		}
		// "CAP_X is not allowed by ..." becomes "CAP_X (bounding,
		// effective) is not allowed by ...".
		what := g.capability + " (" + strings.Join(g.sets, ", ") + ")"
		msg := g.first.Message
		if rest, ok := strings.CutPrefix(msg, g.capability); ok {
			msg = what + rest
		} else {
			msg = what + ": " + msg
		}
		g.line = Item{Field: "process.capabilities", Message: msg, Allow: g.first.Allow}.String()
	}
	return groups
}

// firstLine: "BOUNDARY_REJECTED: 40 items refused by profile restricted:
// process.capabilities (14 capabilities), root.readonly, and 2 more".
func firstLine(v Verdict, groups []*itemGroup) string {
	head := RejectedCode + ": "
	if v.Source != "" && v.Source != "config.json" {
		head += v.Source + ": "
	}
	noun := "items"
	if len(v.Items) == 1 {
		noun = "item"
	}
	head += fmt.Sprintf("%d %s refused by profile %s", len(v.Items), noun, v.Profile)
	// The capabilities make one reason, where the first of them was.
	var reasons []string
	var caps int
	for _, g := range groups {
		if g.capability != "" {
			caps++
		}
	}
	seenCaps := false
	seen := map[string]bool{}
	for _, g := range groups {
		switch {
		case g.capability == "":
			// A field refused twice (two reasons) is one reason here.
			if !seen[g.first.Field] {
				seen[g.first.Field] = true
				reasons = append(reasons, g.first.Field)
			}
		case !seenCaps:
			seenCaps = true
			if caps == 1 {
				reasons = append(reasons, "process.capabilities ("+g.capability+")")
			} else {
				reasons = append(reasons, fmt.Sprintf("process.capabilities (%d capabilities)", caps))
			}
		}
	}
	line := head
	for i, r := range reasons {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		more := ""
		if left := len(reasons) - i - 1; left > 0 {
			more = fmt.Sprintf(", and %d more", left)
		}
		if len(line)+len(sep)+len(r)+len(more) > firstLineMax {
			if i > 0 {
				line += fmt.Sprintf(", and %d more", len(reasons)-i)
			}
			break
		}
		line += sep + r
	}
	if len(line) > firstLineMax {
		// Only a profile name or source beyond reason could get here.
		line = line[:firstLineMax]
	}
	return line
}

// Runtime defaults maka adds where config.json is silent.
var (
	// restrictedTmpfs are the writable places of a restricted sandbox.
	restrictedTmpfs = []string{"/tmp", "/run", "/maka/work"}
	// runc's masked and read-only /proc and /sys paths.
	defaultMaskedPaths = []string{
		"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
		"/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	// Devices every container has (libcontainer creates them anyway).
	// Not /dev/console (c 5:1): that node is the host's system console. A
	// sandbox with a terminal gets its own: libcontainer mounts the
	// sandbox's pty at /dev/console (a pts, c 136:*).
	standardDeviceNodes = map[string]deviceNode{
		"/dev/null": {"c", 1, 3}, "/dev/zero": {"c", 1, 5}, "/dev/full": {"c", 1, 7}, "/dev/random": {"c", 1, 8},
		"/dev/urandom": {"c", 1, 9}, "/dev/tty": {"c", 5, 0}, "/dev/ptmx": {"c", 5, 2},
	}
	// Namespaces that must be private (network is governed by the network
	// mode; uts may be the host's with the host's network: checkNamespaces).
	mandatoryNamespaces = []specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace, specs.IPCNamespace, specs.UTSNamespace}
	// Namespaces maka can make or join.
	knownNamespaces = []specs.LinuxNamespaceType{specs.PIDNamespace, specs.NetworkNamespace, specs.MountNamespace,
		specs.IPCNamespace, specs.UTSNamespace, specs.UserNamespace, specs.CgroupNamespace, specs.TimeNamespace}
	// Filesystems mounted by the runtime for the container's own view.
	systemMountTypes = []string{"proc", "sysfs", "devpts", "mqueue", "cgroup", "cgroup2"}
	capSets          = []string{"bounding", "effective", "permitted", "inheritable", "ambient"}
)

const defaultCPUPeriod = 100000

// runc's converter appends rules of its own to every container's device
// cgroup (rspecconv.AllowedDevices): mknod of any character and block
// device (c *:* m, b *:* m) and the tun device (c 10:200 rwm), none of
// which config.json says or the Boundary shows. maka removes those three
// rather than listing them in the Boundary: the devices a sandbox has are
// the standard ones, its pts and what linux.devices declares (which the
// policy allows by name and CheckHost compares with the host's node), and
// each of those comes with its node already made, so the sandbox never
// needs to make one: a node it made in a writable bind (c 8:0, the host's
// disk) would wait there for anyone whose device cgroup lets them open it.
// tun without mknod is a rule for a node the sandbox cannot have. The
// rules for the standard nodes and the pts stay (they are the standard
// devices'). Podman's, containerd's and the CRI's default containers
// make no device nodes.
func init() {
	rspecconv.AllowedDevices = slices.DeleteFunc(rspecconv.AllowedDevices, implicitDeviceRule)
}

// implicitDeviceRule: one of runc's rules that stand for no standard node.
func implicitDeviceRule(d *config.Device) bool {
	r := d.Rule
	return d.Path == "" && (r.Major == config.Wildcard || (r.Type == config.CharDevice && r.Major == 10 && r.Minor == 200))
}

// ToBoundary compiles spec under policy: it checks every item against the
// whitelist (all offending items at once, each naming its field), then
// applies the profile's defaults to a copy of spec and summarises it. The
// input spec is not modified. The host's facts the rules compare with
// (maka's own limits, the clocks...) are host's: libmaka.ThisHost, or a
// test's.
func ToBoundary(host libmaka.Host, spec *specs.Spec, policy *libmaka.Policy) (*libmaka.Boundary, error) {
	b, _, err := compile(host, spec, policy)
	return b, err
}

// Explain is ToBoundary for `maka boundary`: it returns the boundary (when
// config.json is well formed) and the verdict even when the verdict is no.
func Explain(host libmaka.Host, spec *specs.Spec, policy *libmaka.Policy) (*libmaka.Boundary, Verdict, error) {
	b, v, err := compile(host, spec, policy)
	if rejected := (*RejectedError)(nil); errors.As(err, &rejected) {
		err = nil
	}
	return b, v, err
}

func compile(host libmaka.Host, spec *specs.Spec, policy *libmaka.Policy) (*libmaka.Boundary, Verdict, error) {
	facts := host.Facts()
	if err := validate(spec, facts.StackLimit); err != nil {
		return nil, Verdict{}, err
	}
	c := &checker{policy: policy, facts: &facts}
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
	// What maka does not model is refused, never passed through.
	refuseUnmodelled(reflect.ValueOf(spec), "", "", func(field, note string) {
		c.reject(field, "", "maka does not apply this field: %s", note)
	})
	c.run()
	v := Verdict{Allowed: len(c.items) == 0, Profile: policy.Profile, Items: c.items}
	if v.Items == nil {
		v.Items = []Item{}
	}
	b := summarise(ns, policy, c.timeout, c.defaultSeccomp)
	b.Rootfs.WritableView = c.writableView
	if c.egress != nil && b.Network.Mode == libmaka.NetworkClosed {
		b.Network = libmaka.Network{Mode: libmaka.NetworkEgress, Egress: c.egress, Proxy: libmaka.EgressProxy}
	}
	b.Syscalls.Narrowed = c.seccompNarrowed
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
	// userns: the sandbox has its own user namespace (checkUsers).
	userns bool
	policy *libmaka.Policy
	spec   *specs.Spec
	// facts are the host's (libmaka.HostFacts), taken once per check.
	facts   *libmaka.HostFacts
	items   []Item
	timeout int64
	// defaultSeccomp: config.json had no seccomp profile, maka's was added.
	defaultSeccomp bool
	// seccompNarrowed: how many of config.json's seccomp items asked for
	// more than maka's allowlist gives.
	seccompNarrowed int
	// exec: checking a process exec'd into an existing container, whose
	// missing capabilities mean the container's own.
	exec bool
	// writableView: root.readonly false under a policy that does not let
	// the root be written (checkRoot).
	writableView bool
	// egress: the entries of org.maka.egress, checked (checkEgress).
	egress []string
}

func (c *checker) reject(field, allow, format string, args ...any) {
	c.items = append(c.items, Item{Field: field, Message: fmt.Sprintf(format, args...), Allow: allow})
}

func (c *checker) profile() string { return "profile " + c.policy.Profile }

func (c *checker) run() {
	c.checkRoot()
	c.checkProcess()
	c.checkNamespaces()
	c.checkUsers()
	c.checkMounts()
	c.checkLimits()
	c.checkCgroup()
	c.checkCgroupValues()
	c.checkLinux()
	c.checkHooks()
	c.checkTimeout()
}

// checkRoot: the trusted root is never written unless the policy lets
// config.json write its own (writableRootfs: an engine's per-container
// root). Otherwise root.readonly false asks for a writable view: the root
// stays read-only under an overlay whose writes land in a tmpfs of the
// sandbox's own, bounded by its tmpfs limit, gone with it
// (libmaka.Op.BuildOverlayRoot). Rootless maka has no host root to build
// it with.
func (c *checker) checkRoot() {
	if c.spec.Root.Readonly || c.policy.WritableRootfs {
		return
	}
	if c.policy.Rootless != nil {
		c.reject("root.readonly", `"writableRootfs": true`, "a writable root filesystem is not allowed by %s, and rootless maka cannot give a writable view of a read-only one: set root.readonly to true", c.profile())
		return
	}
	c.spec.Root.Readonly = true
	c.writableView = true
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
					last := &c.items[len(c.items)-1]
					last.Capability, last.CapSet = name, set
				}
			}
		}
	}
	if c.policy.Profile == libmaka.ProfileRestricted {
		// Tightening needs no permission: restricted always sets no_new_privs.
		p.NoNewPrivileges = true
	}
	c.checkPriorities(p)
}

// CheckExec holds a process to be exec'd into a container to the policy the
// container was created under and to its boundary: its capabilities must
// be allowed by the policy, no_new_privs is forced on where the init has it
// (and always under restricted), and its LSM labels may only be the
// init's. p is modified in place. host gives the facts the rules compare
// with (libmaka.ThisHost, or a test's).
func CheckExec(host libmaka.Host, p *specs.Process, policy *libmaka.Policy, b *libmaka.Boundary) error {
	facts := host.Facts()
	c := &checker{policy: policy, spec: &specs.Spec{Process: p}, exec: true, facts: &facts}
	refuseUnmodelled(reflect.ValueOf(p), "process", "process", func(field, note string) {
		c.reject(field, "", "maka does not apply this field: %s", note)
	})
	c.checkProcess()
	if b != nil {
		c.withinInit(p, &b.Process)
		c.checkExecUser(p, b)
		// In the host's uts namespace without a user namespace of its
		// own, an exec'd process is held to the init's rule.
		if own := ownNamespaces(b); !own["uts"] {
			c.items = append(c.items, hostUTSItems("", "", nil, hasCap(p, "CAP_SYS_ADMIN"), own["user"])...)
		}
	}
	if len(c.items) == 0 {
		return nil
	}
	return &RejectedError{Verdict: Verdict{Profile: policy.Profile, Items: c.items, Source: "the exec'd process"}}
}

// withinInit refuses what an exec'd process would have beyond the
// container's init: no_new_privs where the init has it, LSM labels other
// than the init's. Capabilities are held to the policy (checkProcess), as
// runc's exec --cap adds ones the init lacks.
func (c *checker) withinInit(p *specs.Process, init *libmaka.Process) {
	if init.NoNewPrivileges {
		p.NoNewPrivileges = true
	}
	if p.ApparmorProfile != "" && p.ApparmorProfile != init.ApparmorProfile {
		c.reject("process.apparmorProfile", "", "%q is not the container's AppArmor profile", p.ApparmorProfile)
	}
	if p.SelinuxLabel != "" && p.SelinuxLabel != init.SelinuxLabel {
		c.reject("process.selinuxLabel", "", "%q is not the container's SELinux label", p.SelinuxLabel)
	}
}

func (c *checker) checkNamespaces() {
	l := c.spec.Linux
	have := map[specs.LinuxNamespaceType]int{}
	for i, n := range l.Namespaces {
		field := fmt.Sprintf("linux.namespaces[%d]", i)
		if !slices.Contains(knownNamespaces, n.Type) {
			c.reject(field+".type", "", "%q is not a namespace maka supports (%s)", n.Type, joinTypes(knownNamespaces))
			continue
		}
		if _, dup := have[n.Type]; dup {
			c.reject(field+".type", "", "the %s namespace is listed twice", n.Type)
		}
		have[n.Type] = i
		if n.Path == "" {
			continue
		}
		if !filepath.IsAbs(n.Path) {
			c.reject(field+".path", "", "%q is not an absolute path", n.Path)
			continue
		}
		switch n.Type {
		case specs.NetworkNamespace:
			if !c.policy.AllowsNetwork(libmaka.NetworkNetns) {
				c.reject(field+".path", `"networkModes": [..., "netns"]`, "joining the network namespace %s is not allowed by %s (network is closed)", n.Path, c.profile())
			}
		case specs.UserNamespace:
			c.reject(field+".path", "", "joining an existing user namespace is not allowed")
		case specs.MountNamespace:
			// runc would set up the root in it and pivot_root every
			// process that lives there.
			c.reject(field+".path", "", "joining an existing mount namespace is never allowed")
		default:
			if c.policy.Profile == libmaka.ProfileRestricted {
				c.reject(field+".path", "", "joining an existing %s namespace is not allowed by %s", n.Type, c.profile())
			}
		}
	}
	_, netns := have[specs.NetworkNamespace]
	for _, t := range mandatoryNamespaces {
		if _, ok := have[t]; ok {
			continue
		}
		if t == specs.UTSNamespace && !netns && c.policy.AllowsNetwork(libmaka.NetworkHost) {
			// The host's network comes with the host's name: containerd
			// gives a hostNetwork pod the host's UTS namespace. It
			// shows the sandbox nothing the host's network does not,
			// and the sandbox cannot change it: sethostname and
			// setdomainname are outside maka's allowlist on every
			// architecture, /proc/sys is read-only, and in a user
			// namespace of its own the sandbox has no capability over
			// the host's; without one, CAP_SYS_ADMIN and the
			// kernel.hostname and kernel.domainname sysctls are refused
			// (hostUTSItems, from checkLinux). A name of its own needs a
			// namespace of its own.
			continue
		}
		c.reject("linux.namespaces", "", "no %s namespace: sharing the host's is not allowed (add {\"type\": %q})", t, t)
	}
	if _, ok := have[specs.NetworkNamespace]; !ok && !c.policy.AllowsNetwork(libmaka.NetworkHost) {
		c.reject("linux.namespaces", `"networkModes": [..., "host"]`, "no network namespace: the host's network is not allowed by %s (add {\"type\": \"network\"})", c.profile())
	}
	if _, ok := have[specs.CgroupNamespace]; !ok {
		// A private cgroup namespace only narrows the view: add it.
		l.Namespaces = append(l.Namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
	c.checkTimeOffsets(have)
	c.checkEgress(have)
}

func (c *checker) checkMounts() {
	declared := map[string]bool{}
	for i := range c.spec.Mounts {
		m := &c.spec.Mounts[i]
		field := fmt.Sprintf("mounts[%d]", i)
		declared[filepath.Clean(m.Destination)] = true
		if !filepath.IsAbs(m.Destination) {
			c.reject(field+".destination", "", "%q is not an absolute path", m.Destination)
		}
		c.checkMountOptions(field, m)
		switch {
		case IsBind(m):
			c.checkBind(field, m)
		case m.Type == "tmpfs":
			c.sizeTmpfs(field, m)
		case slices.Contains(systemMountTypes, m.Type):
			c.checkSystemMount(field, m)
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

// IsBind reports whether m is a bind mount, by its type or its options
// (runc accepts either).
func IsBind(m *specs.Mount) bool {
	return m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
}

// idmapped reports whether the bind is mounted through the sandbox's
// user namespace mapping (runc's idmap, ridmap options).
func idmapped(m *specs.Mount) bool {
	return slices.Contains(m.Options, "idmap") || slices.Contains(m.Options, "ridmap")
}

func isReadonly(m *specs.Mount) bool {
	return readonlyOptions(m.Options)
}

func (c *checker) checkBind(field string, m *specs.Mount) {
	src := filepath.Clean(m.Source)
	if !filepath.IsAbs(src) {
		c.reject(field+".source", "", "bind source %q is not an absolute host path", m.Source)
		return
	}
	owner := libmaka.BindOwnerOf("", c.spec.Annotations)
	rule := c.policy.BindRule(src, owner)
	switch {
	case rule == "" && c.policy.BindRule(filepath.Dir(src)+"/x", owner) == "" && isSensitive(c.policy, src):
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
	if idmapped(m) && !c.userns {
		c.reject(field+".options", "", `"idmap" needs a user namespace: its mapping is the sandbox's`)
	}
	if isReadonly(m) && !slices.Contains(m.Options, "rro") {
		// ro makes only the top mount read-only: what is mounted below
		// the source would stay writable.
		m.Options = append(m.Options, "rro")
	}
}

// isSensitive reports whether no policy could ever allow binding path.
func isSensitive(p *libmaka.Policy, path string) bool {
	probe := *p
	probe.BindPaths = []libmaka.PathRule{{Path: "/", Mode: "rw"}}
	return probe.BindRule(path, libmaka.BindOwner{}) == ""
}

// systemMountPlaces is where each system filesystem may be mounted: a
// second procfs or sysfs elsewhere would have none of the masked and
// read-only paths.
var systemMountPlaces = map[string]string{
	"proc": "/proc", "sysfs": "/sys", "devpts": "/dev/pts", "mqueue": "/dev/mqueue",
	"cgroup": "/sys/fs/cgroup", "cgroup2": "/sys/fs/cgroup",
}

// checkSystemMount keeps each system filesystem at its own place, and /sys
// and /sys/fs/cgroup read-only under every profile (a floor: the host's
// kernel settings live there, and files owned by root are writable by the
// sandbox's root whatever its capabilities).
func (c *checker) checkSystemMount(field string, m *specs.Mount) {
	place := systemMountPlaces[m.Type]
	if filepath.Clean(m.Destination) != place {
		c.reject(field+".destination", "", "a %s filesystem may only be mounted at %s, not %s", m.Type, place, m.Destination)
		return
	}
	if m.Type == "sysfs" || m.Type == "cgroup" || m.Type == "cgroup2" {
		m.Options = slices.DeleteFunc(m.Options, func(o string) bool { return o == "rw" || o == "ro" })
		m.Options = append(m.Options, "ro")
	}
}

// pageSize is the unit of tmpfs's nr_blocks.
const pageSize = 4096

// maxTmpfsInodes bounds nr_inodes: each inode is kernel memory.
const maxTmpfsInodes = 1 << 20

// sizeTmpfs gives a tmpfs without a size the profile's default, and
// refuses one above the largest. size= and nr_blocks= both set the size
// (the kernel takes the last one); nr_inodes= is bounded too, and 0 (no
// limit) is refused for either.
func (c *checker) sizeTmpfs(field string, m *specs.Mount) {
	if filepath.Clean(m.Destination) == "/dev" {
		// The device directory, a few KiB of nodes: bounded all the same.
		if !slices.ContainsFunc(m.Options, func(o string) bool { return strings.HasPrefix(o, "size=") || strings.HasPrefix(o, "nr_blocks=") }) {
			m.Options = append(m.Options, "size=65536k")
		}
	}
	max := c.policy.MaxLimits.TmpfsSize
	last, size := -1, int64(0)
	for j, o := range m.Options {
		opt := fmt.Sprintf("%s.options[%d]", field, j)
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "size":
			n, err := parseSize(v)
			if err != nil {
				c.reject(opt, "", "tmpfs size %q: %v", v, err)
				return
			}
			last, size = j, n
		case "nr_blocks":
			n, err := parseSize(v)
			if err != nil || n > (1<<62)/pageSize {
				c.reject(opt, "", "tmpfs nr_blocks %q: not a positive number of blocks", v)
				return
			}
			last, size = j, n*pageSize
		case "nr_inodes":
			n, err := parseSize(v)
			if err != nil || n > maxTmpfsInodes {
				c.reject(opt, "", "tmpfs nr_inodes %q: must be between 1 and %d", v, maxTmpfsInodes)
				return
			}
		}
	}
	if last < 0 {
		m.Options = append(m.Options, "size="+strconv.FormatInt(c.policy.DefaultLimits.TmpfsSize, 10))
		return
	}
	if max > 0 && size > max {
		c.reject(fmt.Sprintf("%s.options[%d]", field, last), fmt.Sprintf(`"maxLimits": {"tmpfsSize": %d}`, size),
			"a tmpfs of %s at %s exceeds the largest allowed by %s (%s)", libmaka.FormatSize(size), m.Destination, c.profile(), libmaka.FormatSize(max))
	}
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
	if r.Memory == nil {
		r.Memory = &specs.LinuxMemory{}
	}
	if r.Pids == nil {
		r.Pids = &specs.LinuxPids{}
	}
	if r.CPU == nil {
		r.CPU = &specs.LinuxCPU{}
	}
	// Where each value came from, for the items that name it.
	f := limitFields{
		memory: "linux.resources.memory.limit", swap: "linux.resources.memory.swap",
		pids: "linux.resources.pids.limit", quota: "linux.resources.cpu.quota", period: "linux.resources.cpu.period",
		reservation: "linux.resources.memory.reservation", burst: "linux.resources.cpu.burst",
	}
	c.foldUnified(r, &f)
	c.checkLimitValues(r, f)
}

// checkLimitValues holds r's limits (unified already folded) to the
// policy, filling in its defaults where r is silent: create's config.json
// and update's values after the contract's (CheckUpdate) alike.
func (c *checker) checkLimitValues(r *specs.LinuxResources, f limitFields) {
	def, max := c.policy.DefaultLimits, c.policy.MaxLimits
	switch {
	case r.Memory.Limit == nil || *r.Memory.Limit == 0:
		v := def.Memory
		r.Memory.Limit = &v
	case *r.Memory.Limit < 0 && max.Memory > 0:
		c.reject(f.memory, `"maxLimits": {"memory": 0}`,
			"unlimited memory is not allowed by %s (largest: %s)", c.profile(), libmaka.FormatSize(max.Memory))
	case *r.Memory.Limit < 0 && max.Swap >= 0:
		// The kernel's swap limit is written only with a memory limit
		// (libcontainer): unlimited memory would lift the swap ceiling.
		c.reject(f.memory, `"maxLimits": {"swap": -1}`,
			"unlimited memory would lift the swap ceiling of %s (largest swap: %s): swap is bounded only with a memory limit", c.profile(), libmaka.FormatSize(max.Swap))
	case max.Memory > 0 && *r.Memory.Limit > max.Memory:
		c.reject(f.memory, fmt.Sprintf(`"maxLimits": {"memory": %d}`, *r.Memory.Limit),
			"%s exceeds the largest memory allowed by %s (%s)", libmaka.FormatSize(*r.Memory.Limit), c.profile(), libmaka.FormatSize(max.Memory))
	}
	mem := *r.Memory.Limit
	if mem < 0 {
		mem = 0 // unlimited (allowed: the policy has no ceiling)
		r.Memory.Limit = &mem
	}
	// OCI's swap is memory+swap; the contract's is the swap alone. 0 is
	// "not set", as runc reads it.
	switch sw := r.Memory.Swap; {
	case mem == 0:
		v := int64(-1) // no memory limit: swap cannot be bounded apart from it
		if sw != nil && *sw > 0 {
			c.reject(f.swap, "", "a swap limit needs a memory limit")
		}
		r.Memory.Swap = &v
	case sw == nil || *sw == 0:
		v := mem + def.Swap
		if def.Swap < 0 {
			v = -1
		}
		r.Memory.Swap = &v
	case *sw == -1 && max.Swap >= 0:
		c.reject(f.swap, `"maxLimits": {"swap": -1}`, "unlimited swap is not allowed by %s (largest: %s)", c.profile(), libmaka.FormatSize(max.Swap))
	case *sw < -1:
		c.reject(f.swap, "", "%d is negative (-1 means unlimited swap)", *sw)
	case *sw >= 0 && *sw < mem:
		c.reject(f.swap, "", "%d is less than the memory limit %d: OCI's swap is memory plus swap", *sw, mem)
	case *sw > 0 && max.Swap >= 0 && *sw-mem > max.Swap:
		c.reject(f.swap, fmt.Sprintf(`"maxLimits": {"swap": %d}`, *sw-mem),
			"%s of swap exceeds the largest allowed by %s (%s)", libmaka.FormatSize(*sw-mem), c.profile(), libmaka.FormatSize(max.Swap))
	}
	if high, ok := r.Unified["memory.high"]; ok && high != "max" && mem > 0 {
		if n, _ := strconv.ParseInt(high, 10, 64); n > mem {
			c.reject(`linux.resources.unified["memory.high"]`, "", "%d is above the memory limit %d", n, mem)
		}
	}
	// memory.min and memory.low (the reservation) keep memory from being
	// reclaimed: never more than the sandbox may hold, nor, unlimited,
	// more than the policy's ceiling.
	protect := mem
	if protect == 0 {
		protect = max.Memory
	}
	if res := r.Memory.Reservation; res != nil && (*res < 0 || (protect > 0 && *res > protect)) {
		c.reject(f.reservation, "", "%d must be between 0 and the memory limit", *res)
	}
	if v, ok := r.Unified["memory.min"]; ok && protect > 0 {
		if n, _ := strconv.ParseInt(v, 10, 64); n > protect {
			c.reject(`linux.resources.unified["memory.min"]`, "", "%d is above the memory limit %d", n, protect)
		}
	}
	// pids.limit as runc maps it: absent is the policy's default, 0 is one
	// pid (runc writes pids.max 1: systemd cannot say 0), a negative value
	// is unlimited where the policy has no pids ceiling.
	switch {
	case r.Pids.Limit == nil:
		v := def.Pids
		r.Pids.Limit = &v
	case *r.Pids.Limit == 0:
		v := int64(1)
		r.Pids.Limit = &v
	case *r.Pids.Limit < 0 && max.Pids > 0:
		c.reject(f.pids, `"maxLimits": {"pids": 0}`, "unlimited pids are not allowed by %s (largest: %d)", c.profile(), max.Pids)
	case max.Pids > 0 && *r.Pids.Limit > max.Pids:
		c.reject(f.pids, fmt.Sprintf(`"maxLimits": {"pids": %d}`, *r.Pids.Limit),
			"%d pids exceed the largest allowed by %s (%d)", *r.Pids.Limit, c.profile(), max.Pids)
	}
	if *r.Pids.Limit < 0 {
		v := int64(0)
		r.Pids.Limit = &v
	}
	switch {
	case r.CPU.Period == nil || *r.CPU.Period == 0:
		p := uint64(defaultCPUPeriod)
		r.CPU.Period = &p
	case *r.CPU.Period < 1000 || *r.CPU.Period > 1000000:
		c.reject(f.period, "", "%d µs is not a CPU period between 1000 and 1000000", *r.CPU.Period)
		return
	}
	period := float64(*r.CPU.Period)
	switch {
	case r.CPU.Quota == nil || *r.CPU.Quota == 0:
		q := int64(math.Round(def.Cpus * period))
		r.CPU.Quota = &q
	case *r.CPU.Quota < 0 && max.Cpus > 0:
		c.reject(f.quota, `"maxLimits": {"cpus": 0}`, "an unlimited CPU quota is not allowed by %s (largest: %g CPUs)", c.profile(), max.Cpus)
	case *r.CPU.Quota > 0 && *r.CPU.Quota < 1000:
		c.reject(f.quota, "", "%d µs is below the kernel's smallest quota (1000 µs)", *r.CPU.Quota)
	case max.Cpus > 0 && float64(*r.CPU.Quota)/period > max.Cpus:
		c.reject(f.quota, fmt.Sprintf(`"maxLimits": {"cpus": %g}`, float64(*r.CPU.Quota)/period),
			"%g CPUs exceed the largest allowed by %s (%g)", float64(*r.CPU.Quota)/period, c.profile(), max.Cpus)
	}
	if *r.CPU.Quota < 0 {
		q := int64(0)
		r.CPU.Quota = &q
	}
	if sh := r.CPU.Shares; sh != nil && (*sh < 2 || *sh > 262144) {
		c.reject("linux.resources.cpu.shares", "", "%d is not between 2 and 262144", *sh)
	}
	// cpu.max.burst lets the sandbox spend unused quota later: the quota
	// plus the burst is what it may take in one period, held to the
	// policy's ceiling like the quota alone.
	if bu := r.CPU.Burst; bu != nil && *bu > 0 {
		quota := *r.CPU.Quota
		switch {
		case quota == 0:
			c.reject(f.burst, "", "a burst needs a CPU quota")
		case *bu > uint64(quota):
			c.reject(f.burst, "", "the burst (%d µs) is above the quota (%d µs): the kernel allows at most the quota", *bu, quota)
		case max.Cpus > 0 && float64(uint64(quota)+*bu)/period > max.Cpus+1e-9:
			cpus := float64(uint64(quota)+*bu) / period
			c.reject(f.burst, fmt.Sprintf(`"maxLimits": {"cpus": %g}`, cpus),
				"quota and burst make %g CPUs in one period, more than %s allows (%g)", cpus, c.profile(), max.Cpus)
		}
	}
	if id := r.CPU.Idle; id != nil && *id != 0 && *id != 1 {
		c.reject("linux.resources.cpu.idle", "", "%d is not 0 or 1", *id)
	}
}

// limitFields names the config.json field each limit was read from.
type limitFields struct{ memory, swap, pids, quota, period, reservation, burst string }

// unifiedKeys are the cgroup v2 files linux.resources.unified may set:
// each is read as the field it is (cpu.max, memory.max, memory.swap.max,
// pids.max as the limits; memory.low as the reservation; cpuset.cpus and
// cpuset.mems as cpu.cpus and cpu.mems) and checked like it. memory.high
// (throttles below the memory limit), memory.min (protects at most the
// memory limit), cpu.weight (a share, 1 to 10000) and memory.oom.group (0
// or 1: the OOM killer ends the sandbox as a whole, as the kubelet asks on
// cgroup v2) are kept as they are.
var unifiedKeys = []string{"cpu.max", "cpu.weight", "cpuset.cpus", "cpuset.mems", "io.max", "memory.high", "memory.low", "memory.max", "memory.min", "memory.oom.group", "memory.swap.max", "pids.max"}

// UnifiedKeys are the cgroup files linux.resources.unified (and update's
// --resources) may name.
func UnifiedKeys() []string { return slices.Clone(unifiedKeys) }

// foldUnified reads linux.resources.unified into r's own fields: the
// cgroup manager writes unified last, so a value left there would
// overwrite the checked limits. Every other key is refused, and nothing
// of unified reaches the kernel.
func (c *checker) foldUnified(r *specs.LinuxResources, f *limitFields) {
	keys := make([]string, 0, len(r.Unified))
	for k := range r.Unified {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	num := func(field, v string) (int64, bool) {
		if v == "max" {
			return -1, true
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			c.reject(field, "", "%q is not a number or max", v)
			return 0, false
		}
		return n, true
	}
	// limit reads memory.max or pids.max: a number or max (-1), never 0.
	limit := func(field, v, what string) *int64 {
		n, ok := num(field, v)
		if ok && n == 0 {
			c.reject(field, "", "0 is not a %s limit", what)
			return nil
		}
		if !ok {
			return nil
		}
		return &n
	}
	var swapMax *int64
	keep := map[string]string{}
	for _, k := range keys {
		v := strings.TrimSpace(r.Unified[k])
		field := fmt.Sprintf("linux.resources.unified[%q]", k)
		switch k {
		case "memory.max":
			if n := limit(field, v, "memory"); n != nil {
				r.Memory.Limit, f.memory = n, field
			}
		case "memory.swap.max":
			if n, ok := num(field, v); ok {
				swapMax, f.swap = &n, field
			}
		case "memory.high":
			if n, ok := num(field, v); ok && n != 0 {
				keep[k] = v
			} else if ok {
				c.reject(field, "", "0 would throttle every allocation")
			}
		case "pids.max":
			if n := limit(field, v, "pids"); n != nil {
				r.Pids.Limit, f.pids = n, field
			}
		case "memory.low":
			if n, ok := num(field, v); ok && n >= 0 {
				r.Memory.Reservation, f.reservation = &n, field
			} else if ok {
				c.reject(field, "", "max would protect more than the memory limit")
			}
		case "memory.min":
			if n, ok := num(field, v); ok && n >= 0 {
				keep[k] = strconv.FormatInt(n, 10)
			} else if ok {
				c.reject(field, "", "max would protect more than the memory limit")
			}
		case "cpu.weight":
			// As runc: given by name, the weight overrides cpu.shares.
			if n, err := strconv.ParseUint(v, 10, 64); err != nil || n < 1 || n > 10000 {
				c.reject(field, "", "%q is not a weight between 1 and 10000", v)
			} else {
				keep[k] = strconv.FormatUint(n, 10)
				r.CPU.Shares = nil
			}
		case "memory.oom.group":
			if v == "0" || v == "1" {
				keep[k] = v
			} else {
				c.reject(field, "", "%q is not 0 or 1", v)
			}
		case "cpuset.cpus":
			r.CPU.Cpus = v
		case "cpuset.mems":
			r.CPU.Mems = v
		case "cpu.max":
			q, p, _ := strings.Cut(v, " ")
			quota, ok := num(field, q)
			if !ok {
				continue
			}
			if quota == 0 {
				c.reject(field, "", "0 is not a CPU quota")
				continue
			}
			r.CPU.Quota, f.quota = &quota, field
			if p != "" {
				period, err := strconv.ParseUint(p, 10, 64)
				if err != nil {
					c.reject(field, "", "%q is not a CPU period", p)
					continue
				}
				r.CPU.Period, f.period = &period, field
			}
		case "io.max":
			c.foldIOMax(r, field, v)
		default:
			c.reject(field, "", "maka does not apply this cgroup file: only %s may be set here, and they are checked as limits", strings.Join(unifiedKeys, ", "))
		}
	}
	if swapMax != nil {
		// memory.swap.max is the swap alone; OCI's swap is memory+swap.
		switch {
		case *swapMax < 0:
			v := int64(-1)
			r.Memory.Swap = &v
		case r.Memory.Limit != nil && *r.Memory.Limit < 0:
			c.reject(f.swap, "", "a swap limit needs a memory limit")
		default:
			if r.Memory.Limit == nil || *r.Memory.Limit == 0 {
				v := c.policy.DefaultLimits.Memory
				r.Memory.Limit = &v
			}
			v := *r.Memory.Limit + *swapMax
			r.Memory.Swap = &v
		}
	}
	r.Unified = nil
	if len(keep) > 0 {
		r.Unified = keep
	}
}

// foldIOMax reads io.max by name ("MAJ:MIN rbps=N wiops=max ...", a line
// per device) into blockIO's throttles, as create and update hold them:
// a throttle only narrows. max lifts one (the kernel's largest rate).
func (c *checker) foldIOMax(r *specs.LinuxResources, field, v string) {
	if r.BlockIO == nil {
		r.BlockIO = &specs.LinuxBlockIO{}
	}
	b := r.BlockIO
	lists := map[string]*[]specs.LinuxThrottleDevice{
		"rbps": &b.ThrottleReadBpsDevice, "wbps": &b.ThrottleWriteBpsDevice,
		"riops": &b.ThrottleReadIOPSDevice, "wiops": &b.ThrottleWriteIOPSDevice,
	}
	for _, line := range strings.Split(v, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var major, minor int64
		if n, err := fmt.Sscanf(f[0], "%d:%d", &major, &minor); err != nil || n != 2 || major < 0 || minor < 0 ||
			fmt.Sprintf("%d:%d", major, minor) != f[0] {
			c.reject(field, "", "%q is not a device (MAJOR:MINOR)", f[0])
			continue
		}
		if len(f) == 1 {
			c.reject(field, "", "%q sets no limit (rbps, wbps, riops, wiops)", line)
		}
		for _, kv := range f[1:] {
			k, val, _ := strings.Cut(kv, "=")
			list, ok := lists[k]
			if !ok {
				c.reject(field, "", "%q is not a limit of io.max (rbps, wbps, riops, wiops)", kv)
				continue
			}
			rate := uint64(math.MaxUint64)
			if val != "max" {
				n, err := strconv.ParseUint(val, 10, 64)
				if err != nil || n == 0 {
					c.reject(field, "", "%q is not a rate (a positive number or max)", kv)
					continue
				}
				rate = n
			}
			d := specs.LinuxThrottleDevice{Rate: rate}
			d.Major, d.Minor = major, minor
			*list = upsertDevice(*list, d, func(e specs.LinuxThrottleDevice) (int64, int64) { return e.Major, e.Minor })
		}
	}
}

// hasNamespace reports whether the sandbox gets a namespace of type t of
// its own (made or joined: listed in config.json, or added by maka).
func (c *checker) hasNamespace(t specs.LinuxNamespaceType) bool {
	for _, n := range c.spec.Linux.Namespaces {
		if n.Type == t {
			return true
		}
	}
	return false
}

// capabilitySets are c's five capability sets (none for nil).
func capabilitySets(c *specs.LinuxCapabilities) [][]string {
	if c == nil {
		return nil
	}
	return [][]string{c.Bounding, c.Effective, c.Permitted, c.Inheritable, c.Ambient}
}

// hasCap reports whether any of p's capability sets holds name.
func hasCap(p *specs.Process, name string) bool {
	return p != nil && slices.ContainsFunc(capabilitySets(p.Capabilities), func(set []string) bool { return slices.Contains(set, name) })
}

func (c *checker) checkLinux() {
	l := c.spec.Linux
	for i, d := range l.Devices {
		field := fmt.Sprintf("linux.devices[%d]", i)
		std, isStd := standardDeviceNodes[d.Path]
		switch {
		case filepath.Clean(d.Path) != d.Path || !strings.HasPrefix(d.Path, "/dev/"):
			c.reject(field+".path", "", "%q is not a clean path below /dev", d.Path)
		case isStd && (d.Type != std.typ || d.Major != std.major || d.Minor != std.minor):
			// The name is not the device: runc would make /dev/null
			// whatever node config.json says.
			c.reject(field, "", "%s is the standard device %s %d:%d, not %s %d:%d", d.Path, std.typ, std.major, std.minor, d.Type, d.Major, d.Minor)
		case !isStd && !c.policy.AllowsDevice(d.Path):
			c.reject(field, fmt.Sprintf(`"devices": [..., %q]`, d.Path), "the device %s is not allowed by %s", d.Path, c.profile())
		}
	}
	c.checkDeviceRules()
	c.checkPropagation()
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
	if !c.hasNamespace(specs.UTSNamespace) {
		c.items = append(c.items, hostUTSItems(c.spec.Hostname, c.spec.Domainname, names,
			hasCap(c.spec.Process, "CAP_SYS_ADMIN"), c.hasNamespace(specs.UserNamespace))...)
	}
	// maka's allowlist is a ceiling under every profile: config.json's
	// profile may only narrow it. What it asked for beyond maka's is
	// counted for `maka boundary`, not refused: engines' default profiles
	// (Podman's allows ~40 calls maka refuses or watches) must still run.
	own := DefaultSeccomp(c.policy.Audit == "files")
	if l.Seccomp == nil {
		l.Seccomp = own
		c.defaultSeccomp = true
	} else {
		c.seccompNarrowed = len(RefuseWiderSeccomp(own, l.Seccomp))
		n, err := NarrowSeccomp(own, l.Seccomp)
		if err != nil {
			c.reject("linux.seccomp", "", "%v", err)
			n = own
		} else if field, reason, refused := initStatxRefusal(l.Seccomp, n); refused {
			// The init would fail after the container exists: refused
			// before anything does (seccomp_init.go).
			c.reject(field, "", "%s", reason)
		} else if field, reason, refused := initGetcwdRefusal(l.Seccomp, n, c.spec.Process != nil && c.spec.Process.NoNewPrivileges); refused {
			c.reject(field, "", "%s", reason)
		}
		l.Seccomp = n
	}
	// A floor under every profile: config.json may add to them, never
	// remove (without them the sandbox's root rewrites core_pattern).
	for i, p := range l.MaskedPaths {
		if !filepath.IsAbs(p) {
			c.reject(fmt.Sprintf("linux.maskedPaths[%d]", i), "", "%q is not an absolute path", p)
		}
	}
	for i, p := range l.ReadonlyPaths {
		if !filepath.IsAbs(p) {
			c.reject(fmt.Sprintf("linux.readonlyPaths[%d]", i), "", "%q is not an absolute path", p)
		}
	}
	l.MaskedPaths = union(defaultMaskedPaths, l.MaskedPaths)
	l.ReadonlyPaths = union(defaultReadonlyPaths, l.ReadonlyPaths)
}

// hostUTSItems are the rules for a sandbox in the host's uts namespace (a
// hostNetwork pod's shape: no uts namespace, or one joined by a path that
// is the host's own, CheckHost): no name of its own (hostname,
// domainname, the kernel.hostname and kernel.domainname sysctls: each
// would name the host), and without a user namespace of its own no
// CAP_SYS_ADMIN, which would be the host's over the host's name.
// sethostname and setdomainname are outside maka's allowlist already.
// sysctls are the sysctls' names, sorted.
func hostUTSItems(hostname, domainname string, sysctls []string, sysAdmin, ownUser bool) []Item {
	const own = "needs a uts namespace of the sandbox's own (add {\"type\": \"uts\"}); with the host's, the sandbox has the host's name"
	var items []Item
	if hostname != "" {
		items = append(items, Item{Field: "hostname", Message: fmt.Sprintf("%q %s", hostname, own)})
	}
	if domainname != "" {
		items = append(items, Item{Field: "domainname", Message: fmt.Sprintf("%q %s", domainname, own)})
	}
	for _, k := range sysctls {
		if k == "kernel.hostname" || k == "kernel.domainname" {
			items = append(items, Item{Field: fmt.Sprintf("linux.sysctl[%q]", k), Message: k + " would name the host: it needs a uts namespace of the sandbox's own"})
		}
	}
	if sysAdmin && !ownUser {
		items = append(items, Item{Field: "process.capabilities", Message: "CAP_SYS_ADMIN with the host's uts namespace and no user namespace of the sandbox's own would be the host's over the host's name: add {\"type\": \"user\"} or {\"type\": \"uts\"}"})
	}
	return items
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

// hookKinds are config.json's hooks by kind, in the order they run.
func hookKinds(h *specs.Hooks) []struct {
	name  string
	hooks []specs.Hook
} {
	return []struct {
		name  string
		hooks []specs.Hook
	}{{"prestart", h.Prestart}, {"createRuntime", h.CreateRuntime}, {"createContainer", h.CreateContainer},
		{"startContainer", h.StartContainer}, {"poststart", h.Poststart}, {"poststop", h.Poststop}}
}

// checkHooks: a hook runs on the host as maka's user (root), so each one
// must be an executable the policy lists by path (hookPaths); hooks: true
// alone allows none. startContainer hooks run inside the sandbox (after
// its root is entered, the path is the sandbox's): hooks: true allows them.
func (c *checker) checkHooks() {
	h := c.spec.Hooks
	if h == nil {
		return
	}
	for _, kind := range hookKinds(h) {
		for i, hk := range kind.hooks {
			field := fmt.Sprintf("hooks.%s[%d].path", kind.name, i)
			listed := filepath.IsAbs(hk.Path) && slices.Contains(c.policy.HookPaths, hk.Path)
			switch {
			case !c.policy.Hooks && kind.name == "startContainer":
				c.reject(field, `"hooks": true`, "the hook %s is not allowed by %s (hooks are refused)", hk.Path, c.profile())
			case !c.policy.Hooks:
				c.reject(field, fmt.Sprintf(`"hooks": true, "hookPaths": [..., %q]`, hk.Path), "the hook %s is not allowed by %s (hooks run on the host as root)", hk.Path, c.profile())
			case kind.name != "startContainer" && !listed:
				c.reject(field, fmt.Sprintf(`"hookPaths": [..., %q]`, hk.Path), "the hook %s is not one %s lists in hookPaths: a hook runs on the host as root, so only executables the policy names may run", hk.Path, c.profile())
			}
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

// summarise reads the normalised (checked) spec back as a contract: the
// summary a person reads, and every value that is applied.
func summarise(s *specs.Spec, policy *libmaka.Policy, timeout int64, defaultSeccomp bool) *libmaka.Boundary {
	l := s.Linux
	b := &libmaka.Boundary{
		Profile:           policy.Profile,
		Rootfs:            libmaka.Rootfs{Path: s.Root.Path, Readonly: s.Root.Readonly},
		Mounts:            s.Mounts,
		Hostname:          s.Hostname,
		Domainname:        s.Domainname,
		Seccomp:           l.Seccomp,
		MaskedPaths:       l.MaskedPaths,
		ReadonlyPaths:     l.ReadonlyPaths,
		Sysctl:            l.Sysctl,
		Devices:           l.Devices,
		UIDMappings:       l.UIDMappings,
		GIDMappings:       l.GIDMappings,
		RootfsPropagation: l.RootfsPropagation,
		MountLabel:        l.MountLabel,
		Hooks:             s.Hooks,
		Annotations:       s.Annotations,
		TimeOffsets:       l.TimeOffsets,
	}
	if b.Mounts == nil {
		b.Mounts = []specs.Mount{}
	}
	summariseMounts(b)
	b.Users = usersOf(l, policy)
	b.Network = libmaka.Network{Mode: libmaka.NetworkHost}
	for _, n := range l.Namespaces {
		b.Namespaces = append(b.Namespaces, libmaka.Namespace{Type: string(n.Type), Path: n.Path})
		if n.Type == specs.NetworkNamespace {
			b.Network = libmaka.Network{Mode: libmaka.NetworkClosed}
			if n.Path != "" {
				b.Network = libmaka.Network{Mode: libmaka.NetworkNetns, Path: n.Path}
			}
		}
	}
	b.Limits = libmaka.Limits{TmpfsSize: policy.DefaultLimits.TmpfsSize, Timeout: timeout}
	b.Cgroup.Path = l.CgroupsPath
	if r := l.Resources; r != nil {
		if v, ok := r.Unified["memory.oom.group"]; ok {
			g := v == "1"
			b.Cgroup.MemoryOOMGroup = &g
		}
		if r.Memory != nil && r.Memory.Limit != nil {
			b.Limits.Memory = *r.Memory.Limit
			b.Cgroup.MemoryReservation = r.Memory.Reservation
			if v, ok := r.Unified["memory.min"]; ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				b.Cgroup.MemoryMin = &n
			}
			if high, ok := r.Unified["memory.high"]; ok {
				n := int64(-1)
				if high != "max" {
					n, _ = strconv.ParseInt(high, 10, 64)
				}
				b.Cgroup.MemoryHigh = &n
			}
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
		if c := r.CPU; c != nil {
			if c.Period != nil {
				b.Cgroup.CPUPeriod = *c.Period
				if c.Quota != nil && *c.Period > 0 {
					b.Limits.Cpus = float64(*c.Quota) / float64(*c.Period)
				}
			}
			b.Cgroup.CPUShares, b.Cgroup.CPUIdle, b.Cgroup.Cpus, b.Cgroup.Mems = c.Shares, c.Idle, c.Cpus, c.Mems
			if c.Burst != nil && *c.Burst > 0 {
				b.Cgroup.CPUBurst = c.Burst
			}
		}
		if v, ok := r.Unified["cpu.weight"]; ok {
			n, _ := strconv.ParseUint(v, 10, 64)
			b.Cgroup.CPUWeight = &n
		}
		b.Cgroup.BlockIO, b.Cgroup.HugepageLimits, b.Cgroup.Rdma = r.BlockIO, r.HugepageLimits, r.Rdma
		for _, d := range r.Devices {
			if ConsoleRule(d) {
				b.Cgroup.DevicesDropped = append(b.Cgroup.DevicesDropped, d)
			} else {
				b.Cgroup.Devices = append(b.Cgroup.Devices, d)
			}
		}
	}
	p := s.Process
	b.Process = libmaka.Process{
		Args: p.Args, Cwd: p.Cwd, UID: p.User.UID, GID: p.User.GID, Env: p.Env,
		Capabilities: []string{}, NoNewPrivileges: p.NoNewPrivileges, Terminal: p.Terminal,
		NewSession:     true, // libcontainer's init always calls setsid
		CapabilitySets: p.Capabilities, AdditionalGids: p.User.AdditionalGids, Umask: p.User.Umask,
		Rlimits: p.Rlimits, ConsoleSize: p.ConsoleSize, ApparmorProfile: p.ApparmorProfile,
		SelinuxLabel: p.SelinuxLabel, OOMScoreAdj: p.OOMScoreAdj, Scheduler: p.Scheduler,
		IOPriority: p.IOPriority, ExecCPUAffinity: p.ExecCPUAffinity,
	}
	if b.Process.Env == nil {
		b.Process.Env = []string{}
	}
	if caps := p.Capabilities; caps != nil {
		for _, set := range capabilitySets(caps) {
			b.Process.Capabilities = union(b.Process.Capabilities, set)
		}
		sort.Strings(b.Process.Capabilities)
	}
	b.Syscalls = libmaka.Syscalls{Profile: "none"}
	if sc := l.Seccomp; sc != nil {
		b.Syscalls = libmaka.Syscalls{Profile: "config", DefaultAction: string(sc.DefaultAction)}
		if defaultSeccomp {
			b.Syscalls.Profile = "default"
		}
		b.Syscalls.Allowed, b.Syscalls.Watched, b.Syscalls.Denied = SeccompCounts(sc)
	}
	return b
}

// summariseMounts lists b's read-only binds and writable places from its
// mounts.
func summariseMounts(b *libmaka.Boundary) {
	b.ReadOnly, b.Writable = []libmaka.BindMount{}, []libmaka.WritableMount{}
	for i := range b.Mounts {
		m := &b.Mounts[i]
		switch {
		case IsBind(m) && isReadonly(m):
			b.ReadOnly = append(b.ReadOnly, libmaka.BindMount{Source: m.Source, Destination: m.Destination})
		case IsBind(m):
			b.Writable = append(b.Writable, libmaka.WritableMount{Path: m.Destination, Kind: "bind", Source: m.Source})
		case m.Type == "tmpfs" && !isReadonly(m):
			b.Writable = append(b.Writable, libmaka.WritableMount{Path: m.Destination, Kind: "tmpfs", Size: tmpfsSize(m.Options)})
		}
	}
}

// tmpfsSize is a tmpfs's size from its options: the last size= or
// nr_blocks= wins, as in the kernel.
func tmpfsSize(opts []string) int64 {
	var size int64
	for _, o := range opts {
		if v, ok := strings.CutPrefix(o, "size="); ok {
			size, _ = parseSize(v)
		} else if v, ok := strings.CutPrefix(o, "nr_blocks="); ok {
			n, _ := parseSize(v)
			size = n * pageSize
		}
	}
	return size
}
