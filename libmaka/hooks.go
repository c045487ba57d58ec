package libmaka

import (
	"fmt"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
)

// RunHooks runs OCI hooks in order with the container state on stdin and
// stops at the first that fails, in runc's words ("error running poststart
// hook #1: ..."). maka runs the poststart hooks this way; libcontainer runs
// the create-side ones.
func RunHooks(kind string, hooks []specs.Hook, state *specs.State) error {
	for i, h := range hooks {
		if err := runHook(h, state); err != nil {
			return fmt.Errorf("error running %s hook #%d: %w", kind, i, err)
		}
	}
	return nil
}

// RunPoststop runs the poststop hooks as the runtime spec says (1.3,
// lifecycle step 13): a hook that fails is logged as a warning, and the
// hooks after it and the delete go on as if it had succeeded. runc (v1.5.3)
// stops at the first and fails the delete; the OCI's own validation
// programs (poststop_fail) hold runtimes to the spec.
func RunPoststop(id string, hooks []specs.Hook, state *specs.State) {
	for i, h := range hooks {
		if err := runHook(h, state); err != nil {
			logrus.Warnf("container %s: error running poststop hook #%d: %v", id, i, err)
		}
	}
}

// PrestartAsCreated wraps the prestart hooks into one hook for
// libcontainer's createRuntime list (put first: libcontainer runs the two
// kinds back to back at the same point of create, prestart first). The
// hooks see the status "created": prestart is the runtime spec's step 3,
// after the environment is created (runtime.md, "created: ... after step
// 2"), and the OCI's validation program hooks_stdin checks it;
// libcontainer passes "creating". A failure reads "error running prestart
// hook #N: ...", as runc's.
func PrestartAsCreated(hooks []specs.Hook) configs.Hook {
	return configs.NewFunctionHook(func(s *specs.State) error {
		st := *s
		st.Status = specs.StateCreated
		return RunHooks("prestart", hooks, &st)
	})
}

func runHook(h specs.Hook, state *specs.State) error {
	cmd := &configs.Command{Path: h.Path, Args: h.Args, Env: h.Env}
	if h.Timeout != nil {
		d := time.Duration(*h.Timeout) * time.Second
		cmd.Timeout = &d
	}
	return configs.NewCommandHook(cmd).Run(state)
}
