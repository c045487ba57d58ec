package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"PATH=/bin", "A=1", "B=2"}, []string{"A=9", "C=3", "B"})
	want := []string{"PATH=/bin", "A=9", "B", "C=3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCommandCwd(t *testing.T) {
	for in, want := range map[string]string{
		"":            "/maka/work",
		".":           "/maka/work",
		"src":         "/maka/work/src",
		"a/../b":      "/maka/work/b",
		"/tmp":        "/tmp",
		"/tmp/../etc": "/etc",
	} {
		if got, err := CommandCwd(in); err != nil || got != want {
			t.Errorf("CommandCwd(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"..", "../etc", "a/../../x", "./../work2"} {
		if got, err := CommandCwd(in); err == nil {
			t.Errorf("CommandCwd(%q) = %q: a relative cwd left /maka/work", in, got)
		}
	}
}

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
		Process:  &specs.Process{Cwd: "/", Env: []string{"PATH=/bin", "HOME=/maka/work"}, NoNewPrivileges: true},
		Boundary: b,
		Policy:   pol,
	}}
	return &Sandbox{
		m:        &Manager{opts: Options{MaxTimeout: 180 * time.Second, OutputLimit: 1 << 20}},
		launched: &Launched{Container: ctr},
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
	if s.launched.Container.Record.Process.Cwd != "/" || len(s.launched.Container.Record.Process.Env) != 2 {
		t.Errorf("the init's process spec was modified: %+v", s.launched.Container.Record.Process)
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
func TestCapped(t *testing.T) {
	c := &capped{limit: 10, over: make(chan struct{})}
	c.copy(&c.stdout, strings.NewReader("123456"))
	if c.exceeded() {
		t.Fatal("6 bytes exceed 10")
	}
	c.copy(&c.stderr, strings.NewReader("7890"))
	if c.exceeded() {
		t.Fatal("exactly the limit is allowed")
	}
	c.copy(&c.stderr, io.MultiReader(strings.NewReader("x"), strings.NewReader(strings.Repeat("y", 1<<20))))
	if !c.exceeded() {
		t.Fatal("11 bytes do not exceed 10")
	}
	select {
	case <-c.over:
	default:
		t.Fatal("going over did not signal")
	}
	if c.stdout.String() != "123456" || c.stderr.String() != "7890" {
		t.Errorf("kept %q / %q", c.stdout.String(), c.stderr.String())
	}
}

// Bounded commands take turns, across descriptors (so across processes):
// a second waits, its deadline running, and gets the slot once released.
func TestExecSlot(t *testing.T) {
	dir := t.TempDir()
	release, err := acquireExecSlot(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := acquireExecSlot(ctx, dir); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second turn while the first runs: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := acquireExecSlot(context.Background(), dir)
		if err == nil {
			r()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("the second turn did not wait: %v", err)
	default:
	}
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second turn never came")
	}
}

// A recorded boundary re-checked against the same policy is the boundary
// it was (what create placed aside); against a policy that no longer
// allows it, it is refused.
func TestRecompile(t *testing.T) {
	base, err := os.MkdirTemp("", "recompile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o711)
	rootfs := filepath.Join(base, "rootfs")
	for _, d := range []string{"proc", "dev", "sys", "tmp", "run", "maka/work", "bin"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(rootfs, 0o755)
	pol, err := libmaka.BuiltinPolicy("restricted")
	if err != nil {
		t.Fatal(err)
	}
	spec := DefaultSpec(rootfs, "sh")
	_ = err
	spec.Annotations = map[string]string{"org.maka.timeout": "60"}
	b, eff, err := Compile(spec, pol, "rc1", "/", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// What create adds: leased ids, a scaffold.
	rec, _ := libmaka.CopyBoundary(b)
	if rec.Users.Source == libmaka.IDsFromPool {
		rec.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1 << 30, Size: 65536}}
		rec.GIDMappings = rec.UIDMappings
	}
	rec.Rootfs.Scaffold = "/var/lib/maka/roots/x/rc1"
	again, _, err := Recompile(rec, eff, pol, "rc1", "/", nil, nil)
	if err != nil {
		t.Fatalf("the same policy refuses its own boundary: %v", err)
	}
	want, _ := json.Marshal(b)
	got, _ := json.Marshal(again)
	if string(got) != string(want) {
		var g, w map[string]json.RawMessage
		json.Unmarshal(got, &g)
		json.Unmarshal(want, &w)
		for k := range w {
			if string(g[k]) != string(w[k]) {
				t.Errorf("recompiled boundary differs at %s:\n got %.300s\nwant %.300s", k, g[k], w[k])
			}
		}
	}
	// Today's policy allows less (a shorter maximum lifetime): refused.
	tight, err := libmaka.ParsePolicy([]byte(`{"profile": "restricted", "defaultLimits": {"timeout": 30}, "maxLimits": {"timeout": 30}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Recompile(rec, eff, tight, "rc1", "/", nil, nil); err == nil {
		t.Error("a boundary today's policy no longer allows was accepted")
	}
}

// A process killed by signal N reports 128+N, as a shell does.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"sh", "-c", "kill -9 $$"}, 137},
		{[]string{"sh", "-c", "kill -15 $$"}, 143},
	} {
		cmd := exec.Command(tc.args[0], tc.args[1:]...)
		_ = cmd.Run()
		if got := exitCode(cmd.ProcessState); got != tc.want {
			t.Errorf("%q: exit code %d, want %d", tc.args, got, tc.want)
		}
	}
	if exitCode(nil) != -1 {
		t.Error("no state: want -1")
	}
}
