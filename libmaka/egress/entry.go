package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Kind says what an Entry names: a host, every host below a suffix, one
// address, or a range of addresses. The four are matched differently (a name
// only by name, an address only by address), so the kind is explicit.
type Kind uint8

// The kinds of entries.
const (
	KindName     Kind = iota + 1 // example.com:443
	KindWildcard                 // *.example.com:443: any name strictly below example.com
	KindAddr                     // 192.0.2.1:443, [2001:db8::1]:443
	KindCIDR                     // 10.0.0.0/8:5432, [fd00::/8]:443
)

// Entry is one declared destination, host:port. A sandbox's egress list and
// the policy's ceiling are lists of them; the port is always part of it, so
// that allowing a host never allows every service it runs.
type Entry struct {
	Kind Kind
	// Host is the lower-cased name (KindName) or the suffix below which a
	// wildcard matches (KindWildcard, without "*."); empty for addresses.
	Host string
	// Prefix is the address (KindAddr: a full-length prefix) or the
	// range (KindCIDR, its host bits zero); invalid for names.
	Prefix netip.Prefix
	Port   int
}

// EntryError is why an egress entry was refused, naming the entry as it was
// written, so that a list with several bad entries reports each of them.
type EntryError struct {
	Entry  string // as written (cut to 64 bytes when longer)
	Reason string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("egress entry %q: %s", e.Entry, e.Reason)
}

// maxEntryLen bounds an entry: a 253-byte name, "*.", ":" and five digits
// fit; nothing longer can be valid.
const maxEntryLen = 300

func entryError(s, reason string) error {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return &EntryError{Entry: s, Reason: reason}
}

// ParseEntry parses one host:port entry: an exact DNS name (lower-cased), a
// wildcard *.suffix, an IPv4 address, an IPv6 address in brackets, or a CIDR
// range (10.0.0.0/8:5432, [fd00::/8]:443). The port is required (1-65535).
// Errors are *EntryError, naming the entry and what is wrong with it.
func ParseEntry(s string) (Entry, error) {
	if len(s) > maxEntryLen {
		return Entry{}, entryError(s, fmt.Sprintf("longer than %d bytes", maxEntryLen))
	}
	host, portStr, bracketed, reason := splitEntry(s)
	if reason != "" {
		return Entry{}, entryError(s, reason)
	}
	port, reason := parsePort(portStr)
	if reason != "" {
		return Entry{}, entryError(s, reason)
	}
	e, reason := parseHost(host, bracketed)
	if reason != "" {
		return Entry{}, entryError(s, reason)
	}
	e.Port = port
	return e, nil
}

// splitEntry splits host and port at the last colon, or after the closing
// bracket of [v6]:port.
func splitEntry(s string) (host, port string, bracketed bool, reason string) {
	if s == "" {
		return "", "", false, "empty (write host:port)"
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false, "no closing ] (write [2001:db8::1]:443)"
		}
		rest := s[end+1:]
		if rest == "" {
			return "", "", false, "no port (write [2001:db8::1]:443)"
		}
		if rest[0] != ':' {
			return "", "", false, "] not followed by :port"
		}
		return s[1:end], rest[1:], true, ""
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false, "no port (write host:port, e.g. example.com:443)"
	}
	host = s[:i]
	if strings.IndexByte(host, ':') >= 0 {
		return "", "", false, "an IPv6 address or range is written in brackets: [2001:db8::1]:443"
	}
	return host, s[i+1:], false, ""
}

// parsePort reads a decimal port, 1-65535.
func parsePort(s string) (int, string) {
	if s == "" {
		return 0, "no port (write host:port, e.g. example.com:443)"
	}
	if len(s) > 5 {
		return 0, "port out of range 1-65535"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, "port is not a number"
		}
	}
	n, _ := strconv.Atoi(s)
	if n < 1 || n > 65535 {
		return 0, "port out of range 1-65535"
	}
	return n, ""
}

