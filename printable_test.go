package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
)

// nasty is what a sandbox can name a process or a path: an OSC that
// retitles the terminal, a CSI that clears it, a newline that forges a
// line, a bidi override, a C1 CSI, a byte that is not UTF-8.
const nasty = "\x1b]0;pwn\a\x1b[2J\nforged line\u202e\u009b\xff"

// rawTerminalBytes reports what in out would act on a terminal.
func rawTerminalBytes(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\a", "\nforged", "\u202e", "\u009b", "\xff"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s holds %q raw:\n%q", what, bad, out)
		}
	}
}

func nastyRecords() []monitor.Record {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []monitor.Record{
		{Time: now, Type: monitor.TypeSyscall, Action: monitor.ActionDeny, Pid: 3, Comm: nasty, Syscall: "unshare", Args: []string{"0x20000", nasty}, Errno: "EPERM"},
		{Time: now, Type: monitor.TypeFile, Action: monitor.ActionAudit, Pid: 4, Comm: "sh", Syscall: "openat", Path: "/etc/" + nasty, Flags: "O_WRONLY"},
	}
}

func TestViolationsTableEscapesSandboxStrings(t *testing.T) {
	var b bytes.Buffer
	if err := violationsTable(&b, nastyRecords()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	rawTerminalBytes(t, "the violations table", out)
	// (The table wraps long cells.)
	if !strings.Contains(out, `\x1b]0;pwn\x07`) || !strings.Contains(out, `/etc/\x1b]0;pwn`) {
		t.Errorf("the table does not show the escaped name and path:\n%s", out)
	}
}

func TestViolationsJSONEscapesSandboxStrings(t *testing.T) {
	var b bytes.Buffer
	if err := writeJSON(&b, nastyRecords()); err != nil {
		t.Fatal(err)
	}
	rawTerminalBytes(t, "violations --format json", b.String())
	var back []monitor.Record
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	// The same text, but for the byte that is not UTF-8 (encoding/json
	// writes U+FFFD for it).
	if want := strings.ToValidUTF8(nasty, "\ufffd"); back[0].Comm != want {
		t.Errorf("comm reads back as %q, want %q", back[0].Comm, want)
	}
}

func TestKilledErrorEscapesSandboxStrings(t *testing.T) {
	for _, r := range nastyRecords() {
		err := &monitor.KilledError{ID: "box", Record: r}
		rawTerminalBytes(t, "the violation error", err.Error())
		if !strings.HasPrefix(err.Error(), monitor.ViolationCode+": container box was killed: ") {
			t.Errorf("error = %q", err.Error())
		}
	}
}

func TestSkippedLinesEscapeSandboxPaths(t *testing.T) {
	var b bytes.Buffer
	reportSkipped(&b, libmaka.DirResult{Skipped: []libmaka.SkippedEntry{{Path: "d/" + nasty, Reason: "a FIFO"}}})
	out := b.String()
	rawTerminalBytes(t, "cp's skipped line", out)
	if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, `cp: skipped d/\x1b]0;pwn`) {
		t.Errorf("skipped line = %q", out)
	}
}

func TestErrorTextKeepsLinesEscapesTheRest(t *testing.T) {
	got := errorText(&monitor.KilledError{ID: "box", Record: nastyRecords()[0]})
	rawTerminalBytes(t, "fatal's text", got)
	if got := errorText(errString("rootless: cannot:\n  a \"q\\\"\"")); got != "rootless: cannot:\n  a \"q\\\"\"" {
		t.Errorf("errorText changed a plain message: %q", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
