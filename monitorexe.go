package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// monitorExecutable is the program a detached container's monitor runs: the
// small maka-monitor that a `make build` maka carries, gzipped
// (monitorexe_embed.go), written once per build into the state root under
// its digest; or else maka itself (`maka monitor`). A file found there is
// run only if maka could have written it: a regular file of maka's own
// user, mode 0500, one link, whose content has the build's digest (the
// root is never bindable, but a file planted there would run as root at
// every create); any other is replaced.
func monitorExecutable(root string) (string, error) {
	digest := strings.TrimSpace(embeddedMonitorDigest)
	if len(embeddedMonitorGzip) == 0 || len(digest) != sha256.Size*2 {
		return os.Executable()
	}
	path := filepath.Join(root, ".maka-monitor-"+digest[:16])
	if trustedMonitor(path, digest) {
		return path, nil
	}
	// Written aside, checked and renamed: a concurrent create either finds
	// the whole file or writes its own copy.
	f, err := os.CreateTemp(root, ".maka-monitor-*.tmp")
	if err != nil {
		return "", fmt.Errorf("monitor executable: %w", err)
	}
	tmp := f.Name()
	err = writeMonitor(f, digest)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o500)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("monitor executable: %w", err)
	}
	return path, nil
}

// trustedMonitor reports whether path is the monitor maka wrote.
func trustedMonitor(path, digest string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o500 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != uint32(os.Geteuid()) || st.Nlink != 1 {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == digest
}

// writeMonitor unpacks the embedded monitor into f and checks its digest.
func writeMonitor(f *os.File, digest string) error {
	zr, err := gzip.NewReader(bytes.NewReader(embeddedMonitorGzip))
	if err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), zr); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return fmt.Errorf("embedded monitor: digest %s, want %s", got, digest)
	}
	return nil
}
