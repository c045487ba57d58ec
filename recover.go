package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/sandbox"
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
			relaunch = func(op *libmaka.Op, rec *libmaka.ContainerRecord) (libmaka.Status, error) {
				return relaunchSandbox(rt, op, rec, policy, &poststart)
			}
		}
		results, err := rt.Recover(relaunch)
		// The relaunched sandboxes' poststart hooks, once no lock is held
		// (a hook may call maka on the id), as after start.
		for _, ctr := range poststart {
			sandbox.Poststart(ctr)
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

// relaunchSandbox creates the sandbox of rec again under op: the boundary
// it was created with (never config.json, which may have changed), checked
// again against today's policy and on the host (sandbox.Recompile), the
// launch options it had, a fresh instance, on the launch path create and
// run use. A sandbox that had been started is
// started again; its poststart hooks are appended to poststart, to run once
// the id's lock is released. Its stdio is /dev/null.
func relaunchSandbox(rt *libmaka.Runtime, op *libmaka.Op, rec *libmaka.ContainerRecord, policy *libmaka.Policy, poststart *[]*libmaka.Container) (libmaka.Status, error) {
	b := rec.Boundary
	if rec.Attached {
		// Its caller (a foreground run) is gone: nobody would wait for
		// it, forward its signals or delete it.
		return "", errors.New("it was a foreground run whose maka is gone: nobody would wait for it or remove it")
	}
	if b.Process.Terminal {
		return "", errors.New("its process needs a terminal: a relaunch has no console socket to hand it to")
	}
	if rec.Policy == nil {
		return "", errors.New("the record has no policy")
	}
	if err := checkHostSupportRelaunch(rec.Policy.Rootless != nil); err != nil {
		return "", err
	}
	// Today's policy, and the host as it is now (a bind source that was
	// a directory may be a link to /etc now); the record keeps what was
	// checked at create.
	b, eff, err := sandbox.Recompile(b, rec.Policy, policy, rec.ID, rec.Bundle,
		sandbox.NeverPaths(rt.Root, rt.StateDir), hostChecks())
	if err != nil {
		return "", err
	}
	process, err := sandbox.InitProcess(b)
	if err != nil {
		return "", err
	}
	// Not recover's own stdio: whoever reads recover's output would wait
	// for the relaunched sandbox to end.
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer null.Close()
	process.Stdin, process.Stdout, process.Stderr = null, null, null
	start := rec.Stage == libmaka.StageRunning
	s, err := sandbox.Run(rt, sandbox.Launch{
		ID:       rec.ID,
		Bundle:   rec.Bundle,
		Boundary: b,
		Policy:   eff,
		Options:  rec.Options,
		Command:  "recover",
		Start:    start,
		Monitors: monitorExecutables(rt.Root),
		Process:  process,
		Op:       op,
	})
	if err != nil {
		return "", err
	}
	if !start {
		return libmaka.Created, nil
	}
	*poststart = append(*poststart, s.Container)
	return libmaka.Running, nil
}

// checkHostSupportRelaunch is checkHostSupport without the CLI flags: a
// sandbox made by a rootless maka is relaunched by one, in the same way.
func checkHostSupportRelaunch(rootless bool) error {
	if err := libmaka.CheckCgroupV2(); err != nil {
		return err
	}
	if rootless != (os.Geteuid() != 0) {
		return fmt.Errorf("it was made by a maka running as %s: relaunch it as such", map[bool]string{true: "an ordinary user", false: "root"}[rootless])
	}
	if rootless {
		if _, missing := libmaka.CheckRootless(); len(missing) > 0 {
			return fmt.Errorf("rootless: %s", strings.Join(missing, "; "))
		}
	}
	return nil
}
