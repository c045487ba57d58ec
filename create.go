package main

import (
	"github.com/urfave/cli/v2"
)

var createCommand = &cli.Command{
	Name:      "create",
	Usage:     "create a container (its process waits for `maka start`)",
	ArgsUsage: "<container-id>",
	Description: `The create command creates an instance of a container for a bundle. The
bundle is a directory with a specification file named "config.json" and a
root filesystem. The container's process is set up and waits; run it with
"maka start <container-id>".

EXAMPLE:
       # maka create --bundle /containers/box --pid-file /run/box.pid box1`,
	Flags: launchFlags,
	Action: func(c *cli.Context) error {
		_, err := launchCommand(c, modeCreate, true)
		return err
	},
}
