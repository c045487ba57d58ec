package monitor

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The launcher's command line is what the monitor process parses: the
// protocol is written once, and both ends agree on it.
func TestArgsRoundTrip(t *testing.T) {
	for _, cfg := range []Config{
		{ID: "box", StateDir: "/run/maka/box", OnViolation: ActionKill, Timeout: 90 * time.Second},
		{ID: "a.b-c_1", StateDir: "/run/maka/a.b-c_1", OnViolation: ActionDeny},
		{ID: "cwd", StateDir: "/run/maka/cwd", OnViolation: ActionDeny, GetcwdErrno: 13},
	} {
		args := Args("/run/maka", cfg)
		if args[0] != "--root" || args[1] != "/run/maka" || args[2] != "monitor" {
			t.Fatalf("Args = %q: want --root ROOT monitor ...", args)
		}
		got, err := parseArgs(args[1], args[3:])
		if err != nil {
			t.Fatalf("parseArgs(%q): %v", args, err)
		}
		if !reflect.DeepEqual(got, cfg) {
			t.Errorf("parseArgs(Args(%+v)) = %+v", cfg, got)
		}
	}
}

func TestParseArgsRefusesWhatSpawnNeverPasses(t *testing.T) {
	for _, tc := range []struct {
		root string
		args []string
		want string
	}{
		{"/r", nil, "exactly one"},
		{"/r", []string{"a", "b"}, "exactly one"},
		{"/r", []string{".."}, "invalid container id"},
		{"/r", []string{"a/b"}, "invalid container id"},
		{"/r", []string{"--timeout", "soon", "id"}, "invalid value"},
		{"", []string{"id"}, "no --root"},
		{"/r", []string{"--getcwd-errno", "4096", "id"}, "is not an errno"},
		{"/r", []string{"--getcwd-errno", "-1", "id"}, "invalid value"},
	} {
		if _, err := parseArgs(tc.root, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q, %q) = %v, want an error with %q", tc.root, tc.args, err, tc.want)
		}
	}
}

// The monitor names getcwd when it is handed to it (Config.GetcwdErrno):
// an unnamed call would be taken for a violation and answered EPERM.
func TestGetcwdIsNamed(t *testing.T) {
	if got := SyscallName(nativeArch, unix.SYS_GETCWD); got != "getcwd" {
		t.Fatalf("SyscallName(getcwd) = %q", got)
	}
}
