package main

import (
	"errors"
	"fmt"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/urfave/cli/v2"
)

var pauseCommand = &cli.Command{
	Name:      "pause",
	Usage:     "freeze every process of the container (cgroup.freeze)",
	ArgsUsage: "<container-id>",
	Description: `EXAMPLE:
       # maka pause box1`,
	Action: func(c *cli.Context) error {
		return freeze(c, true)
	},
}

var resumeCommand = &cli.Command{
	Name:      "resume",
	Usage:     "thaw a paused container",
	ArgsUsage: "<container-id>",
	Description: `EXAMPLE:
       # maka resume box1`,
	Action: func(c *cli.Context) error {
		return freeze(c, false)
	},
}

func freeze(c *cli.Context, pause bool) error {
	if err := checkArgs(c, 1, exactArgs); err != nil {
		return err
	}
	op, ctr, err := lockContainer(c)
	if err != nil {
		return err
	}
	defer op.End()
	if err := ctr.CheckCgroup(); err != nil {
		return err
	}
	if pause {
		err = ctr.Pause()
	} else {
		err = ctr.Resume()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, libcontainer.ErrNotRunning):
		return libmaka.ErrNotRunning
	case errors.Is(err, libcontainer.ErrNotPaused):
		return fmt.Errorf("container %s not paused: %w", ctr.ID(), libmaka.ErrWrongState)
	}
	return fmt.Errorf("%s: %w", c.Command.Name, err)
}
