package libmaka

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Rootless is what maka run by an ordinary user works with: the user's
// ids, the cgroup subtree delegated to it, and its subordinate id ranges
// (newuidmap's), if it has any. A policy carrying one (ForRootless) places
// sandboxes in that subtree and maps their ids from those ranges, or, when
// the user has none, to the user's own ids alone.
type Rootless struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
	// CgroupParent is the delegated subtree (relative to the cgroup v2
	// mount): the parent of maka's own cgroup, owned by the user.
	CgroupParent string `json:"cgroupParent"`
	// SubUIDs and SubGIDs are the user's first /etc/subuid and
	// /etc/subgid ranges when newuidmap and newgidmap are there to map
	// them; nil: the sandbox maps the user's own uid and gid alone.
	SubUIDs *IDRange `json:"subUIDs,omitempty"`
	SubGIDs *IDRange `json:"subGIDs,omitempty"`
}

// Files and places rootless mode reads (variables for tests).
var (
	procSelfCgroup       = "/proc/self/cgroup"
	maxUserNamespaces    = "/proc/sys/user/max_user_namespaces"
	unprivilegedUserns   = "/proc/sys/kernel/unprivileged_userns_clone"
	apparmorRestrictUser = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"
	subuidPath           = "/etc/subuid"
	subgidPath           = "/etc/subgid"
	lookPath             = exec.LookPath
	cgroupMount          = cgroupRoot
)

// RootlessMode reads --rootless (true, false, auto, as runc's) for the
// effective uid euid: whether maka runs rootless.
func RootlessMode(flag string, euid int) (bool, error) {
	switch flag {
	case "true":
		if euid == 0 {
			return false, errors.New("--rootless=true: maka runs as root here; rootless mode is maka run by an ordinary user (drop the flag)")
		}
		return true, nil
	case "false":
		if euid != 0 {
			return false, errors.New("--rootless=false: maka is not running as root (run it as root, or drop the flag)")
		}
		return false, nil
	case "auto", "":
		return euid != 0, nil
	}
	return false, fmt.Errorf("--rootless: invalid value %q (want true, false or auto)", flag)
}

// CheckRootless looks at what rootless mode needs: unprivileged user
// namespaces, a delegated cgroup v2 subtree holding maka's own cgroup, the
// cpu, memory and pids controllers in it. It returns what it found and one
// line per missing piece (none: maka can run rootless here).
func CheckRootless() (*Rootless, []string) {
	r := &Rootless{UID: os.Geteuid(), GID: os.Getegid()}
	var missing []string
	if v := readTrimmed(maxUserNamespaces); v == "0" {
		missing = append(missing, "user namespaces: user.max_user_namespaces is 0 (sysctl -w user.max_user_namespaces=15000)")
	}
	if v := readTrimmed(unprivilegedUserns); v == "0" {
		missing = append(missing, "user namespaces: unprivileged ones are disabled (sysctl -w kernel.unprivileged_userns_clone=1)")
	}
	if v := readTrimmed(apparmorRestrictUser); v == "1" {
		missing = append(missing, "user namespaces: AppArmor restricts unprivileged ones (kernel.apparmor_restrict_unprivileged_userns=1): give maka an AppArmor profile that allows userns, or set it to 0")
	}
	own, err := ownCgroupRel()
	if err != nil {
		return r, append(missing, "cgroup delegation: "+err.Error())
	}
	parent := filepath.Dir(own)
	r.CgroupParent = parent
	dir := cgroupMount + parent
	if parent == "/" {
		missing = append(missing, fmt.Sprintf("cgroup delegation: maka runs in %s, directly below the cgroup root, which is never delegated: run it in a delegated subtree (systemd: a unit with Delegate=yes and DelegateSubgroup=maka; or a cgroup chowned to uid %d, maka in a child of it)", own, r.UID))
		return r, missing
	}
	var notOwned []string
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, f), &st); err != nil || int(st.Uid) != r.UID {
			notOwned = append(notOwned, filepath.Join(dir, f))
		}
	}
	if len(notOwned) > 0 {
		missing = append(missing, fmt.Sprintf("cgroup delegation: %s is not delegated to uid %d (not the owner of %s): maka runs in %s and puts sandboxes next to it; run it in a delegated subtree (systemd: Delegate=yes and DelegateSubgroup=maka; or chown the cgroup, its cgroup.procs, cgroup.subtree_control and cgroup.threads to the user)", parent, r.UID, strings.Join(notOwned, ", "), own))
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	have := strings.Fields(string(data))
	var absent []string
	for _, c := range []string{"cpu", "memory", "pids"} {
		if !slices.Contains(have, c) {
			absent = append(absent, c)
		}
	}
	if err != nil || len(absent) > 0 {
		missing = append(missing, fmt.Sprintf("cgroup controllers: %s are not available in %s (cgroup.controllers: %q): enable them in its parent's cgroup.subtree_control (systemd: Delegate=cpu memory pids)", strings.Join(absent, ", "), parent, strings.Join(have, " ")))
	}
	r.SubUIDs, r.SubGIDs = subordinateIDs(r.UID)
	return r, missing
}

// subordinateIDs is the user's first ranges in /etc/subuid and
// /etc/subgid, when newuidmap and newgidmap can map them.
func subordinateIDs(uid int) (*IDRange, *IDRange) {
	names := []string{strconv.Itoa(uid)}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		names = append(names, u.Username)
	}
	su, sg := firstRange(subuidPath, names), firstRange(subgidPath, names)
	if su == nil || sg == nil {
		return nil, nil
	}
	for _, helper := range []string{"newuidmap", "newgidmap"} {
		if _, err := lookPath(helper); err != nil {
			return nil, nil
		}
	}
	return su, sg
}

func firstRange(path string, names []string) *IDRange {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Split(strings.TrimSpace(s.Text()), ":")
		if len(fields) != 3 || !slices.Contains(names, fields[0]) {
			continue
		}
		start, err1 := strconv.ParseUint(fields[1], 10, 32)
		size, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 == nil && err2 == nil && start > 0 && size > 0 && start+size <= 1<<32-1 {
			return &IDRange{Start: uint32(start), Size: uint32(size)}
		}
	}
	return nil
}

func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// ownCgroupRel is maka's own cgroup, relative to the cgroup v2 mount.
func ownCgroupRel() (string, error) {
	data, err := os.ReadFile(procSelfCgroup)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Clean(p), nil
		}
	}
	return "", fmt.Errorf("no cgroup v2 entry in %s", procSelfCgroup)
}

// ForRootless is p for maka run by an ordinary user: sandboxes go into the
// delegated subtree, config.json's own id mappings are refused, and every
// sandbox gets a user namespace whose ids are a block of the user's
// subordinate ranges (leased like the pool's), or the user's own uid and
// gid alone.
func (p *Policy) ForRootless(r *Rootless) *Policy {
	q := *p
	q.Rootless = r
	q.UserNamespace = UserNamespaceRequired
	q.CgroupParents = []string{r.CgroupParent}
	q.DelegatedIDs = []IDRange{}
	if r.SubUIDs != nil && r.SubGIDs != nil {
		// Container id 0 is the user; ids 1..65535 a block of its ranges.
		size := min(r.SubUIDs.Size, r.SubGIDs.Size, 65535)
		count := min(r.SubUIDs.Size, r.SubGIDs.Size) / size
		q.IDPool = IDPool{Start: r.SubUIDs.Start, GIDStart: r.SubGIDs.Start, Size: size, Count: count,
			Owner: &IDOwner{UID: uint32(r.UID), GID: uint32(r.GID)}}
	}
	return &q
}
