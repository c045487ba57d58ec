package launch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/maka-runtime/maka/libmaka"
)

func TestOwnerKey(t *testing.T) {
	a := Owner{Scope: "s", Thread: "t"}
	b := Owner{Scope: "s", Thread: "t", Agent: ""}
	c := Owner{Scope: "s", Agent: "t"}
	if a.Key() != b.Key() || a.Key() == c.Key() || len(a.Key()) != 32 {
		t.Errorf("keys %s %s %s: equal owners must share a key, a field's place matters", a.Key(), b.Key(), c.Key())
	}
}

// One holder per key, across descriptors (so across processes); a key its
// holder forgot is taken afresh, never the unlinked file.
func TestOwnerLock(t *testing.T) {
	dir := t.TempDir()
	l, err := LockOwner(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockOwner(dir, "k"); !errors.Is(err, ErrOwnerBusy) {
		t.Fatalf("a second holder: %v", err)
	}
	if err := l.Write(OwnerFile{Owner: Owner{Scope: "s"}, ID: "box"}); err != nil {
		t.Fatal(err)
	}
	l.Release(false) // its process died: the file stays for Purge
	l2, err := LockOwner(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	if of, err := l2.Read(); err != nil || of == nil || of.ID != "box" {
		t.Fatalf("the dead owner's file: %v %+v", err, of)
	}
	l2.Release(true)
	if _, err := os.Stat(filepath.Join(dir, "k.json")); !os.IsNotExist(err) {
		t.Errorf("a forgotten key kept its file: %v", err)
	}
	l3, err := LockOwner(dir, "k")
	if err != nil {
		t.Fatal(err)
	}
	l3.Release(true)
}

// Purge: a dead owner's sandbox (here long gone) is purged and its key
// freed; a live owner's is busy; another scope's is not touched.
func TestPurgeScopes(t *testing.T) {
	base := t.TempDir()
	rt := &libmaka.Runtime{Root: filepath.Join(base, "root"), StateDir: filepath.Join(base, "state")}
	dir, err := OwnersDir(rt)
	if err != nil {
		t.Fatal(err)
	}
	own := func(o Owner, id string) *OwnerLock {
		l, err := LockOwner(dir, o.Key())
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Write(OwnerFile{Owner: o, ID: id, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	dead, live, other := Owner{Scope: "ws", Call: "1"}, Owner{Scope: "ws", Call: "2"}, Owner{Scope: "other"}
	own(dead, "sb-dead").Release(false)
	held := own(live, "sb-live")
	defer held.Release(true)
	own(other, "sb-other").Release(false)
	res, err := Purge(rt, "ws")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res {
		got[r.ID] = r.Result
	}
	if len(got) != 2 || got["sb-dead"] != "purged" || got["sb-live"] != "busy" {
		t.Errorf("purge ws: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, dead.Key()+".json")); !os.IsNotExist(err) {
		t.Errorf("the purged owner's file is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, other.Key()+".json")); err != nil {
		t.Errorf("another scope's owner was touched: %v", err)
	}
	if _, err := Purge(rt, ""); err == nil {
		t.Error("a purge without a scope")
	}
}
