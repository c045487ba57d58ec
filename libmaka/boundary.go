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
// The summary fields are what a person reads (`maka boundary`); Spec is the
// normalised OCI document that enforcement is built from: config.json with
// the profile's defaults applied. Both are produced together by ToBoundary,
// so they cannot disagree.
type Boundary struct {
	Profile    string          `json:"profile"`
	Rootfs     Rootfs          `json:"rootfs"`
	ReadOnly   []BindMount     `json:"readOnly"`
	Writable   []WritableMount `json:"writable"`
	Network    Network         `json:"network"`
	Limits     Limits          `json:"limits"`
	Process    Process         `json:"process"`
	Namespaces []Namespace     `json:"namespaces"`
	Syscalls   Syscalls        `json:"syscalls"`
	// Spec is the normalised config.json enforcement is derived from.
	Spec *specs.Spec `json:"spec,omitempty"`
}

// Rootfs is the trusted runtime root.
type Rootfs struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
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
)

// Network says how the sandbox reaches the network.
type Network struct {
	Mode string `json:"mode"`
	Path string `json:"path,omitempty"`
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
	Args            []string `json:"args"`
	Cwd             string   `json:"cwd"`
	UID             uint32   `json:"uid"`
	GID             uint32   `json:"gid"`
	Env             []string `json:"env"`
	Capabilities    []string `json:"capabilities"`
	NoNewPrivileges bool     `json:"noNewPrivileges"`
	Terminal        bool     `json:"terminal"`
	NewSession      bool     `json:"newSession"`
}

// Namespace is one namespace of the sandbox: private (Path empty) or joined.
type Namespace struct {
	Type string `json:"type"`
	Path string `json:"path,omitempty"`
}

// Syscalls summarises the seccomp profile.
type Syscalls struct {
	Profile       string `json:"profile"` // "config" (from config.json), "default" (maka's) or "none"
	DefaultAction string `json:"defaultAction,omitempty"`
	Denied        int    `json:"denied"` // number of syscall names not allowed
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
