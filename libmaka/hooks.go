package libmaka

import (
	"fmt"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// RunHooksAll runs OCI hooks in order with the container state on stdin.
// It runs every hook even when some fail (poststart: the runtime spec says a
// failure is a warning and the remaining hooks run) and returns one error
// per failed hook. The other hooks are run by libcontainer.
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
