package libmaka

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func poolBoundary(pool IDPool) *Boundary {
	return &Boundary{Profile: ProfileRestricted, Users: Users{Namespace: true, Source: IDsFromPool, Pool: &pool}}
}

func leaseFiles(t *testing.T, rt *Runtime) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(rt.StateDir, "ids"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Fifty creates at once each get their own block, and a full pool says so.
func TestLeasesNeverShareABlock(t *testing.T) {
	rt, _ := testStore(t)
	pool := IDPool{Start: 1 << 20, Size: 65536, Count: 50}
	var wg sync.WaitGroup
	got := make([]uint32, 51)
	errs := make([]error, 51)
	for i := range 51 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op, err := rt.Begin(fmt.Sprintf("c%d", i), "create")
			if err != nil {
				errs[i] = err
				return
			}
			b := poolBoundary(pool)
			if errs[i] = op.LeaseIDs(b, pool); errs[i] == nil {
				got[i] = b.UIDMappings[0].HostID
				if b.GIDMappings[0] != b.UIDMappings[0] || b.UIDMappings[0].Size != pool.Size || b.UIDMappings[0].ContainerID != 0 {
					errs[i] = fmt.Errorf("mappings %v %v", b.UIDMappings, b.GIDMappings)
				}
				op.committed = true // keep the lease: as a create that succeeded
			}
			op.End()
		}()
	}
	wg.Wait()
	seen := map[uint32]bool{}
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			if got := err.Error(); !strings.Contains(got, "all 50 blocks") {
				t.Errorf("c%d: %v", i, err)
			}
			continue
		}
		if seen[got[i]] || !pool.Contains(got[i], pool.Size) || (got[i]-pool.Start)%pool.Size != 0 {
			t.Fatalf("c%d got block %d: shared, or not a block of the pool", i, got[i])
		}
		seen[got[i]] = true
	}
	if failed != 1 || len(leaseFiles(t, rt)) != 50 {
		t.Fatalf("%d creates failed, %d leases: want one refused and 50 leases", failed, len(leaseFiles(t, rt)))
	}
}

