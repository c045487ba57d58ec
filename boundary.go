package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

var boundaryCommand = &cli.Command{
	Name:  "boundary",
	Usage: "print the boundary contract a bundle compiles to, and the policy's verdict (creates nothing)",
	Description: `The contract is what the sandbox may read and write, its network, limits,
process and namespaces, after the policy's defaults are applied. The verdict
lists every item of config.json the policy refuses, with its field.

EXIT STATUS:
       0  the policy allows the bundle
       1  the policy refuses it (the verdict lists why)
       2  no verdict: the input is unusable (a missing bundle, a config.json that
          cannot be read or is not valid, a bad --format or policy file, too many
          arguments)

EXAMPLE:
       # maka boundary --bundle /containers/box
       # maka --policy baseline.json boundary --format json | jq .verdict`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "bundle", Aliases: []string{"b"}, Usage: "path to the bundle directory (default: the current directory)"},
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table, json, or oci (the OCI document built from the contract: what libcontainer is handed)"},
	},
	Action: func(c *cli.Context) error {
		allowed, err := boundaryVerdict(c)
		switch {
		case err != nil:
			// A refusal printed as an error (--format oci) is still a verdict.
			var rejected *specconv.RejectedError
			if errors.As(err, &rejected) {
				return &exitCodeError{code: 1, err: err}
			}
			return &exitCodeError{code: 2, err: err}
		case !allowed:
			// The verdict is printed: only the status is left to give.
			return &exitCodeError{code: 1}
		}
		return nil
	},
}

// boundaryVerdict prints the contract and the verdict of `maka boundary`,
// and says whether the policy allows the bundle. An error means there is
// no verdict to print (or, for --format oci, a refusal).
func boundaryVerdict(c *cli.Context) (bool, error) {
	if err := checkArgs(c, 0, exactArgs); err != nil {
		return false, err
	}
	format := c.String("format")
	if format != "table" && format != "json" && format != "oci" {
		return false, fmt.Errorf("--format: invalid value %q (want table, json or oci)", format)
	}
	policy, err := loadPolicy(c)
	if err != nil {
		return false, err
	}
	bundle := c.String("bundle")
	if bundle == "" {
		bundle = "."
	}
	spec, err := specconv.LoadSpec(bundle)
	if err != nil {
		return false, err
	}
	b, verdict, err := specconv.Explain(libmaka.ThisHost(), spec, policy)
	if err != nil {
		return false, err
	}
	if verdict.Allowed {
		// What create checks on the host too (the root and bind
		// sources resolved, maka's own state, the host's namespaces).
		dir, err := filepath.Abs(bundle)
		if err != nil {
			return false, err
		}
		eff, err := specconv.EffectivePolicy(spec, policy)
		if err != nil {
			return false, err
		}
		var rejected *specconv.RejectedError
		if err := specconv.CheckHost(libmaka.ThisHost(), b, eff, dir, launch.NeverPaths(c.String("root"), c.String("state-dir"))); errors.As(err, &rejected) {
			verdict = rejected.Verdict
		} else if err != nil {
			return false, err
		} else if err := launch.PlanRoot(b, eff); err != nil {
			return false, err
		} else {
			launch.DeclareHome(b)
		}
	}
	// The verdict is the policy's; a host that could not run it anyway is
	// said on stderr (stdout stays the document).
	if err := libmaka.HostUnfit(hostChecks(), b.Users.Namespace); err != nil {
		fmt.Fprintf(os.Stderr, "warning: %v\n", err)
	}
	if format == "oci" {
		if !verdict.Allowed {
			return false, &specconv.RejectedError{Verdict: verdict}
		}
		return true, printOCI(c, b)
	}
	if format == "json" {
		err = printJSON(struct {
			*libmaka.Boundary
			Verdict specconv.Verdict `json:"verdict"`
		}{b, verdict})
	} else {
		err = printBoundaryTable(b, verdict)
	}
	if err != nil {
		return false, err
	}
	return verdict.Allowed, nil
}

// printOCI prints the OCI document maka builds from the contract alone
// (specconv.SpecOf): give it to runc or crun to run what maka runs. The
// cgroup is config.json's own cgroupsPath, if any (maka's /maka/<id>
// needs an id). A user namespace whose ids maka leases at create shows the
// pool's first free block now, leased by nobody (create leases its own).
func printOCI(c *cli.Context, b *libmaka.Boundary) error {
	if b.Users.Source == libmaka.IDsFromPool {
		rt, err := runtimeOf(c)
		if err != nil {
			return err
		}
		start, err := libmaka.FirstFreeBlock(rt.StateDir, *b.Users.Pool)
		if err != nil {
			return err
		}
		m := []specs.LinuxIDMapping{{ContainerID: 0, HostID: start, Size: b.Users.Pool.Size}}
		b.UIDMappings, b.GIDMappings = m, m
		logrus.Infof("uid and gid mappings: the pool's first free block now (%d); create leases its own", start)
	}
	requested := b.Cgroup.Path
	if requested == "" {
		b.Cgroup.Path = libmaka.OwnCgroupParent + "/id"
	}
	spec, err := specconv.SpecOf(libmaka.ThisHost(), b)
	if err != nil {
		return err
	}
	spec.Linux.CgroupsPath = requested
	return printJSON(spec)
}

