package main

import (
	"fmt"
	"os"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/urfave/cli/v2"
)

var purgeCommand = &cli.Command{
	Name:  "purge",
	Usage: "destroy the sandboxes of a scope's owners that are gone (Go API owners)",
	Description: `Sandboxes launched through the Go API may carry an owner key (scope,
thread, agent, call, kind). purge destroys those of the scope whose owner's
process has died, and reports those whose owner lives (busy) and those that
could not be removed (failed: kept for the next purge, exit status 1). Only
the instance an owner launched is destroyed, never a later sandbox that took
its id.

EXAMPLE:
       # maka purge --scope workspace-42 --format json`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "scope", Required: true, Usage: "the owners' scope"},
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		format, err := outputFormat(c)
		if err != nil {
			return err
		}
		rt, err := runtimeOf(c)
		if err != nil {
			return err
		}
		results, err := launch.Purge(rt, c.String("scope"))
		if err != nil {
			return err
		}
		if format == "json" {
			err = printJSON(results)
		} else {
			w := newTable(4, 2, 0)
			w.row("ID", "OWNER", "RESULT", "ERROR")
			for _, r := range results {
				w.row(r.ID, r.Owner.String(), r.Result, r.Error)
			}
			err = w.write(os.Stdout)
		}
		if err != nil {
			return err
		}
		for _, r := range results {
			if r.Result == "failed" {
				return fmt.Errorf("purge: sandbox %s kept: %s", r.ID, r.Error)
			}
		}
		return nil
	},
}
