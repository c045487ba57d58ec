package specconv

import (
	"fmt"
	"slices"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// checkUsers decides whether the sandbox gets a user namespace and whose
// ids it maps. Under a policy that requires one (restricted), a config.json
// without one gets one. Without its own mappings, the sandbox gets a block
// of the policy's pool, leased at create (libmaka.Op.LeaseIDs); with its
// own (an engine's allocator, e.g. kubelet's for hostUsers: false), each
// must lie in a range the policy delegates, which never meets the pool.
func (c *checker) checkUsers() {
	l := c.spec.Linux
	userns := slices.ContainsFunc(l.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace })
	mapped := len(l.UIDMappings) > 0 || len(l.GIDMappings) > 0
	switch {
	case !userns && mapped:
		c.reject("linux.uidMappings", "", `id mappings need a user namespace: add {"type": "user"} to linux.namespaces`)
		return
	case !userns && c.policy.UserNamespace == libmaka.UserNamespaceRequired:
		l.Namespaces = append(l.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
	case !userns:
		return
	}
	c.userns = true
	if r := c.policy.Rootless; r != nil && ((r.SubUIDs == nil || r.SubGIDs == nil) && !mapped || ownMapping(l, r)) {
		// The user's own ids alone: the sandbox's root is the user.
		l.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(r.UID), Size: 1}}
		l.GIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: uint32(r.GID), Size: 1}}
		// devpts' gid=5 (tty) names a group the sandbox does not map:
		// its terminals are then its root's group's, as runc's rootless
		// spec has them.
		for i := range c.spec.Mounts {
			if m := &c.spec.Mounts[i]; m.Type == "devpts" {
				m.Options = slices.DeleteFunc(m.Options, func(o string) bool {
					return (strings.HasPrefix(o, "gid=") || strings.HasPrefix(o, "uid=")) && o != "gid=0" && o != "uid=0"
				})
			}
		}
		c.checkMappedUser(c.spec.Process, l.UIDMappings[:1:1], l.GIDMappings[:1:1])
		return
	}
	if !mapped {
		c.checkMappedUser(c.spec.Process, []specs.LinuxIDMapping{{Size: c.policy.IDPool.ContainerIDs()}}, nil)
		return
	}
	for _, m := range []struct {
		field string
		maps  []specs.LinuxIDMapping
	}{{"linux.uidMappings", l.UIDMappings}, {"linux.gidMappings", l.GIDMappings}} {
		if len(m.maps) == 0 {
			c.reject(m.field, "", "missing: a user namespace with its own mappings needs both uidMappings and gidMappings (or neither: maka then leases ids from its pool)")
		}
		for i, r := range m.maps {
			c.checkDelegated(fmt.Sprintf("%s[%d]", m.field, i), r)
		}
	}
	c.checkMappedUser(c.spec.Process, l.UIDMappings, l.GIDMappings)
}

// ownMapping reports whether l maps exactly a rootless user's own uid and
// gid to container id 0 (what `maka spec --rootless` writes).
func ownMapping(l *specs.Linux, r *libmaka.Rootless) bool {
	return len(l.UIDMappings) == 1 && len(l.GIDMappings) == 1 &&
		l.UIDMappings[0] == specs.LinuxIDMapping{ContainerID: 0, HostID: uint32(r.UID), Size: 1} &&
		l.GIDMappings[0] == specs.LinuxIDMapping{ContainerID: 0, HostID: uint32(r.GID), Size: 1}
}

