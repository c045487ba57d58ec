package main

import (
	"errors"
	"fmt"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/urfave/cli/v2"
)

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
		op, err := rt.Begin(id, "delete")
		if err != nil {
			return err
		}
		phase.Mark("store: read")
		defer op.End()
		if op.Reaped != "" {
			// Begin removed a dead owner's leftovers: that was the delete.
			return nil
		}
		// The status from the record and the kernel: the teardown loads
		// libcontainer's state only if it needs it (libmaka/teardown.go).
		status, err := op.Status()
		if errors.Is(err, libmaka.ErrNotExist) {
			// A state dir without state.json (made by a maka without a
			// contract store) is garbage either way.
			_ = rt.RemoveLeftovers(id)
			if force {
				return nil
			}
		}
		if err != nil {
			return err
		}
		phase.Mark("load and status")
		if status != libmaka.Stopped && status != libmaka.Created && !force {
			return fmt.Errorf("cannot delete container %s that is not stopped: %s (use --force)", id, status)
		}
		if err := op.Transition(libmaka.StageDeleting); err != nil {
			return err
		}
		phase.Mark("store: deleting")
		libmaka.CrashPoint("delete:record-published")
		// The poststop hooks run once the cgroup and the state are gone;
		// one that fails is a warning and delete succeeds (the spec's
		// step 13; runc fails the delete).
		return op.Teardown(nil, nil)
	},
}