// loadPolicy reads --policy, or /etc/maka/policy.json, or the restricted default.
// As an ordinary user, the policy is applied to the user's own share of
// the host (Policy.ForRootless).
func loadPolicy(c *cli.Context) (*libmaka.Policy, error) {
	p, err := libmaka.LoadPolicy(c.String("policy"))
	if err != nil {
		return nil, err
	}
	r, _, err := rootlessOf(c)
	if err != nil {
		return nil, err
	}
	if r != nil {
		p = p.ForRootless(r)
	}
	return p, nil
}

// namespacesString is the sandbox's namespaces, and the host's it shares
// where the contract allows one (uts, with the host's network: the
// network row says that one).
func namespacesString(b *libmaka.Boundary) string {
	var ns []string
	uts := false
	for _, n := range b.Namespaces {
		s := n.Type
		if n.Path != "" {
			s += "=" + n.Path
		}
		if n.Type == "time" && len(b.TimeOffsets) > 0 {
			s += " (" + timeOffsetsString(b.TimeOffsets) + ")"
		}
		uts = uts || n.Type == "uts"
		ns = append(ns, s)
	}
	if !uts {
		ns = append(ns, "(uts: the host's, its name read-only)")
	}
	return strings.Join(ns, " ")
}

func printBoundaryTable(b *libmaka.Boundary, v specconv.Verdict) error {
	w := newTable(0, 2)
	w.hang = 2
	row := func(k, format string, args ...any) { w.row(k, fmt.Sprintf(format, args...)) }
	row("profile", "%s", b.Profile)
	ro := "read-only"
	switch {
	case !b.Rootfs.Readonly:
		ro = "WRITABLE"
	case b.Rootfs.WritableView && b.Limits.TmpfsSize > 0:
		ro = fmt.Sprintf("read-only, seen writable: writes land in a tmpfs of %s, gone with the sandbox", libmaka.FormatSize(b.Limits.TmpfsSize))
	case b.Rootfs.WritableView:
		ro = "read-only, seen writable: writes land in a tmpfs of the sandbox's, gone with it"
	}
	// (how the root is shown is decided only for a sandbox maka would run)
	switch {
	case b.Rootfs.IDMapped:
		ro += ", idmapped: its root's files are the sandbox's root's"
	case b.Users.Namespace && b.Rootfs.Readonly && v.Allowed:
		ro += ", not idmapped: its root's files show as nobody"
	}
	row("rootfs", "%s (%s)", b.Rootfs.Path, ro)
	if missing := append(slices.Clone(b.Rootfs.Missing), b.Rootfs.MissingFiles...); len(missing) > 0 {
		row("mount points", "/%s (missing in the root: made by maka, outside it)", strings.Join(missing, " /"))
	}
	for _, m := range b.ReadOnly {
		row("read-only", "%s <- %s", m.Destination, m.Source)
	}
	for _, m := range b.Writable {
		if m.Kind == "tmpfs" {
			row("writable", "%s (tmpfs, %s)", m.Path, libmaka.FormatSize(m.Size))
		} else {
			row("writable", "%s <- %s (bind)", m.Path, m.Source)
		}
	}
	net := b.Network.Mode
	if b.Network.Path != "" {
		net += " " + b.Network.Path
	}
	if b.Network.Mode == libmaka.NetworkEgress {
		net += " via " + b.Network.Proxy + ": " + strings.Join(b.Network.Egress, " ")
	}
	row("network", "%s", net)
	if specconv.HostSysfs(b) {
		// A user namespace without a network namespace of its own may
		// not mount a sysfs: the one place the host's is shown.
		row("read-only", "/sys <- the host's /sys (no network namespace of its own under a user namespace: recursive, read-only, private; its own cgroup filesystem over /sys/fs/cgroup; the host's other mounts below /sys masked)")
	}
	// "unlimited" where there is no limit, never a bare 0.
	row("limits", "%s", b.Limits)
	cg := b.Cgroup.Path
	if cg == "" {
		cg = libmaka.OwnCgroupParent + "/<id>"
	}
	row("cgroup", "%s", cg)
	if set := cgroupSettings(b.Cgroup); set != "" {
		row("cgroup also", "%s", set)
	}
	row("process", "%s (cwd %s, uid %d, gid %d)", strings.Join(b.Process.Args, " "), b.Process.Cwd, b.Process.UID, b.Process.GID)
	caps := strings.Join(b.Process.Capabilities, " ")
	if caps == "" {
		caps = "none"
	}
	row("capabilities", "%s; no_new_privs %v", caps, b.Process.NoNewPrivileges)
	env := strings.Join(b.Process.Env, " ")
	if b.Process.HomeAdded {
		env += " (HOME added by maka from the root's /etc/passwd, as runc adds it)"
	}
	row("env", "%s", env)
	row("namespaces", "%s", namespacesString(b))
	row("users", "%s", usersString(b))
	sc := b.Syscalls
	source := map[string]string{"default": "maka's allowlist", "config": "maka's allowlist narrowed by config.json's", "none": "none"}[sc.Profile]
	narrowed := ""
	if sc.Narrowed > 0 {
		narrowed = fmt.Sprintf("; %d of config.json's rules asked for more, not given", sc.Narrowed)
	}
	row("syscalls", "%s: %d allowed, %d watched, %d denied (default %s)%s", source, sc.Allowed, sc.Watched, sc.Denied, sc.DefaultAction, narrowed)
	if errno := specconv.InitGetcwdErrno(b); errno != 0 {
		row("syscalls also", "getcwd through the monitor: the init's own cwd check runs (no_new_privs is off: the filter comes first), then %s as config.json says", unix.ErrnoName(unix.Errno(errno)))
	}
	if v.Allowed {
		row("verdict", "allowed by profile %s", v.Profile)
	} else {
		row("verdict", "REJECTED by profile %s (%d items)", v.Profile, len(v.Items))
		for _, it := range v.Items {
			row("", "%s", it.String())
		}
	}
	return w.write(os.Stdout)
}

