package libmaka

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// The mount points a root lacks are made in its overlay component by
// component, never through a link: an entry of the root the bundle's author
// swaps for a link to a host directory meanwhile makes the create fail,
// and nothing is made on the host.
func TestMkdirBeneathFollowsNoLink(t *testing.T) {
	root, host := t.TempDir(), t.TempDir()
	if err := os.Symlink(host, filepath.Join(root, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	uid, gid := os.Getuid(), os.Getgid()
	for _, rel := range []string{"evil/x", "evil/x/y", "up/tmp/maka-mkdirbeneath", "../escape"} {
		if err := mkdirBeneath(fd, rel, uid, gid, false); err == nil {
			t.Errorf("%s: made through a link or out of the root", rel)
		}
	}
	if err := mkdirBeneath(fd, "evil", uid, gid, true); err != nil {
		// An existing entry (here a link) is left as it is, never followed.
		t.Errorf("evil as a file: %v", err)
	}
	if entries, _ := os.ReadDir(host); len(entries) != 0 {
		t.Errorf("the host directory behind the link got %v", entries)
	}
	if _, err := os.Lstat("/tmp/maka-mkdirbeneath"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/tmp/maka-mkdirbeneath was made: %v", err)
	}
	// What is missing is made: directories, and a file at the end.
	if err := mkdirBeneath(fd, "a/b/c", uid, gid, false); err != nil {
		t.Fatal(err)
	}
	if err := mkdirBeneath(fd, "a/b/f", uid, gid, true); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "a/b/c")); err != nil || !fi.IsDir() {
		t.Errorf("a/b/c: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "a/b/f")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a/b/f: %v", err)
	}
}
