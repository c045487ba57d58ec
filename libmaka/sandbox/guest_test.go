package sandbox

// Tests that launch real sandboxes. They run only in the project's test
// guest (tests/integration/api.bats runs this package's test binary there
// with MAKA_GUEST_TESTS=1): never on a host whose cgroups belong to others.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/maka-runtime/maka/internal/agent"
	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	Init() // the test binary is also the sandboxes' init
	os.Exit(m.Run())
}

// guestManager opens a Manager on fresh state directories, or skips the
// test outside the guest.
func guestManager(t *testing.T, opts Options) (*Manager, string) {
	t.Helper()
	if os.Getenv("MAKA_GUEST_TESTS") != "1" {
		t.Skip("launches sandboxes: run in the test guest (tests/integration/api.bats)")
	}
	rootfs := os.Getenv("MAKA_ROOTFS")
	if rootfs == "" {
		t.Fatal("MAKA_ROOTFS: the test root filesystem is not set")
	}
	// Searchable by others: the sandbox's root is an unprivileged host
	// user, and its root's scaffold lives in the state dir.
	dir, err := os.MkdirTemp("", "maka-api-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	opts.Root, opts.StateDir = filepath.Join(dir, "root"), filepath.Join(dir, "state")
	m, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, rootfs
}

func launchIdle(t *testing.T, m *Manager, rootfs, id string) *Sandbox {
	t.Helper()
	s, err := m.Launch(context.Background(), Request{ID: id, Bundle: "/", Spec: DefaultSpec(rootfs, IdleArgs...)})
	if err != nil {
		t.Fatalf("launch %s: %v", id, err)
	}
	t.Cleanup(func() {
		if err := s.Destroy(); err != nil {
			t.Errorf("destroy %s: %v", id, err)
		}
	})
	return s
}

// leftovers lists what is left of sandbox id on the host.
func leftovers(m *Manager, s *Sandbox) []string {
	var left []string
	if _, err := os.Stat(s.launched.Container.CgroupPath()); err == nil {
		left = append(left, "cgroup "+s.launched.Container.CgroupPath())
	}
	if _, err := os.Stat(filepath.Join(m.rt.Root, s.ID())); err == nil {
		left = append(left, "state dir")
	}
	if store, err := m.rt.Store(false); err == nil && store != nil {
		if rec, _ := store.Get(s.ID()); rec != nil {
			left = append(left, "record")
		}
	}
	return left
}

func TestGuestExec(t *testing.T) {
	m, rootfs := guestManager(t, Options{})
	s := launchIdle(t, m, rootfs, "api-exec")
	ctx := context.Background()

	// A string runs through sh -c, in /maka/work, with the declared env.
	r, err := s.Exec(ctx, Command{Shell: `echo out; echo err >&2; pwd; echo "$GREETING"; exit 3`, Env: []string{"GREETING=hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 3 || string(r.Stdout) != "out\n/maka/work\nhi\n" || string(r.Stderr) != "err\n" {
		t.Errorf("sh -c: exit %d stdout %q stderr %q", r.ExitCode, r.Stdout, r.Stderr)
	}
	// A list executes directly: no shell interprets it.
	if _, err := s.Exec(ctx, Command{Shell: "mkdir -p /maka/work/sub"}); err != nil {
		t.Fatal(err)
	}
	r, err = s.Exec(ctx, Command{Args: []string{"echo", "$HOME", "a;b"}, Cwd: "sub"})
	if err != nil || string(r.Stdout) != "$HOME a;b\n" {
		t.Errorf("argv: %v %q", err, r.Stdout)
	}
	r, err = s.Exec(ctx, Command{Args: []string{"pwd"}, Cwd: "sub"})
	if err != nil || string(r.Stdout) != "/maka/work/sub\n" {
		t.Errorf("relative cwd: %v %q", err, r.Stdout)
	}
	// Stdin reaches the command.
	r, err = s.Exec(ctx, Command{Args: []string{"cat"}, Stdin: strings.NewReader("fed\n")})
	if err != nil || string(r.Stdout) != "fed\n" {
		t.Errorf("stdin: %v %q", err, r.Stdout)
	}
	// Streamed: the first line reaches the writer while the command still
	// runs; stdout and stderr may share a writer.
	var mu sync.Mutex
	var lines []string
	var firstAt time.Time
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if firstAt.IsZero() {
			firstAt = time.Now()
		}
		lines = append(lines, string(p))
		return len(p), nil
	})
	start := time.Now()
	r, err = s.Exec(ctx, Command{Shell: "echo first; sleep 2; echo second >&2", Stdout: w, Stderr: w})
	if err != nil || len(r.Stdout) != 0 || len(r.Stderr) != 0 {
		t.Fatalf("streamed: %v %+v", err, r)
	}
	if strings.Join(lines, "") != "first\nsecond\n" || firstAt.Sub(start) >= time.Since(start)-time.Second {
		t.Errorf("streamed: %q, the first write %s after the start of a %s command", lines, firstAt.Sub(start), time.Since(start))
	}
	// Over the cap while streaming: killed, ErrOutputLimit, the writer
	// never got more than the cap.
	var got int
	count := writerFunc(func(p []byte) (int, error) { got += len(p); return len(p), nil })
	_, err = s.Exec(ctx, Command{Shell: "yes", Stdout: count, OutputLimit: 64 << 10})
	if !errors.Is(err, ErrOutputLimit) || got > 64<<10 {
		t.Errorf("streamed over the cap: %v, %d bytes written", err, got)
	}
	// A signal's death is 128+N.
	r, err = s.Exec(ctx, Command{Shell: "kill -9 $$"})
	if err != nil || r.ExitCode != 137 {
		t.Errorf("killed by SIGKILL: %v exit %d", err, r.ExitCode)
	}

	// Everything the command started, detached included, is gone before
	// the reply: no process and no child cgroup left.
	r, err = s.Exec(ctx, Command{Shell: "sleep 1000 </dev/null >/dev/null 2>&1 & (sleep 999 &) ; echo started"})
	if err != nil || string(r.Stdout) != "started\n" {
		t.Fatalf("detached children: %v %q", err, r.Stdout)
	}
	cg := s.launched.Container.CgroupPath()
	procs, _ := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
	for _, pid := range strings.Fields(string(procs)) {
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		if strings.Contains(string(cmdline), "sleep\x00100") || strings.Contains(string(cmdline), "sleep\x00999") {
			t.Errorf("after the reply the command's child %s (%q) still runs", pid, cmdline)
		}
	}
	subs, _ := filepath.Glob(filepath.Join(cg, "maka-cmd-*"))
	if len(subs) != 0 {
		t.Errorf("command cgroups left: %q", subs)
	}

	// Files in and out: as the sandbox's root, and through no link
	// planted inside (here to the host's /etc/passwd, which the sandbox's
	// /etc/passwd is not).
	if fi, err := s.CopyIn("in.txt", strings.NewReader("data\n"), 0o640); err != nil || fi.UID != 0 || fi.Path != "/maka/work/in.txt" {
		t.Errorf("copy in: %v %+v", err, fi)
	}
	r, err = s.Exec(ctx, Command{Shell: "cat in.txt; stat -c '%u %a' in.txt; ln -s /etc/passwd link; ln -s / up"})
	if err != nil || string(r.Stdout) != "data\n0 640\n" {
		t.Errorf("the copied file seen inside: %v %q", err, r.Stdout)
	}
	var out strings.Builder
	if _, err := s.CopyOut("in.txt", &out); err != nil || out.String() != "data\n" {
		t.Errorf("copy out: %v %q", err, out.String())
	}
	for _, p := range []string{"link", "up/etc/hostname"} {
		out.Reset()
		if _, err := s.CopyOut(p, &out); err == nil || out.Len() != 0 {
			t.Errorf("copy out of %s followed a planted link: %v %q", p, err, out.String())
		}
	}
	if _, err := s.CopyIn("up/tmp/planted", strings.NewReader("x"), 0o644); err == nil {
		t.Error("copy in through a planted link to / succeeded")
	}
	if _, err := os.Stat("/tmp/planted"); err == nil {
		t.Error("copy in wrote the host's /tmp/planted")
	}

	// A timeout over the maximum is refused before anything runs.
	if _, err := s.Exec(ctx, Command{Shell: "touch /maka/work/ran", Timeout: 181 * time.Second}); !errors.Is(err, ErrTimeoutTooLong) {
		t.Errorf("timeout over the maximum: %v", err)
	}
	if r, _ := s.Exec(ctx, Command{Shell: "test -e /maka/work/ran; echo $?"}); string(r.Stdout) != "1\n" {
		t.Errorf("the refused command ran: %q", r.Stdout)
	}
}

func TestGuestOutputLimit(t *testing.T) {
	m, rootfs := guestManager(t, Options{OutputLimit: 64 << 10})
	s := launchIdle(t, m, rootfs, "api-cap")
	ctx := context.Background()
	// Over the cap (stdout and stderr together): an explicit error, the
	// command killed; the sandbox lives on.
	_, err := s.Exec(ctx, Command{Shell: "head -c 40000 /dev/zero; head -c 40000 /dev/zero >&2; sleep 100"})
	if !errors.Is(err, ErrOutputLimit) {
		t.Fatalf("80000 bytes under a 65536-byte cap: %v", err)
	}
	r, err := s.Exec(ctx, Command{Shell: "head -c 65536 /dev/zero", OutputLimit: 65536})
	if err != nil || len(r.Stdout) != 65536 {
		t.Errorf("exactly the cap: %v, %d bytes", err, len(r.Stdout))
	}
	_, err = s.Exec(ctx, Command{Shell: "head -c 100 /dev/zero", OutputLimit: 99})
	if !errors.Is(err, ErrOutputLimit) {
		t.Errorf("a per-command cap: %v", err)
	}
}

func TestGuestDeadlines(t *testing.T) {
	m, rootfs := guestManager(t, Options{})
	s := launchIdle(t, m, rootfs, "api-deadline")
	ctx := context.Background()
	// Two commands at once are serialised: the second waits for the
	// first, its deadline running; it is refused, never run, and the
	// sandbox lives.
	var wg sync.WaitGroup
	wg.Add(1)
	var first *Result
	var firstErr error
	go func() {
		defer wg.Done()
		first, firstErr = s.Exec(ctx, Command{Shell: "sleep 4; echo first", Timeout: 60 * time.Second})
	}()
	time.Sleep(time.Second) // the first holds the sandbox
	t0 := time.Now()
	_, err := s.Exec(ctx, Command{Shell: "touch /maka/work/second", Timeout: time.Second})
	if !errors.Is(err, ErrNotDispatched) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a queued command past its deadline: %v", err)
	}
	if d := time.Since(t0); d > 2500*time.Millisecond {
		t.Errorf("the queued command's 1 s deadline held for %s", d)
	}
	wg.Wait()
	if firstErr != nil || string(first.Stdout) != "first\n" {
		t.Errorf("the first command: %v %+v", firstErr, first)
	}
	if r, err := s.Exec(ctx, Command{Shell: "test -e /maka/work/second; echo $?"}); err != nil || string(r.Stdout) != "1\n" {
		t.Errorf("the refused command ran (or the sandbox died): %v %+v", err, r)
	}

	// A deadline after dispatch destroys the whole sandbox.
	t0 = time.Now()
	_, err = s.Exec(ctx, Command{Shell: "sleep 100", Timeout: 2 * time.Second})
	if !errors.Is(err, ErrSandboxDestroyed) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a command past its deadline: %v", err)
	}
	if d := time.Since(t0); d > 15*time.Second {
		t.Errorf("the 2 s deadline held for %s", d)
	}
	if left := leftovers(m, s); len(left) > 0 {
		t.Errorf("after the deadline, left of the sandbox: %q", left)
	}
	if _, err := s.Exec(ctx, Command{Shell: "true"}); !errors.Is(err, ErrGone) {
		t.Errorf("a command on a destroyed sandbox: %v", err)
	}
	// A cancelled context is a deadline too.
	s2 := launchIdle(t, m, rootfs, "api-cancel")
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(time.Second, cancel)
	if _, err := s2.Exec(cctx, Command{Shell: "sleep 100"}); !errors.Is(err, ErrSandboxDestroyed) || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled command: %v", err)
	}
}

