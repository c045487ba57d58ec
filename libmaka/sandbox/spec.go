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
// root with a POSIX shell: a Manager's commands run beside it. It reaps:
// what a command leaves behind is reparented to the sandbox's init, and
// once killed must not linger as zombies holding pids (a shell's wait
// reaps any child while one of its jobs runs).
var IdleArgs = []string{"/bin/sh", "-c", "while :; do sleep 3600 & wait; done"}
