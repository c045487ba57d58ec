package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// A build from a source archive (no git, no Makefile -X) reports the
// commit the archive's COMMIT file names.
func TestCommitOfArchive(t *testing.T) {
	saved, savedArchive := gitCommit, archiveCommit
	defer func() { gitCommit, archiveCommit = saved, savedArchive }()
	const c = "0123456789abcdef0123456789abcdef01234567"
	gitCommit, archiveCommit = "", c+"\n"
	if got := commitOf(); got != c {
		t.Fatalf("commitOf() = %q, want the archive's %q", got, c)
	}
	gitCommit = "feedbeef"
	if got := commitOf(); got != "feedbeef" {
		t.Fatalf("commitOf() = %q: the Makefile's -X comes first", got)
	}
	gitCommit, archiveCommit = "", "$Format:%H$\n"
	if got := commitOf(); got == "$Format:%H$" || got == "" {
		t.Fatalf("commitOf() = %q: a checkout's placeholder is no commit", got)
	}
}

// git archive fills in COMMIT (export-subst): the property the archive
// route stands on. Skipped outside a git checkout.
func TestGitArchiveWritesCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "--verify", "-q", "HEAD").Output()
	if err != nil {
		t.Skip("not a git checkout")
	}
	if out, _ := exec.Command("git", "show", "HEAD:.gitattributes").Output(); !strings.Contains(string(out), "COMMIT export-subst") {
		t.Skip("HEAD predates COMMIT export-subst")
	}
	out, err := exec.Command("git", "archive", "--format=tar", "HEAD", "COMMIT").Output()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("COMMIT not in the archive: %v", err)
		}
		if h.Name != "COMMIT" {
			continue
		}
		data, _ := io.ReadAll(tr)
		if got, want := strings.TrimSpace(string(data)), strings.TrimSpace(string(head)); got != want {
			t.Fatalf("archive's COMMIT = %q, want HEAD %q", got, want)
		}
		return
	}
}
