package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseUser: --user parses as runc's (numeric UID[:GID]); what parses
// formats back to itself, and a refusal names the flag.
func FuzzParseUser(f *testing.F) {
	for _, s := range []string{"0", "1000:1000", "65536", "4294967295:0", "4294967296", "-1", "a:b", "1:", ":1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uid, gid, hasGid, err := parseUser(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--user ") {
				t.Fatalf("parseUser(%q): %v", s, err)
			}
			return
		}
		again := fmt.Sprint(uid)
		if hasGid {
			again += fmt.Sprintf(":%d", gid)
		}
		u2, g2, h2, err := parseUser(again)
		if err != nil || u2 != uid || g2 != gid || h2 != hasGid {
			t.Fatalf("parseUser(%q) = %d:%d (%v) but %q parses to %d:%d (%v), %v", s, uid, gid, hasGid, again, u2, g2, h2, err)
		}
	})
}

func TestExecSubCgroup(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a/b/f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"a": "a", "/a/b/": "a/b", "/": "", "a/./b": "a/b"} {
		if got, err := execSubCgroup(dir, in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"../x":        "bad sub cgroup path: must stay below",
		"a/../../x":   "must stay below",
		"nosuch":      "no such sub-cgroup of the container's cgroup: no such file or directory", // runc's words too
		"a/b/f":       "no such sub-cgroup of the container's cgroup: not a directory",
		"memory:/a":   "controller-specific",
		"a/b/../../c": "must stay below",
	} {
		if _, err := execSubCgroup(dir, in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: err %v, want %q", in, err, msg)
		}
	}
}
