package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/maka-runtime/maka/internal/printable"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
)

type argCount int

const (
	exactArgs argCount = iota
	minArgs
	maxArgs
)

// checkArgs enforces the number of positional arguments, naming the command.
func checkArgs(c *cli.Context, want int, mode argCount) error {
	n := c.NArg()
	var bad bool
	var what string
	switch mode {
	case exactArgs:
		bad, what = n != want, "exactly"
	case minArgs:
		bad, what = n < want, "at least"
	case maxArgs:
		bad, what = n > want, "at most"
	}
	if !bad {
		return nil
	}
	plural := ""
	if want != 1 {
		plural = "s"
	}
	name := commandPath(c)
	return fmt.Errorf("%s: %s %d argument%s expected, %d given (see 'maka %s --help')", name, what, want, plural, n, name)
}

// commandPath is the command as typed after "maka" ("policy show"): the
// help a user is pointed at must be the subcommand's. urfave/cli v2's
// Command.FullName gives only the last name (it never fills in the path),
// so the path is read from the chain of contexts.
func commandPath(c *cli.Context) string {
	var names []string
	for _, ctx := range c.Lineage() {
		if ctx.Command == nil || ctx.Command.Name == "" {
			continue
		}
		names = append([]string{ctx.Command.Name}, names...)
	}
	// The outermost is the app's root command, "maka" itself.
	if len(names) > 0 && c.App != nil && names[0] == c.App.Name {
		names = names[1:]
	}
	if len(names) == 0 {
		return c.Command.Name
	}
	return strings.Join(names, " ")
}

// runtimeOf returns the state root chosen by the global --root flag.
func runtimeOf(c *cli.Context) (*libmaka.Runtime, error) {
	root, err := filepath.Abs(c.String("root"))
	if err != nil {
		return nil, fmt.Errorf("--root: %w", err)
	}
	stateDir, err := filepath.Abs(c.String("state-dir"))
	if err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	return &libmaka.Runtime{Root: root, StateDir: stateDir}, nil
}

// loadContainer loads the container named by the first argument.
func loadContainer(c *cli.Context) (*libmaka.Container, error) {
	rt, err := runtimeOf(c)
	if err != nil {
		return nil, err
	}
	ctr, err := rt.Load(c.Args().First())
	if err != nil {
		return nil, err
	}
	if err := failClosed(c, func() error { return rt.FailClosed(ctr.ID()) }); err != nil {
		return nil, err
	}
	return ctr, nil
}

// failClosed: a sandbox whose monitor is gone is killed by whichever
// command meets it first (libmaka/failclosed.go), which says so on
// stderr; exec and start refuse to go on (an error), the others go on
// with the stopped sandbox. check is the runtime's check of the container.
func failClosed(c *cli.Context, check func() error) error {
	err := check()
	if err == nil {
		return nil
	}
	if name := c.Command.Name; name == "exec" || name == "start" {
		return err
	}
	logrus.Warn(err)
	return nil
}

// absPath makes a user-given path absolute before maka changes directory.
func absPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return filepath.Abs(p)
}

// hostChecks probes the host once per process: create needs them twice
// (before anything, and for the user-namespace line once the boundary is
// known), boundary and features once.
var hostChecks = sync.OnceValue(libmaka.CheckHostSupport)

// checkHostSupport refuses the global modes maka does not implement, and a
// host that lacks what maka needs, at the point where they would matter
// (creating a container): one line per missing piece.
func checkHostSupport(c *cli.Context) error {
	if c.Bool("systemd-cgroup") {
		return errors.New("--systemd-cgroup: the systemd cgroup driver is not supported by maka; use the cgroupfs driver (omit the flag)")
	}
	_, missing, err := rootlessOf(c)
	if err != nil {
		return err
	}
	if err := libmaka.HostUnfit(hostChecks(), false); err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("rootless: maka cannot run sandboxes here as uid %d:\n  %s", os.Geteuid(), strings.Join(missing, "\n  "))
	}
	return nil
}

// rootlessOf is what rootless mode works with when maka runs rootless
// (--rootless, runc's: auto means when not root), nil as root, and the
// pieces the host lacks for it.
func rootlessOf(c *cli.Context) (*libmaka.Rootless, []string, error) {
	on, err := libmaka.RootlessMode(c.String("rootless"), os.Geteuid())
	if err != nil || !on {
		return nil, nil, err
	}
	r, missing := libmaka.CheckRootless()
	return r, missing, nil
}

// outputFormat is the --format of list, boundary, recover and violations:
// table or json.
func outputFormat(c *cli.Context) (string, error) {
	format := c.String("format")
	if format != "table" && format != "json" {
		return "", fmt.Errorf("--format: invalid value %q (want table or json)", format)
	}
	return format, nil
}

// writeJSON writes v as indented JSON and a newline, with every rune that
// would act on a terminal as a \u escape (printable.JSON): the same JSON.
func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(printable.JSON(data), '\n'))
	return err
}
