package libmaka

import (
	"errors"
	"fmt"
	"math"
	"os"
	pathpkg "path"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Profile names, after Kubernetes' Pod Security Standards.
const (
	ProfileRestricted = "restricted"
	ProfileBaseline   = "baseline"
)

// DefaultPolicyFile is read when --policy is not given (if it exists).
const DefaultPolicyFile = "/etc/maka/policy.json"

// Policy is the whitelist a Boundary is checked against, and the defaults
// it fills in where config.json is silent.
type Policy struct {
	Profile string `json:"profile"`
	// Capabilities a process may hold (any set).
	Capabilities []string `json:"capabilities"`
	// BindPaths are host paths (and what is below them) that may be bound.
	// A component may be a placeholder ({id}, {sandbox-id}, {pod-uid}):
	// the rule then allows only this container's own directory (BindOwner).
	BindPaths []PathRule `json:"bindPaths"`
	// NetworkModes allowed: closed, netns, host.
	NetworkModes []string `json:"networkModes"`
	// Devices (container paths) that may be created beyond the defaults.
	Devices []string `json:"devices"`
	// Sysctls allowed: exact names or prefixes ending in "*" ("net.ipv4.*").
	Sysctls []string `json:"sysctls"`
	// Hooks: whether config.json may ask for OCI hooks (they run on the host).
	Hooks bool `json:"hooks"`
	// HookPaths are the host executables a hook may run, by exact absolute
	// path: a hook runs on the host as maka's user (root), so hooks: true
	// alone allows none. Empty under every built-in profile.
	HookPaths []string `json:"hookPaths"`
	// WritableRootfs: whether root.readonly may be false.
	WritableRootfs bool `json:"writableRootfs"`
	// CgroupParents are the cgroup v2 directories (relative to the cgroup
	// mount) under which config.json's linux.cgroupsPath may place a
	// sandbox; without one it goes to /maka/<id>, a parent maka owns.
	CgroupParents []string `json:"cgroupParents"`
	// OOMScoreAdjMin is the lowest process.oomScoreAdj allowed; nil:
	// maka's own (a sandbox is never killed after the runtime that made
	// it). baseline allows kubelet's -998 (a pod's sandbox and guaranteed
	// containers), never containerd's -999 or an unkillable -1000.
	OOMScoreAdjMin *int `json:"oomScoreAdjMin,omitempty"`
	// UserNamespace: UserNamespaceRequired or UserNamespaceOptional.
	UserNamespace string `json:"userNamespace"`
	// IDPool is the host ids maka leases, a block per sandbox with a
	// user namespace (idpool.go).
	IDPool IDPool `json:"idPool"`
	// DelegatedIDs are host id ranges an engine allocates itself (e.g.
	// kubelet for hostUsers: false): config.json's own uidMappings and
	// gidMappings must lie in one, outside the pool and every host
	// account. maka does not track them: the engine keeps them apart.
	DelegatedIDs []IDRange `json:"delegatedIDs"`
	// Rootless is set (by ForRootless, never by a policy file) when maka
	// runs as an ordinary user.
	Rootless *Rootless `json:"rootless,omitempty"`
	// DefaultLimits apply where config.json is silent; MaxLimits are ceilings.
	DefaultLimits Limits `json:"defaultLimits"`
	MaxLimits     Limits `json:"maxLimits"`
	// MaxCommandTimeout is the longest deadline, in seconds, a bounded
	// command (`maka exec --timeout`, the Go API's Sandbox.Exec) may ask
	// for; a longer one is refused before anything runs, and a command
	// that asks for none gets it. 0 (a record from before the key): 180.
	MaxCommandTimeout int64 `json:"maxCommandTimeout,omitempty"`
	// OnViolation: deny (record and refuse) or kill (also destroy the sandbox).
	OnViolation string `json:"onViolation"`
	// Audit: "" or "files" (record writes aimed at read-only paths).
	Audit string `json:"audit"`
	// Egress is the ceiling of the destinations a sandbox may declare
	// (org.maka.egress): host:port entries in egress.ParseEntry's syntax,
	// each declared entry covered by one of them (egress.Entry.Covers).
	// Empty under both built-in profiles: no sandbox has egress until the
	// policy lists some.
	Egress []string `json:"egress"`
	// EgressLimits bound each sandbox's egress proxy.
	EgressLimits EgressLimits `json:"egressLimits"`
	// OnEgressRefusal: deny (refuse and record: the default under every
	// onViolation) or kill (also destroy the sandbox).
	OnEgressRefusal string `json:"onEgressRefusal"`
	// Source is the policy file this policy was read from ("" for a
	// built-in profile), and Modified says whether that file changed any
	// item of its profile: both are persisted with each container's
	// record, so what a sandbox was held to can be told later.
	Source   string `json:"source,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// EgressLimits bound a sandbox's egress proxy; each refusal they cause is
// a violation record.
type EgressLimits struct {
	// Connections served at once (at least 1).
	Connections int `json:"connections"`
	// IdleTimeout: seconds without a byte either way before a connection
	// is closed (at least 1).
	IdleTimeout int64 `json:"idleTimeout"`
	// Bytes the proxy carries over the sandbox's life, both ways (0: no
	// bound).
	Bytes int64 `json:"bytes"`
}

// DefaultEgressLimits are both profiles'.
var DefaultEgressLimits = EgressLimits{Connections: 64, IdleTimeout: 300}

// DefaultMaxCommandTimeout is both profiles' maxCommandTimeout, as the
// bubblewrap backend maka's tool sandbox follows has it.
const DefaultMaxCommandTimeout = 180

// maxCommandTimeoutCeiling bounds a policy's maxCommandTimeout: a day.
const maxCommandTimeoutCeiling = 86400

// CommandTimeout is the longest deadline of a bounded command.
func (p *Policy) CommandTimeout() time.Duration {
	if p.MaxCommandTimeout <= 0 {
		return DefaultMaxCommandTimeout * time.Second
	}
	return time.Duration(p.MaxCommandTimeout) * time.Second
}

// PathRule allows binding Path (and anything below it) read-only ("ro") or
// also read-write ("rw").
type PathRule struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
}

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// The default limits of both profiles: 1 GiB memory, no swap, 256 pids,
// 2 CPUs, 128 MiB per writable tmpfs; restricted's sandboxes (a tool call,
// a build step) also live at most 180 s. baseline's have no lifetime: they
// are Podman's, containerd's and Kubernetes' containers, services among
// them, and a pod killed after three minutes would be a broken pod.
var defaultLimits = Limits{Memory: gib, Swap: 0, Pids: 256, Cpus: 2, TmpfsSize: 128 * mib, Timeout: 180}

// baselineDefaultLimits are defaultLimits without the lifetime.
var baselineDefaultLimits = Limits{Memory: gib, Swap: 0, Pids: 256, Cpus: 2, TmpfsSize: 128 * mib, Timeout: 0}

// defaultCapabilities is the container default set of Podman, containerd
// and Docker: what `baseline` allows.
var defaultCapabilities = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// Host paths that may never be bound, whatever the policy says: binding
// them hands the sandbox the host. sensitiveTrees are refused with
// everything below them and every parent of them; sensitiveDirs are refused
// as themselves and their parents (a file deep below /usr may be fine).
var (
	sensitiveTrees = []string{
		"/proc", "/sys", "/dev", "/boot", "/etc", "/root", "/lib/modules",
		"/var/lib/maka", "/run/maka", "/var/run/docker.sock", "/run/docker.sock",
		"/run/containerd/containerd.sock", "/run/podman/podman.sock", "/run/systemd", "/run/dbus",
		// Runtimes' state roots (maka's own under containerd's shim:
		// /run/containerd/runc/<namespace>) and the shims' sockets.
		"/run/containerd/runc", "/run/containerd/s", "/run/runc", "/run/crun",
	}
	sensitiveDirs = []string{"/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/run", "/var", "/var/run", "/var/lib", "/home"}
)

// BuiltinPolicy returns a built-in profile.
func BuiltinPolicy(profile string) (*Policy, error) {
	switch profile {
	case ProfileRestricted:
		return &Policy{
			Profile:           ProfileRestricted,
			Capabilities:      []string{},
			BindPaths:         []PathRule{},
			NetworkModes:      []string{NetworkClosed},
			Devices:           []string{},
			Sysctls:           []string{},
			HookPaths:         []string{},
			CgroupParents:     []string{"/maka"},
			UserNamespace:     UserNamespaceRequired,
			IDPool:            DefaultIDPool,
			DelegatedIDs:      []IDRange{},
			DefaultLimits:     defaultLimits,
			MaxLimits:         Limits{Memory: 4 * gib, Swap: 0, Pids: 1024, Cpus: 4, TmpfsSize: gib, Timeout: 3600},
			OnViolation:       "kill",
			MaxCommandTimeout: DefaultMaxCommandTimeout,
			Egress:            []string{},
			EgressLimits:      DefaultEgressLimits,
			OnEgressRefusal:   "deny",
		}, nil
	case ProfileBaseline:
		return &Policy{
			Profile:      ProfileBaseline,
			Capabilities: slices.Clone(defaultCapabilities),
			// Where Podman, CRI-O, containerd's CRI plugin and the kubelet
			// keep the files of one container or pod (hosts, resolv.conf,
			// hostname, shm, volumes, secrets), each tied to this
			// container (BindOwner): never another container's or pod's, an
			// image snapshot, a task's root or a shim's socket.
			BindPaths:      slices.Clone(engineBindPaths),
			NetworkModes:   []string{NetworkClosed, NetworkNetns},
			Devices:        []string{},
			Sysctls:        []string{"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "kernel.shm_rmid_forced"},
			Hooks:          true,
			HookPaths:      []string{},
			WritableRootfs: true,
			// Where Podman (cgroupfs manager), containerd (its namespaces)
			// and the CRI (kubelet's cgroupfs driver) put containers.
			CgroupParents:  []string{"/maka", "/libpod_parent", "/machine.slice", "/default", "/k8s.io", "/kubepods", "/kubepods.slice"},
			OOMScoreAdjMin: ptr(-998),
			UserNamespace:  UserNamespaceOptional,
			IDPool:         DefaultIDPool,
			// Below the pool, above the ids of host accounts (which are
			// checked too): kubelet's and Podman's allocators hand out
			// blocks of 65536 from 65536 up.
			DelegatedIDs:      []IDRange{{Start: 65536, Size: DefaultIDPool.Start - 65536}},
			DefaultLimits:     baselineDefaultLimits,
			MaxLimits:         Limits{Memory: 64 * gib, Swap: -1, Pids: 32768, Cpus: 64, TmpfsSize: 16 * gib, Timeout: 0},
			OnViolation:       "deny",
			MaxCommandTimeout: DefaultMaxCommandTimeout,
			Egress:            []string{},
			EgressLimits:      DefaultEgressLimits,
			OnEgressRefusal:   "deny",
		}, nil
	}
	return nil, fmt.Errorf("profile: unknown profile %q (want %s or %s)", profile, ProfileRestricted, ProfileBaseline)
}

// policyFile is the on-disk form: a profile, and any item to replace.
type policyFile struct {
	Profile           string      `json:"profile"`
	Capabilities      *[]string   `json:"capabilities"`
	BindPaths         *[]PathRule `json:"bindPaths"`
	NetworkModes      *[]string   `json:"networkModes"`
	Devices           *[]string   `json:"devices"`
	Sysctls           *[]string   `json:"sysctls"`
	Hooks             *bool       `json:"hooks"`
	HookPaths         *[]string   `json:"hookPaths"`
	WritableRootfs    *bool       `json:"writableRootfs"`
	CgroupParents     *[]string   `json:"cgroupParents"`
	OOMScoreAdjMin    *int        `json:"oomScoreAdjMin"`
	UserNamespace     *string     `json:"userNamespace"`
	IDPool            *idPoolFile `json:"idPool"`
	DelegatedIDs      *[]IDRange  `json:"delegatedIDs"`
	DefaultLimits     *limitsFile `json:"defaultLimits"`
	MaxLimits         *limitsFile `json:"maxLimits"`
	OnViolation       *string     `json:"onViolation"`
	Audit             *string     `json:"audit"`
	MaxCommandTimeout *int64      `json:"maxCommandTimeout"`
	Egress            *[]string   `json:"egress"`
	EgressLimits      *egressFile `json:"egressLimits"`
	OnEgressRefusal   *string     `json:"onEgressRefusal"`
}

// LoadPolicy reads a policy file. An empty path means the default file if
// it exists, else the restricted profile.
func LoadPolicy(path string) (*Policy, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultPolicyFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return BuiltinPolicy(ProfileRestricted)
		}
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", path, err)
	}
	p.Source = path
	return p, nil
}

// ParsePolicy decodes a policy document; errors name the field.
func ParsePolicy(data []byte) (*Policy, error) {
	var f policyFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, err
	}
	if f.Profile == "" {
		f.Profile = ProfileRestricted
	}
	p, err := BuiltinPolicy(f.Profile)
	if err != nil {
		return nil, err
	}
	setGiven(&p.Capabilities, f.Capabilities)
	setGiven(&p.BindPaths, f.BindPaths)
	setGiven(&p.NetworkModes, f.NetworkModes)
	setGiven(&p.Devices, f.Devices)
	setGiven(&p.Sysctls, f.Sysctls)
	setGiven(&p.Hooks, f.Hooks)
	setGiven(&p.HookPaths, f.HookPaths)
	setGiven(&p.WritableRootfs, f.WritableRootfs)
	setGiven(&p.CgroupParents, f.CgroupParents)
	if f.OOMScoreAdjMin != nil {
		p.OOMScoreAdjMin = f.OOMScoreAdjMin
	}
	setGiven(&p.UserNamespace, f.UserNamespace)
	f.IDPool.mergeInto(&p.IDPool)
	setGiven(&p.DelegatedIDs, f.DelegatedIDs)
	// Limit objects merge field by field: a key the file leaves out keeps
	// the profile's value (replacing the object would turn each missing
	// ceiling into 0, i.e. none).
	f.DefaultLimits.mergeInto(&p.DefaultLimits)
	f.MaxLimits.mergeInto(&p.MaxLimits)
	setGiven(&p.OnViolation, f.OnViolation)
	setGiven(&p.Audit, f.Audit)
	if f.MaxCommandTimeout != nil {
		p.MaxCommandTimeout = *f.MaxCommandTimeout
		if p.MaxCommandTimeout < 1 || p.MaxCommandTimeout > maxCommandTimeoutCeiling {
			return nil, fmt.Errorf("maxCommandTimeout: %d is not a timeout (seconds, 1 to %d)", p.MaxCommandTimeout, maxCommandTimeoutCeiling)
		}
	}
	setGiven(&p.Egress, f.Egress)
	f.EgressLimits.mergeInto(&p.EgressLimits)
	setGiven(&p.OnEgressRefusal, f.OnEgressRefusal)
	if err := p.validate(); err != nil {
		return nil, err
	}
	builtin, _ := BuiltinPolicy(p.Profile)
	p.Modified = !reflect.DeepEqual(p, builtin)
	return p, nil
}

// validate checks the policy itself; each error names the field.
func (p *Policy) validate() error {
	var errs []string
	for i, c := range p.Capabilities {
		if !KnownCapability(c) {
			errs = append(errs, fmt.Sprintf("capabilities[%d]: %q is not a capability the kernel knows (e.g. CAP_NET_BIND_SERVICE)", i, c))
		}
	}
	for i, r := range p.BindPaths {
		if !strings.HasPrefix(r.Path, "/") {
			errs = append(errs, fmt.Sprintf("bindPaths[%d].path: %q is not absolute", i, r.Path))
		}
		if r.Mode != "ro" && r.Mode != "rw" {
			errs = append(errs, fmt.Sprintf("bindPaths[%d].mode: %q is not ro or rw", i, r.Mode))
		}
		if err := checkPlaceholders(r.Path); err != nil {
			errs = append(errs, fmt.Sprintf("bindPaths[%d].path: %v", i, err))
		}
	}
	for i, h := range p.HookPaths {
		if !strings.HasPrefix(h, "/") || pathpkg.Clean(h) != h {
			errs = append(errs, fmt.Sprintf("hookPaths[%d]: %q is not a clean absolute path (a hook is listed by the path config.json names)", i, h))
		}
	}
	for i, m := range p.NetworkModes {
		if m != NetworkClosed && m != NetworkNetns && m != NetworkHost {
			errs = append(errs, fmt.Sprintf("networkModes[%d]: %q is not closed, netns or host", i, m))
		}
	}
	errs = append(errs, checkLimits(p.DefaultLimits, p.MaxLimits)...)
	errs = append(errs, validateCgroupParents(p.CgroupParents)...)
	if m := p.OOMScoreAdjMin; m != nil && (*m < -999 || *m > 1000) {
		errs = append(errs, fmt.Sprintf("oomScoreAdjMin: %d is outside -999..1000 (-1000 would make a sandbox unkillable)", *m))
	}
	if p.UserNamespace != UserNamespaceRequired && p.UserNamespace != UserNamespaceOptional {
		errs = append(errs, fmt.Sprintf("userNamespace: %q is not %s or %s", p.UserNamespace, UserNamespaceRequired, UserNamespaceOptional))
	}
	errs = append(errs, p.IDPool.validate()...)
	for i, r := range p.DelegatedIDs {
		switch {
		case r.Start == 0 || r.Size == 0:
			errs = append(errs, fmt.Sprintf("delegatedIDs[%d]: start %d and size %d must both be at least 1 (host id 0 is the host's root)", i, r.Start, r.Size))
		case uint64(r.Start)+uint64(r.Size) > math.MaxUint32:
			errs = append(errs, fmt.Sprintf("delegatedIDs[%d]: passes the last id %d", i, uint32(math.MaxUint32-1)))
		case p.IDPool.Overlaps(r.Start, r.Size):
			errs = append(errs, fmt.Sprintf("delegatedIDs[%d]: %d..%d overlaps idPool, whose blocks maka leases itself", i, r.Start, uint64(r.Start)+uint64(r.Size)-1))
		}
	}
	if p.OnViolation != "deny" && p.OnViolation != "kill" {
		errs = append(errs, fmt.Sprintf("onViolation: %q is not deny or kill", p.OnViolation))
	}
	if p.Audit != "" && p.Audit != "files" {
		errs = append(errs, fmt.Sprintf("audit: %q is not \"\" or files", p.Audit))
	}
	errs = append(errs, p.validateEgress()...)
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Tighten returns the policy a container annotation (org.maka.profile)
// asks for: only a stricter profile is accepted.
func (p *Policy) Tighten(profile string) (*Policy, error) {
	if profile == "" || profile == p.Profile {
		return p, nil
	}
	if profile == ProfileRestricted {
		return p.meetRestricted(), nil
	}
	if _, err := BuiltinPolicy(profile); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("profile %s is looser than the policy's %s: an annotation may only tighten the profile", profile, p.Profile)
}

// meetRestricted is the stricter of p and the built-in restricted profile,
// item by item: an annotation asking for restricted may not swap a policy
// file's stricter item (a limit, its maxCommandTimeout, its oomScoreAdjMin,
// its file audit) for restricted's own. TestTightenNeverLoosensAnyField
// walks every field of Policy.
func (p *Policy) meetRestricted() *Policy {
	r, _ := BuiltinPolicy(ProfileRestricted)
	r.Source, r.Modified = p.Source, p.Modified
	r.Capabilities = intersect(r.Capabilities, p.Capabilities)
	r.BindPaths = stricterBindPaths(r.BindPaths, p)
	r.NetworkModes = intersect(r.NetworkModes, p.NetworkModes)
	r.Devices = intersect(r.Devices, p.Devices)
	r.Sysctls = intersect(r.Sysctls, p.Sysctls)
	r.Hooks = r.Hooks && p.Hooks
	r.WritableRootfs = r.WritableRootfs && p.WritableRootfs
	r.CgroupParents = intersect(r.CgroupParents, p.CgroupParents)
	r.HookPaths = intersect(r.HookPaths, p.HookPaths)
	r.OOMScoreAdjMin = stricterOOMScoreAdjMin(r.OOMScoreAdjMin, p.OOMScoreAdjMin)
	r.UserNamespace = stricterOf(p.UserNamespace, r.UserNamespace, UserNamespaceRequired)
	r.IDPool = p.IDPool // required, from the policy's own pool
	r.DelegatedIDs = stricterIDRanges(r.DelegatedIDs, p.DelegatedIDs)
	if p.Rootless != nil {
		// Where the user's sandboxes can be at all.
		r.Rootless, r.CgroupParents, r.DelegatedIDs = p.Rootless, p.CgroupParents, []IDRange{}
	}
	r.MaxLimits = stricterLimits(r.MaxLimits, p.MaxLimits)
	// A default never above the ceiling it now has.
	r.DefaultLimits = stricterLimits(stricterLimits(r.DefaultLimits, p.DefaultLimits), r.MaxLimits)
	r.MaxCommandTimeout = stricterCommandTimeout(r.MaxCommandTimeout, p.MaxCommandTimeout)
	r.OnViolation = stricterOf(p.OnViolation, r.OnViolation, "kill")
	r.Audit = stricterOf(r.Audit, p.Audit, "files")
	r.Egress = intersect(r.Egress, p.Egress)
	r.EgressLimits = stricterEgressLimits(r.EgressLimits, p.EgressLimits)
	r.OnEgressRefusal = stricterOf(p.OnEgressRefusal, r.OnEgressRefusal, "kill")
	return r
}

func intersect(a, b []string) []string {
	out := []string{}
	for _, s := range a {
		if slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// stricterLimits takes the smaller of each limit (0: no limit; swap -1:
// unlimited).
func stricterLimits(a, b Limits) Limits {
	least := func(x, y int64) int64 {
		switch {
		case x == 0:
			return y
		case y == 0:
			return x
		}
		return min(x, y)
	}
	out := Limits{
		Memory: least(a.Memory, b.Memory), Pids: least(a.Pids, b.Pids),
		TmpfsSize: least(a.TmpfsSize, b.TmpfsSize), Timeout: least(a.Timeout, b.Timeout),
		Cpus: a.Cpus, Swap: a.Swap,
	}
	if a.Cpus == 0 || (b.Cpus != 0 && b.Cpus < a.Cpus) {
		out.Cpus = b.Cpus
	}
	if a.Swap < 0 || (b.Swap >= 0 && b.Swap < a.Swap) {
		out.Swap = b.Swap
	}
	return out
}

// AllowsCapability reports whether cap is on the whitelist.
func (p *Policy) AllowsCapability(c string) bool {
	return slices.Contains(p.Capabilities, c)
}

// AllowsNetwork reports whether the network mode is allowed.
func (p *Policy) AllowsNetwork(mode string) bool {
	return slices.Contains(p.NetworkModes, mode)
}

// AllowsSysctl reports whether the sysctl is on the whitelist.
func (p *Policy) AllowsSysctl(name string) bool {
	for _, s := range p.Sysctls {
		if s == name || (strings.HasSuffix(s, "*") && strings.HasPrefix(name, strings.TrimSuffix(s, "*"))) {
			return true
		}
	}
	return false
}

// AllowsDevice reports whether the device path may be created.
func (p *Policy) AllowsDevice(path string) bool {
	return slices.Contains(p.Devices, path)
}

// BindRule reports how (if at all) the host path may be bound by the
// container o: "ro", "rw" or "" (not at all).
func (p *Policy) BindRule(hostPath string, o BindOwner) string {
	for _, s := range sensitiveTrees {
		if hostPath == s || isBelow(hostPath, s) || isBelow(s, hostPath) || hostPath == "/" {
			return ""
		}
	}
	for _, s := range sensitiveDirs {
		if hostPath == s || isBelow(s, hostPath) {
			return ""
		}
	}
	mode := ""
	for _, r := range p.BindPaths {
		if o.matches(r.Path, hostPath) {
			if r.Mode == "rw" {
				return "rw"
			}
			mode = "ro"
		}
	}
	return mode
}

// isBelow reports whether path is strictly below dir.
func isBelow(path, dir string) bool {
	if dir == "/" {
		return path != "/" && strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

func ptr[T any](v T) *T { return &v }