func parseHost(host string, bracketed bool) (Entry, string) {
	if host == "" {
		return Entry{}, "no host before the port"
	}
	if strings.IndexByte(host, '/') >= 0 {
		return parseCIDR(host, bracketed)
	}
	if bracketed || looksLikeAddr(host) {
		a, reason := parseAddr(host, bracketed)
		if reason != "" {
			return Entry{}, reason
		}
		return Entry{Kind: KindAddr, Prefix: netip.PrefixFrom(a, a.BitLen())}, ""
	}
	if strings.HasPrefix(host, "*.") {
		suffix, reason := normalName(host[2:])
		if reason != "" {
			return Entry{}, "wildcard suffix: " + reason
		}
		return Entry{Kind: KindWildcard, Host: suffix}, ""
	}
	if strings.IndexByte(host, '*') >= 0 {
		return Entry{}, "a wildcard is * as the whole first label, followed by a suffix: *.example.com"
	}
	name, reason := normalName(host)
	if reason != "" {
		return Entry{}, reason
	}
	return Entry{Kind: KindName, Host: name}, ""
}

// looksLikeAddr: only digits and dots, the shape of an IPv4 address (a name
// like that is refused as a malformed address rather than taken as a name).
func looksLikeAddr(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}

// parseAddr parses an address as an entry writes it: IPv4 bare, IPv6 in
// brackets, no zone, no IPv4-mapped IPv6 form (one spelling per address).
func parseAddr(s string, bracketed bool) (netip.Addr, string) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		if bracketed {
			return netip.Addr{}, "not an IPv6 address in brackets"
		}
		return netip.Addr{}, "not an IPv4 address"
	}
	if a.Is4() && bracketed {
		return netip.Addr{}, "an IPv4 address is written without brackets"
	}
	if a.Is4In6() {
		return netip.Addr{}, "an IPv4-mapped IPv6 address: write the IPv4 address " + a.Unmap().String()
	}
	return a, ""
}

func parseCIDR(s string, bracketed bool) (Entry, string) {
	i := strings.IndexByte(s, '/')
	a, reason := parseAddr(s[:i], bracketed)
	if reason != "" {
		return Entry{}, "range: " + reason
	}
	bits := s[i+1:]
	n, err := strconv.Atoi(bits)
	if err != nil || bits == "" || len(bits) > 3 || bits[0] < '0' || bits[0] > '9' || (len(bits) > 1 && bits[0] == '0') {
		return Entry{}, "range: the prefix length after / is not a number"
	}
	if n > a.BitLen() {
		return Entry{}, fmt.Sprintf("range: prefix length %d longer than the address (%d bits)", n, a.BitLen())
	}
	p := netip.PrefixFrom(a, n)
	if p.Masked() != p {
		return Entry{}, fmt.Sprintf("range: bits set beyond the prefix length (write %s)", p.Masked().String())
	}
	return Entry{Kind: KindCIDR, Prefix: p}, ""
}

// normalName lower-cases and checks a DNS name: ASCII letters, digits,
// hyphens (not at a label's ends) and underscores, labels of 1-63 bytes,
// 253 bytes in all, one optional trailing dot (dropped), a last label that
// is not all digits (that would be a malformed IPv4 address). Non-ASCII
// names are written in their xn-- form.
func normalName(s string) (string, string) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", "empty name"
	}
	if len(s) > 253 {
		return "", "name longer than 253 bytes"
	}
	var b []byte
	labelStart := 0
	allDigits := true
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			label := s[labelStart:i]
			switch {
			case label == "":
				return "", "empty label in the name"
			case len(label) > 63:
				return "", "label longer than 63 bytes"
			case label[0] == '-' || label[len(label)-1] == '-':
				return "", "label begins or ends with a hyphen"
			}
			if i == len(s) && allDigits {
				return "", "the last label is all digits (not a name, not an IPv4 address)"
			}
			labelStart = i + 1
			allDigits = true
			continue
		}
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '-', c == '_':
			allDigits = false
		case c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z':
			allDigits = false
			if b == nil {
				b = []byte(s)
			}
			b[i] = c + ('a' - 'A')
		case c >= 0x80:
			return "", "not ASCII (write an internationalised name in its xn-- form)"
		default:
			return "", fmt.Sprintf("character %q not allowed in a name", c)
		}
	}
	if b != nil {
		return string(b), ""
	}
	return s, ""
}

