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
)

// monitorExecutable is the program a detached container's monitor runs: the
// small maka-monitor that a `make build` maka carries, gzipped
// (monitorexe_embed.go), written once per build into the state root under
// its digest; or else maka itself (`maka monitor`). The root is maka's own
// (0700, root's), so a file found there under the build's digest is trusted
// as libcontainer's state is; one that is not a regular file is replaced.
func monitorExecutable(root string) (string, error) {
	digest := strings.TrimSpace(embeddedMonitorDigest)
	if len(embeddedMonitorGzip) == 0 || len(digest) != sha256.Size*2 {
		return os.Executable()
	}
	path := filepath.Join(root, ".maka-monitor-"+digest[:16])
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
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
