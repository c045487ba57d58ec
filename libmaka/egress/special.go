package egress

import "net/netip"

// nonGlobal4 are the IPv4 ranges that are not public destinations: this
// host, this network, private networks (RFC 1918), shared address space
// (CGNAT, RFC 6598), link-local, IETF protocol assignments, documentation,
// the old 6to4 relay anycast, benchmarking, multicast, reserved and
// broadcast (IANA's special-purpose registry).
var nonGlobal4 = prefixes(
	"0.0.0.0/8",
	"10.0.0.0/8",
	"100.64.0.0/10",
	"127.0.0.0/8",
	"169.254.0.0/16",
	"172.16.0.0/12",
	"192.0.0.0/24",
	"192.0.2.0/24",
	"192.88.99.0/24",
	"192.168.0.0/16",
	"198.18.0.0/15",
	"198.51.100.0/24",
	"203.0.113.0/24",
	"224.0.0.0/4",
	"240.0.0.0/4", // and 255.255.255.255
)

// global6 is the only IPv6 range allocated for global unicast; everything
// outside it (unspecified, loopback, IPv4-mapped, discard, unique local
// fc00::/7, link-local, site-local, multicast, ...) is not a public
// destination.
var global6 = netip.MustParsePrefix("2000::/3")

// nonGlobal6 are the ranges inside 2000::/3 that are not public
// destinations, or that carry an IPv4 address maka would not see (Teredo
// and the rest of the IETF protocol assignments 2001::/23, 6to4 2002::/16),
// and documentation.
var nonGlobal6 = prefixes(
	"2001::/23",
	"2001:db8::/32",
	"2002::/16",
	"3fff::/20",
)

// nat64 is the well-known NAT64 prefix (RFC 6052): DNS64 answers it for
// every IPv4-only name on an IPv6-only network, so it is judged by the IPv4
// address it embeds (64:ff9b::10.0.0.1 is 10.0.0.1).
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

func prefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

// nonGlobal says whether ip is not a public destination: loopback, private,
// link-local, multicast, unspecified, CGNAT, documentation, reserved, or an
// IPv6 address outside global unicast. A name resolving there is refused
// unless an address entry names it. An IPv4-mapped address is judged as its
// IPv4 address.
func nonGlobal(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return true
	}
	if ip.Is4() {
		for _, p := range nonGlobal4 {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		return nonGlobal(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if !global6.Contains(ip) {
		return true
	}
	for _, p := range nonGlobal6 {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
