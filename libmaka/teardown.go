package libmaka

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/maka-runtime/maka/libmaka/phase"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
)

// KillTimeout bounds how long a teardown waits for a killed sandbox's
// processes to be gone.
const KillTimeout = 10 * time.Second

// Teardown ends the sandbox of op's id: every path that ends one (delete,
// a foreground run's end, the Go API's Destroy and purge) calls it, and
// recover and a failed create reach the same routine (reap). ctr is the
// loaded container, or nil to load it here. afterKill, if set, runs once
// no process of the sandbox is left (the Go API collects its monitor's
// verdict there).
//
// The order cannot leak: the processes first, then the monitor, the
// cgroup, the mounts and the state, and the record with its lease of ids
// last. A step that fails stops the teardown and keeps the record and the
// lease, so that no id block is handed out again while a process of the
// sandbox may live, and `maka recover` retries. The poststop hooks run last,
// once the rest is gone; one that fails is a warning (runtime spec, step 13).
func (op *Op) Teardown(ctr *Container, afterKill func()) error {
	gone, err := op.rt.teardown(op.lock, op.ID, op.Record, ctr, afterKill, op.Command)
	if gone {
		op.Record, op.committed = nil, true
	}
	return err
}

// reap is Teardown for a record whose owner is gone (recover, a command
// meeting an orphan, a create that failed): the same steps, under lock.
func (rt *Runtime) reap(lock *Lock, rec *ContainerRecord) error {
	gone, err := rt.teardown(lock, rec.ID, rec, nil, nil, "reap")
	if gone && err != nil {
		// The sandbox is gone; only libcontainer's destroy complained.
		logrus.Warnf("container %s: %v", rec.ID, err)
		return nil
	}
	return err
}

// teardown is the one routine behind Teardown and reap. gone reports that
// the record was dropped (err may then be libcontainer's destroy's
// complaint about what the later steps removed).
func (rt *Runtime) teardown(lock *Lock, id string, rec *ContainerRecord, ctr *Container, afterKill func(), command string) (gone bool, err error) {
	stateDir := filepath.Join(rt.Root, id)
	// A record naming the cgroup maka created is enough to end the
	// sandbox: that cgroup's kill ends every process of it (none can leave
	// it: the cgroup namespace's root is its own, the files above are the
	// host's), and what libcontainer's destroy would add (the state
	// directory, the cgroup) is removed below. libcontainer's state is
	// loaded only without such a record (made before the cgroup, or by an
	// older maka: libcontainer knows the init) or for the poststop hooks'
	// state (its bundle and annotations); it decodes the sandbox's whole
	// configuration (docs/dev/performance.md, change 16).
	byRecord := rec != nil && rec.CgroupID != 0
	var hooks Record
	switch {
	case ctr != nil:
		hooks = ctr.Record
	case byRecord:
		// One that cannot be read keeps nothing else from going.
		var rerr error
		if hooks, rerr = readRecord(rt.Root, id); rerr != nil {
			logrus.Warnf("container %s: %v", id, rerr)
		}
	}
	if byRecord && len(hooks.Poststop) == 0 {
		ctr = nil
	} else if ctr == nil {
		if lc, lerr := libcontainer.Load(rt.Root, id); lerr == nil {
			ctr = &Container{Container: lc, rt: rt}
			if rerr := ctr.readRecord(); rerr != nil {
				logrus.Warnf("container %s: %v", id, rerr)
			}
		}
	}
	killed := false
	if ctr != nil {
		// The record this teardown read under the id's lock is what
		// the ownership checks compare with: no second read.
		ctr.held = rec
		if err := ctr.Kill(KillTimeout); err != nil {
			return false, err
		}
		killed = true
	}
	// libcontainer's kill waits for the init only: the cgroup's for
	// every process of the sandbox (afterKill relies on none being left).
	if byRecord {
		if err := endCgroup(rec.CgroupPath, rec.CgroupID, rec.Created, KillTimeout, false); err != nil {
			return false, err
		}
		killed = true
	}
	if killed {
		phase.Mark("teardown: kill")
	}
	if afterKill != nil {
		afterKill()
	}
	monitor.Stop(stateDir)
	// Its cgroup goes once the sandbox is dead (below); libcontainer's
	// destroy removes the state directory that names it.
	monCgroup, err := monitor.CgroupOf(stateDir)
	if err != nil {
		return false, err
	}
	if monCgroup == "" && rec != nil {
		// The state directory is gone (lost): the record still names it.
		monCgroup = rec.MonitorCgroup
	}
	// A monitor that did not stop within Stop's grace (slow: it runs on
	// half a CPU in its own cgroup) still writes into the state directory:
	// it and its guard are killed now, before libcontainer's destroy
	// removes that directory (CI-E, userns.bats' six concurrent creates:
	// "unlinkat …: directory not empty"). Only once Kill has ended the
	// sandbox: never a live sandbox without its monitor.
	if killed {
		if err := monitor.RemoveCgroupPath(monCgroup); err != nil {
			return false, err
		}
	}
	phase.Mark("teardown: monitor")
	CrashPoint(command + ":mid-delete")
	var destroyErr error
	var poststop *specs.State
	if ctr != nil {
		if len(ctr.Record.Poststop) > 0 {
			// The state the hooks get, taken while libcontainer's
			// state is there (its bundle and annotations).
			if st, serr := ctr.OCIState(); serr == nil {
				st.Status, st.Pid = specs.StateStopped, 0
				poststop = st
			} else {
				logrus.Warnf("container %s: poststop hooks: %v", id, serr)
			}
		}
		// A failure here is checked below: what matters is that the
		// cgroup and the state are gone.
		destroyErr = ctr.Destroy()
		phase.Mark("teardown: libcontainer destroy")
	}
	if rec != nil {
		if err := killCgroup(rec.CgroupPath, rec.CgroupID, rec.Created, KillTimeout); err != nil {
			return false, err
		}
	}
	// The monitor's own cgroup once the sandbox is dead (a cgroup that
	// will not go keeps the record for recover, never a live sandbox
	// without its monitor).
	if err := monitor.RemoveCgroupPath(monCgroup); err != nil {
		return false, err
	}
	phase.Mark("teardown: cgroups")
	if err := unmountBelow(stateDir); err != nil {
		return false, err
	}
	phase.Mark("teardown: mounts")
	if _, serr := os.Stat(stateDir); serr == nil && rec != nil {
		if err := lock.store.Archive(id, rec.Created, stateDir); err != nil {
			logrus.Warnf("container %s: %v", id, err)
		}
	}
	phase.Mark("teardown: archive")
	if err := os.RemoveAll(stateDir); err != nil {
		return false, fmt.Errorf("container %s: remove state: %w", id, err)
	}
	phase.Mark("teardown: state")
	CrashPoint(command + ":state-removed")
	// No process of the sandbox is left: Drop gives its ids back.
	if err := lock.drop(rec); err != nil {
		return false, err
	}
	phase.Mark("teardown: record")
	if poststop != nil {
		RunPoststop(id, ctr.Record.Poststop, poststop)
	}
	return true, destroyErr
}
