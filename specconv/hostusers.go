package specconv

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// checkHostUsers refuses a user namespace whose host ids a host account
// (or a subordinate range) uses, and a root the sandbox's root could not
// reach: a user namespace's root is an unprivileged host user. The ids in
// use are facts' (libmaka.HostFacts), the files' owners and modes host's.
func checkHostUsers(host libmaka.Host, facts *libmaka.HostFacts, b *libmaka.Boundary, policy *libmaka.Policy, reject func(field, format string, args ...any)) {
	u := b.Users
	if !u.Namespace {
		return
	}
	type span struct {
		field       string
		start, size uint64
		uses        []libmaka.HostIDUse
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
			span{"policy idPool", uint64(p.Start), size, slices.Concat(facts.UIDs, facts.SubUIDs)},
			span{"policy idPool", uint64(p.Start), size, slices.Concat(facts.GIDs, facts.SubGIDs)})
	case libmaka.IDsFromConfig:
		for i, m := range b.UIDMappings {
			spans = append(spans, span{fmt.Sprintf("linux.uidMappings[%d]", i), uint64(m.HostID), uint64(m.Size), facts.UIDs})
		}
		for i, m := range b.GIDMappings {
			spans = append(spans, span{fmt.Sprintf("linux.gidMappings[%d]", i), uint64(m.HostID), uint64(m.Size), facts.GIDs})
		}
	}
	for _, s := range spans {
		for _, use := range s.uses {
			if use.Start < s.start+s.size && use.Start+use.Size > s.start {
				reject(s.field, "host ids %d..%d meet %s's %d..%d in %s: a sandbox's ids must be no host account's", s.start, s.start+s.size-1, use.Name, use.Start, use.Start+use.Size-1, use.File)
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
		st, err := host.Stat(m.Source)
		if err != nil {
			continue // reported with the bind sources
		}
		if (u.Source == libmaka.IDsFromConfig || u.Source == libmaka.IDsOwn) && hostMaps(b.UIDMappings, st.UID) {
			continue
		}
		reject(fmt.Sprintf("mounts[%d].options", i), "%s belongs to host uid %d, which the sandbox's user namespace does not map: its root could not write there. Add \"idmap\" to the options (mounted through the sandbox's mapping), or bind it read-only", m.Source, st.UID)
	}
	// The sandbox's root must reach its root filesystem: every directory
	// on the way must be searchable by others (a pool's block belongs to
	// no file on the host).
	if b.Users.Source == libmaka.IDsFromPool {
		for p := b.Rootfs.Path; ; p = filepath.Dir(p) {
			if st, err := host.Stat(p); err == nil && st.Mode&0o001 == 0 {
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
