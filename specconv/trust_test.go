package specconv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// What baseline trusts is the engine that writes config.json, and nothing
// that engine would not write for this container (docs/security.md, "Trust
// model"). Each test here is a finding of issue 24, item 6.

// hasItem reports whether err is a rejection with an item for field.
func hasItem(t *testing.T, err error, field string) *Item {
	t.Helper()
	if err == nil {
		return nil
	}
	items := rejectedItems(t, err)
	for i := range items {
		if items[i].Field == field {
			return &items[i]
		}
	}
	return nil
}

func TestBaselineRefusesAnUnlistedHook(t *testing.T) {
	for _, kind := range []string{"prestart", "createRuntime", "createContainer", "poststart", "poststop"} {
		s := exampleSpec(t)
		h := []specs.Hook{{Path: "/usr/bin/touch", Args: []string{"touch", "/pwned"}}}
		s.Hooks = &specs.Hooks{}
		switch kind {
		case "prestart":
			s.Hooks.Prestart = h
		case "createRuntime":
			s.Hooks.CreateRuntime = h
		case "createContainer":
			s.Hooks.CreateContainer = h
		case "poststart":
			s.Hooks.Poststart = h
		case "poststop":
			s.Hooks.Poststop = h
		}
		_, err := ToBoundary(testHost, s, policy(t, libmaka.ProfileBaseline))
		it := hasItem(t, err, "hooks."+kind+"[0].path")
		if it == nil {
			t.Fatalf("baseline runs the %s hook /usr/bin/touch as host root: %v", kind, err)
		}
		if it.Allow != `"hookPaths": [..., "/usr/bin/touch"]` {
			t.Errorf("%s: the hint is %q, want the hookPaths line", kind, it.Allow)
		}
	}
}

// ownPodSpec is a container of pod uid "mine", sandbox "sbmine", as
// containerd's CRI plugin writes it, binding src.
func ownPodSpec(t *testing.T, src string) *specs.Spec {
	s := exampleSpec(t)
	s.Root.Readonly = false
	s.Annotations = map[string]string{
		"io.kubernetes.cri.sandbox-id":  "sbmine",
		"io.kubernetes.cri.sandbox-uid": "mine",
	}
	s.Mounts = append(s.Mounts, specs.Mount{Destination: "/data", Type: "bind", Source: src, Options: []string{"rbind", "rw"}})
	return s
}

func TestBaselineRefusesOtherContainersFiles(t *testing.T) {
	for _, src := range []string{
		"/var/lib/kubelet/pods/victim/volumes/kubernetes.io~secret/token",
		"/var/lib/kubelet/pods",
		"/run/containerd/io.containerd.runtime.v2.task/k8s.io/victim/rootfs",
		"/run/containerd/s/0123abcd",
		"/run/containerd/runc/k8s.io/victim",
		"/run/containerd/io.containerd.grpc.v1.cri/sandboxes/sbvictim/shm",
		"/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs",
		"/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/sbvictim/resolv.conf",
		"/var/lib/containerd/io.containerd.content.v1.content/blobs",
		"/var/lib/containers/storage/overlay/abc/merged",
		"/run/containers/storage/overlay-containers",
	} {
		_, err := ToBoundary(testHost, ownPodSpec(t, src), policy(t, libmaka.ProfileBaseline))
		if hasItem(t, err, "mounts[7].source") == nil {
			t.Errorf("baseline binds %s read-write into pod mine: %v", src, err)
		}
	}
}

func TestBaselineBindsItsOwnPodsFiles(t *testing.T) {
	for _, src := range []string{
		"/var/lib/kubelet/pods/mine/volumes/kubernetes.io~empty-dir/cache",
		"/var/lib/kubelet/pods/mine/etc-hosts",
		"/run/containerd/io.containerd.grpc.v1.cri/sandboxes/sbmine/shm",
		"/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/sbmine/resolv.conf",
	} {
		if _, err := ToBoundary(testHost, ownPodSpec(t, src), policy(t, libmaka.ProfileBaseline)); err != nil {
			t.Errorf("baseline refuses pod mine's own %s: %v", src, err)
		}
	}
}

