package main

import (
	"os"

	"github.com/urfave/cli/v2"
)

var stateCommand = &cli.Command{
	Name:      "state",
	Usage:     "print the state of a container as JSON",
	ArgsUsage: "<container-id>",
	Description: `The state command prints the container's state on stdout as JSON:
ociVersion, id, pid, status (created|running|paused|stopped), bundle, rootfs,
created, annotations and owner; "orphaned" says why the container is a crashed
command's leftover that the next command on it, or "maka recover", removes.
A container whose create is in progress (or was interrupted before its
runtime state existed) is "creating".

EXAMPLE:
       # maka state box1`,
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		rt, err := runtimeOf(c)
		if err != nil {
			return err
		}
		id := c.Args().First()
		_ = failClosed(c, func() error { return rt.FailClosed(id) }) // never an error for state
		st, err := rt.StateOf(c.Args().First())
		if err != nil {
			return err
		}
		return printJSON(st)
	},
}

// printJSON writes machine output to stdout, indented as runc does.
func printJSON(v any) error {
	return writeJSON(os.Stdout, v)
}
