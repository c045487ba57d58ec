package main

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/apparmor"
	"github.com/opencontainers/runc/libcontainer/capabilities"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
	runcfeatures "github.com/opencontainers/runc/types/features"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/runtime-spec/specs-go/features"
	"github.com/opencontainers/selinux/go-selinux"
	"github.com/urfave/cli/v2"
)

// Annotation keys maka reports in `maka features`.
const (
	annotationVersion = "org.maka.version"
	annotationCommit  = "org.maka.commit"
)

var featuresCommand = &cli.Command{
	Name:  "features",
	Usage: "print what this build of maka supports, as runtime-spec's features document (JSON)",
	Description: `EXAMPLE:
       # maka features | jq .linux.cgroup`,
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		return printJSON(supportedFeatures())
	},
}

func ptr[T any](v T) *T { return &v }

// hostHas reports whether the host check named name holds.
func hostHas(name string) bool {
	for _, h := range hostChecks() {
		if h.Name == name {
			return h.OK
		}
	}
	return false
}

func supportedFeatures() *features.Features {
	t, f := true, false
	feat := &features.Features{
		OCIVersionMin: "1.0.0",
		OCIVersionMax: specs.Version,
		Hooks:         configs.KnownHookNames(),
		MountOptions:  rspecconv.KnownMountOptions(),
		Annotations: map[string]string{
			annotationVersion: version,
			annotationCommit:  commitOf(),
			// Clients that know runc's key learn that checkpoint is absent.
			runcfeatures.AnnotationRuncCheckpointEnabled: "false",
		},
		Linux: &features.Linux{
			Namespaces:   rspecconv.KnownNamespaces(),
			Capabilities: capabilities.KnownCapabilities(),
			Cgroup: &features.Cgroup{
				V1:          &f, // refused: maka is cgroup v2 only
				V2:          &t,
				Systemd:     &f, // --systemd-cgroup is not supported
				SystemdUser: &f,
				Rdma:        &t,
			},
			// Only what this build and host enforce: the labels where the
			// host has the LSM; linux.intelRdt, linux.netDevices and
			// linux.memoryPolicy are refused (docs/contract.md).
			Apparmor:        &features.Apparmor{Enabled: ptr(apparmor.IsEnabled())},
			Selinux:         &features.Selinux{Enabled: ptr(selinux.GetEnabled())},
			IntelRdt:        &features.IntelRdt{Enabled: &f},
			MountExtensions: &features.MountExtensions{IDMap: &features.IDMap{Enabled: ptr(hostHas("idmapped mounts"))}},
			NetDevices:      &features.NetDevices{Enabled: &f},
		},
	}
	if seccomp.Enabled {
		feat.Linux.Seccomp = &features.Seccomp{
			Enabled:        &t,
			Actions:        seccomp.KnownActions(),
			Operators:      seccomp.KnownOperators(),
			Archs:          seccomp.KnownArchs(),
			KnownFlags:     seccomp.KnownFlags(),
			SupportedFlags: seccomp.SupportedFlags(),
		}
		major, minor, patch := seccomp.Version()
		feat.Annotations[runcfeatures.AnnotationLibseccompVersion] = fmt.Sprintf("%d.%d.%d", major, minor, patch)
	} else {
		feat.Linux.Seccomp = &features.Seccomp{Enabled: &f}
	}
	return feat
}
