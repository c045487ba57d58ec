package libmaka

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustPolicy(t *testing.T, profile string) *Policy {
	t.Helper()
	p, err := BuiltinPolicy(profile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCgroupPathDefaultIsMakasOwn(t *testing.T) {
	for _, profile := range []string{ProfileRestricted, ProfileBaseline} {
		got, err := mustPolicy(t, profile).CgroupPath("box1", "")
		if err != nil || got != "/maka/box1" {
			t.Errorf("%s: CgroupPath(box1, \"\") = %q, %v; want /maka/box1", profile, got, err)
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "a\x00b"} {
		if got, err := mustPolicy(t, ProfileRestricted).CgroupPath(id, ""); err == nil {
			t.Errorf("id %q: accepted as %q", id, got)
		}
	}
}

// What the engines and the CRI tests pass (tests/integration/clients.bats,
// cri.bats, profiles.bats, fixtures/specs/*.json, docs/kubernetes.md).
func TestCgroupPathAcceptsTheEnginesPaths(t *testing.T) {
	baseline := mustPolicy(t, ProfileBaseline)
	for _, path := range []string{
		"/libpod_parent/libpod-bcd752ba598e66f28211bad0ed0d756cb31089470befc4badb982e6f37df779b", // Podman, cgroupfs manager
		"/machine.slice/libpod-0123abcd.scope",
		"/default/maka-test-box",                 // ctr run (namespace default)
		"/k8s.io/0123456789abcdef",               // ctr -n k8s.io
		"/kubepods/pod-demo-uid-maka/0123abcdef", // crictl with cgroup_parent (cri.bats)
		"/kubepods/burstable/pod8c1ff7ad-5b2e-4b6e-9f0d-3f4f2b0c1d2e/0123abcdef",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8c1ff7ad_5b2e.slice/cri-containerd-0123.scope",
		"/maka/box1",
	} {
		got, err := baseline.CgroupPath("box1", path)
		if err != nil || got != path {
			t.Errorf("baseline: %q: got %q, %v", path, got, err)
		}
	}
	if got, err := mustPolicy(t, ProfileRestricted).CgroupPath("box1", "/maka/other"); err != nil || got != "/maka/other" {
		t.Errorf("restricted: /maka/other: got %q, %v", got, err)
	}
}

func TestCgroupPathRefusesHostileValues(t *testing.T) {
	long := "/maka/" + strings.Repeat("a", 10000)
	cases := map[string]string{ // requested -> a word the error must hold
		"/":                                 "root cgroup",
		"/..":                               `".." component`,
		"/maka/..":                          `".." component`,
		"/maka/../system.slice/x":           `".." component`,
		"/maka/./x":                         `"." component`,
		"/system.slice/victim.service":      "not below a cgroup parent",
		"/maka":                             "not below a cgroup parent",
		"/default":                          "not below a cgroup parent",
		"/makabox/x":                        "not below a cgroup parent",
		"/x":                                "top-level",
		"relative":                          "not an absolute path",
		"maka/box":                          "not an absolute path",
		long:                                "bytes long",
		"/maka/" + strings.Repeat("b", 256): "component of 256 bytes",
		"machine.slice:libpod:box":          "systemd cgroup path",
		"/maka/a\x00b":                      "not allowed",
		"/maka/a\nb":                        "not allowed",
		"/maka/a b":                         "not allowed",
		"/maka/a:b":                         "not allowed",
		"/maka//x":                          "empty component",
		"/maka/x/":                          "empty component",
		"/maka/other/nested":                "one level deep",
	}
	for _, profile := range []string{ProfileRestricted, ProfileBaseline} {
		p := mustPolicy(t, profile)
		for req, want := range cases {
			got, err := p.CgroupPath("box1", req)
			if err == nil {
				t.Errorf("%s: %q accepted as %q", profile, req, got)
				continue
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "linux.cgroupsPath: ") || !strings.Contains(msg, want) {
				t.Errorf("%s: %q: error %q does not name linux.cgroupsPath and %q", profile, req, msg, want)
			}
		}
	}
}

func TestCgroupPathHintIsACompleteEdit(t *testing.T) {
	_, err := mustPolicy(t, ProfileRestricted).CgroupPath("box1", "/system.slice/victim.service")
	if err == nil || !strings.Contains(err.Error(), `"cgroupParents": ["/maka", "/system.slice"]`) {
		t.Errorf("hint: %v", err)
	}
	// The hinted edit works: a policy file with it accepts the path (the
	// cgroup must still not exist, which Create checks).
	p, perr := ParsePolicy([]byte(`{"profile": "restricted", "cgroupParents": ["/maka", "/system.slice"]}`))
	if perr != nil {
		t.Fatal(perr)
	}
	if got, err := p.CgroupPath("box1", "/system.slice/victim.service"); err != nil || got != "/system.slice/victim.service" {
		t.Errorf("after the hinted edit: %q, %v", got, err)
	}
}

func TestPolicyRefusesBadCgroupParents(t *testing.T) {
	for _, parents := range []string{`["/"]`, `["relative"]`, `["/a/../b"]`, `["/a/"]`, `["slice:prefix:name"]`} {
		if _, err := ParsePolicy([]byte(`{"cgroupParents": ` + parents + `}`)); err == nil || !strings.Contains(err.Error(), "cgroupParents[0]") {
			t.Errorf("cgroupParents %s: %v", parents, err)
		}
	}
}

// An existing cgroup is refused with runc's words for what is in it (runc's
// cgroups.bats looks for them): processes below it first, then a freeze.
func TestExistingCgroupSaysWhatRuncSays(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.procs", "")
	write("cgroup.freeze", "0\n")
	err := existingCgroupError(dir, "/kubepods/x", "/kubepods/x")
	if err.Error() != "linux.cgroupsPath: the cgroup /kubepods/x already exists: maka creates its sandbox's cgroup itself" {
		t.Errorf("empty: %v", err)
	}
	write("cgroup.freeze", "1\n")
	err = existingCgroupError(dir, "/kubepods/x", "/kubepods/x")
	if !strings.HasSuffix(err.Error(), "itself; container's cgroup unexpectedly frozen") {
		t.Errorf("frozen: %v", err)
	}
	write("sub/cgroup.procs", "41\n42\n")
	err = existingCgroupError(dir, "/maka/x", "")
	if !strings.HasPrefix(err.Error(), "cgroup /maka/x already exists") || !strings.HasSuffix(err.Error(), "; container's cgroup is not empty: 2 process(es) found") {
		t.Errorf("not empty: %v", err)
	}
}
