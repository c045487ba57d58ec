package libmaka

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeCgroupDir is a directory with the cgroup files maka reads and writes.
func fakeCgroupDir(t *testing.T, populated bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cg")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	v := "0"
	if populated {
		v = "1"
	}
	for name, data := range map[string]string{"cgroup.events": "populated " + v + "\nfrozen 0\n", "cgroup.kill": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestOwnedCgroupIsCheckedByID(t *testing.T) {
	dir := fakeCgroupDir(t, true)
	id, err := CgroupID(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := openOwnedCgroup(dir, id, time.Now())
	if err != nil || f == nil {
		t.Fatalf("the recorded cgroup: %v", err)
	}
	f.Close()
	_, err = openOwnedCgroup(dir, id+1, time.Time{})
	want := "cgroup " + dir + " changed since maka created it (id "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "not touching it") {
		t.Errorf("another id: %v", err)
	}
	// Missing: nothing to touch, not an error.
	if f, err := openOwnedCgroup(filepath.Join(dir, "gone"), id, time.Time{}); f != nil || err != nil {
		t.Errorf("a missing cgroup: %v, %v", f, err)
	}
}

// The swap: the sandbox's cgroup removed and another made at its path.
func TestKillCgroupRefusesAReplacedCgroup(t *testing.T) {
	dir := fakeCgroupDir(t, true)
	id, _ := CgroupID(dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	dir2 := fakeCgroupDir(t, true)
	if err := os.Rename(dir2, dir); err != nil {
		t.Fatal(err)
	}
	now, _ := CgroupID(dir)
	if now == id {
		t.Skip("the filesystem reused the inode number")
	}
	err := killCgroup(dir, id, time.Time{}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "changed since maka created it") {
		t.Fatalf("killCgroup of a replaced cgroup: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.kill")); len(b) != 0 {
		t.Errorf("cgroup.kill written: %q", b)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("the replaced cgroup was removed: %v", err)
	}
}

// A record without an id (a create that died between making the cgroup and
// recording its id): only an empty cgroup made after the record.
func TestCgroupWithoutRecordedID(t *testing.T) {
	before := time.Now().Add(-time.Minute)
	if f, err := openOwnedCgroup(fakeCgroupDir(t, false), 0, before); err != nil {
		t.Errorf("an empty cgroup made after the record: %v", err)
	} else {
		f.Close()
	}
	if _, err := openOwnedCgroup(fakeCgroupDir(t, true), 0, before); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a populated cgroup: %v", err)
	}
	withChild := fakeCgroupDir(t, false)
	if err := os.Mkdir(filepath.Join(withChild, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := openOwnedCgroup(withChild, 0, before); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a cgroup with a child: %v", err)
	}
	if _, err := openOwnedCgroup(fakeCgroupDir(t, false), 0, time.Now().Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "before its container's record") {
		t.Errorf("a cgroup older than the record: %v", err)
	}
	// It is removed, never killed.
	dir := fakeCgroupDir(t, false)
	if err := killCgroup(dir, 0, before, time.Second); err == nil {
		t.Log("removed")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.kill")); len(b) != 0 {
		t.Errorf("cgroup.kill written for a cgroup without a recorded id: %q", b)
	}
}
