package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
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

func TestMonitorExecutableWritesTheEmbeddedMonitorOnce(t *testing.T) {
	prog := []byte("#!/bin/sh\necho monitor\n")
	withEmbeddedMonitor(t, prog, "")
	root := t.TempDir()
	path, err := monitorExecutable(root)
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil || again != path {
		t.Fatalf("second call: %s, %v; want %s", again, err, path)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Fatalf("root holds %d entries, want the monitor only", len(entries))
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
	self, _ := os.Executable()
	got, err := monitorExecutable(t.TempDir())
	if err != nil || got != self {
		t.Fatalf("%s, %v: want %s", got, err, self)
	}
}

// A file planted under the monitor's name (as a sandbox with a writable
// bind of the state root could) is never run: only the build's content,
// mode 0500 and one link are trusted; anything else is replaced.
func TestMonitorExecutableReplacesAPlantedFile(t *testing.T) {
	prog := []byte("#!/bin/sh\necho monitor\n")
	withEmbeddedMonitor(t, prog, "")
	root := t.TempDir()
	path, err := monitorExecutable(root)
	if err != nil {
		t.Fatal(err)
	}
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
		if err != nil || got != path {
			t.Fatalf("%s: %s, %v", name, got, err)
		}
		content, _ := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if !bytes.Equal(content, prog) || fi.Mode().Perm() != 0o500 || !trustedMonitor(path, strings.TrimSpace(embeddedMonitorDigest)) {
			t.Errorf("%s: the planted file was kept (content %q, mode %v)", name, content, fi.Mode().Perm())
		}
	}
}