// A create that fails before publishing gives its block back at End; one
// that published gives it back when its record is dropped (reap), and only
// its own lease.
func TestLeaseGivenBackWithTheRecord(t *testing.T) {
	rt, store := testStore(t)
	pool := IDPool{Start: 1 << 20, Size: 65536, Count: 4}
	op, err := rt.Begin("a", "create")
	if err != nil {
		t.Fatal(err)
	}
	if err := op.LeaseIDs(poolBoundary(pool), pool); err != nil {
		t.Fatal(err)
	}
	op.End()
	if l := leaseFiles(t, rt); len(l) != 0 {
		t.Fatalf("a failed create kept its lease: %v", l)
	}

	op, err = rt.Begin("b", "create")
	if err != nil {
		t.Fatal(err)
	}
	b := poolBoundary(pool)
	if err := op.LeaseIDs(b, pool); err != nil {
		t.Fatal(err)
	}
	rec := testRecord(t, rt.Root, "b", StageCreated, self(t))
	rec.Boundary = Hold(b)
	if err := op.publishFirst(rec); err != nil {
		t.Fatal(err)
	}
	op.committed = true
	op.End()
	// Another sandbox's record naming the same block (a stale copy) does
	// not give away b's lease.
	other := *rec
	other.ID = "c"
	head, err := HeadOf(&other.Boundary)
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseIDs(store, &other, head); err != nil {
		t.Fatal(err)
	}
	if l := leaseFiles(t, rt); len(l) != 1 || l[0] != strconv.Itoa(int(pool.Start))+"-65536" {
		t.Fatalf("leases %v: want b's block %d", l, pool.Start)
	}
	lock, err := store.Lock("b", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if err := lock.Drop(); err != nil {
		t.Fatal(err)
	}
	if l := leaseFiles(t, rt); len(l) != 0 {
		t.Fatalf("b's lease outlived its record: %v", l)
	}
}

// A create that died between leasing and publishing leaves a lease no
// record names: recover gives it back, but not one whose create is alive
// (it holds the id's lock) or whose record names it.
func TestRecoverReclaimsOrphanLeases(t *testing.T) {
	rt, store := testStore(t)
	pool := IDPool{Start: 1 << 20, Size: 65536, Count: 4}
	lease := func(id string, publish bool) *Op {
		op, err := rt.Begin(id, "create")
		if err != nil {
			t.Fatal(err)
		}
		b := poolBoundary(pool)
		if err := op.LeaseIDs(b, pool); err != nil {
			t.Fatal(err)
		}
		if publish {
			rec := testRecord(t, rt.Root, id, StageCreated, self(t))
			rec.Boundary = Hold(b)
			if err := op.publishFirst(rec); err != nil {
				t.Fatal(err)
			}
		}
		op.committed = true
		return op
	}
	lease("dead", false).End()    // died before publishing: no record
	lease("healthy", true).End()  // a record names its lease
	alive := lease("busy", false) // still creating: holds its lock
	defer alive.End()
	reclaimLeases(store, rt.StateDir)
	if l := leaseFiles(t, rt); len(l) != 2 {
		t.Fatalf("leases after recover: %v, want healthy's and busy's", l)
	}
	for _, name := range leaseFiles(t, rt) {
		data, _ := os.ReadFile(filepath.Join(rt.StateDir, "ids", name))
		if strings.Contains(string(data), `"id":"dead"`) {
			t.Fatal("the dead create's lease was kept")
		}
	}
}

// Two policies whose pools are offset by half a block (a second maka
// policy file, a changed idPool.start) share a state dir: a lease holds
// its whole range [first, first+size), and no block that meets a leased
// range is leased again, whatever pool it comes from.
func TestLeasesOfOffsetPoolsNeverOverlap(t *testing.T) {
	rt, _ := testStore(t)
	a := IDPool{Start: 1 << 20, Size: 65536, Count: 4}
	b := IDPool{Start: 1<<20 + 32768, Size: 65536, Count: 4}
	type held struct{ start, size uint32 }
	var got []held
	lease := func(id string, pool IDPool) error {
		op, err := rt.Begin(id, "create")
		if err != nil {
			t.Fatal(err)
		}
		defer op.End()
		bd := poolBoundary(pool)
		if err := op.LeaseIDs(bd, pool); err != nil {
			return err
		}
		op.committed = true
		m := bd.UIDMappings[0]
		got = append(got, held{m.HostID, m.Size})
		return nil
	}
	// a's block 0; b's block 0 meets it, so b gets its block 1; a's
	// blocks 1 and 2 meet that, so a gets its block 3.
	for i, c := range []struct {
		pool IDPool
		want uint32
	}{{a, a.Start}, {b, b.Start + b.Size}, {a, a.Start + 3*a.Size}} {
		if err := lease(fmt.Sprintf("c%d", i), c.pool); err != nil {
			t.Fatalf("c%d: %v", i, err)
		}
		if g := got[len(got)-1].start; g != c.want {
			t.Errorf("c%d leased %d, want %d", i, g, c.want)
		}
	}
	for i, x := range got {
		for _, y := range got[i+1:] {
			if uint64(x.start) < uint64(y.start)+uint64(y.size) && uint64(y.start) < uint64(x.start)+uint64(x.size) {
				t.Errorf("leases [%d, +%d) and [%d, +%d) overlap", x.start, x.size, y.start, y.size)
			}
		}
	}
	// Every block of b now meets a lease (b2 and b3 meet a3): refused.
	if err := lease("full", b); err == nil || !strings.Contains(err.Error(), "all 4 blocks") {
		t.Errorf("a pool whose every block meets a lease: err = %v", err)
	}
	// FirstFreeBlock (what `maka boundary --format oci` shows) agrees.
	if _, err := FirstFreeBlock(rt.StateDir, b); err == nil {
		t.Error("FirstFreeBlock found a block of b that meets a lease")
	}
	if n, err := FirstFreeBlock(rt.StateDir, IDPool{Start: 1<<20 + 4*65536, Size: 65536, Count: 1}); err != nil || n != 1<<20+4*65536 {
		t.Errorf("a disjoint pool's first block: %d, %v", n, err)
	}
}

// A record whose boundary cannot be read keeps its lease: handing its ids
// to another sandbox while its own may still run would let the two share
// a mapping. (Written when the record stopped decoding the boundary at
// every read: the head is read on its own.)
func TestUnreadableHeadKeepsItsLease(t *testing.T) {
	rt, store := testStore(t)
	pool := IDPool{Start: 1 << 20, Size: 65536, Count: 4}
	op, err := rt.Begin("odd", "create")
	if err != nil {
		t.Fatal(err)
	}
	b := poolBoundary(pool)
	if err := op.LeaseIDs(b, pool); err != nil {
		t.Fatal(err)
	}
	rec := testRecord(t, rt.Root, "odd", StageCreated, self(t))
	rec.Boundary = Hold(b)
	if err := op.publishFirst(rec); err != nil {
		t.Fatal(err)
	}
	op.committed = true
	op.End()
	// The record's boundary, well-formed JSON of the wrong shape.
	path := store.recordPath("odd")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), `"uidMappings":[`, `"uidMappings":"x","was":[`, 1)
	if bad == string(data) {
		t.Fatal("the record names no uidMappings")
	}
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	reclaimLeases(store, rt.StateDir)
	if l := leaseFiles(t, rt); len(l) != 1 {
		t.Fatalf("leases after recover: %v, want odd's", l)
	}
	// Its teardown still drops it (its sandbox is gone by then); the
	// lease is left to recover, which keeps it no longer: no record.
	lock, err := store.Lock("odd", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Drop(); err != nil {
		t.Fatalf("a record with an unreadable boundary was not dropped: %v", err)
	}
	lock.Unlock()
	if r, err := store.Get("odd"); err != nil || r != nil {
		t.Fatalf("after drop: %v %v", r, err)
	}
	reclaimLeases(store, rt.StateDir)
	if l := leaseFiles(t, rt); len(l) != 0 {
		t.Fatalf("leases after the record went: %v", l)
	}
}
