package libmaka

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testRecord is a valid record whose paths lie in dir; its cgroup does not
// exist, so reaping it touches no cgroup.
func testRecord(t *testing.T, root, id string, stage Stage, owner Owner) *ContainerRecord {
	t.Helper()
	return &ContainerRecord{
		ID:         id,
		Root:       root,
		Bundle:     "/bundle",
		CgroupPath: "/sys/fs/cgroup/maka-unit-test-does-not-exist/" + id,
		CgroupID:   4242,
		Created:    time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Stage:      stage,
		Owner:      owner,
		Boundary:   Hold(&Boundary{Profile: "restricted"}),
	}
}

func testStore(t *testing.T) (*Runtime, *Store) {
	t.Helper()
	dir := t.TempDir()
	rt := &Runtime{Root: filepath.Join(dir, "root"), StateDir: filepath.Join(dir, "state")}
	s, err := rt.Store(true)
	if err != nil {
		t.Fatal(err)
	}
	return rt, s
}

func self(t *testing.T) Owner {
	t.Helper()
	o, err := CurrentOwner("test")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// deadOwner is the owner record of a process that has exited.
func deadOwner(t *testing.T) Owner {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return Owner{Pid: cmd.Process.Pid, StartTime: 1, Command: "create"}
}

func TestPublishIsAtomicAndReadBack(t *testing.T) {
	_, s := testStore(t)
	l, err := s.Lock("box", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	rec := testRecord(t, s.Root, "box", StageCreating, self(t))
	if err := l.Publish(rec); err != nil {
		t.Fatal(err)
	}
	rec.Stage = StageCreated
	if err := l.Publish(rec); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get("box")
	if err != nil || got == nil {
		t.Fatalf("Get: %v %v", got, err)
	}
	if got.Stage != StageCreated || got.CgroupPath != rec.CgroupPath || got.Owner != rec.Owner {
		t.Errorf("read back %+v, published %+v", got, rec)
	}
	fi, err := os.Stat(s.recordPath("box"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %04o, want 0600", fi.Mode().Perm())
	}
	if _, err := os.Stat(s.tempPath("box")); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	ids, _ := s.IDs()
	if len(ids) != 1 || ids[0] != "box" {
		t.Errorf("IDs = %v", ids)
	}
}

func TestPublishRefusesPathsOutsideTheirPlace(t *testing.T) {
	_, s := testStore(t)
	l, err := s.Lock("box", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	for _, cg := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/../../etc", "/tmp/x", "relative"} {
		rec := testRecord(t, s.Root, "box", StageCreating, self(t))
		rec.CgroupPath = cg
		if err := l.Publish(rec); err == nil {
			t.Errorf("cgroup path %q accepted", cg)
		}
	}
	if rec, _ := s.Get("box"); rec != nil {
		t.Errorf("a refused record was published: %+v", rec)
	}
}

func TestStoreDirectoriesArePrivate(t *testing.T) {
	rt, s := testStore(t)
	for _, d := range []string{rt.StateDir, s.Dir, s.recordsDir(), s.locksDir()} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %04o, want 0700", d, fi.Mode().Perm())
		}
	}
}

func TestStoreRefusesGroupOrWorldWritableDir(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err := OpenStore(state, "/run/maka", true)
	if err == nil || !strings.Contains(err.Error(), state) || !strings.Contains(err.Error(), "group or world writable") {
		t.Fatalf("world-writable state dir: err = %v", err)
	}
	// Read-only commands refuse it too.
	if err := os.MkdirAll(storeDir(state, "/run/maka"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(state, "/run/maka", false); err == nil {
		t.Fatal("read-only open accepted a world-writable state dir")
	}
}

func TestStoreRefusesDirOwnedBySomeoneElse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(state, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	_, err := OpenStore(state, "/run/maka", true)
	if err == nil || !strings.Contains(err.Error(), "owned by uid 12345") {
		t.Fatalf("foreign state dir: err = %v", err)
	}
}

func TestMissingStoreIsEmptyForReaders(t *testing.T) {
	state := filepath.Join(t.TempDir(), "none")
	s, err := OpenStore(state, "/run/maka", false)
	if err != nil || s != nil {
		t.Fatalf("OpenStore = %v, %v", s, err)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Error("a read-only open created the state dir")
	}
}

func TestStoresOfTwoRootsAreSeparate(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	a, err := OpenStore(state, "/run/containerd/runc/default", true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenStore(state, "/run/containerd/runc/k8s.io", true)
	if err != nil {
		t.Fatal(err)
	}
	if a.Dir == b.Dir {
		t.Fatal("two roots share a store")
	}
	l, err := a.Lock("same", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if _, err := b.Lock("same", 0); err != nil {
		t.Errorf("the same id under another root is locked: %v", err)
	}
}

func TestLockIsExclusiveAndItsFileStays(t *testing.T) {
	_, s := testStore(t)
	l, err := s.Lock("box", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Busy("box") {
		t.Error("Busy is false while the lock is held")
	}
	_, err = s.Lock("box", 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("second lock: err = %v, want busy", err)
	}
	// The waiting holder gets it once the first lets go.
	done := make(chan error)
	go func() {
		l2, err := s.Lock("box", 5*time.Second)
		if err == nil {
			l2.Unlock()
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := l.Drop(); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("waiting lock: %v", err)
	}
	if s.Busy("box") {
		t.Error("Busy after every holder let go")
	}
	if _, err := os.Stat(filepath.Join(s.locksDir(), "box.lock")); err != nil {
		t.Errorf("lock file removed: %v", err)
	}
}

func TestLockRefusesInvalidIDs(t *testing.T) {
	_, s := testStore(t)
	for _, id := range []string{"", ".", "..", "a/b", "../x", "a b"} {
		if l, err := s.Lock(id, 0); err == nil {
			l.Unlock()
			t.Errorf("id %q locked", id)
		}
	}
}

func TestOwnerAliveComparesStartTime(t *testing.T) {
	me := self(t)
	if !me.Alive() {
		t.Fatal("this process is not alive")
	}
	reused := me
	reused.StartTime++ // same pid, another process: a recycled pid
	if reused.Alive() {
		t.Error("an owner whose pid was reused is alive")
	}
	if deadOwner(t).Alive() {
		t.Error("an exited process is alive")
	}
	if (Owner{}).Alive() {
		t.Error("pid 0 is alive")
	}
}

func TestOrphanReason(t *testing.T) {
	rt, s := testStore(t)
	state := filepath.Join(s.Root, "box", "state.json")
	if err := os.MkdirAll(filepath.Dir(state), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	dead, live := deadOwner(t), self(t)
	for _, tc := range []struct {
		stage    Stage
		owner    Owner
		attached bool
		noState  bool
		orphan   bool
	}{
		{stage: StageCreating, owner: dead, orphan: true},
		{stage: StageStarting, owner: dead, orphan: true},
		{stage: StageDeleting, owner: dead, orphan: true},
		{stage: StageCreating, owner: live},
		{stage: StageCreated, owner: dead},                               // create exited, the container lives on
		{stage: StageRunning, owner: dead},                               // detached
		{stage: StageRunning, owner: dead, attached: true, orphan: true}, // its foreground run died
		{stage: StageRunning, owner: live, attached: true},
		{stage: StageCreated, owner: dead, noState: true, orphan: true}, // state gone (reboot)
	} {
		rec := testRecord(t, s.Root, "box", tc.stage, tc.owner)
		rec.Attached = tc.attached
		if tc.noState {
			rec.ID = "gone"
		}
		reason := rt.orphanReason(rec)
		if (reason != "") != tc.orphan {
			t.Errorf("%+v: reason %q, want orphan=%v", tc, reason, tc.orphan)
		}
	}
}

func TestRecoverReapsOnlyOrphans(t *testing.T) {
	rt, s := testStore(t)
	publish := func(id string, stage Stage, owner Owner, withState bool) {
		l, err := s.Lock(id, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
		if err := l.Publish(testRecord(t, s.Root, id, stage, owner)); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(s.Root, id), 0o700); err != nil {
			t.Fatal(err)
		}
		if withState {
			// Not a loadable libcontainer state, but a present one.
			if err := os.WriteFile(filepath.Join(s.Root, id, "state.json"), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish("crashed", StageCreating, deadOwner(t), false)
	publish("healthy", StageCreated, deadOwner(t), true)
	publish("busy", StageCreating, self(t), false)
	busy, err := s.Lock("busy", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Unlock()
	// A publish cut short by a crash.
	if err := os.WriteFile(s.tempPath("torn"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}

	results, err := rt.Recover(nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range results {
		got[r.ID] = r.Result
	}
	if len(got) != 2 || got["crashed"] != Recovered || got["busy"] != Busy {
		t.Fatalf("results %+v", results)
	}
	if r, _ := s.Get("crashed"); r != nil {
		t.Error("the orphan's record is still there")
	}
	if _, err := os.Stat(filepath.Join(s.Root, "crashed")); !os.IsNotExist(err) {
		t.Error("the orphan's state dir is still there")
	}
	if r, _ := s.Get("healthy"); r == nil {
		t.Error("a healthy container's record was dropped")
	}
	if _, err := os.Stat(s.tempPath("torn")); !os.IsNotExist(err) {
		t.Error("a stale temporary record is still there")
	}
}

func TestBeginReapsADeadOwnersLeftovers(t *testing.T) {
	rt, s := testStore(t)
	l, err := s.Lock("box", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Publish(testRecord(t, s.Root, "box", StageStarting, deadOwner(t))); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	op, err := rt.Begin("box", "create")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	if op.Reaped == "" || op.Record != nil {
		t.Fatalf("Begin did not reap: reaped %q record %+v", op.Reaped, op.Record)
	}
	if !strings.Contains(op.Reaped, "start interrupted") {
		t.Errorf("reason %q", op.Reaped)
	}
}

func TestTransitionIsUndoneByEndWithoutCommit(t *testing.T) {
	rt, s := testStore(t)
	l, err := s.Lock("box", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.Root, "box"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Root, "box", "state.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Publish(testRecord(t, s.Root, "box", StageCreated, deadOwner(t))); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	op, err := rt.Begin("box", "start")
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Transition(StageStarting); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Get("box"); r.Stage != StageStarting || r.Owner.Pid != os.Getpid() {
		t.Fatalf("after Transition: %+v", r)
	}
	op.End() // the start failed
	if r, _ := s.Get("box"); r.Stage != StageCreated {
		t.Fatalf("after a failed start: stage %s, want created", r.Stage)
	}
}

func TestParseRecordRoundTrip(t *testing.T) {
	rec := testRecord(t, "/run/maka", "box", StageRunning, Owner{Pid: 42, StartTime: 7, Command: "run"})
	rec.Version = RecordVersion
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(got)
	if string(again) != string(data) {
		t.Errorf("round trip:\n%s\n%s", data, again)
	}
	for _, bad := range []string{`{}`, `[]`, `{"version":2}`, string(data[:len(data)/2])} {
		if _, err := ParseRecord([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseRecordCgroupID(t *testing.T) {
	parse := func(mod func(r *ContainerRecord)) error {
		rec := testRecord(t, "/run/maka", "box", StageCreated, Owner{Pid: 42, StartTime: 7, Command: "create"})
		rec.Version = RecordVersion
		mod(rec)
		data, _ := json.Marshal(rec)
		_, err := ParseRecord(data)
		return err
	}
	if err := parse(func(r *ContainerRecord) {}); err != nil {
		t.Fatal(err)
	}
	// A version 1 record: its cgroup id was never learnt.
	if err := parse(func(r *ContainerRecord) { r.Version = 1 }); err == nil {
		t.Error("a version 1 record was accepted")
	}
	// Only a create in progress may lack the id (the cgroup is made after
	// the record is published).
	if err := parse(func(r *ContainerRecord) { r.CgroupID = 0 }); err == nil || !strings.Contains(err.Error(), "cgroupID") {
		t.Errorf("a created record without a cgroup id: %v", err)
	}
	if err := parse(func(r *ContainerRecord) { r.CgroupID, r.Stage = 0, StageCreating }); err != nil {
		t.Errorf("a creating record without a cgroup id: %v", err)
	}
}

func FuzzParseRecord(f *testing.F) {
	rec := &ContainerRecord{Version: RecordVersion, ID: "box", Root: "/run/maka", Bundle: "/b",
		CgroupPath: "/sys/fs/cgroup/maka/box", CgroupID: 9, Stage: StageCreated,
		Owner: Owner{Pid: 1, StartTime: 2, Command: "create"}, Boundary: Hold(&Boundary{})}
	seed, _ := json.Marshal(rec)
	f.Add(seed)
	f.Add([]byte(`{"version":1,"id":"..","root":"/r","cgroupPath":"/sys/fs/cgroup/x","stage":"created","owner":{"pid":1},"boundary":{}}`))
	f.Add([]byte(`{"version":1,"id":"a","root":"/r/../x","cgroupPath":"/sys/fs/cgroup/../x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRecord(data)
		if err != nil {
			return
		}
		// Whatever parses names only safe paths and survives a round trip.
		if !strings.HasPrefix(r.CgroupPath, "/sys/fs/cgroup/") || filepath.Clean(r.CgroupPath) != r.CgroupPath {
			t.Fatalf("unsafe cgroup path %q accepted", r.CgroupPath)
		}
		if !ValidID(r.ID) || strings.Contains(r.ID, "/") {
			t.Fatalf("unsafe id %q accepted", r.ID)
		}
		if filepath.Clean(r.Root) != r.Root || !filepath.IsAbs(r.Root) {
			t.Fatalf("unsafe root %q accepted", r.Root)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseRecord(out); err != nil {
			t.Fatalf("re-encoded record refused: %v", err)
		}
	})
}

func TestConcurrentFirstOpensOfAStoreAllSucceed(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	errs := make(chan error, 20)
	for range 20 {
		go func() {
			_, err := OpenStore(state, "/run/maka", true)
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// An id maka accepts fits every file named after it; a longer one is
// refused as invalid, not by "file name too long" from deep inside, and
// the error shows its start and length rather than all of it.
func TestLongestIDFitsItsFiles(t *testing.T) {
	long := strings.Repeat("a", MaxIDLength)
	if !ValidID(long) || ValidID(long+"a") || ValidID(strings.Repeat("a", 1000)) {
		t.Fatalf("ValidID: %d characters must be valid, %d and 1000 not", MaxIDLength, MaxIDLength+1)
	}
	s, err := OpenStore(filepath.Join(t.TempDir(), "state"), "/run/maka", true)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Lock(long, 0)
	if err != nil {
		t.Fatalf("lock of a %d-character id: %v", MaxIDLength, err)
	}
	l.Unlock()
	for _, p := range []string{s.tempPath(long), s.recordPath(long)} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatalf("a %d-character id's file: %v", MaxIDLength, err)
		}
	}
	_, err = s.Lock(strings.Repeat("a", 1000), 0)
	if err == nil || !strings.Contains(err.Error(), "invalid") || !strings.Contains(err.Error(), "(1000 characters)") ||
		strings.Contains(err.Error(), strings.Repeat("a", 100)) {
		t.Fatalf("lock of a 1000-character id: %v", err)
	}
}

// Load refuses an invalid id by the id rule, before any path is made of it.
func TestLoadRefusesInvalidIDs(t *testing.T) {
	rt := &Runtime{Root: t.TempDir(), StateDir: t.TempDir()}
	for _, id := range []string{strings.Repeat("a", 1000), "..", "a/b", "\xff"} {
		_, err := rt.Load(id)
		if err == nil || !strings.Contains(err.Error(), "invalid") || strings.Contains(err.Error(), "lstat") {
			t.Errorf("Load(%.20q): %v", id, err)
		}
	}
}

// A --root that is a file (or under one) is refused before a store is made
// for it in the state dir: a refused create leaves nothing there.
func TestBeginRefusesARootThatIsAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	for _, root := range []string{file, filepath.Join(file, "below")} {
		rt := &Runtime{Root: root, StateDir: state}
		if _, err := rt.Begin("box", "create"); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("Begin with --root %s: %v", root, err)
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state dir was made: %v", err)
	}
}

// Reading a record decodes none of its boundary (start, delete and state
// never need it: lazy.go), and writing it back keeps the boundary whole.
func TestParseRecordLeavesTheBoundary(t *testing.T) {
	rec := testRecord(t, "/run/maka", "b", StageCreated, Owner{Pid: 1, StartTime: 2, Command: "create"})
	rec.Version, rec.CgroupID = RecordVersion, 5
	rec.Boundary = Hold(sampleBoundary())
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Boundary.got || got.Boundary.v != nil {
		t.Fatal("ParseRecord decoded the boundary")
	}
	got.Stage = StageRunning
	again, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if got.Boundary.got {
		t.Fatal("writing the record back decoded the boundary")
	}
	back, err := ParseRecord(again)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(must(t, &back.Boundary), sampleBoundary()) || back.Stage != StageRunning {
		t.Errorf("boundary or stage lost in the round trip: %+v", back)
	}
	// A record without one is refused, as before.
	noB := strings.Replace(string(data), `"boundary":`, `"was":`, 1)
	if _, err := ParseRecord([]byte(noB)); err == nil || !strings.Contains(err.Error(), "no boundary") {
		t.Errorf("a record without a boundary: %v", err)
	}
}
