package launch

import (
	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// DefaultSpec is the configuration `maka spec` writes (libmaka/sandbox's
// DefaultSpec says what it holds).
func DefaultSpec(rootfs string, args ...string) *specs.Spec {
	spec := rspecconv.Example()
	spec.Hostname = "maka"
	spec.Root.Path = rootfs
	spec.Root.Readonly = true
	spec.Process.Args = args
	spec.Process.Terminal = false
	spec.Process.Capabilities = &specs.LinuxCapabilities{}
	spec.Process.NoNewPrivileges = true
	for _, dst := range []string{"/tmp", "/run", WorkDir} {
		spec.Mounts = append(spec.Mounts, specs.Mount{
			Destination: dst, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"nosuid", "nodev", "mode=1777", "size=128m"},
		})
	}
	return spec
}
