package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
)

var listCommand = &cli.Command{
	Name:    "list",
	Aliases: []string{"ls"},
	Usage:   "list the containers under the state root",
	Description: `The list command prints one line per container (ID, PID, STATUS, BUNDLE,
CREATED, OWNER), a JSON array of their states (--format json), or only their
ids (-q).

EXAMPLE:
       # maka list --format json`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the container ids"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		format, err := outputFormat(c)
		if err != nil {
			return err
		}
		// As runc: a --root given that does not exist is an error (a
		// typo must not read as "no containers"); the default one is
		// simply empty.
		if c.IsSet("root") {
			if _, err := os.Stat(c.String("root")); err != nil {
				return fmt.Errorf("list: --root: %w", err)
			}
		}
		rt, err := runtimeOf(c)
		if err != nil {
			return err
		}
		states, err := listStates(rt)
		if err != nil {
			return err
		}
		if c.Bool("quiet") {
			for _, s := range states {
				fmt.Println(s.ID)
			}
			return nil
		}
		if format == "json" {
			// One line, as runc's json.Encoder writes it (its suite
			// matches the line; state, like runc's, is indented).
			return json.NewEncoder(os.Stdout).Encode(states)
		}
		// runc's layout; CREATED (4) is never broken. Wrapped to fit
		// 80 columns only on a terminal: to a pipe or a file, one line per
		// container, as runc prints it, for the scripts that read it.
		w := newTable(12, 3, 4)
		w.noWrap = !isTerminal(os.Stdout)
		w.row("ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER")
		for _, s := range states {
			status := string(s.Status)
			if s.Orphaned != "" {
				status += "(orphaned)" // details: --format json, maka recover
			}
			w.row(s.ID, strconv.Itoa(s.Pid), status, s.Bundle, s.Created.Format(time.RFC3339Nano), s.Owner)
		}
		return w.write(os.Stdout)
	},
}

// listStates loads every container with runtime state or a record (a
// create in progress, or a crashed command's leftovers, marked orphaned);
// one that cannot be read is skipped with a log line.
func listStates(rt *libmaka.Runtime) ([]libmaka.State, error) {
	ids, err := rt.AllIDs()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", rt.Root, err)
	}
	states := []libmaka.State{}
	for _, id := range ids {
		st, err := rt.StateOf(id)
		if err != nil {
			if !errors.Is(err, libmaka.ErrNotExist) {
				logrus.Warnf("list: %v", err)
			}
			continue
		}
		states = append(states, *st)
	}
	return states, nil
}
