package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/maka-runtime/maka/libmaka/egress"
	"github.com/maka-runtime/maka/libmaka/sandbox"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/urfave/cli/v2"
)

var specCommand = &cli.Command{
	Name:  "spec",
	Usage: "write a new config.json for a bundle",
	Description: `The spec command writes config.json in the bundle directory (default: the
current directory). It refuses to overwrite an existing one. The rootfs is
expected at ./rootfs. A mount point the root lacks (/maka/work in most
images) is made by maka outside the root, which is never written.

The configuration passes the default restricted profile as it is: no
capabilities, a read-only root, /tmp, /run and /maka/work as 128 MiB tmpfs,
a private network namespace with only loopback. With --egress HOST:PORT
(repeatable) it declares egress (the org.maka.egress annotation): the
sandbox reaches those hosts through maka's proxy, and nothing else; the
policy's egress must allow them (see docs/egress.md).

With --tool it writes a tool sandbox: its process is the idle init
(sandbox.IdleArgs, no terminal), which maka replaces with its resident
agent; commands then run with "maka exec ID CMD", started by the agent
inside the sandbox with no process of maka's entering it (see
docs/api.md).

EXAMPLE:
       # mkdir box && cd box && maka spec && mkdir rootfs
       # maka run box1`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "bundle", Aliases: []string{"b"}, Usage: "path to the root of the bundle directory"},
		&cli.BoolFlag{Name: "rootless", Usage: "generate a configuration for a rootless container"},
		&cli.StringSliceFlag{Name: "egress", Usage: "a host:port the sandbox may reach through maka's proxy (repeatable; within the policy's egress)"},
		&cli.BoolFlag{Name: "tool", Usage: "a tool sandbox: an idle init (maka's agent) to run commands in with maka exec"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		spec := sandbox.DefaultSpec("rootfs", "sh")
		spec.Process.Terminal = true // runc's: `maka run ID` gives a shell
		if c.Bool("tool") {
			spec = sandbox.DefaultSpec("rootfs", sandbox.IdleArgs...)
		}
		if c.Bool("rootless") {
			rootlessSpec(spec)
		}
		if entries := c.StringSlice("egress"); len(entries) > 0 {
			// Checked here as the annotation will be: a typo fails now,
			// not at create.
			if _, err := egress.ParseList(entries); err != nil {
				return fmt.Errorf("spec: --egress: %w", err)
			}
			var err error
			if spec, err = specconv.WithEgress(spec, entries); err != nil {
				return err
			}
		}
		path := filepath.Join(c.String("bundle"), "config.json")
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("spec: %s exists; remove it first", path)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("spec: %w", err)
		}
		data, err := json.MarshalIndent(spec, "", "\t")
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o666); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
		return nil
	},
}

// rootlessSpec makes spec one an ordinary user's maka runs as it is: a user
// namespace mapping the caller's own uid and gid, and devpts without
// gid=5 (a group it does not map). Unlike runc's, it keeps the network
// namespace (a closed one needs no privilege) and sysfs: a rootless maka
// refuses a bind of the host's /sys.
func rootlessSpec(spec *specs.Spec) {
	if !slices.ContainsFunc(spec.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace }) {
		spec.Linux.Namespaces = append(spec.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
	}
	spec.Linux.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(os.Geteuid()), Size: 1}}
	spec.Linux.GIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(os.Getegid()), Size: 1}}
	for i := range spec.Mounts {
		if m := &spec.Mounts[i]; m.Type == "devpts" {
			m.Options = slices.DeleteFunc(m.Options, func(o string) bool { return strings.HasPrefix(o, "gid=") })
		}
	}
}
