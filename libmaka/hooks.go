package libmaka

import (
	"fmt"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// RunHooks runs OCI hooks in order with the container state on stdin, as
// the runtime spec says; the first failure stops the list.
func RunHooks(kind string, hooks []specs.Hook, state *specs.State) error {
	for i, h := range hooks {
		cmd := &configs.Command{Path: h.Path, Args: h.Args, Env: h.Env}
		if h.Timeout != nil {
			d := time.Duration(*h.Timeout) * time.Second
			cmd.Timeout = &d
		}
		if err := configs.NewCommandHook(cmd).Run(state); err != nil {
			return fmt.Errorf("%s hook #%d (%s): %w", kind, i, h.Path, err)
		}
	}
	return nil
}

// RunHooksAll runs every hook even when some fail (poststart and poststop:
// the runtime spec says a failure is a warning and the remaining hooks
// run); it returns one error per failed hook.
func RunHooksAll(kind string, hooks []specs.Hook, state *specs.State) []error {
	var errs []error
	for i, h := range hooks {
		cmd := &configs.Command{Path: h.Path, Args: h.Args, Env: h.Env}
		if h.Timeout != nil {
			d := time.Duration(*h.Timeout) * time.Second
			cmd.Timeout = &d
		}
		if err := configs.NewCommandHook(cmd).Run(state); err != nil {
			errs = append(errs, fmt.Errorf("%s hook #%d (%s): %w", kind, i, h.Path, err))
		}
	}
	return errs
}
