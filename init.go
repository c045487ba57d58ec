package main

import (
	"os"

	// Without the device filter registration every container fails at
	// cgroup setup ("no device filter").
	_ "github.com/opencontainers/cgroups/devices"
	"github.com/opencontainers/runc/libcontainer"
	// nsenter is libcontainer's C constructor that joins namespaces before
	// the Go runtime starts in "maka init".
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// libcontainer re-executes this binary as "maka init" inside the new
// namespaces; that process must never reach the CLI.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
}
