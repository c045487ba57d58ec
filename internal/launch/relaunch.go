package launch

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
)

// Relaunch creates the sandbox of rec again under op (the id's lock, held
// by libmaka's Recover): the boundary it was created with (never
// config.json, which may have changed), checked again against today's
// policy and on the host as it is now (Recompile), the launch options it
// had, a fresh instance, on the launch path create and run use. A sandbox
// that had been started is started again (the returned status says
// which); its poststart hooks are the caller's to run once the id's lock
// is released (Poststart). Its stdio is /dev/null.
//
// Only a detached sandbox (maka create, run --detach) is relaunched: a
// foreground run's or a Manager's caller is gone, and nobody would wait for
// the copy, forward its signals or remove it. monitors are the programs its
// monitor process may run (Executables).
func Relaunch(rt *libmaka.Runtime, op *libmaka.Op, rec *libmaka.ContainerRecord, policy *libmaka.Policy, monitors []*os.File, checks []libmaka.HostCheck) (libmaka.Status, *Launched, error) {
	if rec.Attached {
		return "", nil, errors.New("it was a foreground run whose maka is gone: nobody would wait for it or remove it")
	}
	b, err := rec.Boundary.Get()
	if err != nil {
		return "", nil, fmt.Errorf("the record's boundary: %w", err)
	}
	was, err := rec.Policy.Get()
	if err != nil {
		return "", nil, fmt.Errorf("the record's policy: %w", err)
	}
	if b.Process.Terminal {
		return "", nil, errors.New("its process needs a terminal: a relaunch has no console socket to hand it to")
	}
	if was == nil {
		return "", nil, errors.New("the record has no policy")
	}
	if len(monitors) == 0 {
		return "", nil, errors.New("no monitor program to watch it (maka or maka-monitor)")
	}
	if err := relaunchable(was.Rootless != nil); err != nil {
		return "", nil, err
	}
	// Today's policy, and the host as it is now (a bind source that was
	// a directory may be a link to /etc now); the record keeps what was
	// checked at create.
	b, eff, err := Recompile(b, was, policy, rec.ID, rec.Bundle, NeverPaths(rt.Root, rt.StateDir), checks)
	if err != nil {
		return "", nil, err
	}
	process, err := InitProcess(b)
	if err != nil {
		return "", nil, err
	}
	// Not the caller's stdio: whoever reads recover's output would wait
	// for the relaunched sandbox to end.
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return "", nil, err
	}
	defer null.Close()
	process.Stdin, process.Stdout, process.Stderr = null, null, null
	start := rec.Stage == libmaka.StageRunning
	l, err := Run(rt, Launch{
		ID:       rec.ID,
		Bundle:   rec.Bundle,
		Boundary: b,
		Policy:   eff,
		Options:  rec.Options,
		Command:  "recover",
		Start:    start,
		Monitors: monitors,
		Process:  process,
		Op:       op,
	})
	if err != nil {
		return "", nil, err
	}
	if !start {
		return libmaka.Created, l, nil
	}
	return libmaka.Running, l, nil
}

// relaunchable refuses a relaunch this process cannot make as the sandbox
// was made: a sandbox of a rootless maka is relaunched by one, in the same
// way, and a root maka's by root.
func relaunchable(rootless bool) error {
	if err := libmaka.CheckCgroupV2(); err != nil {
		return err
	}
	if rootless != (os.Geteuid() != 0) {
		return fmt.Errorf("it was made by a maka running as %s: relaunch it as such", map[bool]string{true: "an ordinary user", false: "root"}[rootless])
	}
	if rootless {
		if _, missing := libmaka.CheckRootless(); len(missing) > 0 {
			return fmt.Errorf("rootless: %s", strings.Join(missing, "; "))
		}
	}
	return nil
}
