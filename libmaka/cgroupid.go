package libmaka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A cgroup v2 directory's inode number is the kernel's id of the cgroup
// (kernfs node id, 64-bit): a cgroup removed and made again under the same
// path gets a new one. maka records the id of the cgroup it creates for a
// sandbox (ContainerRecord.CgroupID) and checks it before it kills or
// removes anything at that path, so that it never touches a cgroup it did
// not make: someone else's that took the path after the sandbox's was
// removed, or one that existed before.
//
// The record is published before the cgroup is made (nothing may exist
// that no record names), and the id after it, in a second write: a crash
// between the two leaves a record without an id (CgroupID 0). For such a
// record maka removes the directory only if it is empty (no process in it
// or below, no cgroup below) and was not made before the record (its
// ctime): an rmdir of an empty cgroup cannot kill anything, and maka never
// writes cgroup.kill to a cgroup whose id it does not know. A cgroup that
// fails either check is left in place, and the record too, with an error
// that says why (`maka recover` reports it; an administrator decides).

// ctimeSlack is how much earlier than the record a cgroup without a
// recorded id may seem to have been made (see checkOwned).
const ctimeSlack = time.Second

// CgroupID is the id (inode number) of the cgroup directory at path.
func CgroupID(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, fmt.Errorf("cgroup %s: not a directory", path)
	}
	return st.Ino, nil
}

// openOwnedCgroup opens the cgroup directory at path and checks that it is
// the one maka created: its id is id, or, with no id recorded, it is empty
// and no older than created. A missing cgroup gives (nil, nil). The
// returned directory is the checked one: files opened through it (cgroup.kill)
// cannot belong to a cgroup that took its path later.
func openOwnedCgroup(path string, id uint64, created time.Time) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", path, err)
	}
	dir := os.NewFile(uintptr(fd), path)
	if err := checkOwned(dir, path, id, created); err != nil {
		dir.Close()
		return nil, err
	}
	return dir, nil
}

func checkOwned(dir *os.File, path string, id uint64, created time.Time) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	if id != 0 {
		if st.Ino != id {
			return fmt.Errorf("cgroup %s changed since maka created it (id %d, now %d): not touching it", path, id, st.Ino)
		}
		return nil
	}
	// No id: a create interrupted between making the cgroup and recording
	// its id (or before making it, and the path was taken since).
	// The kernel stamps the inode with its coarse clock, which may lag the
	// record's (fine) clock by a tick: a second of slack.
	if ctime := time.Unix(st.Ctim.Unix()); ctime.Before(created.Add(-ctimeSlack)) {
		return fmt.Errorf("cgroup %s was made at %s, before its container's record (%s): not the one maka creates; not touching it", path, ctime.UTC().Format(time.RFC3339Nano), created.UTC().Format(time.RFC3339Nano))
	}
	if populatedAt(dir) || hasChildCgroup(dir) {
		return fmt.Errorf("cgroup %s: maka did not record its id (its create was interrupted) and it is not empty: it may not be the one maka made; not touching it (remove it by hand once you know whose it is)", path)
	}
	return nil
}

// populatedAt reads cgroup.events through the open cgroup directory.
func populatedAt(dir *os.File) bool {
	data, err := readAt(dir, "cgroup.events")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(data, "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}

func hasChildCgroup(dir *os.File) bool {
	d, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", dir.Fd()))
	if err != nil {
		return true // cannot tell: assume the worst
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return true
	}
	for _, e := range entries {
		if e.IsDir() {
			return true
		}
	}
	return false
}

func readAt(dir *os.File, name string) (string, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// killAt writes cgroup.kill through the open (checked) cgroup directory.
func killAt(dir *os.File) error {
	fd, err := unix.Openat(int(dir.Fd()), "cgroup.kill", unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "cgroup.kill")
	defer f.Close()
	_, err = f.Write([]byte("1"))
	return err
}

// sameCgroup checks, just before an operation by path (rmdir, listing
// pids), that path still names the open directory.
func sameCgroup(dir *os.File, path string) error {
	var a, b unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &a); err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	if err := unix.Lstat(path, &b); err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	if a.Ino != b.Ino || a.Dev != b.Dev {
		return fmt.Errorf("cgroup %s changed while maka was removing it (id %d, now %d): not touching it", path, a.Ino, b.Ino)
	}
	return nil
}

// recordedCgroup is the cgroup the contract store records for c, checked
// against libcontainer's state: the path, its id and when the record was
// made. ok is false when libcontainer knows no cgroup for c.
func (c *Container) recordedCgroup() (path string, id uint64, created time.Time, ok bool, err error) {
	path = c.CgroupPath()
	if path == "" {
		return "", 0, time.Time{}, false, nil
	}
	rec, err := c.contractRecord()
	if err != nil {
		return "", 0, time.Time{}, false, err
	}
	if rec == nil {
		return "", 0, time.Time{}, false, fmt.Errorf("cgroup %s: container %s has no contract record, so maka cannot tell that it created this cgroup: not touching it", path, c.ID())
	}
	if filepath.Clean(path) != rec.CgroupPath {
		return "", 0, time.Time{}, false, fmt.Errorf("cgroup %s: the runtime state names it, the contract record names %s: not touching it", path, rec.CgroupPath)
	}
	return rec.CgroupPath, rec.CgroupID, rec.Created, true, nil
}

// ownedCgroup opens c's cgroup once it is checked to be the one maka
// created (nil if there is none).
func (c *Container) ownedCgroup() (*os.File, error) {
	path, id, created, ok, err := c.recordedCgroup()
	if err != nil || !ok {
		return nil, err
	}
	return openOwnedCgroup(path, id, created)
}

// CheckCgroup refuses when c's cgroup is no longer the one maka created:
// update and pause write to it by path (through libcontainer), and must
// never write a stranger's limits or freeze a stranger's processes.
func (c *Container) CheckCgroup() error {
	cg, err := c.ownedCgroup()
	if err != nil || cg == nil {
		return err
	}
	return cg.Close()
}
