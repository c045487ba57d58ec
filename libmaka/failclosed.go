package libmaka

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/sirupsen/logrus"
)

// Fail closed: a detached sandbox is watched by its monitor process, which
// answers its watched syscalls, records its violations and enforces its
// timeout. If the monitor dies (OOM-killed, SIGKILLed by an administrator
// or a bug), nothing would enforce them any more; so every maka command
// that meets the sandbox (FailClosed, from the CLI's lookup of a container)
// and recover check the monitor (its pid and start time, through a pidfd:
// monitor.MonitorStatus) and kill a sandbox whose monitor is gone, and one
// that outlived its timeout while no monitor can be verified. Why is
// recorded in its violation journal (a kill record: never dropped).

// MonitorLost is the kind of the record a fail-closed kill writes.
const MonitorLost = monitor.LimitMonitorLost

// MonitorLostError says a sandbox was found without its monitor (or past
// its timeout without one) and killed.
type MonitorLostError struct {
	ID, Reason string
	Err        error // the kill's failure, if it failed
}

func (e *MonitorLostError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("container %s: %s; killing it failed: %v", e.ID, e.Reason, e.Err)
	}
	return fmt.Sprintf("container %s: %s: the sandbox was killed (fail closed)", e.ID, e.Reason)
}

func (e *MonitorLostError) Unwrap() error { return e.Err }

// failClosedReason is why the sandbox of rec, whose monitor is in state
// mon, must be killed now ("" if it need not be), and the kind of the
// record that says so.
func failClosedReason(rec *ContainerRecord, mon monitor.MonitorState, now time.Time) (string, string) {
	// A foreground run's monitor lives in its owner; an operation in
	// progress (creating, starting, deleting) holds the sandbox.
	if rec.Attached || (rec.Stage != StageCreated && rec.Stage != StageRunning) {
		return "", ""
	}
	if mon == monitor.MonitorDead {
		return "its monitor is gone (nothing watches its boundary or its timeout)", MonitorLost
	}
	if mon == monitor.MonitorAlive {
		// It watches the boundary and the timeout: the contract need not
		// be read (a scan of the whole boundary, at every command).
		return "", ""
	}
	head, err := HeadOf(&rec.Boundary)
	if err != nil {
		// An unreadable contract cannot say the sandbox may go on.
		return fmt.Sprintf("its contract's boundary cannot be read (%v) and no monitor could be verified", err), MonitorLost
	}
	var timeout int64
	if head != nil {
		timeout = head.Limits.Timeout
	}
	if timeout > 0 && now.After(rec.Created.Add(time.Duration(timeout)*time.Second)) {
		return fmt.Sprintf("it outlived its timeout of %d s and no monitor could be verified", timeout), monitor.LimitTimeout
	}
	return "", ""
}

// timeoutOf is the timeout of rec's boundary (0: none or unreadable), for
// the journal's record of a timeout failClosedReason found.
func timeoutOf(rec *ContainerRecord) int64 {
	head, err := HeadOf(&rec.Boundary)
	if err != nil || head == nil {
		return 0
	}
	return head.Limits.Timeout
}

// FailClosed checks the monitor of container id (its record in the store)
// and, if the sandbox must not run on without it, kills it (cgroup.kill of
// the cgroup maka created; the state stays, stopped, for delete) and
// records why. It returns a *MonitorLostError when it killed (or failed
// to), nil when the sandbox may go on (or has no process, or no record).
func (rt *Runtime) FailClosed(id string) error {
	store, err := rt.Store(false)
	if err != nil || store == nil {
		return nil
	}
	rec, err := store.Get(id)
	if err != nil || rec == nil {
		return nil
	}
	return rt.failClosed(rec)
}

// FailClosed is Runtime.FailClosed for the id op holds, on the record Begin
// read under op's lock: the command that holds the lock reads its record
// once.
func (op *Op) FailClosed() error {
	if op.Record == nil || op.rt == nil {
		return nil
	}
	return op.rt.failClosed(op.Record)
}

func (rt *Runtime) failClosed(rec *ContainerRecord) error {
	stateDir := filepath.Join(rec.Root, rec.ID)
	reason, kind := failClosedReason(rec, monitor.MonitorStatus(stateDir), time.Now())
	if reason == "" || rec.CgroupID == 0 {
		return nil
	}
	dir, err := openOwnedCgroup(rec.CgroupPath, rec.CgroupID, rec.Created)
	if err != nil {
		return &MonitorLostError{ID: rec.ID, Reason: reason, Err: err}
	}
	if dir == nil {
		return nil // no cgroup: nothing runs
	}
	defer dir.Close()
	if !populatedAt(dir) {
		return nil // stopped: its monitor exited with it
	}
	// Recorded first, as the monitor does: whoever sees it stopped sees why.
	r := monitor.Record{Time: time.Now().UTC(), Type: monitor.TypeLimit, Action: monitor.ActionKill, Kind: kind}
	if kind == monitor.LimitTimeout {
		r.Limit = timeoutOf(rec)
	}
	if j, jerr := monitor.OpenJournal(filepath.Join(stateDir, monitor.JournalFile)); jerr == nil {
		jerr = errors.Join(j.Append(r), j.Close())
		if jerr != nil {
			logrus.Warnf("container %s: %v", rec.ID, jerr)
		}
	} else {
		logrus.Warnf("container %s: %v", rec.ID, jerr)
	}
	lost := &MonitorLostError{ID: rec.ID, Reason: reason}
	if err := killAt(dir); err != nil {
		lost.Err = fmt.Errorf("cgroup %s: kill: %w", rec.CgroupPath, err)
		return lost
	}
	for deadline := time.Now().Add(5 * time.Second); populatedAt(dir); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			lost.Err = fmt.Errorf("cgroup %s: processes still alive 5s after being killed", rec.CgroupPath)
			return lost
		}
	}
	return lost
}
