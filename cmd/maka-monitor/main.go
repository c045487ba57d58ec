// Command maka-monitor is the per-container monitor of a detached maka
// container, built small: maka embeds it (build tag monitor_embed) and runs
// it in place of `maka monitor`, with the same arguments and fds:
//
//	maka-monitor --root ROOT monitor --on-violation deny|kill --timeout DURATION ID
//
// and the fds monitor.Spawn passes: the protocol is written once, in
// libmaka/monitor (monitor.Args, monitor.Main). Why a second binary: the
// monitor lives as long as its container, and a process started from maka's own 9 MiB binary maps most of
// it while the Go runtime and ~90 package initialisers start (about 11 MiB
// of peak RSS); this one imports libmaka/monitor and the standard library
// only (about 2 MiB).
package main

import (
	"flag"
	"fmt"
	"os"

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
	return monitor.Main(*root, args[1:])
}
