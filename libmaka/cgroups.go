package libmaka

import (
	"fmt"
	"strconv"
	"strings"
)

// OwnCgroupParent is the cgroup (relative to the cgroup v2 mount) maka
// places a sandbox under when config.json names no linux.cgroupsPath:
// /maka/<id>. It is maka's own, so below it only /maka/<name> is accepted
// (never deeper): a sandbox cannot nest itself inside another's cgroup.
const OwnCgroupParent = "/maka"

// OwnParent is where a sandbox without linux.cgroupsPath goes: /maka, or
// for a rootless maka the subtree delegated to its user.
func (p *Policy) OwnParent() string {
	if p != nil && p.Rootless != nil && p.Rootless.CgroupParent != "" {
		return p.Rootless.CgroupParent
	}
	return OwnCgroupParent
}

// maxCgroupPath bounds a cgroupsPath so that the directory's absolute path
// (below /sys/fs/cgroup) fits in PATH_MAX; maxCgroupName is NAME_MAX.
const (
	maxCgroupPath = 4096 - len(cgroupRoot) - 1
	maxCgroupName = 255
)

// CgroupPath is the cgroup (relative to the cgroup v2 mount, e.g.
// "/maka/box1") sandbox id is placed in, given config.json's
// linux.cgroupsPath (requested, "" if absent). Without one it is
// /maka/<id>. A requested path is accepted only strictly below one of the
// policy's cgroupParents, made of plain names: the cgroup is the
// sandbox's own, created (not joined) by maka, and the only one maka will
// ever kill or remove for it. It reads nothing on the host: that the
// cgroup does not exist yet is checked when it is created.
func (p *Policy) CgroupPath(id, requested string) (string, error) {
	if requested == "" {
		if !ValidID(id) {
			return "", InvalidIDError(id)
		}
		return p.OwnParent() + "/" + id, nil
	}
	const field = "linux.cgroupsPath"
	if err := checkCgroupPathShape(requested); err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	for _, parent := range p.CgroupParents {
		if !isBelow(requested, parent) || parent == "/" {
			continue
		}
		if own := p.OwnParent(); parent == own && strings.Contains(requested[len(parent)+1:], "/") {
			return "", fmt.Errorf("%s: %q: below %s (maka's own parent) a sandbox's cgroup is %s/<name>, one level deep: it may not nest inside another sandbox's cgroup", field, requested, own, own)
		}
		return requested, nil
	}
	hint := ""
	if parent := requested[:strings.LastIndexByte(requested, '/')]; parent != "" {
		hint = fmt.Sprintf("; to allow it, the policy file may set \"cgroupParents\": %s", quoteList(append(append([]string{}, p.CgroupParents...), parent)))
	} else if parent == "" {
		hint = "; a top-level cgroup is never allowed: name one below a parent (e.g. " + OwnCgroupParent + "/<name>), or omit linux.cgroupsPath"
	}
	return "", fmt.Errorf("%s: %q is not below a cgroup parent the policy %s allows (cgroupParents: %s): maka places a sandbox only in a cgroup of its own under one of them%s",
		field, requested, p.Profile, quoteList(p.CgroupParents), hint)
}

// checkCgroupPathShape refuses a cgroupsPath that is not an absolute path
// of plain names: systemd's slice:prefix:name form, a relative path (runc
// would resolve it against its own cgroup), "." and ".." components (which
// runc would clean into another place), empty components, NUL and any
// character outside [A-Za-z0-9_.+@=-].
func checkCgroupPathShape(path string) error {
	if len(path) > maxCgroupPath {
		return fmt.Errorf("%d bytes long: at most %d", len(path), maxCgroupPath)
	}
	if !strings.HasPrefix(path, "/") {
		if strings.Count(path, ":") == 2 {
			return fmt.Errorf("%q is a systemd cgroup path (slice:prefix:name), which only the systemd cgroup driver reads; maka does not support it (--systemd-cgroup is refused): use the cgroupfs driver (Podman: --cgroup-manager cgroupfs; containerd: SystemdCgroup = false; kubelet: cgroupDriver: cgroupfs), whose paths are absolute", path)
		}
		return fmt.Errorf("%q is not an absolute path: maka does not place a sandbox relative to its own cgroup", path)
	}
	if path == "/" {
		return fmt.Errorf("%q is the root cgroup: a sandbox never joins it", path)
	}
	for _, name := range strings.Split(path[1:], "/") {
		switch {
		case name == "":
			return fmt.Errorf("%q has an empty component (\"//\" or a trailing \"/\")", path)
		case name == "." || name == "..":
			return fmt.Errorf("%q has a %q component: cgroup paths are taken literally", path, name)
		case len(name) > maxCgroupName:
			return fmt.Errorf("%q has a component of %d bytes: at most %d", path, len(name), maxCgroupName)
		}
		for _, c := range []byte(name) {
			if !cgroupNameByte(c) {
				return fmt.Errorf("%q: character %s is not allowed in a cgroup name (letters, digits and _ . + @ = - only)", path, strconv.QuoteRune(rune(c)))
			}
		}
	}
	return nil
}

func cgroupNameByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("_.+@=-", c) >= 0
}

// validateCgroupParents checks the policy's cgroupParents: each a clean
// absolute path of plain names, never the root (which would let
// config.json place a sandbox anywhere, e.g. in a system service's slice).
func validateCgroupParents(parents []string) []string {
	var errs []string
	for i, parent := range parents {
		if err := checkCgroupPathShape(parent); err != nil {
			errs = append(errs, fmt.Sprintf("cgroupParents[%d]: %v", i, err))
		}
	}
	return errs
}

// quoteList prints a JSON-style list of strings, for hints.
func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
