package monitor

import (
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// TmpfsSampleInterval is how often the monitor samples the use of the
// container's writable tmpfs mounts (one fstatfs each: cheap).
const TmpfsSampleInterval = time.Second

// tmpfsMount is a writable tmpfs of the container, held open (O_PATH): the
// fd keeps the mount, and with it the tmpfs and its content, alive after
// the container's last process (and its mount namespace) is gone, so the
// final use can still be read when the container stops.
type tmpfsMount struct {
	fd  int
	use TmpfsUse
}

// holdTmpfs opens the container's tmpfs mounts (container paths), resolved
// in the root of its init, host pid initPid. The init's mounts must exist:
// call it after libcontainer's Start returned (the init has set up its
// root and waits to exec) and before the init may exit (its pid is then
// still the init's: its parent has not reaped it). A path that is not a
// tmpfs there is skipped.
func holdTmpfs(initPid int, paths []string) []tmpfsMount {
	if initPid <= 0 || len(paths) == 0 {
		return nil
	}
	root, err := unix.Open("/proc/"+strconv.Itoa(initPid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	var out []tmpfsMount
	for _, p := range paths {
		fd, err := unix.Openat2(root, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if err != nil {
			continue
		}
		var st unix.Statfs_t
		if unix.Fstatfs(fd, &st) != nil || st.Type != unix.TMPFS_MAGIC {
			unix.Close(fd)
			continue
		}
		t := tmpfsMount{fd: fd, use: TmpfsUse{Path: p, Size: int64(st.Blocks) * st.Bsize}}
		t.use.observe(int64(st.Blocks-st.Bfree) * st.Bsize)
		out = append(out, t)
	}
	return out
}

// sample reads the mount's use once more.
func (t *tmpfsMount) sample() {
	var st unix.Statfs_t
	if unix.Fstatfs(t.fd, &st) == nil {
		t.use.observe(int64(st.Blocks-st.Bfree) * st.Bsize)
	}
}
