package monitor

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/internal/guardexe"
)

// guardCgroup is a directory with the two files the guard uses.
func guardCgroup(t *testing.T, populated bool) (string, *os.File) {
	t.Helper()
	dir := t.TempDir()
	ev := "populated 0\nfrozen 0\n"
	if populated {
		ev = "populated 1\nfrozen 0\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.events"), []byte(ev), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, f
}

// The guard kills the sandbox (and records why) when its monitor's end of
// the pipe closes without the disarm byte: the monitor died. Disarmed, or
// with the sandbox already empty, it does nothing. Both guards, maka-guard
// (C, exec'ing the record) and the Go one, do the same; a kill that fails
// is recorded and reported with the kernel's reason.
func TestGuard(t *testing.T) {
	cguard := cGuard(t)
	for _, tc := range []struct {
		name              string
		disarm, populated bool
		killDir           bool // cgroup.kill cannot be opened for writing
		wantKill          bool
		wantErr           string
	}{
		{"monitor died", false, true, false, true, ""},
		{"monitor ended in order", true, true, false, false, ""},
		{"sandbox already stopped", false, false, false, false, ""},
		{"the kill fails", false, true, true, false, "could not be killed: cgroup.kill: is a directory"},
	} {
		for _, impl := range []string{"go", "c"} {
			name := impl + ": " + tc.name
			dir, cg := guardCgroup(t, tc.populated)
			if tc.killDir {
				os.Remove(filepath.Join(dir, "cgroup.kill"))
				os.Mkdir(filepath.Join(dir, "cgroup.kill"), 0o700)
			}
			root := t.TempDir()
			cfg := Config{ID: "g", StateDir: filepath.Join(root, "g"), OnViolation: ActionDeny}
			os.Mkdir(cfg.StateDir, 0o700)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			if tc.disarm {
				w.Write([]byte{disarmByte})
			}
			w.Close() // the monitor's death, or its end
			if impl == "go" {
				err = runGuard(cfg, cg, r)
			} else {
				err = runCGuard(t, cguard, root, cfg, cg, r)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("%s: %v, want error %q", name, err, tc.wantErr)
			}
			if !tc.killDir {
				killed, _ := os.ReadFile(filepath.Join(dir, "cgroup.kill"))
				if (string(killed) == "1") != tc.wantKill {
					t.Errorf("%s: cgroup.kill = %q, want a kill: %v", name, killed, tc.wantKill)
				}
			}
			recs, _, err := ReadViolations(filepath.Join(cfg.StateDir, JournalFile))
			if err != nil {
				t.Fatal(err)
			}
			recorded := len(recs) == 1 && recs[0].Kind == LimitMonitorLost && recs[0].Action == ActionKill
			if want := tc.wantKill || tc.killDir; recorded != want {
				t.Errorf("%s: journal %+v, want a monitor_lost kill record: %v", name, recs, want)
			}
		}
	}
}

// cGuard is maka-guard: the one this test binary carries (guard_embed, as
// `make unit` builds it), or cmd/maka-guard built here as `make guard`
// builds it.
func cGuard(t *testing.T) *os.File {
	t.Helper()
	if guardexe.Carried() {
		f, err := guardexe.Open()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("maka-guard is for amd64 and arm64")
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build maka-guard")
	}
	out := filepath.Join(t.TempDir(), "maka-guard")
	build := exec.Command(cc, "-static", "-nostdlib", "-ffreestanding", "-fno-stack-protector", "-fno-builtin",
		"-fno-pie", "-no-pie", "-Os", "-Wall", "-Wextra", "-Werror", "-o", out, "../../cmd/maka-guard/guard.c")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building maka-guard: %v\n%s", err, msg)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// runCGuard runs maka-guard as startGuard does, with this test binary in
// place of the monitor's (TestGuardRecordHelper writes the record), and
// returns the record's error.
func runCGuard(t *testing.T, prog *os.File, root string, cfg Config, cg, pipe *os.File) error {
	t.Helper()
	exe, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	cmd := exec.Command(fmt.Sprintf("/proc/self/fd/%d", guardSelfFd))
	cmd.Args = append([]string{"maka-guard", "maka-monitor-guard", "-test.run=^TestGuardRecordHelper$", "--",
		"--root", root, "monitor", "--guard-record"}, Args(root, cfg)[3:]...)
	cmd.ExtraFiles = []*os.File{cg, pipe, exe, prog}
	cmd.Env = []string{}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	pipe.Close()
	cg.Close()
	if err != nil {
		return fmt.Errorf("%w: %s", err, stderr.String())
	}
	return nil
}

// TestGuardRecordHelper is the record maka-guard execs in TestGuard: this
// binary as the monitor's, `--root ROOT monitor --guard-record ...`.
func TestGuardRecordHelper(t *testing.T) {
	if _, ok := os.LookupEnv(guardKillEnv); !ok {
		t.Skip("run by TestGuard's maka-guard")
	}
	args := flag.Args()
	if len(args) < 3 || args[0] != "--root" || args[2] != "monitor" {
		fmt.Fprintf(os.Stderr, "bad record command line %q\n", args)
		os.Exit(2)
	}
	if err := Main(args[1], args[3:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// The record refuses a kill result that is not an errno.
func TestGuardRecordBadResult(t *testing.T) {
	t.Setenv(guardKillEnv, "-1; rm -rf /")
	err := runGuardRecord(Config{ID: "g", StateDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "is not an errno") {
		t.Fatalf("got %v", err)
	}
}