func TestConsoleIsNotAStandardDevice(t *testing.T) {
	for _, profile := range []string{libmaka.ProfileBaseline, libmaka.ProfileRestricted} {
		s := exampleSpec(t)
		s.Root.Readonly = true
		s.Process.Capabilities = nil
		s.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/console", Type: "c", Major: 5, Minor: 1}}
		_, err := ToBoundary(testHost, s, policy(t, profile))
		if hasItem(t, err, "linux.devices[0]") == nil {
			t.Errorf("%s: the host's console c 5:1 is made in the sandbox: %v", profile, err)
		}
		// containerd's default spec allows c 5:1 rwm: the rule is
		// dropped (shown in the Boundary), never given, and the
		// container still runs.
		s = exampleSpec(t)
		s.Root.Readonly = true
		s.Process.Capabilities = nil
		console := specs.LinuxDeviceCgroup{Allow: true, Type: "c", Major: ptr64(5), Minor: ptr64(1), Access: "rwm"}
		s.Linux.Resources = &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{
			{Allow: false, Access: "rwm"}, console,
		}}
		b, err := ToBoundary(testHost, s, policy(t, profile))
		if err != nil {
			t.Fatalf("%s: containerd's console rule refuses the container: %v", profile, err)
		}
		if len(b.Cgroup.DevicesDropped) != 1 || slices.ContainsFunc(b.Cgroup.Devices, ConsoleRule) {
			t.Errorf("%s: the console rule is not dropped: devices %v, dropped %v", profile, b.Cgroup.Devices, b.Cgroup.DevicesDropped)
		}
		for _, d := range convertable(t, b, "console").Linux.Resources.Devices {
			if d.Allow && d.Type == "c" && *d.Major == 5 && (d.Minor == nil || *d.Minor == 1) {
				t.Errorf("%s: the kernel side gets a rule for the console: %v", profile, d)
			}
		}
		// A rule for every minor of major 5 still names the console.
		s.Linux.Resources.Devices[1].Minor = nil
		_, err = ToBoundary(testHost, s, policy(t, profile))
		if hasItem(t, err, "linux.resources.devices[1]") == nil {
			t.Errorf("%s: a c 5:* rwm rule is allowed: %v", profile, err)
		}
	}
}

// The device cgroup is what the Boundary shows: runc's converter adds no
// mknod-anything or tun rule of its own.
func TestNoImplicitDeviceRules(t *testing.T) {
	for _, profile := range []string{libmaka.ProfileBaseline, libmaka.ProfileRestricted} {
		s := exampleSpec(t)
		s.Process.Capabilities = nil
		s.Root.Readonly = true
		b, err := ToBoundary(testHost, s, policy(t, profile))
		if err != nil {
			t.Fatal(err)
		}
		b.Rootfs.Path = t.TempDir()
		b.Cgroup.Path = libmaka.OwnCgroupParent + "/dev"
		out, err := ToLibcontainer(testHost, testLease(b), Options{ID: "dev"})
		if err != nil {
			t.Fatal(err)
		}
		var allowed []string
		for _, r := range out.Config.Cgroups.Devices {
			if !r.Allow {
				continue
			}
			allowed = append(allowed, r.CgroupString())
			if r.Major == config.Wildcard || r.Minor == config.Wildcard && r.Major != 136 {
				t.Errorf("%s: runc's implicit rule %q reaches the cgroup", profile, r.CgroupString())
			}
			if r.Type == config.CharDevice && r.Major == 10 && r.Minor == 200 {
				t.Errorf("%s: runc's implicit tun rule %q reaches the cgroup", profile, r.CgroupString())
			}
		}
		// The standard devices keep theirs.
		for _, want := range []string{"c 1:3 rwm", "c 5:2 rwm", "c 136:* rwm"} {
			if !slices.Contains(allowed, want) {
				t.Errorf("%s: no %q rule among %s", profile, want, strings.Join(allowed, ", "))
			}
		}
	}
}

