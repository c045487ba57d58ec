package main

import (
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/urfave/cli/v2"
)

// lockContainer takes the lock of the container named by the first
// argument for this command (cleaning a dead owner's leftovers first) and
// loads it. The caller must op.End() once its change is made.
func lockContainer(c *cli.Context) (*libmaka.Op, *libmaka.Container, error) {
	rt, err := runtimeOf(c)
	if err != nil {
		return nil, nil, err
	}
	op, err := rt.Begin(c.Args().First(), c.Command.Name)
	if err != nil {
		return nil, nil, err
	}
	phase.Mark("store: read")
	ctr, err := rt.Load(op.ID)
	phase.Mark("load")
	if err == nil {
		err = failClosed(c, op.FailClosed)
		phase.Mark("fail-closed check")
	}
	if err != nil {
		op.End()
		return nil, nil, err
	}
	return op, ctr, nil
}

// lockRecord is lockContainer for a command that needs only the record
// (start): the container is not loaded.
func lockRecord(c *cli.Context) (*libmaka.Op, error) {
	rt, err := runtimeOf(c)
	if err != nil {
		return nil, err
	}
	op, err := rt.Begin(c.Args().First(), c.Command.Name)
	if err != nil {
		return nil, err
	}
	phase.Mark("store: read")
	if err := failClosed(c, op.FailClosed); err != nil {
		op.End()
		return nil, err
	}
	phase.Mark("fail-closed check")
	return op, nil
}
