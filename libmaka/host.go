package libmaka

import (
	"bufio"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/selinux/go-selinux"
	"golang.org/x/sys/unix"
)

// Host is what specconv's rules ask of the host they run on (issue 24,
// item 7: specconv reads nothing of the host itself). The rules stay in
// specconv; the reads are here. ThisHost is the real one; a test hands
// specconv a fake.
type Host interface {
	// Facts are maka's own and the kernel's facts the rules compare
	// config.json with.
	Facts() HostFacts
	// Resolve is path with every symlink on its way resolved
	// (filepath.EvalSymlinks): a missing path is an *os.PathError.
	Resolve(path string) (string, error)
	// Stat stats path, following symlinks (an *os.PathError if it cannot).
	Stat(path string) (HostStat, error)
	// CgroupProcs counts the processes directly in the cgroup at path
	// (from the cgroup v2 hierarchy's root: /kubepods/pod1); an error if
	// the cgroup does not exist.
	CgroupProcs(path string) (int, error)
	// SELinux reports whether SELinux is enabled on the host: without it
	// an SELinux label confines nothing, and the kernel refuses a mount
	// that carries one (context=).
	SELinux() bool
	// SysSubmounts are the mount points below /sys in maka's mount
	// namespace that no other one below /sys holds (securityfs, bpffs,
	// tracefs, the cgroup hierarchy, ...): a recursive bind of the host's
	// /sys would carry each of them.
	SysSubmounts() []string
}

// HostFacts are the host's facts that do not depend on a path.
type HostFacts struct {
	// OOMScoreAdj is maka's own oom_score_adj (0 if unreadable): a
	// sandbox may not ask to be killed later than the runtime that made it.
	OOMScoreAdj int
	// NrOpen is the kernel's fs.nr_open (0: unknown): no process may have
	// an RLIMIT_NOFILE above it.
	NrOpen uint64
	// HardLimits are maka's own hard limits by resource (RLIMIT_*
	// number); a resource missing is RLIM_INFINITY (unreadable). See
	// HardLimit.
	HardLimits map[int]uint64
	// StackLimit is maka's own soft RLIMIT_STACK (8 MiB if unreadable),
	// which the init inherits when process.rlimits sets none.
	StackLimit uint64
	// EUID is maka's effective uid.
	EUID uint32
	// Monotonic and Boottime are the clocks' seconds (CLOCK_MONOTONIC,
	// CLOCK_BOOTTIME) when the facts were taken (0: unreadable).
	Monotonic, Boottime int64
	// The ids host accounts use (/etc/passwd's uids, /etc/group's gids)
	// and the subordinate ranges useradd hands out (/etc/subuid,
	// /etc/subgid), from the files that exist.
	UIDs, GIDs, SubUIDs, SubGIDs []HostIDUse
}

// HardLimit is maka's own hard limit of the resource (RLIM_INFINITY when
// unknown).
func (f HostFacts) HardLimit(resource int) uint64 {
	if v, ok := f.HardLimits[resource]; ok {
		return v
	}
	return unix.RLIM_INFINITY
}

// HostIDUse is one id (or range of ids) the host hands to someone: an
// account's (Size 1) or a subordinate range, as File lists it.
type HostIDUse struct {
	File, Name  string
	Start, Size uint64
}

// HostStat is what the rules read of a path's stat(2).
type HostStat struct {
	Mode     uint32 // st_mode: the file's type and permission bits
	UID      uint32
	Dev, Ino uint64
	Rdev     uint64 // a device node's numbers
}

// IsDir reports whether the path is a directory.
func (s HostStat) IsDir() bool { return s.Mode&syscall.S_IFMT == syscall.S_IFDIR }

// ThisHost is the host maka runs on.
func ThisHost() Host { return thisHost{} }

type thisHost struct{}

// Host files naming the ids host accounts use, and the subordinate ranges
// useradd hands out (newuidmap's).
const (
	passwdFile = "/etc/passwd"
	groupFile  = "/etc/group"
	subuidFile = "/etc/subuid"
	subgidFile = "/etc/subgid"
)

// ownFacts are the facts that stay as they are while maka runs (its own
// oom_score_adj, limits and euid; fs.nr_open), read once, when first
// needed. libmaka's Policy.Tighten reads its oom_score_adj from here too
// (ownOOMScoreAdj, tighten.go): one reader.
var ownFacts = sync.OnceValue(func() HostFacts {
	f := HostFacts{
		OOMScoreAdj: readInt("/proc/self/oom_score_adj"),
		NrOpen:      uint64(max(readInt("/proc/sys/fs/nr_open"), 0)),
		HardLimits:  map[int]uint64{},
		StackLimit:  8 << 20,
		EUID:        uint32(os.Geteuid()),
	}
	for r := 0; r <= unix.RLIMIT_RTTIME; r++ { // every resource Linux has
		var l unix.Rlimit
		if unix.Getrlimit(r, &l) == nil {
			f.HardLimits[r] = l.Max
			if r == unix.RLIMIT_STACK {
				f.StackLimit = l.Cur
			}
		}
	}
	return f
})

