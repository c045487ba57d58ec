package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// Compile turns config.json (spec, from the bundle dir) into the boundary
// contract of container id, checked against policy, and returns it with
// the effective policy (the one exec is held to). It touches nothing on the
// host but reads of the root filesystem: a rejected bundle leaves nothing
// behind. never are maka's own state directories (NeverPaths), which no
// sandbox may see; checks are the host's (libmaka.CheckHostSupport).
func Compile(spec *specs.Spec, policy *libmaka.Policy, id, dir string, never []string, checks []libmaka.HostCheck) (*libmaka.Boundary, *libmaka.Policy, error) {
	b, err := specconv.ToBoundary(libmaka.ThisHost(), spec, policy)
	if err != nil {
		return nil, nil, err
	}
	// The boundary was checked against the effective policy; exec keeps it.
	if policy, err = specconv.EffectivePolicy(spec, policy); err != nil {
		return nil, nil, err
	}
	if err := specconv.CheckHost(libmaka.ThisHost(), b, policy, dir, never); err != nil {
		return nil, nil, err
	}
	if err := specconv.Place(b, policy, id); err != nil {
		return nil, nil, err
	}
	if err := PlanRoot(b, policy); err != nil {
		return nil, nil, err
	}
	DeclareHome(b)
	// A sandbox with a user namespace on a host without them: the same
	// line as maka check's.
	if err := libmaka.HostUnfit(checks, b.Users.Namespace); err != nil {
		return nil, nil, err
	}
	return b, policy, nil
}

// PlanRoot decides how the read-only root is shown to the sandbox: the
// mount points it lacks (maka provides them in a scaffold, so standard
// images run as they are and the root is never written), and whether it is
// idmapped (with a user namespace, where the kernel and the root's
// filesystem allow it: the host root's files then show as the sandbox's
// root's). A writable root (allowed by the policy, e.g. the per-container
// overlay Podman and containerd hand over) is the container's own to
// write: libcontainer creates missing mount points in it, as runc does.
func PlanRoot(b *libmaka.Boundary, policy *libmaka.Policy) error {
	if !b.Rootfs.Readonly {
		return nil
	}
	dests, fields, files := mountpointsInRoot(b)
	dirs, regular, err := libmaka.MissingMountpoints(b.Rootfs.Path, dests, fields, files)
	if err != nil {
		return err
	}
	b.Rootfs.Missing, b.Rootfs.MissingFiles = dirs, regular
	// A tmpfs whose mount point the root lacks gets tmpfs's own default
	// mode, as under runc (1777: a sandbox user other than root can
	// write there), not the 0755 of the directory maka makes for it,
	// which libcontainer would copy.
	for i := range b.Mounts {
		m := &b.Mounts[i]
		d := strings.TrimLeft(filepath.Clean("/"+m.Destination), "/")
		if m.Type == "tmpfs" && slices.Contains(dirs, d) && !slices.ContainsFunc(m.Options, func(o string) bool { return strings.HasPrefix(o, "mode=") }) {
			m.Options = append(m.Options, "mode=1777")
		}
	}
	if b.Users.Namespace && policy.Rootless == nil {
		b.Rootfs.IDMapped, _ = libmaka.IDMapSupport(b.Rootfs.Path)
	}
	if b.Rootfs.WritableView && b.Users.Namespace && (!b.Rootfs.IDMapped || !libmaka.OverlayRootSupported()) {
		return fmt.Errorf("root.readonly: false asks for a writable view of the read-only root %s: maka builds one on an idmapped root (a user namespace of maka's own, a filesystem the kernel can idmap) on amd64 with Linux 6.6 or later; set root.readonly to true", b.Rootfs.Path)
	}
	return nil
}

// NeverPaths are maka's own state directories, as given and resolved.
func NeverPaths(dirs ...string) []string {
	var never []string
	for _, d := range dirs {
		if p, err := filepath.Abs(d); err == nil {
			never = append(never, p)
			if r, err := filepath.EvalSymlinks(p); err == nil {
				never = append(never, r)
			}
		}
	}
	return never
}

// filesystemMounts provide their own directories: a destination below one
// of them is created there, not in the root.
var filesystemMounts = []string{"tmpfs", "proc", "sysfs", "devpts", "mqueue", "cgroup", "cgroup2"}

// mountpointsInRoot lists the paths that must already exist in the root
// filesystem: mount destinations and the process's cwd, except those below
// an earlier mount that provides them.
func mountpointsInRoot(b *libmaka.Boundary) (dests, fields []string, files []bool) {
	var provided []string
	below := func(p string) bool {
		for _, d := range provided {
			if d == "/" || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
				return true
			}
		}
		return false
	}
	for i, m := range b.Mounts {
		d := filepath.Clean("/" + m.Destination)
		if !below(d) {
			dests = append(dests, d)
			fields = append(fields, fmt.Sprintf("mounts[%d].destination", i))
			// A bind of a file is mounted on a file (as runc makes it).
			fi, err := os.Stat(m.Source)
			files = append(files, specconv.IsBind(&m) && err == nil && !fi.IsDir())
		}
		if slices.Contains(filesystemMounts, m.Type) {
			provided = append(provided, d)
		}
	}
	if cwd := filepath.Clean("/" + b.Process.Cwd); !below(cwd) {
		dests = append(dests, cwd)
		fields = append(fields, "process.cwd")
		files = append(files, false)
	}
	return dests, fields, files
}

// Recompile checks a recorded boundary against today's policy (recover
// --relaunch): the document it stands for (specconv.SpecOf), without what
// create placed (leased ids, the scaffold, maka's own cgroup path, the
// HOME it added, which today's policy places again), compiled as
// config.json would be. A boundary today's policy refuses is refused
// (*specconv.RejectedError); an allowed one gets today's defaults
// (onViolation, the timeout, limits).
func Recompile(b *libmaka.Boundary, was, policy *libmaka.Policy, id, dir string, never []string, checks []libmaka.HostCheck) (*libmaka.Boundary, *libmaka.Policy, error) {
	c, err := libmaka.CopyBoundary(b)
	if err != nil {
		return nil, nil, err
	}
	if c.Users.Source == libmaka.IDsFromPool {
		c.UIDMappings, c.GIDMappings = nil, nil
	}
	c.Rootfs.Scaffold, c.Rootfs.Binds = "", nil
	c.Rootfs.Missing, c.Rootfs.MissingFiles, c.Rootfs.IDMapped = nil, nil, false
	if c.Process.HomeAdded {
		// maka's, not config.json's: added again by Compile.
		c.Process.Env = slices.DeleteFunc(c.Process.Env, func(kv string) bool { return strings.HasPrefix(kv, "HOME=") })
		c.Process.HomeAdded = false
	}
	own := was != nil && c.Cgroup.Path == was.OwnParent()+"/"+id
	spec, err := specconv.SpecOf(libmaka.ThisHost(), c)
	if err != nil {
		return nil, nil, err
	}
	if own {
		spec.Linux.CgroupsPath = ""
	}
	if c.Syscalls.Profile == "default" {
		// maka's own profile, not config.json's: today's maka's.
		spec.Linux.Seccomp = nil
	}
	return Compile(spec, policy, id, dir, never, checks)
}