// usersString says whose ids the sandbox's processes hold on the host.
func usersString(b *libmaka.Boundary) string {
	u := b.Users
	maps := func(ms []specs.LinuxIDMapping) string {
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%d..%d = host %d..%d", m.ContainerID, uint64(m.ContainerID)+uint64(m.Size)-1, m.HostID, uint64(m.HostID)+uint64(m.Size)-1))
		}
		return strings.Join(out, ", ")
	}
	switch {
	case !u.Namespace:
		return "the host's own (no user namespace: uid 0 is the host's root)"
	case len(b.UIDMappings) > 0 && u.Source == libmaka.IDsFromPool:
		return fmt.Sprintf("user namespace: ids %s (leased from maka's pool)", maps(b.UIDMappings))
	case u.Source == libmaka.IDsOwn:
		return fmt.Sprintf("user namespace: the user's own ids alone: %s (rootless, no /etc/subuid range)", maps(b.UIDMappings))
	case u.Source == libmaka.IDsFromPool:
		p := u.Pool
		return fmt.Sprintf("user namespace: ids 0..%d = a free block of host ids leased at create from the pool %d..%d (%d blocks)", p.Size-1, p.Start, p.End()-1, p.Count)
	}
	return fmt.Sprintf("user namespace: uids %s; gids %s (config.json's)", maps(b.UIDMappings), maps(b.GIDMappings))
}

// cgroupSettings lists what the contract writes to the cgroup besides the
// limits, by the files' names ("" when nothing).
func cgroupSettings(c libmaka.Cgroup) string {
	var set []string
	add := func(format string, args ...any) { set = append(set, fmt.Sprintf(format, args...)) }
	if c.CPUShares != nil {
		add("cpu.weight %d (shares %d)", cgroups.ConvertCPUSharesToCgroupV2Value(*c.CPUShares), *c.CPUShares)
	}
	if c.CPUWeight != nil {
		add("cpu.weight %d", *c.CPUWeight)
	}
	if c.CPUBurst != nil {
		add("cpu.max.burst %d µs", *c.CPUBurst)
	}
	if c.CPUIdle != nil {
		add("cpu.idle %d", *c.CPUIdle)
	}
	if c.Cpus != "" {
		add("cpuset.cpus %s", c.Cpus)
	}
	if c.Mems != "" {
		add("cpuset.mems %s", c.Mems)
	}
	if c.MemoryMin != nil {
		add("memory.min %s", libmaka.FormatSize(*c.MemoryMin))
	}
	if g := c.MemoryOOMGroup; g != nil {
		v := 0
		if *g {
			v = 1
		}
		add("memory.oom.group %d", v)
	}
	if c.MemoryReservation != nil {
		add("memory.low %s", libmaka.FormatSize(*c.MemoryReservation))
	}
	if c.MemoryHigh != nil {
		if *c.MemoryHigh < 0 {
			add("memory.high max")
		} else {
			add("memory.high %s", libmaka.FormatSize(*c.MemoryHigh))
		}
	}
	return strings.Join(set, ", ")
}

// timeOffsetsString shows a time namespace's offsets as given, e.g.
// "boottime +86400s, monotonic -3s +500000000ns".
func timeOffsetsString(offs map[string]specs.LinuxTimeOffset) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(offs)) {
		o := offs[name]
		s := fmt.Sprintf("%s %+ds", name, o.Secs)
		if o.Nanosecs != 0 {
			s += fmt.Sprintf(" %+dns", o.Nanosecs)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}
