package libmaka

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// CrashEnv names the test-only fault injection: MAKA_TEST_CRASH_AT=STAGE
// makes maka SIGKILL itself when it reaches STAGE, so that tests can prove
// that recovery leaves nothing behind whichever step a crash interrupts.
// It is always compiled in: a check of one environment variable at a few
// points per command costs nothing next to a container operation, and the
// binary under test is then the binary that ships. Stages (docs/recovery.md):
//
//	create:record-published  record on disk, nothing else exists
//	create:cgroup-made       + libcontainer state dir and the empty cgroup, its id not yet recorded
//	create:cgroup-created    + the cgroup's id in the record
//	create:init-setup        + init in the cgroup, mid-setup (createRuntime hooks time), no state.json
//	create:init-spawned      + state.json, init waiting for start; pid file not written
//	run:*                    the same four points of `maka run`
//	start:record-published   record says "starting", nothing started
//	start:after-exec         the user process runs; record still "starting"
//	delete:record-published  record says "deleting", nothing removed
//	delete:mid-delete        container killed, cgroup and state still there
//	delete:state-removed     cgroup and state removed, record still there
const CrashEnv = "MAKA_TEST_CRASH_AT"

// CrashPoint kills this process with SIGKILL if MAKA_TEST_CRASH_AT names
// stage. SIGKILL, not exit: no deferred cleanup may run, as in a real crash.
func CrashPoint(stage string) {
	if want := os.Getenv(CrashEnv); want == "" || want != stage {
		return
	}
	fmt.Fprintf(os.Stderr, "maka: %s=%s: killing myself (SIGKILL)\n", CrashEnv, stage)
	_ = unix.Kill(os.Getpid(), unix.SIGKILL)
	select {} // the signal is delivered before this returns to user code
}

// CrashWanted reports whether MAKA_TEST_CRASH_AT names a stage of command
// (e.g. "create:init-setup"): used to install the in-libcontainer crash hook
// only when a test asks for it.
func CrashWanted(stage string) bool {
	want := os.Getenv(CrashEnv)
	return want != "" && want == stage && strings.Contains(stage, ":")
}

// FaultEnv names the other test-only injection: MAKA_TEST_FAIL_AT=STEP
// makes STEP fail with an error (maka goes on), so that tests can prove
// what a failing step keeps. Steps: kill (Container.Kill, every call).
const FaultEnv = "MAKA_TEST_FAIL_AT"

// Fault returns an error if MAKA_TEST_FAIL_AT names step.
func Fault(step string) error {
	if want := os.Getenv(FaultEnv); want == "" || want != step {
		return nil
	}
	return fmt.Errorf("%s=%s: injected failure", FaultEnv, step)
}
