package libmaka

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer/system"
	"golang.org/x/sys/unix"
)

// parked is a stand-in for the init of container "c" parked on the exec
// fifo: a process that lives until killed, with the fifo made beside a
// state.json naming it the way libcontainer's does.
func parked(t *testing.T, rt *Runtime) (*exec.Cmd, InitProcess) {
	const id = "c"
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	st, err := system.Stat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	init := InitProcess{Pid: cmd.Process.Pid, StartTime: st.StartTime}
	dir := filepath.Join(rt.Root, id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	state, _ := json.Marshal(map[string]any{"id": id, "init_process_pid": init.Pid, "init_process_start": init.StartTime, "config": map[string]any{"seccomp": nil}})
	if err := os.WriteFile(filepath.Join(dir, "state.json"), state, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, execFifo), 0o622); err != nil {
		t.Fatal(err)
	}
	return cmd, init
}

func beginWith(t *testing.T, rt *Runtime, init *InitProcess) *Op {
	const id = "c"
	t.Helper()
	op, err := rt.Begin(id, "create")
	if err != nil {
		t.Fatal(err)
	}
	rec := testRecord(t, rt.Root, id, StageCreated, self(t))
	rec.Init = init
	if err := op.publishFirst(rec); err != nil {
		t.Fatal(err)
	}
	if err := op.Commit(StageCreated, false); err != nil {
		t.Fatal(err)
	}
	op.End()
	op, err = rt.Begin(id, "start")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.End)
	return op
}

func wantStatus(t *testing.T, op *Op, want Status) {
	t.Helper()
	got, err := op.Status()
	if err != nil || got != want {
		t.Fatalf("status %q, %v; want %q", got, err, want)
	}
}

// start and delete answer "created, running or stopped" from the record
// and the kernel, as libcontainer's refreshState would (initstatus.go): the
// init's identity from the record, or from state.json's first fields for a
// record that has none; start reads the exec fifo and removes it.
func TestStatusAndStartFromTheRecord(t *testing.T) {
	for _, recorded := range []bool{true, false} {
		rt, _ := testStore(t)
		cmd, init := parked(t, rt)
		var rinit *InitProcess
		if recorded {
			rinit = &init
		}
		op := beginWith(t, rt, rinit)
		wantStatus(t, op, Created)
		// The init's end: it opens the fifo for writing and writes one byte.
		go func() {
			f, err := os.OpenFile(filepath.Join(rt.Root, "c", execFifo), os.O_WRONLY, 0)
			if err == nil {
				_, _ = f.Write([]byte{0})
				f.Close()
			}
		}()
		if err := op.Start(); err != nil {
			t.Fatalf("recorded %v: start: %v", recorded, err)
		}
		if _, err := os.Lstat(filepath.Join(rt.Root, "c", execFifo)); !os.IsNotExist(err) {
			t.Fatalf("the exec fifo is still there after start: %v", err)
		}
		wantStatus(t, op, Running)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		wantStatus(t, op, Stopped)
	}
}

// A pid reused by another process is not the init.
func TestStatusPidReused(t *testing.T) {
	rt, _ := testStore(t)
	_, init := parked(t, rt)
	init.StartTime++
	op := beginWith(t, rt, &init)
	wantStatus(t, op, Stopped)
}

// An init that died parked never opens the fifo: start says so (after its
// next check, 100 ms) rather than waiting for ever.
func TestStartInitDiedParked(t *testing.T) {
	rt, _ := testStore(t)
	cmd, init := parked(t, rt)
	op := beginWith(t, rt, &init)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	done := make(chan error, 1)
	go func() { done <- op.Start() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "already dead") {
			t.Fatalf("start of a dead init: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("start waited for a dead init")
	}
}

// Whatever stands at the fifo's name that is not a fifo (a file, a link
// to one) is neither read nor removed.
func TestStartRefusesWhatIsNotTheFifo(t *testing.T) {
	for _, kind := range []string{"file", "symlink"} {
		rt, _ := testStore(t)
		_, init := parked(t, rt)
		op := beginWith(t, rt, &init)
		fifo := filepath.Join(rt.Root, "c", execFifo)
		target := filepath.Join(t.TempDir(), "target")
		if err := os.WriteFile(target, []byte("0"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(fifo)
		var err error
		if kind == "file" {
			err = os.WriteFile(fifo, []byte("0"), 0o600)
		} else {
			err = os.Symlink(target, fifo)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Start(); err == nil {
			t.Fatalf("%s: start read it", kind)
		}
		if _, err := os.Lstat(fifo); err != nil {
			t.Fatalf("%s: removed: %v", kind, err)
		}
		if _, err := os.Stat(target); err != nil {
			t.Fatalf("%s: target removed: %v", kind, err)
		}
	}
}

// An init that has exited but is not reaped yet (a zombie) is stopped.
func TestStatusZombieIsStopped(t *testing.T) {
	rt, _ := testStore(t)
	_, _ = parked(t, rt)
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	var st system.Stat_t
	for i := 0; i < 500; i++ {
		var err error
		if st, err = system.Stat(pid); err != nil {
			t.Fatal(err)
		}
		if st.State == system.Zombie {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.State != system.Zombie {
		t.Fatalf("the child never became a zombie: %v", st.State)
	}
	op := beginWith(t, rt, &InitProcess{Pid: pid, StartTime: st.StartTime})
	wantStatus(t, op, Stopped)
}
