package libmaka

import (
	"fmt"
	"os"
	"strings"

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
		return fmt.Errorf("%w: cannot stat %s: %v", ErrNoCgroup2, cgroupRoot, err)
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
		return fmt.Errorf("%w: %v", ErrNoCgroup2, err)
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
