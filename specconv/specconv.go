// Package specconv turns an OCI bundle's config.json into what libcontainer
// runs. It is pure: it reads no host state beyond the bundle path it is given
// (LoadSpec). What its rules compare with on the host (maka's own limits and
// ids, the clocks, the host's accounts, paths resolved and stat'ed, a
// cgroup's processes) is asked of the libmaka.Host its callers pass in
// (libmaka.ThisHost, or a test's fake), so it can be unit-tested without
// root.
package specconv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runc/libcontainer/configs"
	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// LoadSpec reads and decodes <bundle>/config.json. A malformed document
// gives an error naming the file and where it broke.
func LoadSpec(bundle string) (*specs.Spec, error) {
	if fi, err := os.Stat(bundle); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", bundle, errors.Unwrap(err))
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("bundle %s: not a directory", bundle)
	}
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("bundle %s: config.json not found", bundle)
		}
		return nil, fmt.Errorf("bundle %s: %w", bundle, err)
	}
	spec, err := ParseSpec(path, data)
	if err != nil {
		return nil, err
	}
	// "Path values for bind mounts are either absolute or relative to the
	// bundle" (runtime spec; runc resolves them from the bundle, its
	// working directory): made absolute here, so that every check sees
	// the host path the bind will take.
	abs, err := filepath.Abs(bundle)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", bundle, err)
	}
	for i := range spec.Mounts {
		if m := &spec.Mounts[i]; IsBind(m) && m.Source != "" && !filepath.IsAbs(m.Source) {
			m.Source = filepath.Join(abs, m.Source)
		}
	}
	return spec, nil
}

// ParseSpec decodes a config.json document; name is used in errors.
func ParseSpec(name string, data []byte) (*specs.Spec, error) {
	if off := libmaka.InvalidUTF8(data); off >= 0 {
		return nil, fmt.Errorf("%s: malformed JSON: a byte that is not UTF-8 (%s): JSON text is UTF-8", name, lineCol(data, off))
	}
	var spec specs.Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("%s: malformed JSON: %s", name, describeJSONError(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: malformed JSON: trailing data after the document", name)
	}
	return &spec, nil
}

// describeJSONError adds the line and column to a decoding error.
func describeJSONError(data []byte, err error) string {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		// The key and the JSON kinds expected and found, never Go's types
		// (specs-go's struct and field names mean nothing in config.json).
		return fmt.Sprintf("%v (%s)", libmaka.JSONError(typ, "the document"), lineCol(data, typ.Offset))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("unexpected end of data, the document is truncated (%s)", lineCol(data, int64(len(data))))
	}
	if off < 0 {
		return err.Error()
	}
	return fmt.Sprintf("%v (%s)", err, lineCol(data, off))
}