func TestGuestViolationAndRefusal(t *testing.T) {
	m, rootfs := guestManager(t, Options{})
	ctx := context.Background()
	// A refused configuration: a typed error with its items, nothing made.
	spec := DefaultSpec(rootfs, IdleArgs...)
	spec.Process.Capabilities.Bounding = []string{"CAP_SYS_ADMIN"}
	_, err := m.Launch(ctx, Request{ID: "api-refused", Bundle: "/", Spec: spec})
	var rejected *specconv.RejectedError
	if !errors.As(err, &rejected) || len(rejected.Verdict.Items) == 0 {
		t.Fatalf("CAP_SYS_ADMIN under restricted: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.rt.Root, "api-refused")); err == nil {
		t.Error("a refused launch left its state")
	}
	// A watched syscall under restricted (onViolation kill): the monitor
	// destroys the sandbox; the error carries the record.
	s := launchIdle(t, m, rootfs, "api-violation")
	_, err = s.Exec(ctx, Command{Args: []string{"unshare", "-U", "true"}})
	var v *BoundaryViolation
	if !errors.As(err, &v) || v.Code() != "SANDBOX_BOUNDARY_VIOLATION" || v.Record.Syscall != "unshare" {
		t.Fatalf("unshare under restricted: %v", err)
	}
	recs, err := s.Violations()
	if err != nil || len(recs) == 0 || recs[0].Syscall != "unshare" {
		t.Errorf("violations: %v %+v", err, recs)
	}
	if err := s.Destroy(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(m, s); len(left) > 0 {
		t.Errorf("after Destroy, left of the sandbox: %q", left)
	}
}

func TestGuestOwners(t *testing.T) {
	m, rootfs := guestManager(t, Options{})
	ctx := context.Background()
	owner := &Owner{Scope: "ws-1", Thread: "t", Agent: "a", Call: "c1", Kind: "shell"}
	req := Request{ID: "api-own", Bundle: "/", Spec: DefaultSpec(rootfs, IdleArgs...), Owner: owner}
	s1, err := m.Launch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// Acquiring again with the same configuration reuses the live sandbox;
	// another configuration is refused.
	if again, err := m.Launch(ctx, req); err != nil || again != s1 {
		t.Errorf("the same owner again: %v (same sandbox: %v)", err, again == s1)
	}
	other := req
	other.Spec = DefaultSpec(rootfs, "sleep", "1000")
	if _, err := m.Launch(ctx, other); err == nil || !strings.Contains(err.Error(), "another configuration") {
		t.Errorf("the same owner, another configuration: %v", err)
	}
	// A second owner process (here a second Manager) is refused while the
	// first lives, and purge reports it busy.
	m2, err := Open(m.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Launch(ctx, req); !errors.Is(err, ErrOwnerBusy) {
		t.Errorf("a second owner: %v", err)
	}
	res, err := m2.Purge("ws-1")
	if err != nil || len(res) != 1 || res[0].Result != "busy" {
		t.Errorf("purge while the owner lives: %v %+v", err, res)
	}
	// The owner dies (its key's lock goes with its process; the key's
	// file stays), and meanwhile its sandbox is deleted and the id taken
	// by another sandbox: disposing of the stale instance must not touch
	// that replacement.
	s1.owner.Release(false) // as its process dies: the lock goes, the file stays
	s1.owner = nil
	if err := s1.Destroy(); err != nil {
		t.Fatal(err)
	}
	repl, err := m2.Launch(ctx, Request{ID: "api-own", Bundle: "/", Spec: DefaultSpec(rootfs, IdleArgs...)})
	if err != nil {
		t.Fatal(err)
	}
	defer repl.Destroy()
	res, err = m2.Purge("ws-1")
	if err != nil || len(res) != 1 || res[0].Result != "purged" {
		t.Errorf("purge after the owner died: %v %+v", err, res)
	}
	if r, err := repl.Exec(ctx, Command{Args: []string{"true"}}); err != nil || r.ExitCode != 0 {
		t.Errorf("the replacement was touched by the purge: %v", err)
	}
	// The key is free again.
	s3, err := m2.Launch(ctx, Request{ID: "api-own-2", Bundle: "/", Spec: DefaultSpec(rootfs, IdleArgs...), Owner: owner})
	if err != nil {
		t.Fatalf("the owner key after purge: %v", err)
	}
	if err := s3.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// TestOwnerProcess is not a test of its own: api.bats runs it as an agent
// that launches an owned sandbox (scope MAKA_OWNER_SCOPE, id MAKA_OWNER_ID,
// on maka's default state directories, as the CLI's), says "launched ID"
// and then lives until killed, so that `maka purge` meets a live owner and
// then a dead one.
func TestOwnerProcess(t *testing.T) {
	scope := os.Getenv("MAKA_OWNER_SCOPE")
	if scope == "" || os.Getenv("MAKA_GUEST_TESTS") != "1" {
		t.Skip("an owner for api.bats's purge test (MAKA_OWNER_SCOPE)")
	}
	m, err := Open(Options{Root: os.Getenv("MAKA_OWNER_ROOT"), StateDir: os.Getenv("MAKA_OWNER_STATE_DIR")})
	if err != nil {
		t.Fatal(err)
	}
	owner := &Owner{Scope: scope, Agent: "bats", Call: "c1", Kind: "shell"}
	s, err := m.Launch(context.Background(), Request{ID: os.Getenv("MAKA_OWNER_ID"), Bundle: "/", Spec: DefaultSpec(os.Getenv("MAKA_ROOTFS"), IdleArgs...), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("launched " + s.ID() + "\n")
	// MAKA_OWNER_PREWARM=N: a warm pool of N beside it (api.bats: a crash
	// with a warm pool leaves nothing after recover).
	if n, _ := strconv.Atoi(os.Getenv("MAKA_OWNER_PREWARM")); n > 0 {
		if err := m.Prewarm(context.Background(), Request{Bundle: "/", Spec: DefaultSpec(os.Getenv("MAKA_ROOTFS"), IdleArgs...)}, n); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("prewarmed " + strconv.Itoa(n) + "\n")
	}
	time.Sleep(time.Hour) // until killed: the owner dies without destroying its sandbox
}

// TestGuestRecoverAndRelaunch: a detached sandbox (maka run -d) lost with
// its state root, as after a reboot, is relaunched under the Manager's
// policy, not the one it was created under. Created under onViolation
// deny, a watched call from inside is denied and the sandbox lives on;
// relaunched under restricted (kill), the same call destroys it. A policy
// that no longer allows the boundary refuses the relaunch, and nothing of
// the sandbox is left.
func TestGuestRecoverAndRelaunch(t *testing.T) {
	m, rootfs := guestManager(t, Options{})
	maka := os.Getenv("MAKA_BINARY")
	if maka == "" {
		t.Fatal("MAKA_BINARY: the maka binary is not set")
	}
	const id = "api-relaunch"
	work := t.TempDir()
	spec, err := json.Marshal(DefaultSpec(rootfs, IdleArgs...))
	if err != nil {
		t.Fatal(err)
	}
	deny := filepath.Join(work, "deny.json")
	tight := []byte(`{"profile": "baseline", "defaultLimits": {"memory": 1048576}, "maxLimits": {"memory": 1048576}}`)
	for f, data := range map[string][]byte{"config.json": spec, "deny.json": []byte(`{"profile": "restricted", "onViolation": "deny"}`)} {
		if err := os.WriteFile(filepath.Join(work, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// cli runs maka on the Manager's state directories. Its output goes
	// to a file: a detached sandbox's init keeps run's stdio open.
	cli := func(args ...string) (string, error) {
		out, err := os.CreateTemp(work, "out")
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		cmd := exec.Command(maka, append([]string{"--root", m.rt.Root, "--state-dir", m.rt.StateDir}, args...)...)
		cmd.Stdout, cmd.Stderr = out, out
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MAKA_POLICY=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		err = cmd.Run()
		data, _ := os.ReadFile(out.Name())
		return string(data), err
	}
	t.Cleanup(func() { _, _ = cli("delete", "--force", id) })
	status := func() string {
		out, _ := cli("state", id)
		var st struct{ Status string }
		_ = json.Unmarshal([]byte(out), &st)
		return st.Status
	}
	type decoded struct {
		*libmaka.ContainerRecord
		Boundary *libmaka.Boundary
		Policy   *libmaka.Policy
	}
	record := func() decoded {
		store, err := m.rt.Store(false)
		if err != nil || store == nil {
			t.Fatalf("the store: %v", err)
		}
		rec, err := store.Get(id)
		if err != nil || rec == nil {
			t.Fatalf("the record: %v", err)
		}
		d := decoded{ContainerRecord: rec}
		if d.Boundary, err = rec.Boundary.Get(); err != nil || d.Boundary == nil {
			t.Fatalf("the record's boundary: %v", err)
		}
		if d.Policy, err = rec.Policy.Get(); err != nil || d.Policy == nil {
			t.Fatalf("the record's policy: %v", err)
		}
		return d
	}
	// lose kills the sandbox's processes, its monitor and the monitor's
	// guard, removes the sandbox's cgroup and wipes its runtime state, as a
	// reboot does; the contract store survives (and the monitor's emptied
	// cgroup, which the teardown must still find through the record). The
	// monitor and its guard die first and are waited for: left alive, they
	// write their last journal lines into the state directory while it is
	// being removed (a CI run failed on "directory not empty").
	lose := func() {
		t.Helper()
		rec := record()
		if rec.MonitorCgroup == "" {
			t.Fatal("the record names no monitor cgroup")
		}
		cg := filepath.Join("/sys/fs/cgroup", rec.Boundary.Cgroup.Path)
		for _, dir := range []string{rec.MonitorCgroup, cg} {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				if ev, err := os.ReadFile(filepath.Join(dir, "cgroup.events")); err != nil || strings.Contains(string(ev), "populated 0") {
					break
				}
				if i == 100 {
					t.Fatalf("%s: still populated 10 s after cgroup.kill", dir)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		if err := os.Remove(cg); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(m.rt.Root, id)); err != nil {
			t.Fatal(err)
		}
	}
	relaunched := func(m *Manager) libmaka.RecoveryResult {
		t.Helper()
		results, err := m.RecoverAndRelaunch(maka)
		for _, r := range results {
			if r.ID == id {
				return r
			}
		}
		t.Fatalf("RecoverAndRelaunch: %v, %s not among %+v", err, id, results)
		return libmaka.RecoveryResult{}
	}

	if out, err := cli("--policy", deny, "run", "--detach", "--bundle", work, id); err != nil {
		t.Fatalf("run --detach: %v: %s", err, out)
	}
	was := record()
	if was.Policy.OnViolation != "deny" {
		t.Fatalf("created under onViolation %q, not deny", was.Policy.OnViolation)
	}
	// Under deny the watched call fails and the sandbox lives on.
	if out, err := cli("exec", id, "unshare", "-U", "true"); err == nil {
		t.Fatalf("unshare under deny succeeded: %s", out)
	}
	if st := status(); st != "running" {
		t.Fatalf("after a denied call: %q, not running", st)
	}

	lose()
	if r := relaunched(m); r.Result != libmaka.Recovered || r.Relaunched != string(libmaka.Running) {
		t.Fatalf("relaunch under restricted: %+v", r)
	}
	now := record()
	if now.Policy.OnViolation != "kill" || now.Boundary.Profile != "restricted" {
		t.Fatalf("relaunched under onViolation %q, profile %q: not today's policy", now.Policy.OnViolation, now.Boundary.Profile)
	}
	wasLimits, _ := json.Marshal(was.Boundary.Limits)
	nowLimits, _ := json.Marshal(now.Boundary.Limits)
	if string(wasLimits) != string(nowLimits) {
		t.Errorf("limits changed by the relaunch: %s, then %s", wasLimits, nowLimits)
	}
	if st := status(); st != "running" {
		t.Fatalf("relaunched sandbox: %q, not running", st)
	}
	// The same call from inside now destroys it: today's policy is the
	// one enforced, not only the one recorded.
	if out, err := cli("exec", id, "unshare", "-U", "true"); err == nil {
		t.Fatalf("unshare under kill succeeded: %s", out)
	}
	for i := 0; i < 100 && status() == "running"; i++ {
		time.Sleep(200 * time.Millisecond)
	}
	if st := status(); st != "stopped" {
		t.Fatalf("after a watched call under kill: %q, not stopped", st)
	}
	if out, err := cli("violations", "--format", "json", id); err != nil || !strings.Contains(out, `"unshare"`) {
		t.Errorf("violations after the kill: %v: %s", err, out)
	}

	// A policy that no longer allows the boundary: the relaunch is refused,
	// naming why, and the sandbox is gone with all it had.
	lose()
	tp, err := libmaka.ParsePolicy(tight)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Open(Options{Root: m.rt.Root, StateDir: m.rt.StateDir, Policy: tp})
	if err != nil {
		t.Fatal(err)
	}
	r := relaunched(m2)
	if r.Result != libmaka.Recovered || r.Relaunched != "" || !strings.Contains(r.RelaunchError, "BOUNDARY_REJECTED") || !strings.Contains(r.RelaunchError, "memory") {
		t.Fatalf("relaunch under a policy that refuses it: %+v", r)
	}
	if store, _ := m.rt.Store(false); store != nil {
		if rec, _ := store.Get(id); rec != nil {
			t.Error("a refused relaunch left the record")
		}
	}
	for _, p := range []string{filepath.Join(m.rt.Root, id), filepath.Join("/sys/fs/cgroup", was.Boundary.Cgroup.Path)} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a refused relaunch left %s", p)
		}
	}
	if _, err := m.RecoverAndRelaunch(""); err == nil {
		t.Error("RecoverAndRelaunch without a monitor program: no error")
	}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A sandbox launched with Request.Egress reaches what it declared through
// the proxy its Manager serves, and a refusal is a network record.
func TestGuestEgress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello through the proxy\n"))
			c.Close()
		}
	}()
	dest := ln.Addr().String()
	pol, err := libmaka.ParsePolicy([]byte(`{"profile": "restricted", "egress": ["` + dest + `"]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, rootfs := guestManager(t, Options{Policy: pol})
	ctx := context.Background()
	s, err := m.Launch(ctx, Request{ID: "api-egress", Bundle: "/", Spec: DefaultSpec(rootfs, IdleArgs...), Egress: []string{dest}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Destroy(); err != nil {
			t.Error(err)
		}
	}()
	ask := func(target string) string {
		res, err := s.Exec(ctx, Command{Args: []string{"sh", "-c", `printf 'CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' "$1" "$1" | nc 127.0.0.1 3128`, "sh", target}})
		if err != nil {
			t.Fatalf("CONNECT %s: %v", target, err)
		}
		return string(res.Stdout)
	}
	if out := ask(dest); !strings.Contains(out, " 200 ") || !strings.Contains(out, "hello through the proxy") {
		t.Errorf("CONNECT %s: %q", dest, out)
	}
	if out := ask("127.0.0.1:1"); !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, "raw-ip 127.0.0.1:1") {
		t.Errorf("CONNECT 127.0.0.1:1: %q", out)
	}
	recs, err := s.Violations()
	if err != nil || len(recs) != 1 || recs[0].Type != "network" || recs[0].Reason != "raw-ip" || recs[0].Action != "deny" {
		t.Errorf("violations: %v %+v", err, recs)
	}
}

// A warm pool: Prewarm launches ahead; a Launch of the same configuration
// without an ID claims one (never twice) and the pool refills; another
// configuration launches fresh; idle pool sandboxes are keyed to the pool
// scope; Close destroys the idle ones and leaves the claimed one working.
func TestGuestPool(t *testing.T) {
	m, rootfs := guestManager(t, Options{})
	ctx := context.Background()
	spec := DefaultSpec(rootfs, IdleArgs...)
	if err := m.Prewarm(ctx, Request{Bundle: "/", Spec: spec}, 2); err != nil {
		t.Fatal(err)
	}
	ready := func() []string {
		m.poolMu.Lock()
		defer m.poolMu.Unlock()
		var ids []string
		for _, p := range m.pools {
			for _, s := range p.idle {
				ids = append(ids, s.ID())
			}
		}
		return ids
	}
	before := ready()
	if len(before) != 2 {
		t.Fatalf("prewarmed: %q", before)
	}
	start := time.Now()
	s, err := m.Launch(ctx, Request{Bundle: "/", Spec: DefaultSpec(rootfs, IdleArgs...), Owner: &Owner{Scope: "ws", Agent: "a1"}})
	if err != nil {
		t.Fatal(err)
	}
	claimed := time.Since(start)
	defer func() {
		if err := s.Destroy(); err != nil {
			t.Error(err)
		}
	}()
	if !strings.HasPrefix(s.ID(), "pool-") || (s.ID() != before[0] && s.ID() != before[1]) {
		t.Fatalf("claimed %s, not one of %q", s.ID(), before)
	}
	t.Logf("claim took %s", claimed)
	r, err := s.Exec(ctx, Command{Shell: "echo claimed"})
	if err != nil || string(r.Stdout) != "claimed\n" {
		t.Fatalf("exec in the claimed sandbox: %v %+v", err, r)
	}
	// The pool refills to 2, without the claimed one.
	deadline := time.Now().Add(2 * time.Minute)
	for len(ready()) < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	now := ready()
	if len(now) != 2 || slices.Contains(now, s.ID()) {
		t.Fatalf("after the claim the pool holds %q (claimed %s)", now, s.ID())
	}
	// Idle ones are the pool's (its owner scope); the claimed one is its owner's.
	res, err := m.Purge(PoolScope)
	if err != nil {
		t.Fatal(err)
	}
	var busy []string
	for _, r := range res {
		if r.Result == "busy" {
			busy = append(busy, r.ID)
		}
	}
	slices.Sort(busy)
	slices.Sort(now)
	if !slices.Equal(busy, now) {
		t.Errorf("purge of the pool scope: %+v, want busy %q", res, now)
	}
	// Another configuration: a fresh launch under a new id.
	other, err := m.Launch(ctx, Request{Bundle: "/", Spec: DefaultSpec(rootfs, "/bin/sh", "-c", "sleep 1000")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(other.ID(), "sb-") {
		t.Errorf("another configuration got %s", other.ID())
	}
	if err := other.Destroy(); err != nil {
		t.Error(err)
	}
	// Close: the idle ones go, nothing left of them; the claimed one lives.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range now {
		if _, err := os.Stat(filepath.Join(m.rt.Root, id)); err == nil {
			t.Errorf("after Close the idle %s is left", id)
		}
	}
	if r, err := s.Exec(ctx, Command{Shell: "echo still"}); err != nil || string(r.Stdout) != "still\n" {
		t.Errorf("the claimed sandbox after Close: %v %+v", err, r)
	}
	if _, err := m.Launch(ctx, Request{Bundle: "/", Spec: spec}); !errors.Is(err, ErrClosed) {
		t.Errorf("Launch after Close: %v", err)
	}
}

// The sandbox's init is maka's resident agent (issue 26), and it is not a
// way in: a hostile command can neither signal it to death, read its
// memory or descriptors, reach its socket, nor starve it; a dead agent is
// a dead sandbox, never a command run some other way.
func TestGuestAgent(t *testing.T) {
	m, rootfs := guestManager(t, Options{})
	ctx := context.Background()
	s := launchIdle(t, m, rootfs, "api-agent")
	if s.agent == nil {
		t.Fatal("the sandbox's init is not the agent (is sandbox.test built with agent_embed?)")
	}
	// The init runs the agent from its sealed memfd, not the image's code
	// (libcontainer's init execs it once Launch has let it go).
	var exe string
	for i := 0; i < 100 && !strings.HasPrefix(exe, "/memfd:maka-agent"); i++ {
		time.Sleep(100 * time.Millisecond)
		exe, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", s.launched.Pid))
	}
	if !strings.HasPrefix(exe, "/memfd:maka-agent") {
		t.Fatalf("the init's program: %q", exe)
	}
	sh := func(script string) *Result {
		t.Helper()
		r, err := s.Exec(ctx, Command{Shell: script})
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		return r
	}
	// Each command is the agent's child, in its own child cgroup, with
	// the sandbox's credentials: no process of maka's in between.
	r := sh("echo $PPID; cat /proc/self/cgroup; grep -E '^(Uid|CapEff|NoNewPrivs|Seccomp):' /proc/self/status")
	out := string(r.Stdout)
	if !strings.HasPrefix(out, "1\n") || !strings.Contains(out, "/maka-cmd-") || !strings.Contains(out, "CapEff:\t0000000000000000") ||
		!strings.Contains(out, "NoNewPrivs:\t1") || !strings.Contains(out, "Seccomp:\t2") {
		t.Errorf("a command's parent, cgroup and credentials:\n%s", out)
	}
	// The agent reports the command's resource use.
	r = sh("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done")
	if r.CPU <= 0 || r.MaxRSSKiB <= 0 {
		t.Errorf("a busy command's use: CPU %s, max RSS %d KiB", r.CPU, r.MaxRSSKiB)
	}
	// Signals: the init of its pid namespace takes none it does not handle.
	r = sh("kill -KILL 1; kill -TERM 1; kill -STOP 1; kill -SEGV 1; sleep 1; echo alive")
	if string(r.Stdout) != "alive\n" {
		t.Errorf("after signals: %q %q", r.Stdout, r.Stderr)
	}
	// Not dumpable: its memory, descriptors, environment and program are
	// closed to the sandbox's root (no capability in its user namespace).
	// The kernel lets that root list the numbers of its descriptors and
	// mappings (it owns the directories), never what they are.
	r = sh(`for f in mem fd/0 fd/3 environ exe; do if head -c1 /proc/1/$f >/dev/null 2>&1; then echo "read $f"; fi; done
for l in exe cwd root fd/0 fd/3 $(ls /proc/1/map_files 2>/dev/null | sed 's|^|map_files/|'); do
  readlink /proc/1/$l >/dev/null 2>&1 && echo "followed $l"
done
echo done`)
	if string(r.Stdout) != "done\n" {
		t.Errorf("the agent's /proc entries reached: %q", r.Stdout)
	}
	// Its socket has no name: nothing of the sandbox's to connect to, and
	// no command holds it.
	r = sh(`cat /proc/net/unix | grep -c maka; ls -l /proc/self/fd | grep -c socket; echo end`)
	if string(r.Stdout) != "0\n0\nend\n" {
		t.Errorf("a name or a descriptor of the agent's socket inside: %q", r.Stdout)
	}
	// A hundred children left behind are killed with their command (its
	// cgroup), reaped, and the agent starts the next one. (A flood up to
	// pids.max is a violation under restricted: the sandbox's end.)
	if r := sh("for i in $(seq 100); do sleep 100 & done; echo forked"); string(r.Stdout) != "forked\n" {
		t.Errorf("a hundred children: %q", r.Stdout)
	}
	if r := sh("echo next"); string(r.Stdout) != "next\n" {
		t.Errorf("after a hundred children: %q", r.Stdout)
	}
	// Connections to it: maka's own user only (its state dir), at most
	// agent.MaxClients at once with the holder's; one over is closed,
	// and the sandbox's own commands go on.
	var clients []*agent.Client
	for i := 0; i < agent.MaxClients-1; i++ {
		f, err := monitor.DialAgent(s.launched.Container.StateDir())
		if err != nil {
			t.Fatalf("connection %d to the agent: %v", i, err)
		}
		cl, err := agent.NewClient(f)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
	}
	if f, err := monitor.DialAgent(s.launched.Container.StateDir()); err == nil {
		over, _ := agent.NewClient(f)
		select {
		case <-over.Done():
		case <-time.After(10 * time.Second):
			t.Error("a connection over the agent's maximum was kept")
		}
		over.Close()
	}
	if r := sh("echo busy"); string(r.Stdout) != "busy\n" {
		t.Errorf("with every connection taken: %q", r.Stdout)
	}
	for _, cl := range clients {
		cl.Close()
	}
	// Many at once: each gets its own answer.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r, err := s.Exec(ctx, Command{Args: []string{"echo", strconv.Itoa(i)}})
			if err != nil || string(r.Stdout) != strconv.Itoa(i)+"\n" {
				t.Errorf("concurrent command %d: %v %+v", i, err, r)
			}
		}(i)
	}
	wg.Wait()

	// A command that changes what later commands inherit from the agent
	// (its nice value): the next command is refused, the sandbox ended.
	s2 := launchIdle(t, m, rootfs, "api-agent-2")
	if r, err := s2.Exec(ctx, Command{Shell: "renice -n 5 -p 1 >/dev/null; echo reniced"}); err != nil || string(r.Stdout) != "reniced\n" {
		t.Fatalf("renice of the agent: %v %+v", err, r)
	}
	if _, err := s2.Exec(ctx, Command{Shell: "touch /maka/work/ran"}); !errors.Is(err, ErrGone) {
		t.Errorf("a command after the agent was reniced: %v, want ErrGone", err)
	}

	// Killed from the host while a command runs: that command's answer
	// is ErrGone (not an exit status), the sandbox is gone, and the next
	// command is refused, never run some other way.
	running := make(chan error, 1)
	go func() {
		_, err := s.Exec(ctx, Command{Shell: "echo up; sleep 60", Timeout: 90 * time.Second})
		running <- err
	}()
	time.Sleep(2 * time.Second)
	if err := unix.Kill(s.launched.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-running:
		if !errors.Is(err, ErrGone) {
			t.Errorf("the command running when the agent died: %v, want ErrGone", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("the command running when the agent died got no answer")
	}
	deadline := time.Now().Add(30 * time.Second)
	for unix.Kill(s.launched.Pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := s.Exec(ctx, Command{Shell: "touch /maka/work/ran"}); !errors.Is(err, ErrGone) {
		t.Errorf("a command after the agent died: %v, want ErrGone", err)
	}
	if err := s.Destroy(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(m, s); len(left) > 0 {
		t.Errorf("after the agent died, left of the sandbox: %q", left)
	}
}

// Wait returns the init's exit code as `maka run` exits with it: its own
// code, 128+N for a signal (137 when the monitor's timeout or Destroy
// killed it), the monitor's reason with it; a ctx that ends first ends the
// wait, not the sandbox.
func TestGuestWait(t *testing.T) {
	m, rootfs := guestManager(t, Options{})
	ctx := context.Background()
	run := func(id string, spec func(*specs.Spec), args ...string) *Sandbox {
		t.Helper()
		sp := DefaultSpec(rootfs, args...)
		if spec != nil {
			spec(sp)
		}
		s, err := m.Launch(ctx, Request{ID: id, Bundle: "/", Spec: sp})
		if err != nil {
			t.Fatalf("launch %s: %v", id, err)
		}
		t.Cleanup(func() {
			if err := s.Destroy(); err != nil {
				t.Errorf("destroy %s: %v", id, err)
			}
		})
		return s
	}
	// A workload's own code; asked again once it has exited, the same.
	s := run("api-wait-7", nil, "sh", "-c", "exit 7")
	if code, err := s.Wait(ctx); code != 7 || err != nil {
		t.Errorf("exit 7: %d %v", code, err)
	}
	if code, err := s.Wait(ctx); code != 7 || err != nil {
		t.Errorf("exit 7, waited again: %d %v", code, err)
	}
	s = run("api-wait-true", nil, "true")
	time.Sleep(time.Second) // exited before the call
	if code, err := s.Wait(ctx); code != 0 || err != nil {
		t.Errorf("true: %d %v", code, err)
	}
	if err := s.Destroy(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(m, s); len(left) > 0 {
		t.Errorf("after Wait and Destroy, left of the sandbox: %q", left)
	}

	// Past its lifetime (org.maka.timeout) the monitor kills it: 137, and
	// the error says why.
	s = run("api-wait-timeout", func(sp *specs.Spec) {
		sp.Annotations = map[string]string{specconv.AnnotationTimeout: "2"}
	}, "sleep", "100")
	start := time.Now()
	code, err := s.Wait(ctx)
	var v *BoundaryViolation
	if code != 137 || !errors.As(err, &v) || v.Code() != monitor.TimeoutCode {
		t.Errorf("past its timeout: %d %v", code, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("killed at its 2 s timeout, Wait returned after %s", d)
	}

	// A ctx that ends first: its error, and the sandbox lives on.
	s = launchIdle(t, m, rootfs, "api-wait-idle")
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	code, err = s.Wait(short)
	cancel()
	if code != -1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ctx past its deadline: %d %v", code, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if code, err := s.Wait(cancelled); code != -1 || !errors.Is(err, context.Canceled) {
		t.Errorf("ctx cancelled: %d %v", code, err)
	}
	if r, err := s.Exec(ctx, Command{Shell: "echo alive"}); err != nil || string(r.Stdout) != "alive\n" {
		t.Fatalf("after the waits ended: %v %+v", err, r)
	}

	// Destroy while a Wait waits: the init is killed, 137, no error.
	waited := make(chan [2]any, 1)
	go func() {
		code, err := s.Wait(ctx)
		waited <- [2]any{code, err}
	}()
	time.Sleep(500 * time.Millisecond)
	if err := s.Destroy(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-waited:
		if got[0] != 137 || got[1] != nil {
			t.Errorf("destroyed while waited for: %v %v, want 137", got[0], got[1])
		}
	case <-time.After(30 * time.Second):
		t.Error("destroyed while waited for: Wait did not return")
	}
}
