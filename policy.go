package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/urfave/cli/v2"
)

var policyCommand = &cli.Command{
	Name:  "policy",
	Usage: "inspect the boundary policy (the whitelist every config.json is checked against)",
	Subcommands: []*cli.Command{
		{
			Name:  "show",
			Usage: "print the effective policy (--policy FILE, else /etc/maka/policy.json, else the restricted profile)",
			Description: `The table says which file was read and whether it changed its profile
("restricted (modified by /etc/maka/policy.json)"); a limit that is not set
prints as "unlimited". --format json prints the policy as maka applies it,
with "source" (the file) and "modified".`,
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
				p, err := loadPolicy(c)
				if err != nil {
					return err
				}
				if format == "json" {
					return printJSON(p)
				}
				return printPolicyTable(os.Stdout, p, c.String("policy"))
			},
		},
	},
}

// printPolicyTable prints the policy for people. flag is --policy's value:
// without it, the table says the default file was absent.
func printPolicyTable(out io.Writer, p *libmaka.Policy, flag string) error {
	w := newTable(0, 2)
	w.hang = 2
	row := func(k, format string, args ...any) { w.row(k, fmt.Sprintf(format, args...)) }
	list := func(items []string) string {
		if len(items) == 0 {
			return "none"
		}
		return strings.Join(items, " ")
	}
	yes := func(b bool) string {
		if b {
			return "allowed"
		}
		return "refused"
	}
	row("profile", "%s", p.Describe())
	source := p.Source
	if source == "" {
		source = "none (" + libmaka.DefaultPolicyFile + " does not exist)"
		if flag != "" {
			source = flag
		}
	}
	row("policy file", "%s", source)
	row("capabilities", "%s", list(p.Capabilities))
	var binds []string
	for _, r := range p.BindPaths {
		binds = append(binds, r.Path+" ("+r.Mode+")")
	}
	row("bind paths", "%s", list(binds))
	row("network modes", "%s", list(p.NetworkModes))
	row("devices", "%s", list(p.Devices))
	row("sysctls", "%s", list(p.Sysctls))
	row("hooks", "%s", yes(p.Hooks))
	row("hook paths", "%s", list(p.HookPaths))
	row("writable rootfs", "%s", yes(p.WritableRootfs))
	row("cgroup parents", "%s", list(p.CgroupParents))
	oom := "maka's own"
	if p.OOMScoreAdjMin != nil {
		oom = fmt.Sprint(*p.OOMScoreAdjMin)
	}
	row("lowest oomScoreAdj", "%s", oom)
	users := "own user namespace for every sandbox"
	if p.UserNamespace == libmaka.UserNamespaceOptional {
		users = "own user namespace when config.json asks for one"
	}
	row("user namespace", "%s; pool %d..%d (%d blocks of %d ids)", users, p.IDPool.Start, p.IDPool.End()-1, p.IDPool.Count, p.IDPool.Size)
	var delegated []string
	for _, r := range p.DelegatedIDs {
		delegated = append(delegated, fmt.Sprintf("%d..%d", r.Start, uint64(r.Start)+uint64(r.Size)-1))
	}
	row("delegated ids", "%s", list(delegated))
	row("default limits", "%s", p.DefaultLimits)
	row("largest limits", "%s", p.MaxLimits)
	row("on violation", "%s", p.OnViolation)
	audit := p.Audit
	if audit == "" {
		audit = "none"
	}
	row("audit", "%s", audit)
	return w.write(out)
}
