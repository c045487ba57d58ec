//go:build ignore

// ovlexp: a lab experiment (not part of maka) measuring, in the guest, the
// pieces of a root built as one overlay (idmapped lower = the root, upper =
// a bounded tmpfs) against a scaffold's per-entry idmapped binds.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const H = 1 << 30 // host id of the sandbox's root

func must(what string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

// userns makes a user namespace mapping 0..65535 to H.., returns its fd.
func userns() int {
	cmd := exec.Command("/bin/sleep", "100")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: H, Size: 65536}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: H, Size: 65536}},
	}
	must("userns child", cmd.Start())
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	must("open ns", err)
	cmd.Process.Kill()
	cmd.Wait()
	return fd
}

func idmapClone(src string, nsfd int, dst string, recursive bool) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, src, flags)
	must("open_tree "+src, err)
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_RDONLY, Userns_fd: uint64(nsfd)}
	af := uint(unix.AT_EMPTY_PATH)
	if recursive {
		af |= unix.AT_RECURSIVE
	}
	must("mount_setattr idmap "+src, unix.MountSetattr(tree, "", af, &attr))
	must("move_mount "+dst, unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func main() {
	root := os.Args[1]
	base := "/run/ovlexp"
	os.RemoveAll(base)
	for round := 0; round < 5; round++ {
		dir := filepath.Join(base, fmt.Sprint(round))
		for _, d := range []string{"lower", "up", "root", "scaf"} {
			must("mkdir", os.MkdirAll(filepath.Join(dir, d), 0o700))
		}
		t0 := time.Now()
		nsfd := userns()
		t1 := time.Now()
		idmapClone(root, nsfd, filepath.Join(dir, "lower"), true)
		t2 := time.Now()
		must("tmpfs", unix.Mount("tmpfs", filepath.Join(dir, "up"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64m,mode=0700"))
		for _, d := range []string{"u", "w"} {
			p := filepath.Join(dir, "up", d)
			must("mkdir up", os.Mkdir(p, 0o755))
			must("chown up", os.Chown(p, H, H))
		}
		opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,userxattr", filepath.Join(dir, "lower"), filepath.Join(dir, "up/u"), filepath.Join(dir, "up/w"))
		err := unix.Mount("overlay", filepath.Join(dir, "root"), "overlay", 0, opts)
		if err != nil {
			// without userxattr
			opts = fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", filepath.Join(dir, "lower"), filepath.Join(dir, "up/u"), filepath.Join(dir, "up/w"))
			err = unix.Mount("overlay", filepath.Join(dir, "root"), "overlay", 0, opts)
		}
		must("overlay", err)
		// mount points the root lacks, made in the upper layer
		for _, m := range []string{"maka", "maka/work"} {
			p := filepath.Join(dir, "root", m)
			if err := os.Mkdir(p, 0o755); err == nil {
				os.Chown(p, H, H)
			}
		}
		t3 := time.Now()
		// the scaffold's way: one idmapped clone per entry of the root
		ents, _ := os.ReadDir(root)
		n := 0
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			d := filepath.Join(dir, "scaf", e.Name())
			os.Mkdir(d, 0o700)
			idmapClone(filepath.Join(root, e.Name()), nsfd, d, true)
			n++
		}
		t4 := time.Now()
		var st unix.Stat_t
		must("stat", unix.Stat(filepath.Join(dir, "root/etc/passwd"), &st))
		var st2 unix.Stat_t
		must("stat2", unix.Stat(filepath.Join(dir, "root/maka/work"), &st2))
		fmt.Printf("round %d: userns %s ms, idmapped root %s ms, tmpfs+overlay %s ms; scaffold-style %d entry clones %s ms; etc/passwd uid %d, maka/work uid %d (upper)\n",
			round, ms(t1.Sub(t0)), ms(t2.Sub(t1)), ms(t3.Sub(t2)), n, ms(t4.Sub(t3)), st.Uid, st2.Uid)
		unix.Close(nsfd)
	}
	out, _ := exec.Command("sh", "-c", "grep ovlexp /proc/self/mountinfo | head -3").CombinedOutput()
	fmt.Print(string(out))
}
