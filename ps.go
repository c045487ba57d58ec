package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

var psCommand = &cli.Command{
	Name:      "ps",
	Usage:     "list the processes running inside a container",
	ArgsUsage: "<container-id> [ps options]",
	Description: `With --format table (the default) maka runs ps(1) with the given options
(default -ef) and keeps the header and the container's processes; with
--format json it prints the array of the container's pids.

EXAMPLE:
       # maka ps box1 -- -o pid,comm`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, minArgs); err != nil {
			return err
		}
		ctr, err := loadContainer(c)
		if err != nil {
			return err
		}
		pids, err := ctr.Processes()
		if err != nil {
			return fmt.Errorf("ps %s: %w", ctr.ID(), err)
		}
		switch c.String("format") {
		case "json":
			if pids == nil {
				pids = []int{}
			}
			return printJSON(pids)
		case "table":
		default:
			return fmt.Errorf("--format: invalid value %q (want table or json)", c.String("format"))
		}
		psArgs := c.Args().Tail()
		if len(psArgs) > 0 && psArgs[0] == "--" {
			// `maka ps ID -- -o pid,comm`: "--" ends maka's options, it is
			// not one for ps(1), which would refuse it.
			psArgs = psArgs[1:]
		}
		if len(psArgs) == 0 {
			psArgs = []string{"-ef"}
		}
		var stderr bytes.Buffer
		cmd := exec.Command("ps", psArgs...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("ps %s: running ps %s: %w: %s", ctr.ID(), strings.Join(psArgs, " "), err, strings.TrimSpace(stderr.String()))
		}
		table, err := filterPsTable(out, pids)
		if err != nil {
			return fmt.Errorf("ps %s: %w", ctr.ID(), err)
		}
		_, err = os.Stdout.Write(table)
		return err
	},
}

// filterPsTable keeps ps's header and the lines whose PID column is one of pids.
func filterPsTable(out []byte, pids []int) ([]byte, error) {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	header := strings.Fields(lines[0])
	col := -1
	for i, h := range header {
		if h == "PID" {
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("ps output has no PID column (header %q)", lines[0])
	}
	want := make(map[int]bool, len(pids))
	for _, p := range pids {
		want[p] = true
	}
	var b bytes.Buffer
	b.WriteString(lines[0] + "\n")
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) <= col {
			continue
		}
		if p, err := strconv.Atoi(f[col]); err == nil && want[p] {
			b.WriteString(l + "\n")
		}
	}
	return b.Bytes(), nil
}
