package sandbox

import (
	"github.com/maka-runtime/maka/internal/launch"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// DefaultSpec is the configuration `maka spec` writes, with root.path
// rootfs and process.args args: runc's example spec made to pass the
// restricted profile as it is (no capabilities at all, a read-only root,
// bounded tmpfs mounts for the places a program writes to: /tmp, /run,
// /maka/work), without a terminal (`maka spec` turns it on for a shell).
// For a Manager's sandbox, args should idle, e.g. IdleArgs.
func DefaultSpec(rootfs string, args ...string) *specs.Spec {
	return launch.DefaultSpec(rootfs, args...)
}

// IdleArgs is an init that idles until the sandbox is destroyed, for a
// root with a POSIX shell: a Manager's commands run beside it. A program
// built with maka's agent (`make`: the agent_embed tag) runs the agent as
// the init of such a sandbox instead: its commands start through it, with
// no process of maka's and no namespace joined.
var IdleArgs = launch.IdleArgs
