package specconv

import (
	"runtime"
	"slices"
)

// kernelSeccompArchs are the architectures, in libcontainer's names, that
// a kernel of maka's own architecture can present to a seccomp filter
// (seccomp_data.arch): its own, and its 32-bit compatibility ABI (x32
// calls carry x86_64's arch with a bit in the number: with x32 in the
// filter they meet its rules, without it libcontainer's -ENOSYS stub
// answers them). An architecture not listed here is not narrowed.
var kernelSeccompArchs = map[string][]string{
	"amd64":   {"amd64", "x86", "x32"},
	"arm64":   {"arm64", "arm"},
	"ppc64le": {"ppc64le"},
	"s390x":   {"s390x", "s390"},
	"riscv64": {"riscv64"},
	"loong64": {"loong64"},
}

// kernelArchs narrows a filter's architectures to those the running
// kernel can present, keeping their order. A rule compiled for any other
// can never match: the kernel never makes such a call, and libseccomp
// answers a call of an architecture the filter lacks with its bad-arch
// action (kill). Enforcement is the same; what goes is libseccomp's work
// in the sandbox's init, which compiles the whole allowlist once per
// architecture: with maka's profile's five (x86_64, x86, x32, aarch64,
// arm) it took ~200 ms of a 1 s `run` under emulation, the largest single
// step of the start (docs/dev/performance.md, change 12). It never adds
// an architecture: a profile that leaves out x86 still kills 32-bit calls.
func kernelArchs(archs []string) []string {
	native, ok := kernelSeccompArchs[runtime.GOARCH]
	if !ok {
		return archs
	}
	return slices.DeleteFunc(slices.Clone(archs), func(a string) bool { return !slices.Contains(native, a) })
}
