package libmaka

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// killCgroup kills every process of the cgroup at path, waits for them to
// go and removes it (and any cgroups below it). A missing cgroup is done.
// Only the cgroup maka created is touched: its id must be id; without an id
// (a create that died before recording it) it must be empty and no older
// than created, and it is only removed (rmdir), never killed.
func killCgroup(path string, id uint64, created time.Time, wait time.Duration) error {
	return endCgroup(path, id, created, wait, true)
}

// endCgroup is killCgroup; without remove, the killed cgroup stays (its
// monitor still reads its figures as it stops).
func endCgroup(path string, id uint64, created time.Time, wait time.Duration, remove bool) error {
	dir, err := openOwnedCgroup(path, id, created)
	if err != nil || dir == nil {
		return err
	}
	defer dir.Close()
	if id == 0 {
		if err := sameCgroup(dir, path); err != nil {
			return err
		}
		if err := unix.Rmdir(path); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("cgroup %s: remove: %w", path, err)
		}
		return nil
	}
	if own, err := ownCgroup(); err == nil && (own == path || strings.HasPrefix(own, path+"/")) {
		return fmt.Errorf("cgroup %s: refusing to kill it: it holds maka itself", path)
	}
	if err := Fault("kill"); err != nil {
		return fmt.Errorf("cgroup %s: kill: %w", path, err)
	}
	if err := killAt(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cgroup %s: kill: %w", path, err)
	} else if err != nil {
		killEach(path) // a kernel before 5.14: no cgroup.kill
	}
	deadline := time.Now().Add(wait)
	for populatedAt(dir) {
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes still alive %s after being killed", path, wait)
		}
		if err := sameCgroup(dir, path); err != nil {
			return err
		}
		killEach(path)
		time.Sleep(10 * time.Millisecond)
	}
	if !remove {
		return nil
	}
	if err := sameCgroup(dir, path); err != nil {
		if _, serr := os.Lstat(path); errors.Is(serr, os.ErrNotExist) {
			return nil // removed meanwhile
		}
		return err
	}
	if err := cgroups.RemovePath(path); err != nil {
		return fmt.Errorf("cgroup %s: remove: %w", path, err)
	}
	return nil
}

// killEach SIGKILLs the processes listed in the cgroup and its children.
func killEach(path string) {
	_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		pids, _ := cgroups.GetPids(p)
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		return nil
	})
}

func ownCgroup() (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if p, ok := strings.CutPrefix(s.Text(), "0::"); ok {
			return filepath.Join(cgroupRoot, p), nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

// unmountBelow detaches every mount at or below dir, deepest first. maka
// mounts nothing outside a container's mount namespace; this removes what
// a helper might have left under the container's own state directory (the
// rootfs belongs to the caller, e.g. an engine's overlay, and is not
// touched).
func unmountBelow(dir string) error {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return fmt.Errorf("mounts below %s: %w", dir, err)
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint) })
	for _, m := range mounts {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmount %s: %w", m.Mountpoint, err)
		}
	}
	return nil
}

// Recovery results.
const (
	Recovered = "recovered" // everything removed, record dropped
	Busy      = "busy"      // a live command holds the id: not touched
	Failed    = "failed"    // cleanup failed: the record is kept for a retry
)

// RecoveryResult is what `maka recover` reports for one record.
type RecoveryResult struct {
	ID     string `json:"id"`
	Stage  Stage  `json:"stage,omitempty"`
	Owner  Owner  `json:"owner"`
	Result string `json:"result"`
	// Reason says why the record was an orphan, or why it was kept.
	Reason string `json:"reason"`
	Error  string `json:"error,omitempty"`
	// Relaunched is the status of the sandbox re-created from the
	// record (--relaunch): "created" or "running"; RelaunchError why not.
	Relaunched    string `json:"relaunched,omitempty"`
	RelaunchError string `json:"relaunchError,omitempty"`
}

// Relauncher re-creates a recovered sandbox from its record under op (the
// id's lock, its record dropped) and returns the status it left it in.
type Relauncher func(op *Op, rec *ContainerRecord) (Status, error)

// Recover reaps every orphaned record of the root: interrupted operations
// whose owner died, containers attached to a dead owner, containers whose
// runtime state is gone. Healthy containers are not touched (nor listed);
// an id a live command holds is reported busy. With relaunch, each reaped
// sandbox that had been created (not one whose create or delete was
// interrupted) is re-created from its record.
func (rt *Runtime) Recover(relaunch Relauncher) ([]RecoveryResult, error) {
	store, err := rt.Store(false)
	if err != nil || store == nil {
		return []RecoveryResult{}, err
	}
	ids, err := store.IDs()
	if err != nil {
		return nil, err
	}
	results := []RecoveryResult{}
	for _, id := range ids {
		if r, ok := rt.recoverOne(store, id, relaunch); ok {
			results = append(results, r)
		}
	}
	rt.removeStaleTemps(store)
	reclaimLeases(store, filepath.Dir(store.Dir))
	reclaimRoots(store)
	reclaimStages(store)
	return results, nil
}

func (rt *Runtime) recoverOne(store *Store, id string, relaunch Relauncher) (RecoveryResult, bool) {
	res := RecoveryResult{ID: id}
	lock, err := store.Lock(id, 0)
	if err != nil {
		res.Result, res.Reason = Busy, "another maka holds it"
		if rec, _ := store.Get(id); rec != nil {
			res.Stage, res.Owner = rec.Stage, rec.Owner
			res.Reason = fmt.Sprintf("%s holds it (stage %s)", rec.Owner, rec.Stage)
		}
		return res, true
	}
	op := &Op{rt: rt, lock: lock, ID: id, Command: "recover", committed: true}
	defer op.End()
	rec, err := store.Get(id)
	if err != nil {
		res.Result, res.Reason, res.Error = Failed, "unreadable record (kept)", err.Error()
		return res, true
	}
	if rec == nil {
		return res, false // removed since the listing
	}
	res.Stage, res.Owner = rec.Stage, rec.Owner
	res.Reason = rt.orphanReason(rec)
	if res.Reason == "" {
		// Healthy, but for its monitor: fail closed (failclosed.go).
		var lost *MonitorLostError
		if errors.As(rt.failClosed(rec), &lost) {
			res.Result, res.Reason = Recovered, lost.Reason+": killed (fail closed)"
			if lost.Err != nil {
				res.Result, res.Error = Failed, lost.Err.Error()
			}
			return res, true
		}
		return res, false
	}
	if err := rt.reap(lock, rec); err != nil {
		res.Result, res.Error = Failed, err.Error()
		return res, true
	}
	res.Result = Recovered
	if relaunch == nil || rec.Stage == StageCreating || rec.Stage == StageDeleting {
		return res, true
	}
	op.Record, op.committed = nil, false
	status, err := relaunch(op, rec)
	if err != nil {
		res.RelaunchError = err.Error()
	} else {
		res.Relaunched = string(status)
	}
	return res, true
}

// removeStaleTemps removes the temporary files of publishes a crash cut
// short, for ids no command holds.
func (rt *Runtime) removeStaleTemps(store *Store) {
	entries, err := os.ReadDir(store.recordsDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(strings.TrimPrefix(e.Name(), "."), ".json.tmp")
		if !ok || !strings.HasPrefix(e.Name(), ".") || !ValidID(id) {
			continue
		}
		if lock, err := store.Lock(id, 0); err == nil {
			_ = os.Remove(store.tempPath(id))
			lock.Unlock()
		}
	}
}
