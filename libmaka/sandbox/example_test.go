package sandbox_test

// The examples are compiled by `go test` and shown by `go doc`; they have
// no Output comment, so they are not run on the build host (they launch
// sandboxes: tests/integration/api.bats runs the same calls in the guest).

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/maka-runtime/maka/libmaka/sandbox"
)

func Example() {
	m, err := sandbox.Open(sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	sb, err := m.Launch(ctx, sandbox.Request{ID: "tool-1", Spec: sandbox.DefaultSpec("/srv/rootfs", sandbox.IdleArgs...)})
	if err != nil {
		log.Fatal(err) // a *specconv.RejectedError lists what the policy refused
	}
	defer sb.Destroy()
	res, err := sb.Exec(ctx, sandbox.Command{Shell: "make test", Cwd: "src", Timeout: 2 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("exit %d\n%s", res.ExitCode, res.Stdout)
}

func ExampleSandbox_Exec_errors() {
	var sb *sandbox.Sandbox // from Manager.Launch
	_, err := sb.Exec(context.Background(), sandbox.Command{Args: []string{"./untrusted"}, Timeout: 10 * time.Second})
	var v *sandbox.BoundaryViolation
	switch {
	case errors.As(err, &v):
		// The monitor destroyed the sandbox: v.Code() is
		// SANDBOX_BOUNDARY_VIOLATION or SANDBOX_TIMEOUT, v.Record what it did.
		fmt.Println(v.Code(), v.Record.Syscall)
	case errors.Is(err, sandbox.ErrSandboxDestroyed):
		fmt.Println("ran past its deadline: the sandbox is gone")
	case errors.Is(err, sandbox.ErrNotDispatched):
		fmt.Println("never ran: the deadline passed while it waited for the sandbox")
	case errors.Is(err, sandbox.ErrOutputLimit):
		fmt.Println("wrote more than its output limit: killed, nothing returned")
	}
}

// After a reboot: reap what the crash left and relaunch the detached
// sandboxes under the Manager's policy, reporting those it now refuses.
func ExampleManager_RecoverAndRelaunch() {
	m, err := sandbox.Open(sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	results, err := m.RecoverAndRelaunch("/usr/local/bin/maka")
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		if r.RelaunchError != "" {
			fmt.Printf("%s: not relaunched: %s\n", r.ID, r.RelaunchError)
		}
	}
}
