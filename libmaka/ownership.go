package libmaka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
)

// LockWait bounds how long a command waits while another maka changes the
// same container.
const LockWait = 2 * time.Minute

// Op is one command's exclusive hold on a container id: the id's lock, and
// the record as the command found it. Every command that changes a
// container (create, run, start, kill, delete, pause, resume, update, exec's
// setup) holds one from before its first change to after its last, so two
// commands never drive one sandbox at once. End releases it.
type Op struct {
	rt      *Runtime
	lock    *Lock
	ID      string
	Command string
	// Record is the id's record (nil if there is none, e.g. before create).
	Record *ContainerRecord
	// Reaped is set when the command found a dead owner's leftovers for
	// the id and removed them first: it says why they were leftovers.
	Reaped string

	prev      *ContainerRecord // the record before Transition, restored by End
	creating  bool             // this op published the id's first record
	committed bool
	leased    *leaseRef // the id block this op leased (LeaseIDs)
	scaffold  string    // the root scaffold this op built (BuildRoot)
	staged    int       // mounts this op staged (Stage)
	// stageGID: the group that may search the stage directory (the
	// sandbox's root's host gid, with a user namespace), or -1: none.
	stageGID int
	// holder holds the user namespace BuildOverlayRoot made until
	// libcontainer's init has joined it (End stops it).
	holder *usernsHolder
}

// Begin takes the id's lock for command (waiting up to LockWait for another
// holder) and cleans a dead owner's leftovers for the id, if any.
func (rt *Runtime) Begin(id, command string) (*Op, error) {
	// A --root that cannot be a directory fails every command: refuse it
	// before the store (a directory per root) is made for it.
	if st, err := os.Stat(rt.Root); (err == nil && !st.IsDir()) || errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("--root %s: not a directory", rt.Root)
	}
	store, err := rt.Store(true)
	if err != nil {
		return nil, err
	}
	phase.Mark("store: open")
	lock, err := store.Lock(id, LockWait)
	if err != nil {
		return nil, err
	}
	phase.Mark("store: flock")
	op := &Op{rt: rt, lock: lock, ID: id, Command: command}
	if err := op.load(); err != nil {
		lock.Unlock()
		return nil, err
	}
	return op, nil
}

// load reads the record under the lock, reaping it if it is an orphan.
func (op *Op) load() error {
	rec, err := op.lock.store.Get(op.ID)
	if err != nil {
		return err
	}
	if rec != nil {
		if reason := op.rt.orphanReason(rec); reason != "" {
			if err := op.rt.reap(op.lock, rec); err != nil {
				return fmt.Errorf("container %s: leftovers of an interrupted operation (%s) could not be removed (kept for `maka recover`): %w", op.ID, reason, err)
			}
			logrus.Infof("container %s: removed the leftovers of an interrupted operation: %s", op.ID, reason)
			op.Reaped, rec = reason, nil
		}
	}
	op.Record = rec
	return nil
}

// publishFirst publishes the record of a container being created.
func (op *Op) publishFirst(rec *ContainerRecord) error {
	owner, err := CurrentOwner(op.Command)
	if err != nil {
		return err
	}
	rec.ID, rec.Stage, rec.Owner = op.ID, StageCreating, owner
	if err := op.lock.Publish(rec); err != nil {
		return err
	}
	op.Record, op.creating = rec, true
	return nil
}

// Transition publishes that this command has begun changing the container
// (e.g. StageStarting): if it dies before Commit, the record says so and the
// next command, or `maka recover`, reaps the container. If the command
// fails instead, End restores the record as it was.
func (op *Op) Transition(stage Stage) error {
	if op.Record == nil {
		return nil // a container without a record (made by an older maka)
	}
	if op.prev == nil {
		prev := *op.Record
		op.prev = &prev
	}
	return op.publish(stage, op.Record.Attached)
}

// Commit publishes that the command's change completed: the container is
// at stage, attached to this process (a foreground run) or not.
func (op *Op) Commit(stage Stage, attached bool) error {
	if op.Record == nil {
		op.committed = true
		return nil
	}
	if err := op.publish(stage, attached); err != nil {
		return err
	}
	op.committed = true
	return nil
}

func (op *Op) publish(stage Stage, attached bool) error {
	owner, err := CurrentOwner(op.Command)
	if err != nil {
		return err
	}
	rec := *op.Record
	rec.Stage, rec.Owner, rec.Attached = stage, owner, attached
	if err := op.lock.Publish(&rec); err != nil {
		return err
	}
	op.Record = &rec
	return nil
}

// Drop removes the record: the container is gone.
func (op *Op) Drop() error {
	if err := op.lock.Drop(); err != nil {
		return err
	}
	op.Record, op.committed = nil, true
	return nil
}

// OwnedBySelf reports whether this process is the record's owner.
func (op *Op) OwnedBySelf() bool {
	return op.Record != nil && op.Record.Owner.Pid == os.Getpid()
}

