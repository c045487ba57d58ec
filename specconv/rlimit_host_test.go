package specconv

import (
	"strings"
	"testing"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// An RLIMIT_NOFILE above the kernel's fs.nr_open fails at start (prlimit:
// EPERM, whatever maka's privileges): refused before anything exists, at
// create and at exec, naming the field. Under rootless maka every hard
// limit above maka's own fails the same way.
func TestRlimitsTheKernelRefuses(t *testing.T) {
	defer func(n func() uint64, h func(int) uint64) { nrOpen, ownHardLimit = n, h }(nrOpen, ownHardLimit)
	nrOpen = func() uint64 { return 1048576 }
	ownHardLimit = func(int) uint64 { return 4096 }

	for _, tc := range []struct {
		policy string
		rl     specs.POSIXRlimit
		want   string // "" : allowed
	}{
		{"restricted", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: 1048576, Soft: 1024}, ""},
		{"restricted", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: 1048577, Soft: 1024}, "process.rlimits[0].hard: 1048577 is above the kernel's fs.nr_open (1048576)"},
		{"restricted", specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: ^uint64(0), Soft: 1024}, "process.rlimits[0].hard: 18446744073709551615 is above the kernel's fs.nr_open"},
		{"restricted", specs.POSIXRlimit{Type: "RLIMIT_CORE", Hard: 1 << 40, Soft: 0}, ""},
		{"rootless", specs.POSIXRlimit{Type: "RLIMIT_CORE", Hard: 4096, Soft: 0}, ""},
		{"rootless", specs.POSIXRlimit{Type: "RLIMIT_CORE", Hard: 4097, Soft: 0}, "process.rlimits[0].hard: 4097 is above maka's own hard limit of RLIMIT_CORE (4096)"},
	} {
		s := sandboxSpec(t)
		s.Process.Rlimits = []specs.POSIXRlimit{tc.rl}
		p := policy(t, "restricted")
		if tc.policy == "rootless" {
			p = p.ForRootless(&libmaka.Rootless{UID: 1000, GID: 1000, CgroupParent: "/u"})
		}
		for _, which := range []string{"create", "exec"} {
			var err error
			if which == "create" {
				_, err = ToBoundary(s, p)
			} else {
				ps := *s.Process
				err = CheckExec(&ps, p, nil)
			}
			switch {
			case tc.want == "" && err != nil && strings.Contains(err.Error(), "rlimits"):
				t.Errorf("%s, %s %+v: refused: %v", tc.policy, which, tc.rl, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s, %s %+v: %v, want a refusal %q", tc.policy, which, tc.rl, err, tc.want)
			}
		}
	}
}
