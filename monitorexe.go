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

// monitorExecutable is the program a detached container's monitor runs,
// as a descriptor it checked (the monitor is exec'd from it, never by
// name): the small maka-monitor that a `make build` maka carries, gzipped
// (monitorexe_embed.go), written once per build into the state root under
// its digest; or nil where this build carries none (maka itself then runs
// as `maka monitor`). A file found there is run only if maka could have
// written it: a regular file of maka's own user, mode 0500, one link,
// whose content has the build's digest (the root is never bindable, but a
// file planted there would run as root at every create); any other is
// replaced.
//
// The digest is computed once per file, not at every create: hashing the
// 5 MiB program cost 160 ms of create's time under emulation
// (performance.md change 15). Once the content is checked, a stamp beside
// it (monitorStamp) records the checked inode's identity and change time;
// a file whose inode, size and ctime still match has not been written
// since (every write, chmod, link or rename moves its ctime, which no
// caller can set back) and is not hashed again.
func monitorExecutable(root string) (*os.File, error) {
	digest := strings.TrimSpace(embeddedMonitorDigest)
	if len(embeddedMonitorGzip) == 0 || len(digest) != sha256.Size*2 {
		return nil, nil
	}
	path := filepath.Join(root, ".maka-monitor-"+digest[:16])
	if f := trustedMonitor(path, digest); f != nil {
		return f, nil
	}
	// Written aside, checked and renamed: a concurrent create either finds
	// the whole file or writes its own copy.
	f, err := os.CreateTemp(root, ".maka-monitor-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("monitor executable: %w", err)
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
		return nil, fmt.Errorf("monitor executable: %w", err)
	}
	// Checked once more from a descriptor (and stamped): the file another
	// create renamed over ours in between is as good, or is refused.
	if f := trustedMonitor(path, digest); f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("monitor executable: %s changed while it was written", path)
}

// trustedMonitor opens path and returns the descriptor if it is the
// monitor maka wrote, else nil.
func trustedMonitor(path, digest string) *os.File {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o500 {
		f.Close()
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != uint32(os.Geteuid()) || st.Nlink != 1 {
		f.Close()
		return nil
	}
	stamp := monitorStamp(st, digest)
	if readStamp(path+".stamp") == stamp {
		return f
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil || hex.EncodeToString(h.Sum(nil)) != digest {
		f.Close()
		return nil
	}
	// Best effort: without a stamp the next create hashes again.
	if t, err := os.CreateTemp(filepath.Dir(path), ".maka-monitor-*.tmp"); err == nil {
		_, werr := t.WriteString(stamp)
		if cerr := t.Close(); werr == nil && cerr == nil {
			werr = os.Rename(t.Name(), path+".stamp")
		}
		if werr != nil {
			os.Remove(t.Name())
		}
	}
	return f
}

// readStamp is the stamp at path, "" if there is none (a link is none).
func readStamp(path string) string {
	sf, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer sf.Close()
	b, _ := io.ReadAll(io.LimitReader(sf, 512))
	return string(b)
}

// monitorStamp identifies a checked monitor file: its device, inode, size
// and change time, and the digest its content had.
func monitorStamp(st *syscall.Stat_t, digest string) string {
	return fmt.Sprintf("%d %d %d %d.%09d %s\n", st.Dev, st.Ino, st.Size, st.Ctim.Sec, st.Ctim.Nsec, digest)
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
