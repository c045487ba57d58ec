package main

import (
	_ "embed"
	"runtime/debug"
	"strings"
)

// archiveCommit is the COMMIT file: `git archive` writes the commit into it
// (export-subst in .gitattributes); in a checkout it holds the placeholder.
//
//go:embed COMMIT
var archiveCommit string

// commitOf is the commit maka was built from, by every build route: the
// Makefile's -X main.gitCommit, a source archive's COMMIT file, or the VCS
// stamp `go build` records in a checkout ("-dirty" with local changes).
func commitOf() string {
	if gitCommit != "" {
		return gitCommit
	}
	if c := strings.TrimSpace(archiveCommit); isCommitHash(c) {
		return c
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "-dirty"
			}
			return rev
		}
	}
	return "unknown"
}

func isCommitHash(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}
