package libmaka

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// WritePidFile writes pid to path atomically: a reader (containerd, conmon)
// either sees no file or the whole pid, never an empty or partial one.
func WritePidFile(path string, pid int) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".*")
	if err != nil {
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	_, err = tmp.WriteString(strconv.Itoa(pid))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("pid file %s: %w", path, err)
	}
	return nil
}
