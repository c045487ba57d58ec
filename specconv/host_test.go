package specconv

import (
	"io/fs"
	"os"
	"path"

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