func ptr64(v int64) *int64 { return &v }

func TestHookPathsAllowExactlyTheListedHooks(t *testing.T) {
	s := exampleSpec(t)
	s.Hooks = &specs.Hooks{
		CreateRuntime:  []specs.Hook{{Path: "/usr/libexec/oci/hooks.d/ok"}, {Path: "/usr/libexec/oci/hooks.d/other"}},
		StartContainer: []specs.Hook{{Path: "/bin/in-the-sandbox"}},
	}
	p := policy(t, libmaka.ProfileBaseline)
	p.HookPaths = []string{"/usr/libexec/oci/hooks.d/ok"}
	_, err := ToBoundary(testHost, s, p)
	items := rejectedItems(t, err)
	if len(items) != 1 || items[0].Field != "hooks.createRuntime[1].path" {
		t.Fatalf("want only the unlisted hook refused, got %v", items)
	}
	// hooks: false refuses even a listed one, and names both lines.
	p.Hooks = false
	_, err = ToBoundary(testHost, s, p)
	if it := hasItem(t, err, "hooks.createRuntime[0].path"); it == nil || !strings.Contains(it.Allow, `"hooks": true`) {
		t.Fatalf("hooks: false, listed hook: %v", err)
	}
	if hasItem(t, err, "hooks.startContainer[0].path") == nil {
		t.Fatalf("hooks: false allows a startContainer hook: %v", err)
	}
}

func TestPlaceTiesContainerFilesToTheID(t *testing.T) {
	s := engineSpec(t, "podman")
	const own = "bcd752ba598e66f28211bad0ed0d756cb31089470befc4badb982e6f37df779b"
	p := policy(t, libmaka.ProfileBaseline)
	for _, tc := range []struct {
		id string
		ok bool
	}{{own, true}, {"victim0123", false}} {
		b, err := ToBoundary(testHost, s, p)
		if err != nil {
			t.Fatal(err)
		}
		b.Cgroup.Path = ""
		err = Place(b, p, tc.id)
		switch {
		case tc.ok && err != nil:
			t.Errorf("podman's container %s may not bind its own userdata: %v", tc.id, err)
		case !tc.ok && hasItem(t, err, "mounts[5].source") == nil:
			t.Errorf("container %s binds podman's container %s's files: %v", tc.id, own, err)
		}
	}
}

