package sandbox_test

// The examples are compiled by `go test` and shown by `go doc`; they have
// no Output comment, so they are not run on the build host (they launch
// sandboxes: tests/integration/api.bats runs the same calls in the guest).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
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
	fmt.Printf("exit %d in %s (CPU %s, %d KiB)\n%s", res.ExitCode, res.Duration, res.CPU, res.MaxRSSKiB, res.Stdout)
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
	case errors.Is(err, sandbox.ErrTimeoutTooLong):
		fmt.Println("asked for a deadline beyond the Manager's MaxTimeout: nothing ran")
	case errors.Is(err, sandbox.ErrGone):
		fmt.Println("the sandbox was destroyed, or its process ended")
	}
}

// A program that launches sandboxes is also their init: libcontainer
// re-executes it inside each new sandbox.
func ExampleInit() {
	// In the main package:
	//
	//	func init() { sandbox.Init() }
	sandbox.Init()
}

// The Manager's bounds, spelled out (these are the defaults).
func ExampleOptions() {
	m, err := sandbox.Open(sandbox.Options{
		Root:          "/run/maka",
		StateDir:      "/var/lib/maka",
		MaxTimeout:    sandbox.DefaultMaxTimeout,
		OutputLimit:   sandbox.DefaultOutputLimit,
		TransferLimit: sandbox.DefaultTransferLimit,
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = m
	fmt.Println("relative command directories resolve below", sandbox.WorkDir)
}

// One sandbox per owner: launching again for the same owner and
// configuration returns the live one; another process holding the owner
// gets ErrOwnerBusy. Purge destroys the sandboxes of a scope's owners whose
// process died.
func ExampleOwner() {
	m, err := sandbox.Open(sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	owner := &sandbox.Owner{Scope: "workspace-7", Thread: "t-42", Agent: "coder"}
	sb, err := m.Launch(context.Background(), sandbox.Request{ID: "ws7-t42", Spec: sandbox.DefaultSpec("/srv/rootfs", sandbox.IdleArgs...), Owner: owner})
	if errors.Is(err, sandbox.ErrOwnerBusy) {
		log.Fatalf("%s is in use by another process", owner)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Destroy()
	var results []sandbox.PurgeResult
	if results, err = m.Purge("workspace-7"); err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		fmt.Println(r.Owner, r.ID, r.Result)
	}
}

// Files in and out, bounded and never following a link inside the
// sandbox.
func ExampleSandbox_CopyIn() {
	var sb *sandbox.Sandbox // from Manager.Launch
	if _, err := sb.CopyIn("src/main.go", strings.NewReader("package main\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := sb.CopyOut("src/report.txt", &out); err != nil {
		log.Fatal(err)
	}
	if _, err := sb.CopyDirIn("./fixtures", "fixtures"); err != nil {
		log.Fatal(err)
	}
	if _, err := sb.CopyDirOut("build", "./out"); err != nil {
		log.Fatal(err)
	}
	fmt.Print(out.String())
}

// A sandbox that may reach exactly one host, through the proxy its Manager
// serves (the policy's egress must allow it).
func ExampleRequest_egress() {
	m, err := sandbox.Open(sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	sb, err := m.Launch(ctx, sandbox.Request{ID: "pip-1", Spec: sandbox.DefaultSpec("/srv/rootfs", sandbox.IdleArgs...),
		Egress: []string{"pypi.org:443", "*.pythonhosted.org:443"}})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Destroy()
	var res *sandbox.Result
	if res, err = sb.Exec(ctx, sandbox.Command{Shell: "pip install requests"}); err != nil {
		log.Fatal(err)
	}
	recs, _ := sb.Violations() // each refused connection: a "network" record
	fmt.Println(res.ExitCode, len(recs), sb.ID(), sb.Boundary().Network.Egress)
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

// Sandboxes launched ahead: a Launch of the same configuration without an
// ID claims a ready one, and the pool refills behind it.
func ExampleManager_Prewarm() {
	m, err := sandbox.Open(sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close() // destroys the idle ones
	ctx := context.Background()
	spec := sandbox.DefaultSpec("/srv/rootfs", sandbox.IdleArgs...)
	if err := m.Prewarm(ctx, sandbox.Request{Spec: spec}, 4); err != nil {
		log.Fatal(err)
	}
	sb, err := m.Launch(ctx, sandbox.Request{Spec: spec, Owner: &sandbox.Owner{Scope: "ws-1"}})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Destroy()
	fmt.Println(sb.ID()) // pool-…
	if _, err := m.Launch(ctx, sandbox.Request{Spec: spec}); errors.Is(err, sandbox.ErrClosed) {
		fmt.Println("closed")
	}
	fmt.Println(sandbox.PoolScope, sandbox.MaxPool)
}

// A sandbox that runs a workload to its end, as `maka run` does: Wait
// returns its exit code (128+N for signal N), and a ctx bounds the wait,
// not the sandbox.
func ExampleSandbox_Wait() {
	m, err := sandbox.Open(sandbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	sb, err := m.Launch(ctx, sandbox.Request{ID: "job-1", Bundle: "/srv/job"}) // config.json's process runs
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Destroy() // Wait leaves it stopped, as `maka run --keep`
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	code, err := sb.Wait(wctx)
	var v *sandbox.BoundaryViolation
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Println("still running after 10 minutes") // the deferred Destroy ends it
	case errors.As(err, &v):
		// The monitor killed it (code 137): v.Code() is SANDBOX_TIMEOUT
		// or SANDBOX_BOUNDARY_VIOLATION.
		fmt.Println(code, v.Code())
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("exit", code)
	}
}