// checkDelegated refuses a mapping whose host ids are not all in one of the
// policy's delegated ranges.
func (c *checker) checkDelegated(field string, m specs.LinuxIDMapping) {
	end := uint64(m.HostID) + uint64(m.Size)
	switch {
	case m.Size == 0:
		c.reject(field+".size", "", "0 maps no id")
		return
	case uint64(m.ContainerID)+uint64(m.Size) > 1<<32-1 || end > 1<<32-1:
		c.reject(field, "", "container ids %d or host ids %d, %d of them, pass the last id", m.ContainerID, m.HostID, m.Size)
		return
	case m.HostID == 0:
		c.reject(field+".hostID", "", "0 would make the sandbox's user the host's root")
		return
	}
	for _, r := range c.policy.DelegatedIDs {
		if uint64(m.HostID) >= uint64(r.Start) && end <= uint64(r.Start)+uint64(r.Size) {
			return
		}
	}
	if c.policy.IDPool.Overlaps(m.HostID, m.Size) {
		c.reject(field+".hostID", "", "host ids %d..%d are in maka's id pool, whose blocks maka leases itself: leave linux.uidMappings and linux.gidMappings out", m.HostID, end-1)
		return
	}
	c.reject(field+".hostID", `"delegatedIDs": [{"start": ..., "size": ...}]`,
		"host ids %d..%d are not in a range %s delegates to engines (%s): leave the mappings out and maka leases a block from its pool", m.HostID, end-1, c.profile(), rangesString(c.policy.DelegatedIDs))
}

// checkMappedUser refuses a process user the user namespace does not map
// (the kernel would refuse it with EINVAL). gids nil: the same as uids.
func (c *checker) checkMappedUser(p *specs.Process, uids, gids []specs.LinuxIDMapping) {
	if p == nil {
		return
	}
	if gids == nil {
		gids = uids
	}
	if !mapsID(uids, p.User.UID) {
		c.reject("process.user.uid", "", "%d is not mapped in the sandbox's user namespace (container ids %s)", p.User.UID, mappedString(uids))
	}
	if !mapsID(gids, p.User.GID) {
		c.reject("process.user.gid", "", "%d is not mapped in the sandbox's user namespace (container ids %s)", p.User.GID, mappedString(gids))
	}
	for i, g := range p.User.AdditionalGids {
		if !mapsID(gids, g) {
			c.reject(fmt.Sprintf("process.user.additionalGids[%d]", i), "", "%d is not mapped in the sandbox's user namespace (container ids %s)", g, mappedString(gids))
		}
	}
}

// checkExecUser holds an exec'd process to the container's mapping.
func (c *checker) checkExecUser(p *specs.Process, b *libmaka.Boundary) {
	if !b.Users.Namespace {
		return
	}
	uids, gids := b.UIDMappings, b.GIDMappings
	if len(uids) == 0 && b.Users.Pool != nil {
		uids, gids = []specs.LinuxIDMapping{{Size: b.Users.Pool.ContainerIDs()}}, nil
	}
	c.checkMappedUser(p, uids, gids)
}

func mapsID(maps []specs.LinuxIDMapping, id uint32) bool {
	for _, m := range maps {
		if uint64(id) >= uint64(m.ContainerID) && uint64(id) < uint64(m.ContainerID)+uint64(m.Size) {
			return true
		}
	}
	return false
}

func mappedString(maps []specs.LinuxIDMapping) string {
	s := ""
	for i, m := range maps {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d..%d", m.ContainerID, uint64(m.ContainerID)+uint64(m.Size)-1)
	}
	if s == "" {
		return "none"
	}
	return s
}

func rangesString(rs []libmaka.IDRange) string {
	if len(rs) == 0 {
		return "none"
	}
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d..%d", r.Start, uint64(r.Start)+uint64(r.Size)-1)
	}
	return s
}

// usersOf summarises the user namespace of a checked spec.
func usersOf(l *specs.Linux, policy *libmaka.Policy) libmaka.Users {
	if !slices.ContainsFunc(l.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace }) {
		return libmaka.Users{}
	}
	if r := policy.Rootless; r != nil && ((r.SubUIDs == nil || r.SubGIDs == nil) && len(l.UIDMappings) <= 1 || ownMapping(l, r)) {
		return libmaka.Users{Namespace: true, Source: libmaka.IDsOwn}
	}
	if len(l.UIDMappings) > 0 {
		return libmaka.Users{Namespace: true, Source: libmaka.IDsFromConfig}
	}
	pool := policy.IDPool
	return libmaka.Users{Namespace: true, Source: libmaka.IDsFromPool, Pool: &pool}
}
