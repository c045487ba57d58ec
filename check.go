package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

var checkCommand = &cli.Command{
	Name:  "check",
	Usage: "say whether this host has what maka needs, one line each",
	Description: `Checks the kernel version, cgroup v2 (cpu, memory, pids, cgroup.kill),
seccomp user notification, openat2, pidfd, user namespaces and idmapped
mounts, one line each: "ok", "MISSING" (create refuses a host without it,
with the same line) or "missing" (maka runs, doing less: see the line). Exits
0 only if all hold, 1 otherwise.

EXAMPLE:
       # maka check`,
	Flags: []cli.Flag{
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
		checks := hostChecks()
		ok := true
		for _, h := range checks {
			ok = ok && h.OK
		}
		if format == "json" {
			if err := printJSON(checks); err != nil {
				return err
			}
		} else {
			for _, h := range checks {
				mark := "ok"
				switch {
				case !h.OK && h.Required:
					mark = "MISSING"
				case !h.OK:
					mark = "missing"
				}
				fmt.Printf("%-8s %s: %s\n", mark, h.Name, h.Detail)
			}
		}
		if !ok {
			return &exitCodeError{code: 1}
		}
		return nil
	},
}
