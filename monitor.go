package main

import (
	"errors"
	"os"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/urfave/cli/v2"
)

// monitorCommand is the per-container monitor of a detached container
// (create, run --detach): started by maka itself (monitor.Spawn), never by
// people. Its arguments are monitor.Args', parsed by monitor.Main as
// cmd/maka-monitor parses them.
var monitorCommand = &cli.Command{
	Name:            "monitor",
	Hidden:          true,
	Usage:           "watch one container's boundary (started by create and run --detach)",
	ArgsUsage:       "[--on-violation deny|kill] [--timeout DURATION] <container-id>",
	SkipFlagParsing: true,
	Action: func(c *cli.Context) error {
		rt, err := runtimeOf(c)
		if err != nil {
			return err
		}
		return monitor.Main(rt.Root, c.Args().Slice())
	},
}

// monitorExecutables are the programs a detached container's monitor may
// run, best first, as descriptors: the small monitor this build carries,
// then maka itself.
func monitorExecutables(root string) []*os.File {
	small, err := monitorExecutable(root)
	if err != nil {
		small = nil
	}
	return launch.Executables(small)
}

// killedError is the monitor's error, if err is one.
func killedError(err error) *monitor.KilledError {
	var k *monitor.KilledError
	if errors.As(err, &k) {
		return k
	}
	return nil
}
