package main

import "testing"

func TestSplitContainerArg(t *testing.T) {
	for _, tc := range []struct {
		arg, id, path string
		ok            bool
	}{
		{"box:/tmp/x", "box", "/tmp/x", true},
		{"box:rel/x", "box", "rel/x", true},
		{"box:", "box", "", true},
		{"-", "", "", false},
		{"./a:b", "", "", false},
		{"/abs/a:b", "", "", false},
		{"plain", "", "", false},
		{"dir/a:b", "", "", false},
		{":x", "", "", false},
	} {
		id, p, ok := splitContainerArg(tc.arg)
		if id != tc.id || p != tc.path || ok != tc.ok {
			t.Errorf("splitContainerArg(%q) = %q %q %v, want %q %q %v", tc.arg, id, p, ok, tc.id, tc.path, tc.ok)
		}
	}
}
