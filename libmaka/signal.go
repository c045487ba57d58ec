package libmaka

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ParseSignal accepts a number ("9"), a name ("SIGKILL") or a name without
// the SIG prefix ("kill", "KILL"), as runc and kill(1) do.
func ParseSignal(s string) (unix.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, fmt.Errorf("invalid signal number %d", n)
		}
		return unix.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	if sig, ok := realtimeSignal(name); ok {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// glibc reserves 32 and 33; user-visible realtime signals are 34..64.
const sigRtMin, sigRtMax = 34, 64

// realtimeSignal parses SIGRTMIN, SIGRTMIN+N, SIGRTMAX and SIGRTMAX-N.
func realtimeSignal(name string) (unix.Signal, bool) {
	for _, base := range []struct {
		prefix string
		value  int
		sign   int
	}{{"SIGRTMIN", sigRtMin, 1}, {"SIGRTMAX", sigRtMax, -1}} {
		rest, ok := strings.CutPrefix(name, base.prefix)
		if !ok {
			continue
		}
		n := 0
		if rest != "" {
			op := "+"
			if base.sign < 0 {
				op = "-"
			}
			num, ok := strings.CutPrefix(rest, op)
			v, err := strconv.Atoi(num)
			if !ok || err != nil || v < 0 {
				return 0, false
			}
			n = v
		}
		sig := base.value + base.sign*n
		if sig < sigRtMin || sig > sigRtMax {
			return 0, false
		}
		return unix.Signal(sig), true
	}
	return 0, false
}
