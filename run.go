package main

import (
	"os"

	"github.com/urfave/cli/v2"
)

var runCommand = &cli.Command{
	Name:      "run",
	Usage:     "create and run a container",
	ArgsUsage: "<container-id>",
	Description: `The run command creates an instance of a container for a bundle and starts
it. In the foreground (the default) maka forwards signals to the container,
relays its terminal when process.terminal is true, removes the container when
its process exits (unless --keep) and exits with the process's status (128+N
if it was killed by signal N). With --detach maka returns once the process has
started.

EXAMPLE:
       # maka run --bundle /containers/box box1`,
	Flags: append([]cli.Flag{
		&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "detach from the container's process"},
		&cli.BoolFlag{Name: "keep", Usage: "do not remove the container when its process exits (delete it with maka delete)"},
		&cli.BoolFlag{Name: "no-subreaper", Usage: "do not reap the container process's orphans (they go to the host's init)"},
	}, launchFlags...),
	Action: func(c *cli.Context) error {
		status, err := launchCommand(c, modeRun, c.Bool("detach"))
		if killedError(err) != nil && status != 0 {
			// The monitor destroyed the sandbox: its reason, and the
			// container's status (128+9).
			fatalWithCode(err, status)
		}
		if err != nil {
			return err
		}
		if status != 0 {
			os.Exit(status)
		}
		return nil
	},
}
