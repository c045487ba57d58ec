package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"unicode/utf8"
)

// tabwritten is what text/tabwriter printed before the tables wrapped.
func tabwritten(minWidth, padding int, rows [][]string) string {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, minWidth, 8, padding, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	w.Flush()
	return b.String()
}

func render(t *testing.T, tb *table) string {
	t.Helper()
	var b bytes.Buffer
	if err := tb.write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A table that fits prints as tabwriter printed it, byte for byte.
func TestTableThatFitsIsUnchanged(t *testing.T) {
	for _, tc := range []struct {
		min, pad int
		rows     [][]string
	}{
		{0, 2, [][]string{{"profile", "restricted"}, {"network", "closed"}, {"", "an item"}, {"capabilities", "none; no_new_privs true"}}},
		{12, 3, [][]string{{"ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"}, {"box", "42", "running", "/b", "2026-01-02T03:04:05.5Z", "root"}}},
		{4, 2, [][]string{{"TIME", "TYPE", "WHAT"}, {"10:00", "syscall", "mount(0x0) = EPERM"}}},
	} {
		tb := newTable(tc.min, tc.pad)
		for _, r := range tc.rows {
			tb.row(r...)
		}
		if got, want := render(t, tb), tabwritten(tc.min, tc.pad, tc.rows); got != want {
			t.Errorf("got\n%s\nwant (tabwriter)\n%s", got, want)
		}
	}
}

func checkWidth(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(l); n > tableWidth {
			t.Errorf("line of %d columns: %q\n%s", n, l, out)
		}
	}
}

// A long value wraps under its column; the first line keeps the key and
// the value's beginning; joined again, the words are the value's.
func TestTableWrapsLongValues(t *testing.T) {
	users := "user namespace: ids 0..65535 = a free block of host ids leased at create from the pool 1073741824..1140850687 (1024 blocks)"
	item := `process.capabilities.bounding[0]: CAP_CHOWN is not allowed by profile restricted (policy: "capabilities": [..., "CAP_CHOWN"])`
	tb := newTable(0, 2)
	tb.hang = 2
	tb.row("profile", "restricted")
	tb.row("users", users)
	tb.row("verdict", "REJECTED by profile restricted (1 items)")
	tb.row("", item)
	out := render(t, tb)
	checkWidth(t, out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "profile  restricted" {
		t.Errorf("a short row changed: %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "users    user namespace: ids 0..65535 = a free block") {
		t.Errorf("the first line lost the key or the value's beginning: %q", lines[1])
	}
	// Continuation lines start under the value column, hung by 2.
	if !strings.HasPrefix(lines[2], strings.Repeat(" ", 11)) || lines[2][11] == ' ' {
		t.Errorf("continuation not indented under the value: %q", lines[2])
	}
	joined := strings.Join(strings.Fields(out), " ")
	for _, v := range []string{users, item} {
		if !strings.Contains(joined, v) {
			t.Errorf("the wrapped value does not read back as %q:\n%s", v, out)
		}
	}
}

// Several columns: the widest that may wrap gives way (a long bundle path
// breaks after a '/'), the kept ones (timestamps) stay whole.
func TestTableWrapsTheWidestColumn(t *testing.T) {
	bundle := "/var/lib/containers/storage/overlay-containers/0123456789abcdef0123456789abcdef/userdata"
	created := "2026-11-30T23:32:36.123456789Z"
	tb := newTable(12, 3, 4)
	tb.row("ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER")
	tb.row("box", "4242", "running", bundle, created, "root")
	out := render(t, tb)
	checkWidth(t, out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "ID PID STATUS BUNDLE CREATED OWNER" {
		t.Errorf("header: %q", lines[0])
	}
	if f := strings.Fields(lines[1]); len(f) != 6 || f[0] != "box" || f[4] != created || !strings.HasPrefix(bundle, f[3]) || !strings.HasSuffix(f[3], "/") {
		t.Errorf("first line of the row: %q", lines[1])
	}
	var path strings.Builder
	for _, l := range lines[1:] {
		path.WriteString(strings.Fields(l)[min(3, len(strings.Fields(l))-1)])
	}
	if !strings.HasPrefix(path.String(), bundle) {
		t.Errorf("the bundle does not read back: %q\n%s", path.String(), out)
	}
}

func TestWrapCell(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		want  []string
	}{
		{"short", 10, []string{"short"}},
		{"a b c d e f", 3, []string{"a b", "c d", "e f"}},
		{"/aaaa/bbbb/cccc", 11, []string{"/aaaa/bbbb/", "cccc"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"", 4, []string{""}},
	} {
		if got := wrapCell(tc.s, tc.width, 0); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrapCell(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
	// Hung: the first line at the width, the rest indented within it; a
	// word broken inside reads back whole.
	for _, tc := range []struct {
		s     string
		width int
		want  []string
	}{
		{"aaaa bbbb cccc dddd eeee", 10, []string{"aaaa bbbb", "  cccc", "  dddd", "  eeee"}},
		{"/aaaaaaaa/bbbbbbbbbbbbbbbbbbbbbbbb", 12, []string{"/aaaaaaaa/", "  bbbbbbbbbb", "  bbbbbbbbbb", "  bbbb"}},
	} {
		if got := wrapCell(tc.s, tc.width, 2); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrapCell(%q, %d, 2) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
}

// noWrap (list to a pipe): one line per row, runc's layout, however wide.
func TestTableNoWrapKeepsOneLinePerRow(t *testing.T) {
	bundle := "/tmp/bats-run-ZjuBGJ/runc.cjyCvo/a/very/long/bundle/path/that/passes/eighty/columns"
	tb := newTable(12, 3, 4)
	tb.noWrap = true
	tb.row("ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER")
	tb.row("test_box1", "2372", "running", bundle, "2026-12-02T01:20:00.153955537Z", "root")
	lines := strings.Split(strings.TrimSuffix(render(t, tb), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if f := strings.Fields(lines[1]); len(f) != 6 || f[3] != bundle {
		t.Errorf("row not whole: %q", lines[1])
	}
	// Columns still line up as tabwriter's: BUNDLE's header over the path.
	if strings.Index(lines[0], "BUNDLE") != strings.Index(lines[1], bundle) {
		t.Errorf("columns do not line up:\n%s\n%s", lines[0], lines[1])
	}
}
