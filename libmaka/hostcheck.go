package libmaka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

const cgroupRoot = "/sys/fs/cgroup"

// requiredControllers are the cgroup v2 controllers maka's limits use.
var requiredControllers = []string{"cpu", "memory", "pids"}

// CheckCgroupV2 refuses any host that is not in cgroup v2 unified mode.
// libcontainer quietly falls back to cgroup v1 on hybrid hosts, where maka's
// limits would not mean what the contract says: check before touching anything.
func CheckCgroupV2() error {
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupRoot, &st); err != nil {
		return fmt.Errorf("%w: cannot stat %s: %w", ErrNoCgroup2, cgroupRoot, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		kind := "not a cgroup2 filesystem"
		switch st.Type {
		case unix.TMPFS_MAGIC:
			kind = "a tmpfs of cgroup v1 hierarchies (legacy or hybrid mode)"
		case unix.CGROUP_SUPER_MAGIC:
			kind = "a cgroup v1 hierarchy"
		}
		return fmt.Errorf("%w: %s is %s; boot with systemd.unified_cgroup_hierarchy=1 (or mount cgroup2 there)", ErrNoCgroup2, cgroupRoot, kind)
	}
	data, err := os.ReadFile(cgroupRoot + "/cgroup.controllers")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoCgroup2, err)
	}
	have := strings.Fields(string(data))
	var missing []string
	for _, c := range requiredControllers {
		if !contains(have, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: controllers missing from %s/cgroup.controllers: %s", ErrNoCgroup2, cgroupRoot, strings.Join(missing, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// HostCheck is one thing maka needs from the host, and whether this host
// has it.
type HostCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Required: create refuses a host without it. The others narrow what
	// maka does (without idmapped mounts the root's files show as nobody;
	// without user namespaces only sandboxes without one run).
	Required bool `json:"required"`
}

// minKernel is the oldest kernel with everything maka uses: cgroup.kill
// (5.14); openat2, pidfd_getfd (5.6); seccomp's addfd (5.9).
var minKernel = [2]int{5, 14}

// CheckHostSupport looks at what maka needs from the host, one check per
// piece, in a fixed order. It only reads and probes (syscalls answered
// EBADF or EFAULT rather than ENOSYS): nothing is made.
func CheckHostSupport() []HostCheck {
	major, minor := kernelVersion()
	var u unix.Utsname
	_ = unix.Uname(&u)
	release := unix.ByteSliceToString(u.Release[:])
	newEnough := func(v [2]int) bool { return major > v[0] || major == v[0] && minor >= v[1] }
	checks := []HostCheck{{
		Name: "kernel", Required: true, OK: newEnough(minKernel),
		Detail: fmt.Sprintf("Linux %s (%d.%d or later)", release, minKernel[0], minKernel[1]),
	}}

	cg := HostCheck{Name: "cgroup v2", Required: true, OK: true, Detail: "unified, with " + strings.Join(requiredControllers, ", ")}
	if err := CheckCgroupV2(); err != nil {
		cg.OK, cg.Detail = false, strings.TrimPrefix(err.Error(), ErrNoCgroup2.Error()+": ")
	} else if own, err := ownCgroupDir(); err == nil && own != cgroupRoot {
		if _, err := os.Stat(own + "/cgroup.kill"); err != nil {
			cg.OK, cg.Detail = false, "no cgroup.kill (Linux 5.14): maka kills a sandbox's cgroup whole"
		} else {
			cg.Detail += " and cgroup.kill"
		}
	}
	checks = append(checks, cg)

	notif := HostCheck{Name: "seccomp user notification", Required: true, OK: true, Detail: "watched syscalls reach maka's monitor"}
	action := uint32(unix.SECCOMP_RET_USER_NOTIF)
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action))); e != 0 {
		notif.OK, notif.Detail = false, fmt.Sprintf("SECCOMP_RET_USER_NOTIF is not available (%v): Linux 5.0 with CONFIG_SECCOMP_FILTER", e)
	}
	checks = append(checks, notif)

	o2 := HostCheck{Name: "openat2", Required: true, OK: true, Detail: "paths resolved inside the root (RESOLVE_IN_ROOT)"}
	if fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC}); err != nil {
		o2.OK, o2.Detail = false, fmt.Sprintf("openat2: %v (Linux 5.6)", err)
	} else {
		unix.Close(fd)
	}
	checks = append(checks, o2)

	pf := HostCheck{Name: "pidfd", Required: true, OK: true, Detail: "pidfd_open and pidfd_getfd"}
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		pf.OK, pf.Detail = false, fmt.Sprintf("pidfd_open: %v (Linux 5.3)", err)
	} else {
		if _, err := unix.PidfdGetfd(fd, -1, 0); errors.Is(err, unix.ENOSYS) {
			pf.OK, pf.Detail = false, "pidfd_getfd: not implemented (Linux 5.6)"
		}
		unix.Close(fd)
	}
	checks = append(checks, pf)

	un := HostCheck{Name: "user namespaces", OK: true, Detail: "a sandbox's root is an unprivileged host user"}
	if data, err := os.ReadFile(maxUserNamespaces); err != nil {
		un.OK, un.Detail = false, fmt.Sprintf("%s: %v (CONFIG_USER_NS)", maxUserNamespaces, err)
	} else if strings.TrimSpace(string(data)) == "0" {
		un.OK, un.Detail = false, "user.max_user_namespaces is 0 (sysctl -w user.max_user_namespaces=15000): restricted sandboxes cannot run"
	}
	checks = append(checks, un)

	im := HostCheck{Name: "idmapped mounts", OK: true, Detail: "a read-only root's files show as the sandbox's own"}
	if _, _, e := unix.Syscall6(unix.SYS_MOUNT_SETATTR, ^uintptr(0), 0, 0, 0, 0, 0); e == unix.ENOSYS || !newEnough([2]int{5, 12}) {
		im.OK, im.Detail = false, "mount_setattr is missing (Linux 5.12): a root's files owned by the host's root show as nobody"
	}
	checks = append(checks, im)
	return checks
}

// HostUnfit is the error for a host whose required checks fail (and,
// with userns, whose user namespaces are missing): one line per piece.
func HostUnfit(checks []HostCheck, userns bool) error {
	var lines []string
	for _, c := range checks {
		if !c.OK && (c.Required || userns && c.Name == "user namespaces") {
			lines = append(lines, c.Name+": "+c.Detail)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%w (see maka check):\n  %s", ErrHostUnfit, strings.Join(lines, "\n  "))
}

// ownCgroupDir is this process's cgroup v2 directory.
func ownCgroupDir() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(cgroupRoot, p), nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}
