package main

import (
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
)

var recoverCommand = &cli.Command{
	Name:  "recover",
	Usage: "remove what crashed maka commands left behind (processes, cgroups, mounts, state), and optionally re-create the sandboxes",
	Description: `The contract store (--state-dir) holds a record per container, written before
anything exists on the host. recover reaps every record whose container is
an orphan: an operation (create, start, delete) interrupted because its maka
died, a foreground run whose maka died, or a container whose runtime state
(--root) is gone, e.g. after a reboot. Reaping kills the cgroup (cgroup.kill),
removes it, the mounts and the runtime state, and drops the record last.
Healthy containers are not touched. A container another maka is changing is
reported busy; one that could not be cleaned is kept and reported failed,
with the reason, for the next try (exit status 1).

With --relaunch, each reaped sandbox that had been created is created again
from its record: the same boundary, a fresh instance, started if it was
running. Its standard streams are /dev/null (a terminal cannot be relaunched).

EXAMPLE:
       # maka recover --relaunch --format json`,
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "relaunch", Usage: "re-create each recovered sandbox from its persisted contract"},
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
		var relaunch libmaka.Relauncher
		var poststart []*libmaka.Container
		if c.Bool("relaunch") {
			// Each sandbox is relaunched under today's policy, not the one
			// it was created under.
			policy, err := loadPolicy(c)
			if err != nil {
				return err
			}
			monitors := monitorExecutables(rt.Root)
			relaunch = func(op *libmaka.Op, rec *libmaka.ContainerRecord) (libmaka.Status, error) {
				status, l, err := launch.Relaunch(rt, op, rec, policy, monitors, hostChecks())
				if status == libmaka.Running {
					poststart = append(poststart, l.Container)
				}
				return status, err
			}
		}
		results, err := rt.Recover(relaunch)
		// The relaunched sandboxes' poststart hooks, once no lock is held
		// (a hook may call maka on the id), as after start.
		for _, ctr := range poststart {
			if err := launch.Poststart(ctr); err != nil {
				logrus.Warnf("recover: %v (the relaunched container is stopped)", err)
			}
		}
		if err != nil {
			return fmt.Errorf("recover: %w", err)
		}
		if format == "json" {
			err = printJSON(results)
		} else {
			err = printRecoveryTable(results)
		}
		if err != nil {
			return err
		}
		for _, r := range results {
			if r.Result == libmaka.Failed {
				return fmt.Errorf("recover: container %s kept: %s", r.ID, r.Error)
			}
		}
		return nil
	},
}

func printRecoveryTable(results []libmaka.RecoveryResult) error {
	w := tabwriter.NewWriter(os.Stdout, 12, 1, 3, ' ', 0)
	fmt.Fprint(w, "ID\tSTAGE\tOWNER\tRESULT\tRELAUNCHED\tREASON\n")
	for _, r := range results {
		relaunched := r.Relaunched
		if r.RelaunchError != "" {
			relaunched = "no: " + r.RelaunchError
		}
		reason := r.Reason
		if r.Error != "" {
			reason += ": " + r.Error
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Stage, strconv.Itoa(r.Owner.Pid), r.Result, relaunched, reason)
	}
	return w.Flush()
}
