package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/sandbox"
	"github.com/maka-runtime/maka/specconv"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// runMaka runs the CLI in-process with stdout in a file, and returns what
// it printed and the exit status main would give (0, or exitCodeError's
// code, or 1 for any other error).
func runMaka(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = out
	defer func() { os.Stdout = saved }()
	state := t.TempDir()
	err = newApp().Run(append([]string{"maka", "--root", filepath.Join(state, "run"), "--state-dir", filepath.Join(state, "lib")}, args...))
	data, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	code := 0
	var ec *exitCodeError
	switch {
	case errors.As(err, &ec):
		code = ec.code
	case err != nil:
		code = 1
	}
	return string(data), code, err
}

// writeBundle writes maka spec's config.json, changed by edit, in a new
// bundle with an empty rootfs.
func writeBundle(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(sandbox.DefaultSpec("rootfs", "sh"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// maka boundary: 0 allowed, 1 refused, 2 when there is no verdict to give.
func TestBoundaryExitStatus(t *testing.T) {
	refused := writeBundle(t, func(m map[string]any) {
		m["process"].(map[string]any)["capabilities"] = map[string]any{"bounding": []string{"CAP_SYS_ADMIN"}}
	})
	badJSON := t.TempDir()
	if err := os.WriteFile(filepath.Join(badJSON, "config.json"), []byte(`{"ociVersion": "1.0.2",`), 0o644); err != nil {
		t.Fatal(err)
	}
	invalid := writeBundle(t, func(m map[string]any) { m["process"].(map[string]any)["args"] = []string{} })
	badPolicy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(badPolicy, []byte(`{"profile": "restricted", "capabilites": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	allowed := writeBundle(t, nil)
	// The sandbox's root is an unprivileged host user: it must be able to
	// reach the rootfs (the test's directories are 0700).
	if err := os.Chmod(filepath.Dir(allowed), 0o711); err != nil {
		t.Fatal(err)
	}
	for _, m := range sandbox.DefaultSpec("rootfs", "sh").Mounts {
		// create refuses a mount point the root lacks, and so does boundary.
		if err := os.MkdirAll(filepath.Join(allowed, "rootfs", m.Destination), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"allowed, table", []string{"boundary", "--bundle", allowed}, 0},
		{"allowed, json", []string{"boundary", "--bundle", allowed, "--format", "json"}, 0},
		{"refused, table", []string{"boundary", "--bundle", refused}, 1},
		{"refused, json", []string{"boundary", "--bundle", refused, "--format", "json"}, 1},
		{"refused, oci", []string{"boundary", "--bundle", refused, "--format", "oci"}, 1},
		{"missing bundle", []string{"boundary", "--bundle", filepath.Join(refused, "nowhere")}, 2},
		{"no config.json", []string{"boundary", "--bundle", t.TempDir()}, 2},
		{"malformed config.json", []string{"boundary", "--bundle", badJSON}, 2},
		{"invalid config.json", []string{"boundary", "--bundle", invalid}, 2},
		{"bad --format", []string{"boundary", "--bundle", refused, "--format", "yaml"}, 2},
		{"bad policy file", []string{"--policy", badPolicy, "boundary", "--bundle", refused}, 2},
		{"missing policy file", []string{"--policy", badPolicy + ".none", "boundary", "--bundle", refused}, 2},
		{"an argument", []string{"boundary", "--bundle", refused, "extra"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code == 0 && os.Geteuid() != 0 {
				// The host check resolves the root as create does, as root.
				t.Skip("needs root")
			}
			out, code, err := runMaka(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit status %d, want %d (err %v; stdout %.2000q)", code, tc.code, err, out)
			}
			if tc.code == 1 && tc.args[len(tc.args)-1] == "json" {
				var v struct{ Verdict struct{ Allowed bool } }
				if err := json.Unmarshal([]byte(out), &v); err != nil || v.Verdict.Allowed {
					t.Errorf("a refusal's JSON: %v, %q", err, out)
				}
			}
			if tc.code == 1 && strings.HasSuffix(tc.name, "table") && !strings.Contains(out, "REJECTED by profile restricted") {
				t.Errorf("the table gives no verdict: %q", out)
			}
		})
	}
}

// maka boundary says when the sandbox has the host's uts namespace (a
// hostNetwork pod's shape), not only which namespaces it has.
func TestNamespacesStringNamesTheHostsUTS(t *testing.T) {
	own := &libmaka.Boundary{Namespaces: []libmaka.Namespace{{Type: "pid"}, {Type: "mount"}, {Type: "uts"}, {Type: "user"}}}
	if got := namespacesString(own); got != "pid mount uts user" {
		t.Errorf("own uts: %q", got)
	}
	host := &libmaka.Boundary{Namespaces: []libmaka.Namespace{{Type: "pid"}, {Type: "mount"}, {Type: "user"}}}
	if got := namespacesString(host); !strings.Contains(got, "uts: the host's") {
		t.Errorf("the host's uts: %q", got)
	}
}

// maka boundary shows the host's /sys where the sandbox gets it (the
// host's network under a user namespace), and nowhere else.
func TestBoundaryShowsTheHostsSysfs(t *testing.T) {
	sysfs := []specs.Mount{{Destination: "/sys", Type: "sysfs", Source: "sysfs"}}
	ns := func(types ...string) []libmaka.Namespace {
		var out []libmaka.Namespace
		for _, t := range types {
			out = append(out, libmaka.Namespace{Type: t})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		b    libmaka.Boundary
		want bool
	}{
		{"host network, user namespace", libmaka.Boundary{Namespaces: ns("pid", "mount", "user"), Mounts: sysfs}, true},
		{"own network", libmaka.Boundary{Namespaces: ns("pid", "mount", "user", "network"), Mounts: sysfs}, false},
		{"no user namespace", libmaka.Boundary{Namespaces: ns("pid", "mount"), Mounts: sysfs}, false},
		{"no /sys", libmaka.Boundary{Namespaces: ns("pid", "mount", "user")}, false},
	} {
		b := tc.b
		before := slices.Clone(b.Mounts)
		if got := specconv.HostSysfs(&b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if !slices.EqualFunc(before, b.Mounts, func(x, y specs.Mount) bool { return x.Destination == y.Destination && x.Type == y.Type }) {
			t.Errorf("%s: the boundary's mounts changed: %v", tc.name, b.Mounts)
		}
	}
}
