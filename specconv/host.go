package specconv

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/maka-runtime/maka/libmaka"
	"golang.org/x/sys/unix"
)

// nsFiles names each namespace type's file under /proc/PID/ns.
var nsFiles = map[string]string{
	"pid": "pid", "network": "net", "mount": "mnt", "ipc": "ipc", "uts": "uts", "user": "user", "cgroup": "cgroup",
}

// CheckHost checks what depends on the host's state, once config.json's
// own items have passed: the root and every bind source resolved through
// symlinks (a link to /etc is /etc), each against the paths no policy may
// hand a sandbox and against never (maka's own --root and state dir), and
// each namespace path against maka's own namespaces (the host's). The
// Boundary keeps the resolved paths, so what was checked is what is
// mounted. dir is what a relative root.path is relative to (the bundle).
// What it reads of the host it asks host (libmaka.ThisHost at create).
func CheckHost(host libmaka.Host, b *libmaka.Boundary, policy *libmaka.Policy, dir string, never []string) error {
	facts := host.Facts()
	var items []Item
	reject := func(field, format string, args ...any) {
		items = append(items, Item{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	root := b.Rootfs.Path
	if !filepath.IsAbs(root) {
		root = filepath.Join(dir, root)
	}
	if resolved, err := host.Resolve(root); err != nil {
		reject("root.path", "%s: %v", root, describePathError(err))
	} else if st, err := host.Stat(resolved); err != nil || !st.IsDir() {
		reject("root.path", "%s is not a directory", resolved)
	} else {
		b.Rootfs.Path = resolved
		if isSensitive(policy, resolved) || isNever(resolved, never) {
			reject("root.path", "%s may not be a sandbox's root: it is (or holds) a host path no sandbox may see", resolved)
		}
	}
	for i := range b.Mounts {
		m := &b.Mounts[i]
		if !IsBind(m) {
			continue
		}
		field := fmt.Sprintf("mounts[%d].source", i)
		resolved, err := host.Resolve(m.Source)
		if err != nil {
			reject(field, "%s: %v", m.Source, describePathError(err))
			continue
		}
		switch rule := policy.BindRule(resolved, libmaka.BindOwnerOf("", b.Annotations)); {
		case isNever(resolved, never):
			reject(field, "%s is maka's own state: no sandbox may bind it", resolved)
		case resolved != filepath.Clean(m.Source) && (rule == "" || (rule == "ro" && !isReadonly(m))):
			reject(field, "%s resolves to %s, which %s does not allow to be bound this way", m.Source, resolved, "profile "+policy.Profile)
		}
		m.Source = resolved
	}
	for i, d := range b.Devices {
		if _, std := standardDeviceNodes[d.Path]; std {
			continue // its numbers were checked against the standard ones
		}
		// A device the policy allows by name must be the host's node of
		// that name: the name is what the policy's author read.
		field := fmt.Sprintf("linux.devices[%d]", i)
		st, err := host.Stat(d.Path)
		if err != nil {
			reject(field, "%s: %v on the host", d.Path, describePathError(err))
			continue
		}
		typ := map[uint32]string{syscall.S_IFCHR: "c", syscall.S_IFBLK: "b"}[st.Mode&syscall.S_IFMT]
		major, minor := int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
		if typ != d.Type || major != d.Major || minor != d.Minor {
			reject(field, "%s is %s %d:%d on the host; config.json says %s %d:%d", d.Path, typ, major, minor, d.Type, d.Major, d.Minor)
		}
	}
	// A path to the host's own namespace is refused, but for the network
	// and uts namespaces of a hostNetwork pod's containers: containerd
	// joins them to the pod sandbox's namespaces by path, and those of a
	// hostNetwork sandbox are the host's. Where the policy allows the
	// host's network, such a path stands for what it is: no namespace of
	// the sandbox's own (the entry is dropped), under the same rules as a
	// sandbox that names none (hostUTSItems).
	hostOwn := map[string]bool{}
	for i, n := range b.Namespaces {
		if n.Path == "" {
			continue
		}
		field := fmt.Sprintf("linux.namespaces[%d].path", i)
		if same, err := sameFile(host, n.Path, "/proc/self/ns/"+nsFiles[n.Type]); err != nil {
			reject(field, "%s: %v", n.Path, describePathError(err))
		} else if same {
			hostOwn[n.Type] = true
		}
	}
	hostNet := policy.AllowsNetwork(libmaka.NetworkHost) && (hostOwn["network"] || !ownNamespaces(b)["network"])
	for i, n := range b.Namespaces {
		if !hostOwn[n.Type] || n.Path == "" {
			continue
		}
		if !hostNet || n.Type != "network" && n.Type != "uts" {
			reject(fmt.Sprintf("linux.namespaces[%d].path", i), "%s is the host's own %s namespace", n.Path, n.Type)
		}
	}
	if hostNet && (hostOwn["network"] || hostOwn["uts"]) && len(items) == 0 {
		b.Namespaces = slices.DeleteFunc(b.Namespaces, func(n libmaka.Namespace) bool {
			return n.Path != "" && hostOwn[n.Type] && (n.Type == "network" || n.Type == "uts")
		})
		if hostOwn["network"] {
			b.Network = libmaka.Network{Mode: libmaka.NetworkHost}
		}
		if hostOwn["uts"] {
			items = append(items, hostUTSItems(b.Hostname, b.Domainname, slices.Sorted(maps.Keys(b.Sysctl)),
				slices.Contains(b.Process.Capabilities, "CAP_SYS_ADMIN"), ownNamespaces(b)["user"])...)
		}
	}
	checkHostUsers(host, &facts, b, policy, reject)
	checkHostRules(host, facts.EUID, b, reject)
	summariseMounts(b) // with the resolved sources
	if len(items) > 0 {
		return &RejectedError{Verdict: Verdict{Profile: policy.Profile, Items: items}}
	}
	return nil
}

// isNever reports whether path is, holds or lies below one of never.
func isNever(path string, never []string) bool {
	for _, n := range never {
		n = filepath.Clean(n)
		if path == n || isBelowDir(path, n) || isBelowDir(n, path) {
			return true
		}
	}
	return false
}

func isBelowDir(path, dir string) bool {
	if dir == "/" {
		return path != "/"
	}
	return len(path) > len(dir) && path[:len(dir)] == dir && path[len(dir)] == '/'
}

func sameFile(host libmaka.Host, a, b string) (bool, error) {
	sa, err := host.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := host.Stat(b)
	if err != nil {
		return false, nil // maka has no such namespace to compare with
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

func describePathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, os.ErrNotExist) {
		return "does not exist"
	}
	return err.Error()
}
