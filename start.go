package main

import (
	"fmt"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/urfave/cli/v2"
)

var startCommand = &cli.Command{
	Name:      "start",
	Usage:     "start the process of a created container",
	ArgsUsage: "<container-id>",
	Description: `The start command runs the user process of a container made by "create",
then its poststart hooks.

EXAMPLE:
       # maka start box1`,
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		op, ctr, err := lockContainer(c)
		if err != nil {
			return err
		}
		defer op.End()
		status, err := ctr.Status()
		if err != nil {
			return err
		}
		phase.Mark("status")
		switch status {
		case libmaka.Created:
		case libmaka.Stopped:
			return fmt.Errorf("cannot start a container that has stopped: %w", libmaka.ErrWrongState)
		default:
			return fmt.Errorf("cannot start an already %s container: %w", status, libmaka.ErrWrongState)
		}
		if err := op.Transition(libmaka.StageStarting); err != nil {
			return err
		}
		phase.Mark("store: starting")
		libmaka.CrashPoint("start:record-published")
		if err := ctr.Exec(); err != nil {
			return fmt.Errorf("start %s: %w", ctr.ID(), err)
		}
		phase.Mark("start")
		libmaka.CrashPoint("start:after-exec")
		if err := op.Commit(libmaka.StageRunning, false); err != nil {
			return err
		}
		phase.Mark("store: commit")
		op.End()
		phase.Mark("unlock")
		// A failing poststart hook stops the container (runc's start
		// does the same); it stays, stopped, for delete.
		return launch.Poststart(ctr)
	},
}
