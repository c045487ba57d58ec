package main

import (
	"fmt"

	"github.com/opencontainers/runc/libcontainer/capabilities"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
	runcfeatures "github.com/opencontainers/runc/types/features"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/opencontainers/runtime-spec/specs-go/features"
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

func supportedFeatures() *features.Features {
	t, f := true, false
	feat := &features.Features{
		OCIVersionMin: "1.0.0",
		OCIVersionMax: specs.Version,
		Hooks:         configs.KnownHookNames(),
		MountOptions:  rspecconv.KnownMountOptions(),
		Annotations: map[string]string{
			annotationVersion: version,
			annotationCommit:  gitCommit,
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
			Apparmor:        &features.Apparmor{Enabled: &t},
			Selinux:         &features.Selinux{Enabled: &t},
			IntelRdt:        &features.IntelRdt{Enabled: &t, Schemata: &t, Monitoring: &t},
			MemoryPolicy:    &features.MemoryPolicy{Modes: rspecconv.KnownMemoryPolicyModes(), Flags: rspecconv.KnownMemoryPolicyFlags()},
			MountExtensions: &features.MountExtensions{IDMap: &features.IDMap{Enabled: &t}},
			NetDevices:      &features.NetDevices{Enabled: &t},
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
