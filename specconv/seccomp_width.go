package specconv

import (
	"fmt"
	"slices"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// SeccompWidening is one config.json field through which a seccomp
// profile would allow more than maka's: Field is its path in config.json
// (linux.seccomp.syscalls[3].names[0]), Reason says what it would allow.
type SeccompWidening struct {
	Field  string
	Reason string
}

// RefuseWiderSeccomp lists the fields of config.json's profile cfg that
// would allow more than maka's own: an allowing (or tracing) default
// action; an allow, log or trace rule for a call own refuses or watches,
// or with arguments own does not allow (own's allow must cover each of the
// rule's alternatives, argument by argument); an architecture own does not
// filter; the SPEC_ALLOW flag; a listenerPath (another seccomp agent).
// Under restricted each is a BOUNDARY_REJECTED item. Nil when cfg is nil
// or only narrows.
func RefuseWiderSeccomp(own, cfg *specs.LinuxSeccomp) []SeccompWidening {
	if cfg == nil || own == nil {
		return nil
	}
	var out []SeccompWidening
	if widening(cfg.DefaultAction) {
		out = append(out, SeccompWidening{"linux.seccomp.defaultAction",
			fmt.Sprintf("%s would let every syscall maka's allowlist refuses or watches run (io_uring_setup, mount, ...); use SCMP_ACT_ERRNO", cfg.DefaultAction)})
	}
	for i, r := range cfg.Syscalls {
		if !widening(r.Action) {
			continue
		}
		for j, name := range r.Names {
			for _, alt := range alternatives(r.Args) {
				if ownAllowsAll(own, name, alt) {
					continue
				}
				what := "refuses or watches it"
				if len(alt) > 0 || seccompVerdictOf(own, name) == verdictAllowed {
					what = "allows it only with other arguments"
				}
				out = append(out, SeccompWidening{fmt.Sprintf("linux.seccomp.syscalls[%d].names[%d]", i, j),
					fmt.Sprintf("%s for %s would widen maka's profile, which %s", r.Action, name, what)})
				break
			}
		}
	}
	for i, a := range cfg.Architectures {
		if !slices.Contains(own.Architectures, a) {
			out = append(out, SeccompWidening{fmt.Sprintf("linux.seccomp.architectures[%d]", i),
				fmt.Sprintf("%s is an architecture maka's profile does not filter", a)})
		}
	}
	for i, f := range cfg.Flags {
		if f == specs.LinuxSeccompFlagSpecAllow && !slices.Contains(own.Flags, f) {
			out = append(out, SeccompWidening{fmt.Sprintf("linux.seccomp.flags[%d]", i),
				"SECCOMP_FILTER_FLAG_SPEC_ALLOW turns off the speculative store bypass mitigation"})
		}
	}
	if cfg.ListenerPath != "" {
		out = append(out, SeccompWidening{"linux.seccomp.listenerPath",
			"maka's monitor is the only seccomp agent; another one could let watched syscalls through"})
	}
	return out
}

// widening: the action may let the call run (a tracer decides for trace).
func widening(a specs.LinuxSeccompAction) bool {
	return allows(a) || a == specs.ActTrace
}

// ownAllowsAll reports whether own allows name whenever alt holds: one of
// own's allow alternatives is implied by alt, condition by condition.
func ownAllowsAll(own *specs.LinuxSeccomp, name string, alt []specs.LinuxSeccompArg) bool {
	for _, r := range own.Syscalls {
		if !slices.Contains(r.Names, name) || !allows(r.Action) {
			continue
		}
		for _, o := range alternatives(r.Args) {
			if impliesAll(alt, o) {
				return true
			}
		}
	}
	return false
}

// impliesAll: every condition of o follows from one of alt's.
func impliesAll(alt, o []specs.LinuxSeccompArg) bool {
	for _, c := range o {
		if !slices.ContainsFunc(alt, func(a specs.LinuxSeccompArg) bool { return a.Index == c.Index && implies(a, c) }) {
			return false
		}
	}
	return true
}

func implies(a, c specs.LinuxSeccompArg) bool {
	switch {
	case a == c:
		return true
	case a.Op == specs.OpEqualTo:
		return knownOp(c.Op) && condHolds(c, a.Value)
	case a.Op == specs.OpMaskedEqual && c.Op == specs.OpMaskedEqual:
		return a.ValueTwo&^a.Value == 0 && c.Value&^a.Value == 0 && a.ValueTwo&c.Value == c.ValueTwo
	}
	return false
}

type seccompVerdict int

const (
	verdictDenied seccompVerdict = iota
	verdictWatched
	verdictAllowed
)

// seccompVerdictOf classifies a name: allowed if some rule may let it run
// (allow, log, trace: clone is allowed, for a fork), or no rule names it
// and the default does; else watched if a rule notifies it; else denied.
func seccompVerdictOf(sc *specs.LinuxSeccomp, name string) seccompVerdict {
	named, notified := false, false
	for _, r := range sc.Syscalls {
		if !slices.Contains(r.Names, name) {
			continue
		}
		named = true
		if widening(r.Action) {
			return verdictAllowed
		}
		notified = notified || r.Action == specs.ActNotify
	}
	switch {
	case notified:
		return verdictWatched
	case !named && widening(sc.DefaultAction):
		return verdictAllowed
	}
	return verdictDenied
}

// SeccompCounts is what `maka boundary` shows of a profile: how many
// syscall names it allows (with some arguments at least), watches
// (notifies to the monitor) and refuses. Counted over the names maka
// classifies (its allowlist, the watched, denied and excluded lists, and
// the arg-conditioned and open calls) together with every name the profile
// itself mentions, so a profile's count does not depend on the libseccomp
// or kernel maka runs on. A nil profile allows them all.
func SeccompCounts(s *specs.LinuxSeccomp) (allowed, watched, denied int) {
	names := classifiedSyscalls()
	if s == nil {
		return len(names), 0, 0
	}
	for _, n := range ruleNames(s) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		switch seccompVerdictOf(s, n) {
		case verdictAllowed:
			allowed++
		case verdictWatched:
			watched++
		default:
			denied++
		}
	}
	return allowed, watched, denied
}

// classifiedSyscalls: every name maka's profile classifies, once.
func classifiedSyscalls() []string {
	var out []string
	for _, list := range [][]string{allowedSyscalls, {"open", "openat", "openat2", "creat", "clone", "clone3", "personality", "socket"},
		WatchedSyscalls, deniedSyscalls, excludedSyscalls} {
		for _, n := range list {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}
