package specconv

import (
	"errors"
	"fmt"
	"slices"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A config.json seccomp profile may only narrow maka's own: the applied
// filter allows a call only if both profiles allow it, and what maka
// watches stays notified to its monitor. Under baseline the lead applies
// NarrowSeccomp; under restricted RefuseWiderSeccomp names the fields that
// would have allowed more, and the profile is refused.
//
// Semantics used throughout. A rule's arguments are read as libcontainer
// adds them: one conjunction, unless an argument index appears twice, in
// which case each condition is a rule of its own (any may hold). SCMP_ACT_
// ALLOW and SCMP_ACT_LOG allow; SCMP_ACT_TRACE lets a tracer allow, so it
// counts as allowing when a profile is checked for width; every other
// action refuses. Where an exact intersection cannot be written as seccomp
// rules (two different non-equality conditions on one argument, or a
// config rule that refuses only some arguments of a call), the call is
// refused: the result may be narrower than the intersection, never wider.

// NarrowSeccomp returns the intersection of maka's profile own (which must
// refuse by default, as DefaultSeccomp does) and config.json's cfg:
//
//   - own's notify rules and own's refusals are kept as they are;
//   - each of own's allow rules is kept where cfg allows the call with any
//     arguments, and otherwise narrowed to cfg's allowing conditions
//     (an arg-conditioned allow in cfg narrows an unconditional allow in
//     own; own's condition always stays);
//   - a call own allows and cfg refuses (by a rule or by its default) is
//     refused with cfg's action and errno, so that a config's ENOSYS or
//     kill is honoured; but a call cfg does not name and predates (its
//     number, in the numbering of the architecture maka is built for, is
//     above every call cfg names) answers ENOSYS, as runc's -ENOSYS stub
//     makes it for cfg alone, unless cfg allows its older form with any
//     arguments (statx's is newfstatat): then it is allowed as if cfg
//     allowed it (seccomp_era.go);
//   - the default action is own's; the architectures are cfg's that own
//     also lists (own's when cfg lists none); flags are own's plus cfg's,
//     except SPEC_ALLOW (which weakens a mitigation) unless own has it;
//     listenerPath and listenerMetadata are dropped: maka's monitor is the
//     listener and is set where the filter is applied (monitor.go).
//
// cfg nil returns a copy of own. cfg is not modified.
func NarrowSeccomp(own, cfg *specs.LinuxSeccomp) (*specs.LinuxSeccomp, error) {
	if own == nil {
		return nil, errors.New("seccomp: maka's own profile is missing")
	}
	if allows(own.DefaultAction) || own.DefaultAction == specs.ActTrace {
		return nil, fmt.Errorf("seccomp: maka's own profile must refuse by default, not %s", own.DefaultAction)
	}
	out := &specs.LinuxSeccomp{
		DefaultAction:   own.DefaultAction,
		DefaultErrnoRet: clonePtr(own.DefaultErrnoRet),
		Architectures:   slices.Clone(own.Architectures),
		Flags:           slices.Clone(own.Flags),
	}
	if cfg == nil {
		out.Syscalls = cloneRules(own.Syscalls)
		return out, nil
	}
	if len(cfg.Architectures) > 0 {
		out.Architectures = slices.DeleteFunc(slices.Clone(cfg.Architectures), func(a specs.Arch) bool {
			return !slices.Contains(own.Architectures, a)
		})
		if len(out.Architectures) == 0 {
			out.Architectures = slices.Clone(own.Architectures)
		}
	}
	for _, f := range cfg.Flags {
		if !slices.Contains(out.Flags, f) && f != specs.LinuxSeccompFlagSpecAllow {
			out.Flags = append(out.Flags, f)
		}
	}
	era := eraOf(cfg, eraArch)
	era.filtered = filteredNumberings(out.Architectures)
	for _, name := range ruleNames(own) {
		out.Syscalls = append(out.Syscalls, narrowName(own, cfg, era, name)...)
	}
	return out, nil
}

// narrowName is the result's rules for one syscall own names.
func narrowName(own, cfg *specs.LinuxSeccomp, era cfgEra, name string) []specs.LinuxSyscall {
	view := cfgVerdict(cfg, era, name)
	var out []specs.LinuxSyscall
	ownRefuses := false
	for _, r := range own.Syscalls {
		if !slices.Contains(r.Names, name) {
			continue
		}
		for _, alt := range alternatives(r.Args) {
			one := specs.LinuxSyscall{Names: []string{name}, Action: r.Action, ErrnoRet: clonePtr(r.ErrnoRet), Args: alt}
			if !allows(r.Action) {
				out = append(out, one)
				ownRefuses = true
				continue
			}
			if view.everything {
				out = append(out, one)
				continue
			}
			for _, c := range view.alts {
				if merged, ok := meet(alt, c); ok {
					one.Args = merged
					out = append(out, one)
				}
			}
		}
	}
	if ownRefuses || len(view.refusals) == 0 {
		return out
	}
	if len(out) == 0 {
		// Nothing of own's allow survived: cfg's own answer for the call.
		r := strictest(view.refusals)
		return []specs.LinuxSyscall{{Names: []string{name}, Action: r.Action, ErrnoRet: clonePtr(r.ErrnoRet)}}
	}
	// cfg's answer where it refuses some arguments (its EINVAL for an audit
	// socket, say); the allows above were carved out of these, so no
	// allow overlaps them.
	for _, r := range view.refusals {
		out = append(out, specs.LinuxSyscall{Names: []string{name}, Action: r.Action, ErrnoRet: clonePtr(r.ErrnoRet), Args: r.Args})
	}
	return out
}

// cfgView is what a config profile says of one syscall: allowed with any
// arguments, or when one of alts holds (refusals already carved out); and
// the refusals to answer with (one alternative each; an empty Args: every
// call is refused).
type cfgView struct {
	everything bool
	alts       [][]specs.LinuxSeccompArg
	refusals   []specs.LinuxSyscall
}

// maxAlternatives bounds the carving: past it the call is refused.
const maxAlternatives = 256

// cfgVerdict reads what cfg says of name; era is cfg's newest call, for
// the calls cfg does not name.
func cfgVerdict(cfg *specs.LinuxSeccomp, era cfgEra, name string) cfgView {
	var v cfgView
	named := false
	for _, r := range cfg.Syscalls {
		if !slices.Contains(r.Names, name) {
			continue
		}
		named = true
		for _, alt := range alternatives(r.Args) {
			if allows(r.Action) {
				v.alts = append(v.alts, alt)
				continue
			}
			ref := refusalOf(r.Action, r.ErrnoRet)
			ref.Args = alt
			if len(alt) == 0 {
				return cfgView{refusals: []specs.LinuxSyscall{*ref}}
			}
			v.refusals = append(v.refusals, *ref)
		}
	}
	if allows(cfg.DefaultAction) {
		// What no rule matches runs: any arguments, minus the refusals.
		v.alts = [][]specs.LinuxSeccompArg{{}}
	} else if !named && era.predates(name) {
		if era.olderFormAllowed(cfg, name) {
			// statx where cfg allows newfstatat (seccomp_era.go).
			return cfgView{everything: true, alts: [][]specs.LinuxSeccompArg{{}}}
		}
		return cfgView{refusals: []specs.LinuxSyscall{*enosysRefusal()}}
	} else if !named || len(v.alts) == 0 {
		def := refusalOf(cfg.DefaultAction, cfg.DefaultErrnoRet)
		return cfgView{refusals: append(v.refusals, *def)}
	}
	for _, r := range v.refusals {
		v.alts = carve(v.alts, r.Args)
	}
	v.everything = len(v.refusals) == 0 && slices.ContainsFunc(v.alts, func(a []specs.LinuxSeccompArg) bool { return len(a) == 0 })
	if len(v.alts) == 0 {
		return cfgView{refusals: v.refusals}
	}
	return v
}

// carve removes a refused conjunction from alternatives: each alternative
// meets the negation of one of the refusal's conditions. A condition with
// no single-condition negation (masked equality) contributes nothing,
// which refuses more than the refusal did.
func carve(alts [][]specs.LinuxSeccompArg, refused []specs.LinuxSeccompArg) [][]specs.LinuxSeccompArg {
	var out [][]specs.LinuxSeccompArg
	for _, a := range alts {
		if disjoint(a, refused) {
			// The refusal never holds where a does: nothing to carve
			// (maka's own profile allows clone without namespace flags
			// and refuses each flag with a masked equality; no masked
			// equality has a negation, so carving would refuse clone).
			out = append(out, a)
			continue
		}
		for _, c := range refused {
			n, ok := negate(c)
			if !ok {
				continue
			}
			if m, ok := meet(a, []specs.LinuxSeccompArg{n}); ok {
				out = append(out, m)
			}
		}
	}
	if len(out) > maxAlternatives {
		return nil
	}
	return out
}

// disjoint reports whether alternatives a and b provably never hold
// together: on one index, an equality the other condition refuses, or two
// masked equalities that disagree on their common bits. false when it
// cannot tell (the caller then carves, which is narrower).
func disjoint(a, b []specs.LinuxSeccompArg) bool {
	for _, cb := range b {
		for _, ca := range a {
			if ca.Index != cb.Index {
				continue
			}
			switch {
			case ca.Op == specs.OpEqualTo && knownOp(cb.Op) && !condHolds(cb, ca.Value):
				return true
			case cb.Op == specs.OpEqualTo && knownOp(ca.Op) && !condHolds(ca, cb.Value):
				return true
			case ca.Op == specs.OpMaskedEqual && cb.Op == specs.OpMaskedEqual:
				common := ca.Value & cb.Value
				if ca.ValueTwo&common != cb.ValueTwo&common {
					return true
				}
			}
		}
	}
	return false
}

func negate(c specs.LinuxSeccompArg) (specs.LinuxSeccompArg, bool) {
	opposite := map[specs.LinuxSeccompOperator]specs.LinuxSeccompOperator{
		specs.OpEqualTo: specs.OpNotEqual, specs.OpNotEqual: specs.OpEqualTo,
		specs.OpLessThan: specs.OpGreaterEqual, specs.OpGreaterEqual: specs.OpLessThan,
		specs.OpLessEqual: specs.OpGreaterThan, specs.OpGreaterThan: specs.OpLessEqual,
	}
	op, ok := opposite[c.Op]
	if !ok {
		return c, false
	}
	return specs.LinuxSeccompArg{Index: c.Index, Value: c.Value, Op: op}, true
}

func strictest(rs []specs.LinuxSyscall) specs.LinuxSyscall {
	best := rs[0]
	for _, r := range rs[1:] {
		if severity(r.Action) > severity(best.Action) {
			best = r
		}
	}
	return best
}

// refusalOf is the refusing rule the result uses for a config's action:
// errno, trap and the kills as they are; anything else (trace, notify,
// an unknown action) as errno EPERM, since maka's monitor is the only
// listener and there is no tracer to ask.
func refusalOf(a specs.LinuxSeccompAction, errno *uint) *specs.LinuxSyscall {
	switch a {
	case specs.ActErrno, specs.ActTrap, specs.ActKill, specs.ActKillThread, specs.ActKillProcess:
		return &specs.LinuxSyscall{Action: a, ErrnoRet: clonePtr(errno)}
	}
	eperm := uint(unix.EPERM)
	return &specs.LinuxSyscall{Action: specs.ActErrno, ErrnoRet: &eperm}
}

// severity orders refusals as the kernel does between filters.
func severity(a specs.LinuxSeccompAction) int {
	switch a {
	case specs.ActKillProcess:
		return 4
	case specs.ActKill, specs.ActKillThread:
		return 3
	case specs.ActTrap:
		return 2
	case specs.ActErrno:
		return 1
	}
	return 0
}

// allows: the action lets the call run, for sure.
func allows(a specs.LinuxSeccompAction) bool {
	return a == specs.ActAllow || a == specs.ActLog
}

// alternatives splits a rule's conditions the way libcontainer applies
// them: all of them together, or, when an argument index appears twice,
// each one alone. No conditions is one empty alternative.
func alternatives(args []specs.LinuxSeccompArg) [][]specs.LinuxSeccompArg {
	seen := map[uint]bool{}
	for _, a := range args {
		if seen[a.Index] {
			out := make([][]specs.LinuxSeccompArg, len(args))
			for i, a := range args {
				out[i] = []specs.LinuxSeccompArg{a}
			}
			return out
		}
		seen[a.Index] = true
	}
	return [][]specs.LinuxSeccompArg{slices.Clone(args)}
}

// meet is the conjunction of two alternatives (at most one condition per
// index each) as one alternative, if seccomp can say it: for an index both
// constrain, equal conditions, an equality the other condition holds for,
// or two masked equalities that agree on their common bits. ok is false
// when the conjunction cannot hold or cannot be written (then the caller
// refuses, which is narrower).
func meet(a, b []specs.LinuxSeccompArg) ([]specs.LinuxSeccompArg, bool) {
	out := slices.Clone(a)
	for _, cb := range b {
		i := slices.IndexFunc(out, func(c specs.LinuxSeccompArg) bool { return c.Index == cb.Index })
		if i < 0 {
			out = append(out, cb)
			continue
		}
		ca := out[i]
		switch {
		case ca == cb:
		case ca.Op == specs.OpEqualTo && knownOp(cb.Op):
			if !condHolds(cb, ca.Value) {
				return nil, false
			}
		case cb.Op == specs.OpEqualTo && knownOp(ca.Op):
			if !condHolds(ca, cb.Value) {
				return nil, false
			}
			out[i] = cb
		case ca.Op == specs.OpMaskedEqual && cb.Op == specs.OpMaskedEqual:
			common := ca.Value & cb.Value
			if ca.ValueTwo&^ca.Value != 0 || cb.ValueTwo&^cb.Value != 0 || ca.ValueTwo&common != cb.ValueTwo&common {
				return nil, false
			}
			out[i] = specs.LinuxSeccompArg{Index: ca.Index, Op: specs.OpMaskedEqual,
				Value: ca.Value | cb.Value, ValueTwo: ca.ValueTwo | cb.ValueTwo}
		default:
			return nil, false
		}
	}
	return out, true
}

func knownOp(op specs.LinuxSeccompOperator) bool {
	switch op {
	case specs.OpNotEqual, specs.OpLessThan, specs.OpLessEqual, specs.OpEqualTo,
		specs.OpGreaterEqual, specs.OpGreaterThan, specs.OpMaskedEqual:
		return true
	}
	return false
}

// ruleNames lists the names a profile's rules mention, once, in order.
func ruleNames(sc *specs.LinuxSeccomp) []string {
	var out []string
	for _, r := range sc.Syscalls {
		for _, n := range r.Names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

func cloneRules(rs []specs.LinuxSyscall) []specs.LinuxSyscall {
	out := make([]specs.LinuxSyscall, len(rs))
	for i, r := range rs {
		out[i] = specs.LinuxSyscall{Names: slices.Clone(r.Names), Action: r.Action, ErrnoRet: clonePtr(r.ErrnoRet), Args: slices.Clone(r.Args)}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