func lineCol(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// Validate checks what libcontainer would otherwise reject late or
// obscurely; each error names the config.json field. host gives the soft
// stack limit the init inherits (execve's limits).
func Validate(host libmaka.Host, spec *specs.Spec) error {
	return validate(spec, host.Facts().StackLimit)
}

// validate is Validate with maka's own soft stack limit.
func validate(spec *specs.Spec, stack uint64) error {
	var errs []string
	add := func(field, msg string) { errs = append(errs, field+": "+msg) }
	if spec.Version == "" {
		add("ociVersion", "must be set")
	}
	if spec.Root == nil || spec.Root.Path == "" {
		add("root.path", "must be set")
	}
	if spec.Linux == nil {
		add("linux", "must be set (maka runs Linux containers)")
	}
	if p := spec.Process; p == nil {
		add("process", "must be set")
	} else {
		errs = append(errs, validateProcess("process", p, stack)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid config.json: %s", strings.Join(errs, "; "))
	}
	return nil
}

// validateProcess: stack is maka's own soft stack limit, which p inherits
// unless its rlimits set one.
func validateProcess(field string, p *specs.Process, stack uint64) []string {
	var errs []string
	if len(p.Args) == 0 && p.CommandLine == "" {
		errs = append(errs, field+".args: must not be empty")
	}
	if p.Cwd == "" {
		errs = append(errs, field+".cwd: must be set")
	} else if !filepath.IsAbs(p.Cwd) {
		errs = append(errs, fmt.Sprintf("%s.cwd: %q is not an absolute path", field, p.Cwd))
	}
	// libcontainer would refuse these inside the container's init, after
	// the cgroup and namespaces exist: refuse them first, naming the entry.
	for i, kv := range p.Env {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			errs = append(errs, fmt.Sprintf("%s.env[%d]: %q is not NAME=value", field, i, clip(kv)))
		case name == "":
			errs = append(errs, fmt.Sprintf("%s.env[%d]: %q has an empty name", field, i, clip(kv)))
		case strings.IndexByte(kv, 0) >= 0:
			errs = append(errs, fmt.Sprintf("%s.env[%d]: the variable %q contains a NUL byte", field, i, clip(name)))
		}
	}
	errs = append(errs, execveLimits(field, p, stack)...)
	for i, rl := range p.Rlimits {
		if _, ok := rlimitTypes[rl.Type]; !ok {
			errs = append(errs, fmt.Sprintf("%s.rlimits[%d].type: unknown rlimit %q", field, i, rl.Type))
		}
	}
	return errs
}

// execve's own limits (fs/exec.c): no argument or variable longer than
// MAX_ARG_STRLEN (32 pages, its NUL included), and the strings with their
// pointers within a quarter of the stack limit the process starts with,
// never more than 6 MiB (_STK_LIM / 4 * 3) and never less than 128 KiB.
// Past them the process cannot start: libcontainer would fail with E2BIG
// inside the init, after the cgroup and namespaces exist.
const (
	maxArgStrlen = 32 * 4096
	maxArgBytes  = 6 << 20
	minArgBytes  = 32 * 4096
)

// execveLimits: own is maka's own soft stack limit (libmaka.HostFacts).
func execveLimits(field string, p *specs.Process, own uint64) []string {
	var errs []string
	stack, from := own, "maka's own, which the process inherits"
	for _, rl := range p.Rlimits {
		if rl.Type == "RLIMIT_STACK" {
			stack, from = rl.Soft, "process.rlimits"
		}
	}
	limit := uint64(maxArgBytes)
	if stack/4 < limit {
		limit = max(stack/4, minArgBytes)
	}
	total := uint64(8 * (max(len(p.Args), 1) + len(p.Env)))
	for i, a := range p.Args {
		total += uint64(len(a) + 1)
		if len(a)+1 > maxArgStrlen {
			errs = append(errs, fmt.Sprintf("%s.args[%d]: %d bytes; execve takes at most %d per argument", field, i, len(a), maxArgStrlen-1))
		}
	}
	for i, kv := range p.Env {
		total += uint64(len(kv) + 1)
		if len(kv)+1 > maxArgStrlen {
			name, _, _ := strings.Cut(kv, "=")
			errs = append(errs, fmt.Sprintf("%s.env[%d]: the variable %q is %d bytes; execve takes at most %d per variable", field, i, clip(name), len(kv), maxArgStrlen-1))
		}
	}
	if total > limit {
		errs = append(errs, fmt.Sprintf("%s.args: the arguments and environment take %d bytes; execve takes at most %d with a stack limit of %d (%s)", field, total, limit, stack, from))
	}
	return errs
}

// clip shortens a value config.json chose before an error quotes it.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Options are the runtime's choices that config.json does not make.
type Options struct {
	ID           string
	NoPivotRoot  bool
	NoNewKeyring bool
	// Rootless: maka runs as an ordinary user (libcontainer then maps
	// ids through newuidmap/newgidmap). Only the device cgroup may fail
	// (its BPF program needs CAP_SYS_ADMIN; the sandbox has only device
	// nodes bound from the host, with the host's permissions): every
	// other cgroup write fails the create, so limits hold.
	Rootless bool
	// Staged are the mounts staged from the checked descriptors of the
	// root, the bind sources and the namespace paths (nil: the Boundary's
	// paths, as checked; rootless).
	Staged *libmaka.Staged
}

// Converted is a container configuration ready for libcontainer, plus the
// hooks maka runs itself.
type Converted struct {
	Config    *configs.Config
	Poststart []specs.Hook
	Poststop  []specs.Hook
}

// ToLibcontainer builds libcontainer's configuration from the Boundary
// alone: the OCI document handed to runc's converter is made here, field
// by field, from what the Boundary holds, so nothing config.json said
// reaches the kernel unless it was checked into the Boundary. Paths are
// absolute: the result does not depend on the working directory. host
// gives the soft stack limit the init inherits from this process (the
// document is validated again: execve's limits).
func ToLibcontainer(host libmaka.Host, b *libmaka.Boundary, opts Options) (*Converted, error) {
	if b.Users.Source == libmaka.IDsFromPool && (len(b.UIDMappings) == 0 || len(b.GIDMappings) == 0) {
		return nil, errors.New("the sandbox's user namespace has no ids yet: they are leased from the pool at create (libmaka.Op.LeaseIDs)")
	}
	if b.Rootfs.Scaffolded() && b.Rootfs.Scaffold == "" && !b.Rootfs.Overlay {
		return nil, errors.New("the sandbox's root has no scaffold yet: it is built at create (libmaka.Op.BuildRoot)")
	}
	spec, err := specOf(b, opts.Staged, host.Facts().StackLimit, func() []string { return hostSysMasks(host) })
	if err != nil {
		return nil, err
	}
	dropLabels(host, spec)
	cfg, err := rspecconv.CreateLibcontainerConfig(&rspecconv.CreateOpts{
		CgroupName:      opts.ID,
		NoPivotRoot:     opts.NoPivotRoot,
		NoNewKeyring:    opts.NoNewKeyring,
		RootlessEUID:    opts.Rootless,
		RootlessCgroups: opts.Rootless,
		Spec:            spec,
	})
	if err != nil {
		return nil, fmt.Errorf("invalid config.json: %w", err)
	}
	if cfg.Seccomp != nil {
		cfg.Seccomp.Architectures = kernelArchs(cfg.Seccomp.Architectures)
	}
	out := &Converted{Config: cfg}
	if h := spec.Hooks; h != nil {
		// libcontainer v1.5.3 runs poststart hooks at create (the spec
		// says after start), stops at the first failing poststop hook and
		// fails the delete (the spec says warn and go on), and passes
		// prestart hooks "creating" (the spec's step 3 comes after the
		// environment is created): maka runs these itself.
		out.Poststart, out.Poststop = h.Poststart, h.Poststop
		delete(cfg.Hooks, configs.Poststart)
		delete(cfg.Hooks, configs.Poststop)
		if len(h.Prestart) > 0 {
			delete(cfg.Hooks, configs.Prestart)
			cfg.Hooks[configs.CreateRuntime] = append(configs.HookList{libmaka.PrestartAsCreated(h.Prestart)}, cfg.Hooks[configs.CreateRuntime]...)
		}
	}
	return out, nil
}

// hostSysfs: with the host's network (no network namespace of the
// sandbox's own, a hostNetwork pod's shape) and a user namespace, the
// kernel refuses the sandbox a sysfs of its own (a user namespace may
// mount sysfs only with a network namespace it owns). Its /sys is then the
// host's, bound recursively read-only (rro) with nosuid, noexec and nodev,
// as runc gives a rootless container without a network namespace, and
// private (rprivate: nothing the host mounts below /sys later reaches it).
// A recursive bind carries the host's mounts below /sys (the cgroup
// hierarchy, securityfs, bpffs, tracefs, ...): the sandbox's own cgroup
// filesystem is mounted over /sys/fs/cgroup after it (added if config.json
// has none: the sandbox always has a cgroup namespace), and every other
// one is masked (ToLibcontainer adds them to the masked paths). The source
// is the host's /sys by name: a kernel mount in maka's own mount
// namespace, which only host root could change. It reports whether it
// made the bind.
func hostSysfs(b *libmaka.Boundary, mounts []specs.Mount) ([]specs.Mount, bool) {
	own := ownNamespaces(b)
	if own["network"] || !own["user"] {
		return mounts, false
	}
	sys := slices.IndexFunc(mounts, func(m specs.Mount) bool {
		return m.Type == "sysfs" && filepath.Clean(m.Destination) == "/sys"
	})
	if sys < 0 {
		return mounts, false
	}
	mounts[sys] = specs.Mount{Destination: "/sys", Type: "bind", Source: "/sys",
		Options: []string{"rbind", "nosuid", "noexec", "nodev", "rro", "rprivate"}}
	cgroupMount := specs.Mount{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
		Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}}
	if cg := slices.IndexFunc(mounts, func(m specs.Mount) bool {
		return (m.Type == "cgroup" || m.Type == "cgroup2") && filepath.Clean(m.Destination) == "/sys/fs/cgroup"
	}); cg >= 0 {
		cgroupMount = mounts[cg]
		mounts = slices.Delete(mounts, cg, cg+1)
		if cg < sys {
			sys--
		}
	}
	return slices.Insert(mounts, sys+1, cgroupMount), true
}