// End releases the lock. A create that did not commit removes what it made
// (the record last, and only once the cgroup and state are gone); another
// command that did not commit restores the record it changed.
func (op *Op) End() {
	if op == nil || op.lock == nil {
		return
	}
	// The sandbox's init holds its user namespace now (or there is none).
	op.holder.stop()
	if !op.committed {
		switch {
		case op.creating && op.Record != nil:
			if err := op.rt.reap(op.lock, op.Record); err != nil {
				logrus.Warnf("container %s: failed create: %v (the record is kept for `maka recover`)", op.ID, err)
			}
		case op.prev != nil:
			if err := op.lock.Publish(op.prev); err != nil {
				logrus.Warnf("container %s: restore record: %v", op.ID, err)
			}
		case op.leased != nil:
			// Leased, never published: nothing ran on the block.
			if err := releaseLease(op.leased.path, op.leased.lease.Root, op.leased.lease.ID); err != nil {
				logrus.Warnf("container %s: %v (`maka recover` reclaims it)", op.ID, err)
			}
		}
		// A scaffold no published record names: nothing runs on it.
		if op.scaffold != "" && (!op.creating || op.Record == nil) && op.prev == nil {
			if err := removeRoot(op.scaffold); err != nil {
				logrus.Warnf("container %s: %v (`maka recover` removes it)", op.ID, err)
			}
		}
	}
	// A create that did not commit: its staged mounts go (reap has dropped
	// them with the record; a failure before publishing leaves them here).
	// A committed create keeps them until its teardown: libcontainer keeps
	// the staged root as the container's rootfs path (exec starts its
	// process there), and Lock.Drop unstages.
	if op.staged > 0 && !op.committed {
		if err := unstage(stageDir(op.lock.store, op.ID)); err != nil {
			logrus.Warnf("container %s: %v (`maka recover` removes it)", op.ID, err)
		}
	}
	op.lock.Unlock()
	op.lock = nil
}

// orphanReason says why rec's container must be reaped, or "" if it is
// healthy or a live command drives it. Call it holding the id's lock (or
// having seen it free): a live command holds the lock for as long as its
// stage is transitional.
func (rt *Runtime) orphanReason(rec *ContainerRecord) string {
	alive := rec.Owner.Alive()
	switch {
	case rec.Stage.Transitional() && !alive:
		return fmt.Sprintf("%s interrupted: its owner %s is gone", operationOf(rec.Stage), rec.Owner)
	case rec.Attached && !alive:
		return fmt.Sprintf("its owner %s is gone and the container was attached to it (foreground run)", rec.Owner)
	case !rec.Stage.Transitional():
		state := filepath.Join(rec.Root, rec.ID, "state.json")
		if _, err := os.Stat(state); os.IsNotExist(err) {
			return fmt.Sprintf("its runtime state %s is gone: the container can no longer be driven", state)
		}
	}
	return ""
}

func operationOf(s Stage) string {
	switch s {
	case StageCreating:
		return "create"
	case StageStarting:
		return "start"
	case StageDeleting:
		return "delete"
	}
	return string(s)
}

// Orphan reports, without changing anything, why id's record is an
// orphan ("" if it is healthy, busy or has no record), and the record.
func (rt *Runtime) Orphan(id string) (*ContainerRecord, string, error) {
	store, err := rt.Store(false)
	if err != nil || store == nil {
		return nil, "", err
	}
	rec, err := store.Get(id)
	if err != nil || rec == nil {
		return rec, "", err
	}
	if store.Busy(id) {
		return rec, "", nil
	}
	return rec, rt.orphanReason(rec), nil
}

// StateOf is the state of id as `maka state` prints it: libcontainer's
// view of the container, or, for a container that has only a record (a
// create in progress, or the leftovers of one), the record's. Orphaned
// tells a crashed command's leftovers from a healthy container.
func (rt *Runtime) StateOf(id string) (*State, error) {
	var st *State
	ctr, err := rt.Load(id)
	if err == nil {
		if st, err = ctr.State(); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, ErrNotExist) {
		return nil, err
	}
	rec, reason, rerr := rt.Orphan(id)
	if rerr != nil {
		logrus.Warnf("container %s: %v", id, rerr)
	}
	if st == nil {
		if rec == nil {
			return nil, err
		}
		st = recordState(rec)
	}
	st.Orphaned = reason
	return st, nil
}

// recordState describes a container that has a record and no runtime
// state: being created, or the leftovers of a crashed command.
func recordState(rec *ContainerRecord) *State {
	status := Status("creating")
	if rec.Stage != StageCreating {
		status = Stopped
	}
	st := &State{
		OCIVersion: specs.Version,
		ID:         rec.ID,
		Status:     status,
		Bundle:     rec.Bundle,
		Created:    rec.Created,
	}
	if b, err := HeadOf(&rec.Boundary); err == nil && b != nil {
		st.Rootfs = b.Rootfs.Path
	}
	return st
}

// AllIDs lists the ids that have runtime state or a record, sorted.
func (rt *Runtime) AllIDs() ([]string, error) {
	ids, err := rt.IDs()
	if err != nil {
		return nil, err
	}
	store, err := rt.Store(false)
	if err != nil {
		return nil, err
	}
	more, err := store.IDs()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range more {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}
