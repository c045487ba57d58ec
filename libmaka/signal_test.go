package libmaka

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseSignal(t *testing.T) {
	good := map[string]unix.Signal{
		"9": unix.SIGKILL, "15": unix.SIGTERM, "KILL": unix.SIGKILL, "kill": unix.SIGKILL,
		"SIGKILL": unix.SIGKILL, "sigterm": unix.SIGTERM, "HUP": unix.SIGHUP, "SIGRTMIN": unix.Signal(34),
		"RTMIN+2": unix.Signal(36), "SIGRTMAX": unix.Signal(64), "SIGRTMAX-1": unix.Signal(63),
	}
	for in, want := range good {
		got, err := ParseSignal(in)
		if err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "65", "SIGNOPE", "NOPE", "9x", "RTMIN+40", "RTMAX+1", "RTMIN-1"} {
		if _, err := ParseSignal(in); err == nil {
			t.Errorf("ParseSignal(%q): want an error", in)
		}
	}
}