// HostSysfs reports whether b's sandbox gets the host's /sys (hostSysfs):
// `maka boundary` says so.
func HostSysfs(b *libmaka.Boundary) bool {
	_, bound := hostSysfs(b, slices.Clone(b.Mounts))
	return bound
}

// ownNamespaces are the types of b's namespaces (its own or joined by
// path): a type missing is the host's.
func ownNamespaces(b *libmaka.Boundary) map[string]bool {
	own := map[string]bool{}
	for _, n := range b.Namespaces {
		own[n.Type] = true
	}
	return own
}

// hostSysMasks are the host's mounts below /sys that a sandbox bound to
// the host's /sys (hostSysfs) must not see: every one but the cgroup
// hierarchy, over which the sandbox's own is mounted.
func hostSysMasks(host libmaka.Host) []string {
	return slices.DeleteFunc(host.SysSubmounts(), func(p string) bool {
		return p == "/sys/fs/cgroup" || strings.HasPrefix(p, "/sys/fs/cgroup/")
	})
}

// SpecOf is the OCI document a Boundary stands for: what runc's converter
// reads. Only the Boundary's fields are read; host gives the soft stack
// limit it is validated with (execve's limits).
func SpecOf(host libmaka.Host, b *libmaka.Boundary) (*specs.Spec, error) {
	return specOf(b, nil, host.Facts().StackLimit, func() []string { return hostSysMasks(host) })
}

