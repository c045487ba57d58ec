// Command maka-monitor is the per-container monitor of a detached maka
// container, built small: maka embeds it (build tag monitor_embed) and runs
// it in place of `maka monitor`, with the same arguments and fds:
//
//	maka-monitor --root ROOT monitor --on-violation deny|kill --timeout DURATION ID
//
// fd 3 is the seccomp listener's socket, fd 4 the pipe on which create sends
// monitor.Info, fd 5 the pipe on which it answers once attached. Why a second binary: the monitor lives as long as its
// container, and a process started from maka's own 9 MiB binary maps most of
// it while the Go runtime and ~90 package initialisers start (about 11 MiB
// of peak RSS); this one imports libmaka/monitor and the standard library
// only (about 2 MiB).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/maka-runtime/maka/libmaka/monitor"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "maka-monitor:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	global := flag.NewFlagSet("maka-monitor", flag.ContinueOnError)
	root := global.String("root", "", "maka's state root")
	if err := global.Parse(args); err != nil {
		return err
	}
	args = global.Args()
	if *root == "" || len(args) == 0 || args[0] != "monitor" {
		return fmt.Errorf("usage: maka-monitor --root ROOT monitor [--on-violation deny|kill] [--timeout D] ID")
	}
	cmd := flag.NewFlagSet("monitor", flag.ContinueOnError)
	onViolation := cmd.String("on-violation", "deny", "deny or kill")
	timeout := cmd.Duration("timeout", 0, "how long the sandbox may live (0: no limit)")
	if err := cmd.Parse(args[1:]); err != nil {
		return err
	}
	if cmd.NArg() != 1 {
		return fmt.Errorf("monitor: want exactly one container id, got %d", cmd.NArg())
	}
	id := cmd.Arg(0)
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return fmt.Errorf("monitor: invalid container id %q", id)
	}
	return monitor.RunDetached(monitor.Config{
		ID: id, StateDir: filepath.Join(*root, id), OnViolation: *onViolation, Timeout: *timeout,
	}, os.NewFile(3, "monitor-listener"), os.NewFile(4, "monitor-info"), os.NewFile(5, "monitor-ack"))
}
