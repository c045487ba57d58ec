package libmaka

// ownOOMScoreAdj is maka's own oom_score_adj: the lowest a sandbox may ask
// for when the policy sets no oomScoreAdjMin. It is the host facts' reader
// (ownFacts, host.go), the one specconv's rule is handed.
func ownOOMScoreAdj() int { return ownFacts().OOMScoreAdj }

// stricterOOMScoreAdjMin is the higher of two oomScoreAdjMin (nil: maka's
// own): the one that lets a sandbox ask to be killed later by less.
func stricterOOMScoreAdjMin(a, b *int) *int {
	if a == nil && b == nil {
		return nil
	}
	v := max(oomMinOf(a), oomMinOf(b))
	return &v
}

func oomMinOf(m *int) int {
	if m == nil {
		return ownOOMScoreAdj()
	}
	return *m
}

// stricterCommandTimeout is the shorter of two maxCommandTimeout (0: the
// default, DefaultMaxCommandTimeout).
func stricterCommandTimeout(a, b int64) int64 {
	eff := func(v int64) int64 {
		if v <= 0 {
			return DefaultMaxCommandTimeout
		}
		return v
	}
	return min(eff(a), eff(b))
}

// stricterBindPaths are the rules of a that b allows too, each in the
// narrower of the two modes.
func stricterBindPaths(a []PathRule, b *Policy) []PathRule {
	out := []PathRule{}
	for _, r := range a {
		switch b.BindRule(r.Path, BindOwner{}) {
		case "rw":
			out = append(out, r)
		case "ro":
			out = append(out, PathRule{Path: r.Path, Mode: "ro"})
		}
	}
	return out
}

// stricterIDRanges are the parts of the ranges of a that lie in one of b.
func stricterIDRanges(a, b []IDRange) []IDRange {
	out := []IDRange{}
	for _, x := range a {
		for _, y := range b {
			lo := max(uint64(x.Start), uint64(y.Start))
			hi := min(uint64(x.Start)+uint64(x.Size), uint64(y.Start)+uint64(y.Size))
			if lo < hi {
				out = append(out, IDRange{Start: uint32(lo), Size: uint32(hi - lo)})
			}
		}
	}
	return out
}

// stricterOf is the stricter of two values of an enumerated item, given
// the strict one: strict if either is, else a.
func stricterOf(a, b, strict string) string {
	if b == strict {
		return b
	}
	return a
}
