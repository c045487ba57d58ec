package libmaka

import (
	"fmt"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// RunHooks runs OCI hooks in order with the container state on stdin and
// stops at the first that fails, in runc's words ("error running poststart
// hook #1: ..."). maka runs the poststart hooks this way; libcontainer runs
// the others.
func RunHooks(kind string, hooks []specs.Hook, state *specs.State) error {
	for i, h := range hooks {
		cmd := &configs.Command{Path: h.Path, Args: h.Args, Env: h.Env}
		if h.Timeout != nil {
			d := time.Duration(*h.Timeout) * time.Second
			cmd.Timeout = &d
		}
		if err := configs.NewCommandHook(cmd).Run(state); err != nil {
			return fmt.Errorf("error running %s hook #%d: %w", kind, i, err)
		}
	}
	return nil
}