// Facts are the facts read once (ownFacts) with the clocks and the
// account files read now: these change while a long-lived maka (a
// sandbox.Manager) runs, and a stale clock or a missed subordinate range
// would pass what the kernel or the host's accounts refuse.
func (thisHost) Facts() HostFacts {
	f := ownFacts()
	f.HardLimits = maps.Clone(f.HardLimits) // the caller's to change
	f.Monotonic, f.Boottime = clockSecs(unix.CLOCK_MONOTONIC), clockSecs(unix.CLOCK_BOOTTIME)
	f.UIDs = readIDUses(passwdFile, true)
	f.GIDs = readIDUses(groupFile, true)
	f.SubUIDs = readIDUses(subuidFile, false)
	f.SubGIDs = readIDUses(subgidFile, false)
	return f
}

func (thisHost) Resolve(path string) (string, error) { return filepath.EvalSymlinks(path) }

func (thisHost) Stat(path string) (HostStat, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return HostStat{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return HostStat{Mode: st.Mode, UID: st.Uid, Dev: uint64(st.Dev), Ino: st.Ino, Rdev: uint64(st.Rdev)}, nil
}

func (thisHost) CgroupProcs(path string) (int, error) { return cgroupProcsIn(cgroupRoot, path) }

// SELinux asks go-selinux, the library libcontainer labels with, and the
// kernel: go-selinux answers "disabled" where selinuxfs is read-only or not
// mounted in maka's mount namespace (a systemd unit with
// ProtectKernelTunables, a privileged container), on a kernel that enforces
// SELinux all the same. The kernel registers selinuxfs only when SELinux is
// enabled at boot, and /proc/filesystems is not per mount namespace: a
// label is dropped only where neither sees SELinux.
func (thisHost) SELinux() bool { return selinux.GetEnabled() || kernelHasSELinux(procFilesystems) }

func (thisHost) SysSubmounts() []string {
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter("/sys"))
	if err != nil {
		return nil
	}
	var points []string
	for _, in := range infos {
		if strings.HasPrefix(in.Mountpoint, "/sys/") {
			points = append(points, filepath.Clean(in.Mountpoint))
		}
	}
	return topMounts(points)
}

// topMounts are the points of points that no other one of them holds.
func topMounts(points []string) []string {
	slices.Sort(points)
	var top []string
	for _, p := range slices.Compact(points) {
		if !slices.ContainsFunc(top, func(t string) bool { return strings.HasPrefix(p, t+"/") }) {
			top = append(top, p)
		}
	}
	return top
}

// procFilesystems lists the filesystems the kernel has registered.
var procFilesystems = "/proc/filesystems"

// kernelHasSELinux reports whether the kernel has registered selinuxfs (a
// file that cannot be read: yes, labels are kept).
func kernelHasSELinux(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == "selinuxfs" {
			return true
		}
	}
	return false
}

// cgroupProcsIn counts the processes directly in the cgroup at path of
// the hierarchy mounted at root.
func cgroupProcsIn(root, path string) (int, error) {
	data, err := os.ReadFile(filepath.Join(root, path, "cgroup.procs"))
	if err != nil {
		return 0, err
	}
	return len(strings.Fields(string(data))), nil
}

// readInt is the integer a /proc file holds (0 if unreadable).
func readInt(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return n
}

func clockSecs(id int32) int64 {
	var ts unix.Timespec
	if unix.ClockGettime(id, &ts) != nil {
		return 0
	}
	return ts.Sec
}

// readIDUses lists the ids the file hands out (none if it does not exist):
// accounts, an /etc/passwd or /etc/group (name:x:id:...); else
// subordinate ranges (name:start:count).
func readIDUses(path string, accounts bool) []HostIDUse {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseIDUses(path, f, accounts)
}

func parseIDUses(path string, r io.Reader, accounts bool) []HostIDUse {
	var out []HostIDUse
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) < 3 {
			continue
		}
		if accounts {
			if id, err := strconv.ParseUint(f[2], 10, 32); err == nil {
				out = append(out, HostIDUse{path, f[0], id, 1})
			}
			continue
		}
		start, err1 := strconv.ParseUint(f[1], 10, 32)
		size, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 == nil && err2 == nil {
			out = append(out, HostIDUse{path, f[0], start, size})
		}
	}
	return out
}
