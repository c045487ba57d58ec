package egress

import (
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/maka-runtime/maka/internal/printable"
)

// Reasons a request is refused: short, stable words the monitor records and
// tests match; Refusal.Detail says the rest for people.
const (
	ReasonNotListed      = "not-listed"      // no entry names host:port
	ReasonPrivateAddress = "private-address" // the name resolves only to non-public addresses no entry names
	ReasonRawIP          = "raw-ip"          // an address asked for that no address entry covers
	ReasonSNIMismatch    = "sni-mismatch"    // the TLS ClientHello names another host
	ReasonNoSNI          = "no-sni"          // a TLS ClientHello without a server name, to a name
	ReasonBadHello       = "bad-hello"       // on port 443, the first bytes are not a TLS ClientHello
	ReasonHostMismatch   = "host-mismatch"   // an HTTP Host header names another host than the URI
	ReasonTooMany        = "too-many"        // the proxy's connection bound was reached
	ReasonBadRequest     = "bad-request"     // malformed, oversized, or a form the proxy does not serve
	ReasonUnsupported    = "unsupported"     // a SOCKS command, address type or auth method the proxy does not serve
	ReasonTimeout        = "timeout"         // the request phase outlived its deadline
	ReasonResolveFailed  = "resolve-failed"  // the name did not resolve
	ReasonDialFailed     = "dial-failed"     // no address that passed could be connected to
	ReasonBudget         = "budget"          // the proxy's byte budget is spent
)

// PolicyReason says whether reason is a refusal of the list's (what the
// sandbox asked for is not allowed), not a failure of the network, of the
// client's request or of a bound: only those may kill the sandbox
// (onEgressRefusal kill).
func PolicyReason(reason string) bool {
	switch reason {
	case ReasonNotListed, ReasonPrivateAddress, ReasonRawIP, ReasonSNIMismatch, ReasonNoSNI, ReasonHostMismatch:
		return true
	}
	return false
}

// Protocols, as the client spoke to the proxy.
const (
	ProtoConnect = "connect" // HTTP CONNECT
	ProtoHTTP    = "http"    // plain HTTP with an absolute URI
	ProtoSOCKS5  = "socks5"
	ProtoUnknown = "unknown" // refused before the protocol was known
)

// Refusal is one request the proxy refused; every refusal reaches the
// Recorder, so that the monitor can record it as a violation.
type Refusal struct {
	Time time.Time `json:"time"`
	// Host and Port as the client asked (a name, or an address's text);
	// Host is chosen by the sandbox: escape it before printing (String
	// does). Empty and 0 when the request did not get that far.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// Addr is the resolved address refused (private-address), or the
	// address asked for (raw-ip); invalid otherwise.
	Addr   netip.Addr `json:"addr,omitzero"`
	Reason string     `json:"reason"`
	Detail string     `json:"detail,omitempty"`
	Proto  string     `json:"proto"`
}

// String is the refusal in one line for people, what the sandbox chose
// escaped.
func (r Refusal) String() string {
	var b strings.Builder
	b.WriteString(r.Reason)
	if r.Host != "" {
		b.WriteByte(' ')
		b.WriteString(printable.String(net.JoinHostPort(r.Host, strconv.Itoa(r.Port))))
	}
	if r.Addr.IsValid() {
		b.WriteString(" (")
		b.WriteString(r.Addr.String())
		b.WriteByte(')')
	}
	if r.Proto != "" {
		b.WriteString(" via ")
		b.WriteString(r.Proto)
	}
	if r.Detail != "" {
		b.WriteString(": ")
		b.WriteString(printable.String(r.Detail))
	}
	return b.String()
}

// Recorder receives what the proxy does: every refusal, and each tunnel or
// forwarded request opened and closed with the bytes it carried. dest is
// host:port as the client asked (a name, or an address). The proxy calls it
// from many goroutines at once, and waits for it: keep it quick.
type Recorder interface {
	Refused(Refusal)
	Opened(dest string)
	Closed(dest string, bytesUp, bytesDown int64)
}

// maxDests bounds the destinations Counters keeps apart: a wildcard entry
// lets a sandbox name as many hosts as it likes. Beyond it, they are
// counted under OtherDests.
const maxDests = 1024

// OtherDests is the destination under which Counters adds up the
// destinations beyond its bound.
const OtherDests = "(other)"

// Counters is a Recorder that only counts, in memory: per destination
// (connections opened and closed, bytes each way) and per refusal reason,
// for the monitor's summary of a sandbox's egress. The zero value is ready;
// it is safe for concurrent use.
type Counters struct {
	mu       sync.Mutex
	dests    map[string]*DestStats
	refusals map[string]uint64
	last     *Refusal
}

// DestStats are one destination's counters.
type DestStats struct {
	Dest      string `json:"dest"`
	Opened    uint64 `json:"opened"`
	Closed    uint64 `json:"closed"`
	BytesUp   int64  `json:"bytesUp"`   // from the sandbox
	BytesDown int64  `json:"bytesDown"` // to the sandbox
}

// Snapshot is Counters at one moment.
type Snapshot struct {
	Dests    []DestStats       `json:"dests"` // sorted by Dest
	Refusals map[string]uint64 `json:"refusals,omitempty"`
	// LastRefusal is the most recent refusal, if any.
	LastRefusal *Refusal `json:"lastRefusal,omitempty"`
}

// Refused counts r under its reason.
func (c *Counters) Refused(r Refusal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refusals == nil {
		c.refusals = map[string]uint64{}
	}
	c.refusals[r.Reason]++
	c.last = &r
}

func (c *Counters) dest(d string) *DestStats {
	if c.dests == nil {
		c.dests = map[string]*DestStats{}
	}
	s := c.dests[d]
	if s == nil {
		if len(c.dests) >= maxDests {
			d = OtherDests
			if s = c.dests[d]; s != nil {
				return s
			}
		}
		s = &DestStats{Dest: d}
		c.dests[d] = s
	}
	return s
}

// Opened counts a connection to dest.
func (c *Counters) Opened(dest string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dest(dest).Opened++
}

// Closed counts the end of a connection to dest and its bytes.
func (c *Counters) Closed(dest string, bytesUp, bytesDown int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.dest(dest)
	s.Closed++
	s.BytesUp += bytesUp
	s.BytesDown += bytesDown
}

// Snapshot copies the counters.
func (c *Counters) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{Dests: make([]DestStats, 0, len(c.dests))}
	for _, d := range c.dests {
		s.Dests = append(s.Dests, *d)
	}
	sort.Slice(s.Dests, func(i, j int) bool { return s.Dests[i].Dest < s.Dests[j].Dest })
	if len(c.refusals) > 0 {
		s.Refusals = make(map[string]uint64, len(c.refusals))
		for k, v := range c.refusals {
			s.Refusals[k] = v
		}
	}
	if c.last != nil {
		r := *c.last
		s.LastRefusal = &r
	}
	return s
}

// nopRecorder is the Recorder of a Proxy configured without one.
type nopRecorder struct{}

func (nopRecorder) Refused(Refusal)             {}
func (nopRecorder) Opened(string)               {}
func (nopRecorder) Closed(string, int64, int64) {}
