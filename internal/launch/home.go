package launch

import (
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/specconv"
	"github.com/moby/sys/user"
)

// maxPasswd bounds how much of the root's /etc/passwd is read: the root
// may be the sandbox's own (a writable root) and so hostile.
const maxPasswd = 1 << 20

// withHome returns env as the sandbox's process gets it: one entry per
// name, the last one (libcontainer keeps the last). libcontainer (as runc)
// also adds HOME, from the /etc/passwd entry of uid ("/" without one), when
// env has no HOME or an empty one; maka adds it itself, to the contract, so
// that the environment a process gets is exactly the one the contract
// declares (`maka boundary`, the record exec is held to), and libcontainer,
// finding HOME set, adds nothing. added says it added HOME. b is the
// sandbox's contract: /etc/passwd is its root's, or what a mount of b's
// puts there.
func withHome(env []string, b *libmaka.Boundary, uid uint32) (out []string, added bool) {
	out, home := prepareEnv(env)
	if home {
		return out, false
	}
	return append(out, "HOME="+userHome(b, uid)), true
}

// prepareEnv is env as libcontainer hands it to the process before adding
// HOME: one entry per name (the last one, in the order of the last ones),
// an empty HOME dropped. home says a HOME is left. Entries that are not
// NAME=value (refused by Validate) are kept as they are.
func prepareEnv(env []string) (out []string, home bool) {
	seen := make(map[string]bool, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		name, val, ok := strings.Cut(kv, "=")
		if ok {
			if seen[name] {
				continue
			}
			seen[name] = true
			if name == "HOME" {
				if val == "" {
					continue
				}
				home = true
			}
		}
		out = append(out, kv)
	}
	slices.Reverse(out)
	return out, home
}

// DeclareHome adds HOME to the contract's environment where libcontainer
// would add it (withHome), and says so in b.Process.HomeAdded.
func DeclareHome(b *libmaka.Boundary) {
	b.Process.Env, b.Process.HomeAdded = withHome(b.Process.Env, b, b.Process.UID)
}

// ExecHome gives a process exec'd into b's sandbox the HOME libcontainer
// would: env's own when it declares one, else its user's (uid). inherited
// says env is the contract's with the exec's overrides applied (not
// exec --process's): a HOME maka added for the init's user is then
// replaced by the exec's user's, unless overrides set one.
func ExecHome(env []string, b *libmaka.Boundary, uid uint32, inherited bool, overrides []string) []string {
	if b == nil {
		return env
	}
	if inherited && b.Process.HomeAdded && !slices.ContainsFunc(overrides, func(kv string) bool { return strings.HasPrefix(kv, "HOME=") }) {
		env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "HOME=") })
	}
	out, _ := withHome(env, b, uid)
	return out
}

// passwdFile is where the sandbox's /etc/passwd is on the host, as a
// directory and a name inside it: the root's, unless a mount covers it (a
// bind brings its source's; anything else, such as a tmpfs, none).
func passwdFile(b *libmaka.Boundary) (dir, name string, ok bool) {
	dir, name, ok = b.Rootfs.Path, "etc/passwd", true
	for i := range b.Mounts {
		m := &b.Mounts[i]
		switch filepath.Clean(m.Destination) {
		case "/etc":
			dir, name, ok = m.Source, "passwd", specconv.IsBind(m)
		case "/etc/passwd":
			dir, name, ok = filepath.Dir(m.Source), filepath.Base(m.Source), specconv.IsBind(m)
		}
	}
	return dir, name, ok
}

// userHome is uid's home directory in b's sandbox, as libcontainer finds
// it from inside: the first /etc/passwd entry with that uid, else /.
func userHome(b *libmaka.Boundary, uid uint32) string {
	const defaultHome = "/"
	dir, name, ok := passwdFile(b)
	if !ok {
		return defaultHome
	}
	// The root (or a bind's source) is the bundle's, the file in it the
	// image's or the sandbox's: pinned and checked before it is opened,
	// so a FIFO, a device node or a proc file there is never opened as
	// host root (libmaka.OpenRootFile). What cannot be read gives /, as
	// a missing passwd does.
	f, err := libmaka.OpenRootFile(dir, name)
	if err != nil {
		return defaultHome
	}
	defer f.Close()
	users, err := user.ParsePasswdFilter(io.LimitReader(f, maxPasswd), func(u user.User) bool {
		return u.Uid == int(uid)
	})
	if err != nil || len(users) == 0 {
		return defaultHome
	}
	return users[0].Home
}
