package sandbox

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
)

// testSandbox is a Sandbox with a record and no container: enough for the
// checks made before anything runs.
func testSandbox(t *testing.T) *Sandbox {
	t.Helper()
	pol, err := libmaka.BuiltinPolicy("restricted")
	if err != nil {
		t.Fatal(err)
	}
	b := &libmaka.Boundary{Profile: "restricted"}
	b.Process.NoNewPrivileges = true
	ctr := &libmaka.Container{Record: libmaka.Record{
		Process:  libmaka.Hold(&specs.Process{Cwd: "/", Env: []string{"PATH=/bin", "HOME=/maka/work"}, NoNewPrivileges: true}),
		Boundary: libmaka.Hold(b),
		Policy:   libmaka.Hold(pol),
	}}
	return &Sandbox{
		m:        &Manager{opts: Options{MaxTimeout: 180 * time.Second, OutputLimit: 1 << 20}},
		launched: &launch.Launched{Container: ctr},
	}
}

func TestCommandSpec(t *testing.T) {
	s := testSandbox(t)
	ps, limit, timeout, err := s.commandSpec(Command{Shell: "echo hi > out", Cwd: "job", Env: []string{"A=1", "PATH=/usr/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/bin/sh", "-c", "echo hi > out"}; !reflect.DeepEqual(ps.Args, want) {
		t.Errorf("a string runs through sh -c: args %q", ps.Args)
	}
	if ps.Cwd != "/maka/work/job" || !reflect.DeepEqual(ps.Env, []string{"PATH=/usr/bin", "HOME=/maka/work", "A=1"}) {
		t.Errorf("cwd %q env %q", ps.Cwd, ps.Env)
	}
	if !ps.NoNewPrivileges || ps.Terminal {
		t.Errorf("no_new_privs %v terminal %v", ps.NoNewPrivileges, ps.Terminal)
	}
	if limit != 1<<20 || timeout != 180*time.Second {
		t.Errorf("defaults: limit %d timeout %s", limit, timeout)
	}
	ps, _, _, err = s.commandSpec(Command{Args: []string{"ls", "-l", "a b"}, Timeout: time.Second, OutputLimit: 10})
	if err != nil || !reflect.DeepEqual(ps.Args, []string{"ls", "-l", "a b"}) {
		t.Errorf("a list executes directly: %q %v", ps.Args, err)
	}
	// The record's process is the base, never changed by a command.
	if init, _ := s.launched.Container.Record.Process.Get(); init.Cwd != "/" || len(init.Env) != 2 {
		t.Errorf("the init's process spec was modified: %+v", init)
	}
}

func TestCommandSpecRefusals(t *testing.T) {
	s := testSandbox(t)
	for _, tc := range []struct {
		cmd  Command
		want string
	}{
		{Command{}, "empty"},
		{Command{Shell: "x", Args: []string{"y"}}, "not both"},
		{Command{Shell: "x", Timeout: 181 * time.Second}, "timeout above the maximum"},
		{Command{Shell: "x", Timeout: -time.Second}, "negative"},
		{Command{Shell: "x", Cwd: "../../etc"}, "below /maka/work"},
		{Command{Shell: "x", Env: []string{"=x"}}, "NAME=value"},
		{Command{Shell: "x", Env: []string{"NOVALUE"}}, "NAME=value"},
	} {
		_, _, _, err := s.commandSpec(tc.cmd)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want one with %q", tc.cmd, err, tc.want)
		}
	}
	if _, _, _, err := s.commandSpec(Command{Shell: "x", Timeout: time.Hour}); !errors.Is(err, ErrTimeoutTooLong) {
		t.Errorf("a timeout over the maximum: %v, want ErrTimeoutTooLong", err)
	}
}

// The cap is on stdout and stderr together, and going over is reported,
// never a silently truncated result.
// Bounded commands take turns, across descriptors (so across processes):
// a second waits, its deadline running, and gets the slot once released.
// A recorded boundary re-checked against the same policy is the boundary
// it was (what create placed aside); against a policy that no longer
// allows it, it is refused.
// A process killed by signal N reports 128+N, as a shell does.
