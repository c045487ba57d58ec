package main

import (
	"github.com/urfave/cli/v2"
)

var policyCommand = &cli.Command{
	Name:  "policy",
	Usage: "inspect the boundary policy (the whitelist every config.json is checked against)",
	Subcommands: []*cli.Command{
		{
			Name:  "show",
			Usage: "print the effective policy as JSON (--policy FILE, else /etc/maka/policy.json, else the restricted profile)",
			Action: func(c *cli.Context) error {
				if err := checkArgs(c, 0, exactArgs); err != nil {
					return err
				}
				p, err := loadPolicy(c)
				if err != nil {
					return err
				}
				return printJSON(p)
			},
		},
	},
}