// specOf is SpecOf with the staged paths (libmaka.Op.StageBoundary) in
// place of the root, the bind sources and the namespace paths, when
// staged is set: libcontainer never sees a host path by the name someone
// else could swap. stack is maka's own soft stack limit.
func specOf(b *libmaka.Boundary, staged *libmaka.Staged, stack uint64, sysMasks func() []string) (*specs.Spec, error) {
	if !filepath.IsAbs(b.Rootfs.Path) {
		return nil, fmt.Errorf("root.path %q: the boundary's root must be an absolute path", b.Rootfs.Path)
	}
	if b.Cgroup.Path == "" {
		return nil, errors.New("the boundary has no cgroup path")
	}
	// An assembled root: the scaffold stands for the root, the root's
	// entries bound into it before any other mount.
	root, mounts := b.Rootfs.Path, slices.Clone(b.Mounts)
	if staged != nil {
		root = staged.Root
		for i, src := range staged.Mounts {
			if i < len(mounts) {
				mounts[i].Source = src
			}
		}
	}
	if b.Rootfs.Scaffold != "" {
		root = b.Rootfs.Scaffold
		if staged != nil && staged.Scaffold != "" {
			root = staged.Scaffold
		}
		mounts = append(slices.Clone(b.Rootfs.Binds), mounts...)
	}
	mounts, hostSys := hostSysfs(b, mounts)
	spec := &specs.Spec{
		Version: specs.Version,
		// A writable view: the overlay is writable, the root under it
		// read-only (its lower layer).
		Root:        &specs.Root{Path: root, Readonly: b.Rootfs.Readonly && !b.Rootfs.WritableView},
		Process:     ProcessOf(b),
		Hostname:    b.Hostname,
		Domainname:  b.Domainname,
		Mounts:      mounts,
		Hooks:       b.Hooks,
		Annotations: b.Annotations,
		Linux: &specs.Linux{
			UIDMappings:       b.UIDMappings,
			GIDMappings:       b.GIDMappings,
			Sysctl:            b.Sysctl,
			TimeOffsets:       b.TimeOffsets,
			Resources:         resourcesOf(b),
			CgroupsPath:       b.Cgroup.Path,
			Devices:           b.Devices,
			Seccomp:           seccompOf(b),
			RootfsPropagation: b.RootfsPropagation,
			MaskedPaths:       b.MaskedPaths,
			ReadonlyPaths:     b.ReadonlyPaths,
			MountLabel:        b.MountLabel,
		},
	}
	if hostSys {
		spec.Linux.MaskedPaths = union(b.MaskedPaths, sysMasks())
	}
	if staged != nil && staged.UserNS {
		// Joined by path: runc reads the mappings back from it.
		spec.Linux.UIDMappings, spec.Linux.GIDMappings = nil, nil
	}
	for i, n := range b.Namespaces {
		path := n.Path
		if p, ok := staged.NamespacePath(i); ok {
			path = p
		}
		spec.Linux.Namespaces = append(spec.Linux.Namespaces, specs.LinuxNamespace{Type: specs.LinuxNamespaceType(n.Type), Path: path})
	}
	if err := validate(spec, stack); err != nil {
		return nil, err
	}
	return spec, nil
}

