package launch

import (
	"bytes"
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

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/maka-runtime/maka/libmaka"
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
		if got := ExitCode(cmd.ProcessState); got != tc.want {
			t.Errorf("%q: exit code %d, want %d", tc.args, got, tc.want)
		}
	}
	if ExitCode(nil) != -1 {
		t.Error("no state: want -1")
	}
}

// A caller's writer gets the stream as it comes, and never more than the
// limit in all.
func TestCappedStreams(t *testing.T) {
	c := &capped{limit: 10, over: make(chan struct{})}
	var w bytes.Buffer
	c.copy(sink(&w, &c.stdout), strings.NewReader("123456"))
	if w.String() != "123456" || c.stdout.Len() != 0 {
		t.Fatalf("writer %q, buffer %q", w.String(), c.stdout.String())
	}
	c.copy(sink(&w, &c.stderr), io.MultiReader(strings.NewReader("7890"), strings.NewReader("x"), strings.NewReader(strings.Repeat("y", 1<<20))))
	if !c.exceeded() {
		t.Fatal("over the limit not seen")
	}
	if int64(w.Len()) > c.limit {
		t.Errorf("the writer got %d bytes, more than the limit %d", w.Len(), c.limit)
	}
}
