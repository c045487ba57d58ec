package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRuncSuiteSummary runs `make runc-suite`'s count
// (tests/runc-suite/summary.py) on TAP written here: a failure is "by design"
// only when by-design.tsv names it, a skip is never a pass, and a listed test
// that passes is reported as stale.
func TestRuncSuiteSummary(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	work := t.TempDir()
	suite := filepath.Join(work, "runc", "tests", "integration")
	for _, d := range []string{filepath.Join(work, "tap"), suite} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(work, "tap", "a.tap"), `1..6
ok 1 plain pass
ok 2 needs v1 # skip test requires cgroups_v1
not ok 3 host pidns [x]
# BOUNDARY_REJECTED: ...
not ok 4 a real bug
ok 5 listed but passes
not ok 6 listed in another file
`)
	write(filepath.Join(work, "tap", "a.secs"), "12\n")
	write(filepath.Join(suite, "a.bats"), `@test "plain pass" {
@test "needs v1" {
@test "host pidns [x]" {
@test "a real bug" {
@test "listed but passes" {
@test "listed in another file" {
`)
	list := filepath.Join(work, "by-design.tsv")
	write(list, "# comment\n"+
		"a.bats\thost pidns [x]\tthe host PID namespace is refused\n"+
		"a.bats\tlisted but passes\tsome floor\n"+
		"a.bats\tgone from the suite\tsome floor\n"+
		"b.bats\tlisted in another file\tsome floor\n")

	out, err := exec.Command("python3", "tests/runc-suite/summary.py", work, list, "a.bats", "c.bats").CombinedOutput()
	if err != nil {
		t.Fatalf("summary.py: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"a.bats                     2     2     1         1     12\n", // pass fail skip by-design secs
		"c.bats                 (no TAP: the guest did not get there)\n",
		"total                      2     2     1         1\n",
		"failing tests (not by design): 2\n  a.bats: a real bug\n  a.bats: listed in another file\n",
		"failing by design (tests/runc-suite/by-design.tsv): 1\n  a.bats: host pidns [x] -- the host PID namespace is refused\n",
		"a.bats: listed but passes (listed: some floor)",
		"a.bats: gone from the suite (listed, not in runc's suite)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary.py's output lacks %q:\n%s", want, got)
		}
	}

	// A malformed line is an error, not a silent miss.
	write(list, "a.bats\tno floor\n")
	if out, err := exec.Command("python3", "tests/runc-suite/summary.py", work, list, "a.bats").CombinedOutput(); err == nil {
		t.Errorf("summary.py accepted a line without a floor:\n%s", out)
	}
}