// dropLabels leaves out the SELinux labels on a host without SELinux, as
// crun does: there they confine nothing (the contract keeps them, `maka
// boundary` shows them), and libcontainer would still add context= to
// every mount, which the kernel refuses (runtime-tools' linux_mount_label),
// and write the process label where no SELinux reads it.
func dropLabels(host libmaka.Host, spec *specs.Spec) {
	if spec.Linux.MountLabel == "" && (spec.Process == nil || spec.Process.SelinuxLabel == "") {
		return
	}
	if host.SELinux() {
		return
	}
	spec.Linux.MountLabel = ""
	if spec.Process != nil {
		spec.Process.SelinuxLabel = ""
	}
}

// ProcessOf is the init's process as the Boundary holds it.
func ProcessOf(b *libmaka.Boundary) *specs.Process {
	p := &b.Process
	return &specs.Process{
		Terminal:    p.Terminal,
		ConsoleSize: p.ConsoleSize,
		User: specs.User{
			UID: p.UID, GID: p.GID, Umask: p.Umask, AdditionalGids: p.AdditionalGids,
		},
		Args:            p.Args,
		Env:             p.Env,
		Cwd:             p.Cwd,
		Capabilities:    p.CapabilitySets,
		Rlimits:         p.Rlimits,
		NoNewPrivileges: p.NoNewPrivileges,
		ApparmorProfile: p.ApparmorProfile,
		OOMScoreAdj:     p.OOMScoreAdj,
		Scheduler:       p.Scheduler,
		SelinuxLabel:    p.SelinuxLabel,
		IOPriority:      p.IOPriority,
		ExecCPUAffinity: p.ExecCPUAffinity,
	}
}

// resourcesOf is what is written to the cgroup: the limits from
// b.Limits alone, the rest from b.Cgroup; no unified key but memory.high,
// memory.min, memory.oom.group and cpu.weight.
func resourcesOf(b *libmaka.Boundary) *specs.LinuxResources {
	l, c := b.Limits, b.Cgroup
	r := &specs.LinuxResources{
		Devices:        c.Devices,
		Memory:         &specs.LinuxMemory{Reservation: c.MemoryReservation},
		CPU:            &specs.LinuxCPU{Shares: c.CPUShares, Burst: c.CPUBurst, Cpus: c.Cpus, Mems: c.Mems, Idle: c.CPUIdle},
		Pids:           &specs.LinuxPids{},
		BlockIO:        c.BlockIO,
		HugepageLimits: c.HugepageLimits,
		Rdma:           c.Rdma,
	}
	if l.Memory > 0 {
		mem, swap := l.Memory, int64(-1)
		if l.Swap >= 0 {
			// OCI's swap is memory+swap: memory.swap.max is written as
			// the contract shows it (0 under restricted).
			swap = l.Memory + l.Swap
		}
		r.Memory.Limit, r.Memory.Swap = &mem, &swap
	}
	// The cgroup files the contract keeps by name (cgroups.Resources has
	// no field for them); cpu.weight comes with no shares beside it.
	unified := map[string]string{}
	if c.MemoryHigh != nil {
		unified["memory.high"] = "max"
		if *c.MemoryHigh >= 0 {
			unified["memory.high"] = strconv.FormatInt(*c.MemoryHigh, 10)
		}
	}
	if c.MemoryMin != nil {
		unified["memory.min"] = strconv.FormatInt(*c.MemoryMin, 10)
	}
	if c.MemoryOOMGroup != nil {
		unified["memory.oom.group"] = "0"
		if *c.MemoryOOMGroup {
			unified["memory.oom.group"] = "1"
		}
	}
	if c.CPUWeight != nil {
		unified["cpu.weight"] = strconv.FormatUint(*c.CPUWeight, 10)
		r.CPU.Shares = nil
	}
	if len(unified) > 0 {
		r.Unified = unified
	}
	if l.Pids > 0 {
		pids := l.Pids
		r.Pids.Limit = &pids
	}
	if c.CPUPeriod > 0 {
		period := c.CPUPeriod
		r.CPU.Period = &period
		if l.Cpus > 0 {
			quota := int64(math.Round(l.Cpus * float64(period)))
			r.CPU.Quota = &quota
		}
	}
	return r
}
