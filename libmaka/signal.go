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
	return 0, fmt.Errorf("unknown signal %q", s)
}
