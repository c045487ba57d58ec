package specconv

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/maka-runtime/maka/libmaka"
)

// testHost is the host the tests run on: what a test checks depends on
// none of its facts, or on its real files (a test's temporary
// directories).
var testHost = libmaka.ThisHost()

// fakeHost answers with fixed facts and, where cgroups is set, with those
// cgroups' process counts (a cgroup it does not list does not exist); its
// paths are the real host's (a test's temporary directories).
type fakeHost struct {
	libmaka.Host
	facts   libmaka.HostFacts
	cgroups map[string]int
	selinux *bool // nil: the real host's answer
	// sys, if set: the host's mounts below /sys (SysSubmounts).
	sys []string
}

func (h fakeHost) SysSubmounts() []string {
	if h.sys == nil {
		return h.Host.SysSubmounts()
	}
	return h.sys
}

func (h fakeHost) SELinux() bool {
	if h.selinux == nil {
		return h.Host.SELinux()
	}
	return *h.selinux
}

func (h fakeHost) Facts() libmaka.HostFacts { return h.facts }

func (h fakeHost) CgroupProcs(p string) (int, error) {
	if h.cgroups == nil {
		return h.Host.CgroupProcs(p)
	}
	if n, ok := h.cgroups[path.Clean(p)]; ok {
		return n, nil
	}
	return 0, &os.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
}

// hostWith is the real host with its facts changed by change.
func hostWith(change func(*libmaka.HostFacts)) fakeHost {
	f := testHost.Facts()
	change(&f)
	return fakeHost{Host: testHost, facts: f}
}

// containerd joins a hostNetwork pod's containers to the pod sandbox's
// network and uts namespaces by path, and those are the host's: where the
// policy allows the host's network, such paths stand for the host's
// namespaces (the entries dropped, the network "host"), under the rules of
// the host's uts namespace; otherwise, and for any other type, a path to
// the host's own namespace is refused.
func TestNamespacePathsToTheHostsOwn(t *testing.T) {
	self := fmt.Sprintf("/proc/%d/ns/", os.Getpid())
	hostNet := policy(t, "baseline")
	hostNet.NetworkModes = append(hostNet.NetworkModes, libmaka.NetworkHost)
	for _, tc := range []struct {
		name  string
		pol   *libmaka.Policy
		paths map[specs.LinuxNamespaceType]string // the namespaces joined by path
		edit  func(*specs.Spec)
		want  string // "": allowed
	}{
		{"network and uts of the host, host network allowed", hostNet,
			map[specs.LinuxNamespaceType]string{specs.NetworkNamespace: self + "net", specs.UTSNamespace: self + "uts"}, nil, ""},
		{"network of the host only, host network allowed", hostNet,
			map[specs.LinuxNamespaceType]string{specs.NetworkNamespace: self + "net"}, nil, ""},
		{"the host's, host network not allowed", policy(t, "baseline"),
			map[specs.LinuxNamespaceType]string{specs.NetworkNamespace: self + "net", specs.UTSNamespace: self + "uts"}, nil,
			"linux.namespaces[1].path: " + self + "net is the host's own network namespace"},
		{"the host's uts with a network namespace of its own", hostNet,
			map[specs.LinuxNamespaceType]string{specs.UTSNamespace: self + "uts"}, nil, "is the host's own uts namespace"},
		{"the host's ipc", hostNet,
			map[specs.LinuxNamespaceType]string{specs.NetworkNamespace: self + "net", specs.IPCNamespace: self + "ipc"}, nil, "is the host's own ipc namespace"},
		{"the host's uts with a hostname", hostNet,
			map[specs.LinuxNamespaceType]string{specs.NetworkNamespace: self + "net", specs.UTSNamespace: self + "uts"},
			func(s *specs.Spec) { s.Hostname = "box" }, `hostname: "box" needs a uts namespace of the sandbox's own`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sandboxSpec(t)
			s.Hostname = ""
			for i, n := range s.Linux.Namespaces {
				if p, ok := tc.paths[n.Type]; ok {
					s.Linux.Namespaces[i].Path = p
				}
			}
			if tc.edit != nil {
				tc.edit(s)
			}
			b, err := ToBoundary(testHost, s, tc.pol)
			if err == nil {
				b.Rootfs.Path = t.TempDir()
				err = CheckHost(testHost, b, tc.pol, "/", nil)
			}
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%v\nwant a refusal %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range b.Namespaces {
				if n.Path != "" {
					t.Errorf("namespace %s kept its path %s", n.Type, n.Path)
				}
				if n.Type == "uts" && tc.paths[specs.UTSNamespace] != "" || n.Type == "network" {
					t.Errorf("namespace %s kept", n.Type)
				}
			}
			if b.Network.Mode != libmaka.NetworkHost {
				t.Errorf("network %+v, want the host's", b.Network)
			}
		})
	}
}
