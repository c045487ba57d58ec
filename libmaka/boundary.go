package libmaka

import (
	"fmt"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// Boundary is the one description of a sandbox: what it may read, where it
// may write (and how much), whether it has a network, its limits, its
// process and namespaces. specconv.ToBoundary compiles a config.json into
// one, Policy.Check validates it, and everything that enforces it is
// derived from it; nothing after ToBoundary reads config.json again.
//
// The summary fields (profile to syscalls) are what a person reads (`maka
// boundary`); the fields after them are the rest of what is applied, each
// one checked against the policy. specconv.ToLibcontainer builds the
// kernel's configuration from a Boundary alone: a config.json field that
// has no place here cannot reach the kernel (docs/contract.md classifies
// every field of runtime-spec's Spec).
type Boundary struct {
	Profile    string          `json:"profile"`
	Rootfs     Rootfs          `json:"rootfs"`
	ReadOnly   []BindMount     `json:"readOnly"`
	Writable   []WritableMount `json:"writable"`
	Network    Network         `json:"network"`
	Limits     Limits          `json:"limits"`
	Process    Process         `json:"process"`
	Namespaces []Namespace     `json:"namespaces"`
	Users      Users           `json:"users"`
	Syscalls   Syscalls        `json:"syscalls"`

	// Mounts are every mount, in order, with the options applied (the
	// floors and defaults included).
	Mounts     []specs.Mount `json:"mounts"`
	Hostname   string        `json:"hostname,omitempty"`
	Domainname string        `json:"domainname,omitempty"`
	// Cgroup is where the sandbox's cgroup is and what, beyond Limits,
	// is written to it.
	Cgroup Cgroup `json:"cgroup"`
	// Seccomp is the filter applied: maka's, or its intersection with
	// config.json's.
	Seccomp       *specs.LinuxSeccomp `json:"seccomp,omitempty"`
	MaskedPaths   []string            `json:"maskedPaths"`
	ReadonlyPaths []string            `json:"readonlyPaths"`
	Sysctl        map[string]string   `json:"sysctl,omitempty"`
	// Devices are the device nodes created beyond the standard ones.
	Devices           []specs.LinuxDevice    `json:"devices,omitempty"`
	UIDMappings       []specs.LinuxIDMapping `json:"uidMappings,omitempty"`
	GIDMappings       []specs.LinuxIDMapping `json:"gidMappings,omitempty"`
	RootfsPropagation string                 `json:"rootfsPropagation,omitempty"`
	MountLabel        string                 `json:"mountLabel,omitempty"`
	// Hooks run on the host (only when the policy allows hooks).
	Hooks       *specs.Hooks      `json:"hooks,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// TimeOffsets are the time namespace's offsets of the monotonic and
	// boottime clocks (only with a time namespace of the sandbox's own).
	TimeOffsets map[string]specs.LinuxTimeOffset `json:"timeOffsets,omitempty"`
}

// Users says whose ids the sandbox's processes hold on the host. With a
// user namespace, container ids 0..n-1 are a block of host ids no host
// account uses (UIDMappings, GIDMappings): its root is an unprivileged
// host user. Without one, its ids are the host's own.
type Users struct {
	Namespace bool `json:"namespace"`
	// Source of the mapping: IDsFromPool (maka leases a free block of
	// Pool at create; the mapping is empty until then) or IDsFromConfig
	// (config.json's own, inside the policy's delegated ranges).
	Source string  `json:"source,omitempty"`
	Pool   *IDPool `json:"pool,omitempty"`
}

// Cgroup is the sandbox's cgroup: its path below the cgroup v2 mount and
// the values written there besides Limits (which alone set memory, swap,
// pids and the CPU quota). Each is one that can only narrow what the
// sandbox gets, or is bounded by the policy.
type Cgroup struct {
	Path      string `json:"path"`
	CPUPeriod uint64 `json:"cpuPeriod"`
	// CPUShares is the relative weight in cgroup v1's terms (written as
	// cpu.weight, converted); CPUWeight is cpu.weight itself, given by
	// name (linux.resources.unified). At most one of the two is set.
	CPUShares *uint64 `json:"cpuShares,omitempty"`
	CPUWeight *uint64 `json:"cpuWeight,omitempty"`
	// CPUBurst is cpu.max.burst: unused quota the sandbox may spend later,
	// in µs per period. The quota plus the burst stays within the
	// policy's CPU ceiling, so not even a burst exceeds it.
	CPUBurst *uint64 `json:"cpuBurst,omitempty"`
	CPUIdle  *int64  `json:"cpuIdle,omitempty"`
	Cpus     string  `json:"cpus,omitempty"`
	Mems     string  `json:"mems,omitempty"`
	// MemoryReservation is memory.low; MemoryMin memory.min. Both protect
	// the sandbox's memory from reclaim, at most up to its memory limit.
	MemoryReservation *int64 `json:"memoryReservation,omitempty"`
	MemoryMin         *int64 `json:"memoryMin,omitempty"`
	// MemoryHigh throttles below the memory limit (-1: max).
	MemoryHigh *int64 `json:"memoryHigh,omitempty"`
	// MemoryOOMGroup is memory.oom.group: the OOM killer ends the sandbox
	// as a whole (the kubelet sets it for every container on cgroup v2).
	MemoryOOMGroup *bool                      `json:"memoryOOMGroup,omitempty"`
	BlockIO        *specs.LinuxBlockIO        `json:"blockIO,omitempty"`
	HugepageLimits []specs.LinuxHugepageLimit `json:"hugepageLimits,omitempty"`
	Rdma           map[string]specs.LinuxRdma `json:"rdma,omitempty"`
	// Devices are the device cgroup rules, checked against the policy.
	Devices []specs.LinuxDeviceCgroup `json:"devices,omitempty"`
	// DevicesDropped are config.json's rules that allow the host's
	// console (c 5:1, specconv.ConsoleRule): not given, the device cgroup
	// denies it.
	DevicesDropped []specs.LinuxDeviceCgroup `json:"devicesDropped,omitempty"`
}

// Rootfs is the trusted runtime root.
type Rootfs struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
	// IDMapped: the root is mounted through the sandbox's id mapping, so
	// the host root's files show as the sandbox's root's (read-only).
	// Without it, in a user namespace they show as nobody.
	IDMapped bool `json:"idmapped,omitempty"`
	// WritableView: config.json asked for a writable root (root.readonly
	// false) under a policy that never lets the root be written. The root
	// stays read-only (Readonly is true); the sandbox sees it writable
	// through an overlay whose writes land in a tmpfs of its own, bounded
	// by Limits.TmpfsSize and gone with it.
	WritableView bool `json:"writableView,omitempty"`
	// Overlay: the root is one overlay (set at create by
	// Op.BuildOverlayRoot): the root, read-only and idmapped, under a
	// tmpfs of the sandbox's own that holds the mount points it lacks (and
	// a writable view's writes).
	Overlay bool `json:"overlay,omitempty"`
	// Missing are mount points the root lacks (resolved in the root,
	// relative to it): maka provides them in a scaffold, never in the root.
	Missing      []string `json:"missing,omitempty"`
	MissingFiles []string `json:"missingFiles,omitempty"`
	// Scaffold is the directory that stands for the root when IDMapped or
	// Missing (set at create by Op.BuildRoot), and Binds bind the root's
	// entries into it, read-only.
	Scaffold string        `json:"scaffold,omitempty"`
	Binds    []specs.Mount `json:"binds,omitempty"`
}

// BindMount is a host path made visible read-only.
type BindMount struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// WritableMount is a place the sandbox may write: a bounded tmpfs, or a
// declared read-write bind of a host path.
type WritableMount struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"` // "tmpfs" or "bind"
	Size   int64  `json:"size,omitempty"`
	Source string `json:"source,omitempty"`
}

// Network modes.
const (
	NetworkClosed = "closed" // a new network namespace with only loopback
	NetworkNetns  = "netns"  // joins the declared namespace path
	NetworkHost   = "host"   // the host's network (no network namespace)
	// NetworkEgress: closed, and the hosts of Egress reachable through
	// maka's proxy, listening on Proxy inside the sandbox's namespace and
	// served from outside it (docs/egress.md).
	NetworkEgress = "egress"
)

// EgressProxy is where the proxy listens inside a sandbox under egress
// (its own loopback: nothing else can reach it).
const EgressProxy = "127.0.0.1:3128"

// Network says how the sandbox reaches the network.
type Network struct {
	Mode string `json:"mode"`
	Path string `json:"path,omitempty"`
	// Egress (mode egress) are the host:port entries the sandbox may reach
	// (libmaka/egress.ParseEntry), as checked against the policy's
	// ceiling; Proxy is the proxy's address inside the sandbox.
	Egress []string `json:"egress,omitempty"`
	Proxy  string   `json:"proxy,omitempty"`
}

// Limits are the sandbox's resource limits. Zero means unlimited where
// a limit makes sense only as a ceiling (timeout).
type Limits struct {
	Memory    int64   `json:"memory"`    // bytes (memory.max)
	Swap      int64   `json:"swap"`      // bytes of swap beyond memory (memory.swap.max); -1: unlimited
	Pids      int64   `json:"pids"`      // pids.max
	Cpus      float64 `json:"cpus"`      // CPU equivalents (cpu.max quota/period)
	TmpfsSize int64   `json:"tmpfsSize"` // bytes per writable tmpfs without an explicit size
	Timeout   int64   `json:"timeout"`   // seconds a sandbox may live (0: no limit)
}

// Process is the sandboxed program and the identity it runs with.
type Process struct {
	Args []string `json:"args"`
	Cwd  string   `json:"cwd"`
	UID  uint32   `json:"uid"`
	GID  uint32   `json:"gid"`
	Env  []string `json:"env"`
	// HomeAdded: process.env declared no HOME (or an empty one), and Env's
	// HOME is the one maka added, as libcontainer would: the user's home
	// in the root's /etc/passwd, else /.
	HomeAdded       bool     `json:"homeAdded,omitempty"`
	Capabilities    []string `json:"capabilities"`
	NoNewPrivileges bool     `json:"noNewPrivileges"`
	Terminal        bool     `json:"terminal"`
	NewSession      bool     `json:"newSession"`

	// The rest of the process as applied; each value was checked.
	CapabilitySets  *specs.LinuxCapabilities `json:"capabilitySets,omitempty"`
	AdditionalGids  []uint32                 `json:"additionalGids,omitempty"`
	Umask           *uint32                  `json:"umask,omitempty"`
	Rlimits         []specs.POSIXRlimit      `json:"rlimits,omitempty"`
	ConsoleSize     *specs.Box               `json:"consoleSize,omitempty"`
	ApparmorProfile string                   `json:"apparmorProfile,omitempty"`
	SelinuxLabel    string                   `json:"selinuxLabel,omitempty"`
	OOMScoreAdj     *int                     `json:"oomScoreAdj,omitempty"`
	Scheduler       *specs.Scheduler         `json:"scheduler,omitempty"`
	IOPriority      *specs.LinuxIOPriority   `json:"ioPriority,omitempty"`
	ExecCPUAffinity *specs.CPUAffinity       `json:"execCPUAffinity,omitempty"`
}

// Namespace is one namespace of the sandbox: private (Path empty) or joined.
type Namespace struct {
	Type string `json:"type"`
	Path string `json:"path,omitempty"`
}

// Syscalls summarises the seccomp profile.
type Syscalls struct {
	Profile       string `json:"profile"` // "default" (maka's) or "config" (maka's narrowed by config.json's)
	DefaultAction string `json:"defaultAction,omitempty"`
	Allowed       int    `json:"allowed"` // syscall names allowed
	Watched       int    `json:"watched"` // names handed to the monitor
	Denied        int    `json:"denied"`  // names refused
	// Narrowed: items of config.json's profile that asked for more than
	// maka's allowlist, and were not given it.
	Narrowed int `json:"narrowed,omitempty"`
}

// FormatSize prints a byte count the way people read limits: GiB, MiB or
// KiB when it is a whole number of them.
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
