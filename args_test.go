package main

import (
	"slices"
	"strings"
	"testing"
)

// Flags after the container id move in front of it, with their values, as
// runc's CLI moves them; exec's and ps's arguments and anything after "--"
// stay where they are.
func TestReorderArgs(t *testing.T) {
	app := newApp()
	for in, want := range map[string]string{
		"maka update c --cpuset-cpus 1 --memory=1M": "maka update --cpuset-cpus 1 --memory=1M c",
		"maka --root /r delete c --force":           "maka --root /r delete --force c",
		"maka --log-format json kill c KILL --all":  "maka --log-format json kill --all c KILL",
		"maka violations c --format json":           "maka violations --format json c",
		"maka kill c -9":                            "maka kill c -9",
		"maka exec c ls --format json":              "maka exec c ls --format json",
		"maka ps c -ef":                             "maka ps c -ef",
		"maka run -b /b c -- --detach":              "maka run -b /b c -- --detach",
		"maka run c --bundle /b --detach":           "maka run --bundle /b --detach c",
		"maka policy show --policy p":               "maka policy show --policy p",
		"maka --root /r":                            "maka --root /r",
		"maka nosuch c --force":                     "maka nosuch c --force",
		"maka events c --interval 5s --stats":       "maka events --interval 5s --stats c",
	} {
		if got := strings.Join(reorderArgs(app, strings.Fields(in)), " "); got != want {
			t.Errorf("%s:\n got  %s\n want %s", in, got, want)
		}
	}
	if got := reorderArgs(app, []string{"maka"}); !slices.Equal(got, []string{"maka"}) {
		t.Fatal(got)
	}
}