func TestPolicyPlaceholdersAndHookPathsAreChecked(t *testing.T) {
	for doc, want := range map[string]string{
		`{"profile": "baseline", "hookPaths": ["hook"]}`:                                                     "hookPaths[0]",
		`{"profile": "baseline", "hookPaths": ["/usr/bin/../bin/sh"]}`:                                       "hookPaths[0]",
		`{"profile": "baseline", "bindPaths": [{"path": "/var/lib/kubelet/pods/x{pod-uid}", "mode": "rw"}]}`: "bindPaths[0].path",
		`{"profile": "baseline", "bindPaths": [{"path": "/srv/{name}", "mode": "rw"}]}`:                      "bindPaths[0].path",
	} {
		if _, err := libmaka.ParsePolicy([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", doc, err, want)
		}
	}
	p, err := libmaka.ParsePolicy([]byte(`{"profile": "baseline", "hookPaths": ["/usr/bin/nvidia-ctk"], "bindPaths": [{"path": "/srv/pods/{pod-uid}", "mode": "ro"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.BindRule("/srv/pods/u1/x", libmaka.BindOwnerOf("c1", map[string]string{"io.kubernetes.pod.uid": "u1"})); got != "ro" {
		t.Errorf("own pod's path: %q, want ro", got)
	}
	if got := p.BindRule("/srv/pods/u2/x", libmaka.BindOwnerOf("c1", map[string]string{"io.kubernetes.pod.uid": "u1"})); got != "" {
		t.Errorf("another pod's path: %q, want refused", got)
	}
	if got := p.BindRule("/srv/pods/../x", libmaka.BindOwnerOf("c1", map[string]string{"io.kubernetes.pod.uid": ".."})); got != "" {
		t.Errorf("a pod uid of ..: %q, want refused", got)
	}
	// A known id that is not a plain name (maka's ids may start with _ . +
	// -) stands for its own directory only, never for any name.
	q, err := libmaka.ParsePolicy([]byte(`{"profile": "baseline", "bindPaths": [{"path": "/srv/ctr/{id}", "mode": "rw"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := q.BindRule("/srv/ctr/victim/userdata", libmaka.BindOwnerOf("_x", nil)); got != "" {
		t.Errorf("container _x binds another container's directory: %q, want refused", got)
	}
}

func TestCgroupNeverInsideABusyCgroup(t *testing.T) {
	// The cgroups that exist, with the processes directly in each.
	host := fakeHost{Host: testHost, facts: testHost.Facts(), cgroups: map[string]int{
		"/kubepods":               0,
		"/kubepods/podvictim":     0,
		"/kubepods/podvictim/ctr": 2,
	}}
	// runc's words for a busy cgroup, which runc's own suite and its
	// users' scripts look for: only where runc would say them (the cgroup
	// itself holds processes), never for a busy parent.
	const runcWords = "(container's cgroup is not empty)"
	for path, want := range map[string]string{
		// inside a running container's cgroup
		"/kubepods/podvictim/ctr/evil": "which holds 2 process(es)",
		// the same, a name holding ".." (a spelling, not a parent)
		"/kubepods/podvictim/ctr/x..y": "which holds 2 process(es)",
		// the container's cgroup itself
		"/kubepods/podvictim/ctr": "/kubepods/podvictim/ctr already holds 2 process(es): a sandbox gets a cgroup of its own " + runcWords,
		// a new container of the pod, beside it; one not made yet
		"/kubepods/podvictim/new": "",
		"/kubepods/podmine/new":   "",
	} {
		var got []string
		b := &libmaka.Boundary{Cgroup: libmaka.Cgroup{Path: path}}
		checkHostCgroup(host, b, func(field, format string, args ...any) { got = append(got, field+": "+fmt.Sprintf(format, args...)) })
		if (want != "") != (len(got) > 0) {
			t.Errorf("%s: refused %v (%v), want %v", path, len(got) > 0, got, want != "")
		}
		for _, g := range got {
			if !strings.HasPrefix(g, "linux.cgroupsPath: ") {
				t.Errorf("%s: %q names no field", path, g)
			}
			if !strings.Contains(g, want) {
				t.Errorf("%s: %q, want %q in it", path, g, want)
			}
			if busy := strings.HasSuffix(path, "/ctr"); busy != strings.HasSuffix(g, runcWords) {
				t.Errorf("%s: %q: runc's words at its end %v, want %v", path, g, !busy, busy)
			}
		}
	}
}

func TestHookExecutableMustBeUnswappable(t *testing.T) {
	dir := t.TempDir() // 0700, ours, below the sticky /tmp
	good := filepath.Join(dir, "hook")
	if err := os.WriteFile(good, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := trustedExecutable(testHost, testHost.Facts().EUID, good); err != nil {
		t.Errorf("%s: %v", good, err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	inOpen := filepath.Join(open, "hook")
	os.WriteFile(inOpen, []byte("#!/bin/sh\n"), 0o755)
	worldWritable := filepath.Join(dir, "ww")
	os.WriteFile(worldWritable, []byte("#!/bin/sh\n"), 0o755)
	os.Chmod(worldWritable, 0o757)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(inOpen, link)
	for path, want := range map[string]string{
		inOpen:              "writable by others",
		worldWritable:       "writable by others",
		plain:               "not executable",
		dir:                 "not a regular file",
		link:                "writable by others", // checked where it leads
		"/nonexistent/hook": "does not exist",
	} {
		if err := trustedExecutable(testHost, testHost.Facts().EUID, path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
