package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/sirupsen/logrus"
)

func TestFilterPsTable(t *testing.T) {
	out := []byte("UID   PID  PPID  C STIME TTY TIME CMD\n" +
		"root    1     0  0 10:00 ?   00:00:01 /sbin/init\n" +
		"root  420     1  0 10:00 ?   00:00:00 sleep 100\n" +
		"root  421   420  0 10:00 ?   00:00:00 sh -c 420\n")
	got, err := filterPsTable(out, []int{420})
	if err != nil {
		t.Fatal(err)
	}
	want := "UID   PID  PPID  C STIME TTY TIME CMD\nroot  420     1  0 10:00 ?   00:00:00 sleep 100\n"
	if string(got) != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if _, err := filterPsTable([]byte("USER COMMAND\nroot x\n"), nil); err == nil || !strings.Contains(err.Error(), "PID column") {
		t.Errorf("no PID column: err = %v", err)
	}
}

func TestParseUser(t *testing.T) {
	for in, want := range map[string][3]uint32{"0": {0, 0, 0}, "1000": {1000, 0, 0}, "1000:100": {1000, 100, 1}} {
		uid, gid, hasGid, err := parseUser(in)
		if err != nil || uid != want[0] || gid != want[1] || hasGid != (want[2] == 1) {
			t.Errorf("parseUser(%q) = %d, %d, %v, %v", in, uid, gid, hasGid, err)
		}
	}
	for _, in := range []string{"", "root", "1000:", ":1", "-1", "1:x"} {
		if _, _, _, err := parseUser(in); err == nil {
			t.Errorf("parseUser(%q): want an error", in)
		}
	}
}

// An unexpected argument points at the help of the command as typed,
// subcommand included.
func TestCheckArgsNamesTheFullCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "show", "extra"}, "policy show: exactly 0 arguments expected, 1 given (see 'maka policy show --help')"},
		{[]string{"boundary", "extra", "more"}, "boundary: exactly 0 arguments expected, 2 given (see 'maka boundary --help')"},
		{[]string{"features", "x"}, "features: exactly 0 arguments expected, 1 given (see 'maka features --help')"},
	} {
		_, _, err := runMaka(t, tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("maka %s: err = %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

func TestDenialSummary(t *testing.T) {
	recs := []monitor.Record{
		{Type: "syscall", Action: "deny", Syscall: "unshare"},
		{Type: "syscall", Action: "deny", Syscall: "mount"},
		{Type: "limit", Action: "audit", Kind: "pids.max"},
		{Type: "syscall", Action: "deny", Syscall: "unshare"},
	}
	if got, want := denialSummary(recs), "3 call(s) denied: unshare x2, mount x1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := denialSummary(recs[2:3]); got != "" {
		t.Errorf("nothing denied: %q", got)
	}
	recs = append(recs, monitor.Record{Type: "network", Action: "deny", Reason: "not-listed", Repeat: 4}, monitor.Record{Type: "network", Action: "kill", Reason: "raw-ip"})
	if got, want := denialSummary(recs), "3 call(s) denied: unshare x2, mount x1; 5 connection(s) refused by the egress proxy"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// libcontainer's note on the prestart wrapper it cannot serialize is
// dropped; every other line, warnings included, is written.
func TestWithoutFuncHookNotes(t *testing.T) {
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(withoutFuncHookNotes{&logrus.TextFormatter{DisableColors: true}})
	l.Warnf("cannot serialize hook of type %T, skipping", configs.FuncHook{})
	if buf.Len() != 0 {
		t.Errorf("the FuncHook note was written: %q", buf.String())
	}
	l.Warnf("cannot serialize hook of type %T, skipping", 1)
	l.Warn("poststop hook #0 failed")
	if got := buf.String(); !strings.Contains(got, "type int") || !strings.Contains(got, "poststop hook #0 failed") {
		t.Errorf("other lines lost: %q", got)
	}
}
