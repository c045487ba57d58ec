package main

import (
	"fmt"
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
