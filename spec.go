package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	rspecconv "github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/urfave/cli/v2"
)

var specCommand = &cli.Command{
	Name:  "spec",
	Usage: "write a new config.json for a bundle",
	Description: `The spec command writes config.json in the bundle directory (default: the
current directory). It refuses to overwrite an existing one. The rootfs is
expected at ./rootfs.

EXAMPLE:
       # mkdir box && cd box && maka spec && mkdir rootfs
       # maka run box1`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "bundle", Aliases: []string{"b"}, Usage: "path to the root of the bundle directory"},
		&cli.BoolFlag{Name: "rootless", Usage: "generate a configuration for a rootless container"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		spec := rspecconv.Example()
		spec.Hostname = "maka"
		if c.Bool("rootless") {
			rspecconv.ToRootless(spec)
		}
		path := filepath.Join(c.String("bundle"), "config.json")
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("spec: %s exists; remove it first", path)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("spec: %w", err)
		}
		data, err := json.MarshalIndent(spec, "", "\t")
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o666); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
		return nil
	},
}
