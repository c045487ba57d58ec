package libmaka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// CheckMountpoints makes sure every mount destination already exists in the
// trusted root. libcontainer would otherwise create the missing ones in the
// root directory on the host, writing to a root maka promises never to
// touch. Paths are resolved inside the root (openat2 RESOLVE_IN_ROOT), so a
// symlink in the root cannot point the check at the host. fields[i] names
// the config.json field of dests[i] for the error.
func CheckMountpoints(rootfs string, dests, fields []string) error {
	root, err := os.Open(rootfs)
	if err != nil {
		return fmt.Errorf("root.path: %w", err)
	}
	defer root.Close()
	var missing []string
	for i, d := range dests {
		rel := strings.TrimLeft(filepath.Clean("/"+d), "/")
		if rel == "" {
			continue
		}
		fd, err := unix.Openat2(int(root.Fd()), rel, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == nil {
			unix.Close(fd)
			continue
		}
		if errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("check mount points: openat2 is not supported by this kernel (Linux 5.6 or later is required)")
		}
		field := d
		if i < len(fields) {
			field = fields[i]
		}
		missing = append(missing, fmt.Sprintf("%s: %s does not exist in the root filesystem (%v); maka never creates it there, add it to the root or drop the mount", field, d, err))
	}
	if len(missing) > 0 {
		return errors.New(strings.Join(missing, "; "))
	}
	return nil
}
