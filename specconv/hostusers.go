package specconv

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// Host files naming the ids host accounts use, and the subordinate ranges
// useradd hands out (newuidmap's).
var (
	passwdFile = "/etc/passwd"
	groupFile  = "/etc/group"
	subuidFile = "/etc/subuid"
	subgidFile = "/etc/subgid"
)

// hostIDUse is one id (or range) the host hands to someone.
type hostIDUse struct {
	file, name  string
	start, size uint64
}

// hostIDsIn lists the ids that host accounts use ("/etc/passwd": uids,
// "/etc/group": gids) and the subordinate ranges, from the files that exist.
func hostIDsIn(accounts, sub string) []hostIDUse {
	var out []hostIDUse
	scan := func(path string, each func(fields []string)) {
		f, err := os.Open(path)
		if err != nil {
			return
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if line := s.Text(); line != "" && !strings.HasPrefix(line, "#") {
				each(strings.Split(line, ":"))
			}
		}
	}
	scan(accounts, func(f []string) {
		if len(f) >= 3 {
			if id, err := strconv.ParseUint(f[2], 10, 32); err == nil {
				out = append(out, hostIDUse{accounts, f[0], id, 1})
			}
		}
	})
	scan(sub, func(f []string) {
		if len(f) >= 3 {
			start, err1 := strconv.ParseUint(f[1], 10, 32)
			size, err2 := strconv.ParseUint(f[2], 10, 32)
			if err1 == nil && err2 == nil {
				out = append(out, hostIDUse{sub, f[0], start, size})
			}
		}
	})
	return out
}

// checkHostUsers refuses a user namespace whose host ids a host account
// (or a subordinate range) uses, and a root the sandbox's root could not
// reach: a user namespace's root is an unprivileged host user.
func checkHostUsers(b *libmaka.Boundary, policy *libmaka.Policy, reject func(field, format string, args ...any)) {
	u := b.Users
	if !u.Namespace {
		return
	}
	type span struct {
		field       string
		start, size uint64
		uses        []hostIDUse
	}
	var spans []span
	switch u.Source {
	case libmaka.IDsFromPool:
		if policy.Rootless != nil {
			break // the user's own subordinate ranges (ForRootless)
		}
		p := u.Pool
		size := p.End() - uint64(p.Start)
		// The pool is the policy's: a field of config.json is not to blame.
		spans = append(spans,
			span{"policy idPool", uint64(p.Start), size, hostIDsIn(passwdFile, subuidFile)},
			span{"policy idPool", uint64(p.Start), size, hostIDsIn(groupFile, subgidFile)})
	case libmaka.IDsFromConfig:
		for i, m := range b.UIDMappings {
			spans = append(spans, span{fmt.Sprintf("linux.uidMappings[%d]", i), uint64(m.HostID), uint64(m.Size), hostIDsIn(passwdFile, "")})
		}
		for i, m := range b.GIDMappings {
			spans = append(spans, span{fmt.Sprintf("linux.gidMappings[%d]", i), uint64(m.HostID), uint64(m.Size), hostIDsIn(groupFile, "")})
		}
	}
	for _, s := range spans {
		for _, use := range s.uses {
			if use.start < s.start+s.size && use.start+use.size > s.start {
				reject(s.field, "host ids %d..%d meet %s's %d..%d in %s: a sandbox's ids must be no host account's", s.start, s.start+s.size-1, use.name, use.start, use.start+use.size-1, use.file)
				break
			}
		}
	}
	// A writable bind is written by the sandbox's ids: one they do not own
	// (the host's root's, typically) would be writable in name only. It
	// must be mounted idmapped (through the sandbox's mapping, what the
	// host's root owns is the sandbox root's), or belong to a mapped id
	// (an engine chowned it, as Podman does for --userns).
	for i, m := range b.Mounts {
		if !IsBind(&m) || isReadonly(&m) || idmapped(&m) {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(m.Source, &st); err != nil {
			continue // reported with the bind sources
		}
		if (u.Source == libmaka.IDsFromConfig || u.Source == libmaka.IDsOwn) && hostMaps(b.UIDMappings, st.Uid) {
			continue
		}
		reject(fmt.Sprintf("mounts[%d].options", i), "%s belongs to host uid %d, which the sandbox's user namespace does not map: its root could not write there. Add \"idmap\" to the options (mounted through the sandbox's mapping), or bind it read-only", m.Source, st.Uid)
	}
	// The sandbox's root must reach its root filesystem: every directory
	// on the way must be searchable by others (a pool's block belongs to
	// no file on the host).
	if b.Users.Source == libmaka.IDsFromPool {
		for p := b.Rootfs.Path; ; p = filepath.Dir(p) {
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err == nil && st.Mode&0o001 == 0 {
				reject("root.path", "%s (mode %#o) is not searchable by the sandbox's root, an unprivileged host user in its user namespace: chmod o+x %s", p, st.Mode&0o7777, p)
				break
			}
			if p == "/" || p == "." {
				break
			}
		}
	}
}

// hostMaps reports whether the host id is inside one of the mappings.
func hostMaps(maps []specs.LinuxIDMapping, id uint32) bool {
	for _, m := range maps {
		if uint64(id) >= uint64(m.HostID) && uint64(id) < uint64(m.HostID)+uint64(m.Size) {
			return true
		}
	}
	return false
}
