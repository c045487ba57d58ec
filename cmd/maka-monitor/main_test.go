package main

import (
	"strings"
	"testing"
)

func TestRunRefusesWhatMakaNeverPasses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"monitor", "id"}, "usage"},                 // no --root
		{[]string{"--root", "/r", "watch", "id"}, "usage"},   // not the monitor command
		{[]string{"--root", "/r", "monitor"}, "exactly one"}, // no id
		{[]string{"--root", "/r", "monitor", "a", "b"}, "exactly one"},
		{[]string{"--root", "/r", "monitor", ".."}, "invalid container id"},
		{[]string{"--root", "/r", "monitor", "--timeout", "soon", "id"}, "invalid value"},
	} {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
