package sandbox

import (
	"os"

	// Without the device filter registration every container fails at
	// cgroup setup ("no device filter").
	_ "github.com/opencontainers/cgroups/devices"
	"github.com/opencontainers/runc/libcontainer"

	// nsenter is libcontainer's C constructor that joins namespaces before
	// the Go runtime starts in the re-executed init.
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
)

// Init must be called first thing by every program that launches
// sandboxes, in its main package's init function: libcontainer re-executes
// the program (/proc/self/exe) as "PROGRAM init" inside the sandbox's new
// namespaces, and that process must become the sandbox's init instead of
// running the program. It returns in every other process.
//
//	func init() { sandbox.Init() }
func Init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
}
