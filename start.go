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
		// libcontainer's state is not read unless a poststart hook needs
		// it: the record and the kernel say whether the container is
		// created (libmaka/initstatus.go).
		op, err := lockRecord(c)
		if err != nil {
			return err
		}
		defer op.End()
		status, err := op.Status()
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
		// The poststart hooks (maka.json), read before anything changes.
		hooks, err := op.Hooks()
		if err != nil {
			return err
		}
		phase.Mark("hooks")
		if err := op.Transition(libmaka.StageStarting); err != nil {
			return err
		}
		phase.Mark("store: starting")
		libmaka.CrashPoint("start:record-published")
		if err := op.Start(); err != nil {
			return fmt.Errorf("start %s: %w", op.ID, err)
		}
		phase.Mark("start")
		libmaka.CrashPoint("start:after-exec")
		if err := op.Commit(libmaka.StageRunning, false); err != nil {
			return err
		}
		phase.Mark("store: commit")
		if len(hooks.Poststart) == 0 {
			return nil
		}
		// The container the hooks are given, loaded under the lock:
		// after it, the id may name another container.
		ctr, err := op.Load()
		if err != nil {
			return err
		}
		op.End()
		phase.Mark("unlock")
		// A failing poststart hook stops the container (runc's start
		// does the same); it stays, stopped, for delete.
		return launch.Poststart(ctr)
	},
}
