package libmaka

import (
	"fmt"

	"github.com/maka-runtime/maka/libmaka/egress"
)

// MaxEgressEntries bounds a sandbox's egress list and the policy's ceiling:
// every request is matched against each entry.
const MaxEgressEntries = 256

// egressFile is an egressLimits object as a policy file writes it: a key
// left out keeps the profile's value.
type egressFile struct {
	Connections *int   `json:"connections"`
	IdleTimeout *int64 `json:"idleTimeout"`
	Bytes       *int64 `json:"bytes"`
}

func (f *egressFile) mergeInto(l *EgressLimits) {
	if f == nil {
		return
	}
	setGiven(&l.Connections, f.Connections)
	setGiven(&l.IdleTimeout, f.IdleTimeout)
	setGiven(&l.Bytes, f.Bytes)
}

// The largest egress limits a policy may set: a connection bound the
// proxy's memory can carry, a day of idleness.
const (
	maxEgressConnections = 4096
	maxEgressIdleTimeout = 86400
)

// validateEgress checks the policy's egress keys; each error names the key.
func (p *Policy) validateEgress() []string {
	var errs []string
	if len(p.Egress) > MaxEgressEntries {
		errs = append(errs, fmt.Sprintf("egress: %d entries, more than the %d allowed", len(p.Egress), MaxEgressEntries))
	}
	for i, s := range p.Egress {
		if _, err := egress.ParseEntry(s); err != nil {
			errs = append(errs, fmt.Sprintf("egress[%d]: %v", i, err))
		}
	}
	l := p.EgressLimits
	if l.Connections < 1 || l.Connections > maxEgressConnections {
		errs = append(errs, fmt.Sprintf("egressLimits.connections: %d is not 1 to %d", l.Connections, maxEgressConnections))
	}
	if l.IdleTimeout < 1 || l.IdleTimeout > maxEgressIdleTimeout {
		errs = append(errs, fmt.Sprintf("egressLimits.idleTimeout: %d is not 1 to %d seconds", l.IdleTimeout, maxEgressIdleTimeout))
	}
	if l.Bytes < 0 {
		errs = append(errs, fmt.Sprintf("egressLimits.bytes: %d is negative (0: no bound)", l.Bytes))
	}
	if p.OnEgressRefusal != ActionDenyName && p.OnEgressRefusal != ActionKillName {
		errs = append(errs, fmt.Sprintf("onEgressRefusal: %q is not deny or kill", p.OnEgressRefusal))
	}
	return errs
}

// The two answers to a violation, as policies write them.
const (
	ActionDenyName = "deny"
	ActionKillName = "kill"
)

// EgressCeiling is the policy's egress ceiling, parsed (validate checked it).
func (p *Policy) EgressCeiling() egress.List {
	l, err := egress.ParseList(p.Egress)
	if err != nil {
		return nil
	}
	return l
}

// stricterEgressLimits takes the smaller of each bound (bytes 0: none).
func stricterEgressLimits(a, b EgressLimits) EgressLimits {
	out := EgressLimits{Connections: min(a.Connections, b.Connections), IdleTimeout: min(a.IdleTimeout, b.IdleTimeout), Bytes: a.Bytes}
	if a.Bytes == 0 || (b.Bytes != 0 && b.Bytes < a.Bytes) {
		out.Bytes = b.Bytes
	}
	return out
}
