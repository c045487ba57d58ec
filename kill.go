package main

import (
	"errors"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

var killCommand = &cli.Command{
	Name:      "kill",
	Usage:     "send a signal (default: SIGTERM) to the container's init process",
	ArgsUsage: "<container-id> [signal]",
	Description: `The signal is a number (9), a name (SIGKILL) or a name without SIG (KILL,
kill). A container whose process has exited gives "container not running"
(with --all, as runc, that is not an error). Signal 0 sends nothing: it checks
that the container's init is alive (exit 0) or not (exit 1), as runc does.

EXAMPLE:
       # maka kill box1 KILL`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "signal all the container's processes (with a private pid namespace, signalling init does this already)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, minArgs); err != nil {
			return err
		}
		if err := checkArgs(c, 2, maxArgs); err != nil {
			return err
		}
		sig := unix.SIGTERM
		// Signal 0 checks that the init lives, as kill(2) and runc do:
		// "container not running" (exit 1) when it does not.
		if s := c.Args().Get(1); s == "0" {
			sig = 0
		} else if s != "" {
			var err error
			if sig, err = libmaka.ParseSignal(s); err != nil {
				return err
			}
		}
		op, ctr, err := lockContainer(c)
		if err != nil {
			return err
		}
		defer op.End()
		if c.Bool("all") {
			err = ctr.SignalAll(sig)
		} else {
			err = ctr.Signal(sig)
		}
		if errors.Is(err, libmaka.ErrNotRunning) && c.Bool("all") {
			return nil
		}
		return err
	},
}
