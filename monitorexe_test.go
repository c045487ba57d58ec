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
