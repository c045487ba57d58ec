package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/urfave/cli/v2"
)

// killTimeout bounds how long delete waits for a killed init to go.
const killTimeout = 10 * time.Second

var deleteCommand = &cli.Command{
	Name:      "delete",
	Usage:     "delete a container and everything it holds (cgroup, state)",
	ArgsUsage: "<container-id>",
	Description: `A stopped or created container is removed; a running or paused one only
with --force, which kills it first. With --force a container that does not
exist is not an error.

EXAMPLE:
       # maka delete --force box1`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "kill the container (SIGKILL) if it is still running or paused"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		id := c.Args().First()
		force := c.Bool("force")
		rt, err := runtimeOf(c)
		if err != nil {
			return err
		}
		ctr, err := rt.Load(id)
		if errors.Is(err, libmaka.ErrNotExist) {
			// A create that died early can leave a state dir without
			// state.json; it is garbage either way.
			_ = rt.RemoveLeftovers(id)
			if force {
				return nil
			}
		}
		if err != nil {
			return err
		}
		status, err := ctr.Status()
		if err != nil {
			return err
		}
		switch {
		case status == libmaka.Stopped:
		case status == libmaka.Created || force:
			if err := ctr.Kill(killTimeout); err != nil {
				return err
			}
		default:
			return fmt.Errorf("cannot delete container %s that is not stopped: %s (use --force)", id, status)
		}
		stopMonitor(ctr.StateDir())
		return ctr.Destroy()
	},
}
