package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// Checkpoint and restore are not implemented. Podman and containerd read
// exit status 0 of `checkpoint --help` as "supported", so even --help fails:
// flag parsing is skipped and the action always errors.
var errNoCheckpoint = errors.New("checkpoint/restore is not supported by maka")

var checkpointCommand = &cli.Command{
	Name:            "checkpoint",
	Usage:           "not supported: maka cannot checkpoint containers",
	SkipFlagParsing: true,
	HideHelp:        true,
	Action: func(*cli.Context) error {
		return errNoCheckpoint
	},
}

var restoreCommand = &cli.Command{
	Name:            "restore",
	Usage:           "not supported: maka cannot restore containers",
	SkipFlagParsing: true,
	HideHelp:        true,
	Action: func(*cli.Context) error {
		return errNoCheckpoint
	},
}
