package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// withEmbeddedMonitor makes the package carry prog as its gzipped monitor
// (with digest, or prog's own if digest is empty) for one test.
func withEmbeddedMonitor(t *testing.T, prog []byte, digest string) {
	t.Helper()
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(prog)
	zw.Close()
	if digest == "" {
		sum := sha256.Sum256(prog)
		digest = hex.EncodeToString(sum[:])
	}
	oldGz, oldDigest := embeddedMonitorGzip, embeddedMonitorDigest
	embeddedMonitorGzip, embeddedMonitorDigest = z.Bytes(), digest+"\n"
	t.Cleanup(func() { embeddedMonitorGzip, embeddedMonitorDigest = oldGz, oldDigest })
}

// fdPath is the file a descriptor is open on.
func fdPath(t *testing.T, f *os.File) string {
	t.Helper()
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMonitorExecutableWritesTheEmbeddedMonitorOnce(t *testing.T) {
	prog := []byte("#!/bin/sh\necho monitor\n")
	withEmbeddedMonitor(t, prog, "")
	root := t.TempDir()
	f, err := monitorExecutable(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := fdPath(t, f)
	if dir, name := filepath.Split(path); filepath.Clean(dir) != root || !strings.HasPrefix(name, ".maka-monitor-") {
		t.Fatalf("path %s: want %s/.maka-monitor-<digest>", path, root)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, prog) {
		t.Fatalf("content %q, %v: want %q", got, err, prog)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o500 {
		t.Fatalf("mode %v, want 0500", fi.Mode().Perm())
	}
	again, err := monitorExecutable(root)
	if err != nil || fdPath(t, again) != path {
		t.Fatalf("second call: %v, %v; want %s", again, err, path)
	}
	again.Close()
	// The monitor and its stamp (the checked inode's identity).
	if entries, _ := os.ReadDir(root); len(entries) != 2 {
		t.Fatalf("root holds %d entries, want the monitor and its stamp", len(entries))
	}
}

// The content is hashed once per file: a stamp that matches the file's
// inode, size and ctime skips the hash; any write to the file (its ctime
// moves) or a stamp of another file makes maka hash it again, and a file
// whose content is not the build's is replaced whatever its stamp says.
func TestMonitorExecutableStamp(t *testing.T) {
	prog := []byte("#!/bin/sh\necho monitor\n")
	withEmbeddedMonitor(t, prog, "")
	root := t.TempDir()
	f, err := monitorExecutable(root)
	if err != nil {
		t.Fatal(err)
	}
	path := fdPath(t, f)
	f.Close()
	stamp, err := os.ReadFile(path + ".stamp")
	if err != nil {
		t.Fatal(err)
	}
	// The same length, other content, the stamp copied back: the write
	// moved the ctime, so the stamp no longer matches and the hash finds it.
	if err := os.Chmod(path, 0o700); err != nil {
		t.Fatal(err)
	}
	evil := []byte("#!/bin/sh\necho planted\n")[:len(prog)]
	if err := os.WriteFile(path, evil, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".stamp", stamp, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err = monitorExecutable(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, _ := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if !bytes.Equal(got, prog) {
		t.Fatalf("the planted content was kept under a stale stamp: %q", got)
	}
	// A stamp that matches skips the hash: proven by a digest the content
	// does not have, which only the hash would see.
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	digest := strings.TrimSpace(embeddedMonitorDigest)
	if trustedMonitor(path, strings.Repeat("0", 64)) != nil {
		t.Fatal("a wrong digest was trusted without its stamp")
	}
	if err := os.WriteFile(path+".stamp", []byte(monitorStamp(&st, strings.Repeat("0", 64))), 0o600); err != nil {
		t.Fatal(err)
	}
	if g := trustedMonitor(path, strings.Repeat("0", 64)); g == nil {
		t.Fatal("a matching stamp did not skip the hash")
	} else {
		g.Close()
	}
	// The stamp names the digest: another build's digest hashes again.
	if g := trustedMonitor(path, digest); g == nil {
		t.Fatal("the right digest refused")
	} else {
		g.Close()
	}
}

func TestMonitorExecutableRefusesADigestMismatchAndLeavesNothing(t *testing.T) {
	withEmbeddedMonitor(t, []byte("not what the digest says"), strings.Repeat("ab", sha256.Size))
	root := t.TempDir()
	_, err := monitorExecutable(root)
	if err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("err %v, want a digest mismatch", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("root holds %d entries after a failure, want none", len(entries))
	}
}

func TestMonitorExecutableWithoutAnEmbeddedMonitorIsMakaItself(t *testing.T) {
	withEmbeddedMonitor(t, nil, "")
	embeddedMonitorGzip = nil
	got, err := monitorExecutable(t.TempDir())
	if err != nil || got != nil {
		t.Fatalf("%v, %v: want none (maka itself)", got, err)
	}
}

// A file planted under the monitor's name (as a sandbox with a writable
// bind of the state root could) is never run: only the build's content,
// mode 0500 and one link are trusted; anything else is replaced.
func TestMonitorExecutableReplacesAPlantedFile(t *testing.T) {
	prog := []byte("#!/bin/sh\necho monitor\n")
	withEmbeddedMonitor(t, prog, "")
	root := t.TempDir()
	first, err := monitorExecutable(root)
	if err != nil {
		t.Fatal(err)
	}
	path := fdPath(t, first)
	first.Close()
	for name, plant := range map[string]func() error{
		"other content": func() error { return os.WriteFile(path, []byte("#!/bin/sh\nevil\n"), 0o500) },
		"group-writable": func() error {
			if err := os.WriteFile(path, prog, 0o500); err != nil {
				return err
			}
			return os.Chmod(path, 0o570)
		},
		"hard link": func() error {
			if err := os.WriteFile(path, prog, 0o500); err != nil {
				return err
			}
			return os.Link(path, filepath.Join(root, "extra"))
		},
	} {
		os.Remove(path)
		os.Remove(filepath.Join(root, "extra"))
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		got, err := monitorExecutable(root)
		if err != nil || fdPath(t, got) != path {
			t.Fatalf("%s: %v, %v", name, got, err)
		}
		got.Close()
		content, _ := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if !bytes.Equal(content, prog) || fi.Mode().Perm() != 0o500 || trustedMonitor(path, strings.TrimSpace(embeddedMonitorDigest)) == nil {
			t.Errorf("%s: the planted file was kept (content %q, mode %v)", name, content, fi.Mode().Perm())
		}
	}
}