// String writes the entry back as ParseEntry reads it.
func (e Entry) String() string {
	port := strconv.Itoa(e.Port)
	switch e.Kind {
	case KindName:
		return e.Host + ":" + port
	case KindWildcard:
		return "*." + e.Host + ":" + port
	case KindAddr:
		a := e.Prefix.Addr()
		if a.Is6() {
			return "[" + a.String() + "]:" + port
		}
		return a.String() + ":" + port
	case KindCIDR:
		if e.Prefix.Addr().Is6() {
			return "[" + e.Prefix.String() + "]:" + port
		}
		return e.Prefix.String() + ":" + port
	}
	return "invalid:" + port
}

// Covers says whether every destination o allows, e allows too: the same
// port, and a name by an equal name or a wildcard above it, a wildcard by
// an equal or wider wildcard, an address by an equal address or a range
// holding it, a range by a range holding it. It is how a sandbox's list is
// checked against the policy's ceiling.
func (e Entry) Covers(o Entry) bool {
	if e.Port != o.Port {
		return false
	}
	switch e.Kind {
	case KindName:
		return o.Kind == KindName && o.Host == e.Host
	case KindWildcard:
		switch o.Kind {
		case KindName:
			return below(o.Host, e.Host)
		case KindWildcard:
			return o.Host == e.Host || below(o.Host, e.Host)
		}
	case KindAddr, KindCIDR:
		if o.Kind != KindAddr && o.Kind != KindCIDR {
			return false
		}
		return e.Prefix.Bits() <= o.Prefix.Bits() && e.Prefix.Contains(o.Prefix.Addr())
	}
	return false
}

// below: name is strictly below suffix (a.example.com below example.com;
// example.com and badexample.com are not).
func below(name, suffix string) bool {
	return len(name) > len(suffix)+1 && strings.HasSuffix(name, suffix) && name[len(name)-len(suffix)-1] == '.'
}

// List is the set of destinations a sandbox may reach (or, as a policy's
// ceiling, may declare). An empty list allows nothing.
type List []Entry

// ParseList parses every entry, reporting every one that is refused (all
// at once, as the boundary's other refusals are).
func ParseList(entries []string) (List, error) {
	l := make(List, 0, len(entries))
	var errs []error
	for _, s := range entries {
		e, err := ParseEntry(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l = append(l, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// Strings is the list as ParseList reads it.
func (l List) Strings() []string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.String()
	}
	return s
}

// Allows says whether host:port may be reached by name: an exact name entry
// or a wildcard above it, with the same port. A host that is an IP literal
// is matched as an address (AllowsAddr), never against names. It says
// nothing about the addresses the name resolves to: the proxy checks those.
func (l List) Allows(host string, port int) bool {
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")); err == nil {
		return l.AllowsAddr(a, port)
	}
	name, reason := normalName(host)
	if reason != "" {
		return false
	}
	for _, e := range l {
		if e.Port != port {
			continue
		}
		switch e.Kind {
		case KindName:
			if e.Host == name {
				return true
			}
		case KindWildcard:
			if below(name, e.Host) {
				return true
			}
		}
	}
	return false
}

// AllowsAddr says whether an address entry or a range holding ip, with the
// same port, is in the list. An IPv4-mapped IPv6 address is matched as the
// IPv4 address it carries; a zone is ignored.
func (l List) AllowsAddr(ip netip.Addr, port int) bool {
	ip = ip.Unmap().WithZone("")
	for _, e := range l {
		if e.Port == port && (e.Kind == KindAddr || e.Kind == KindCIDR) && e.Prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// Within returns the entries of l that no entry of ceiling covers (see
// Covers); none means l stays inside the ceiling.
func (l List) Within(ceiling List) []Entry {
	var out []Entry
	for _, e := range l {
		covered := false
		for _, c := range ceiling {
			if c.Covers(e) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, e)
		}
	}
	return out
}
