package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestParseEntryValid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Entry
		out  string // String(); in when empty
	}{
		{"example.com:443", Entry{Kind: KindName, Host: "example.com", Port: 443}, ""},
		{"Example.COM:443", Entry{Kind: KindName, Host: "example.com", Port: 443}, "example.com:443"},
		{"example.com.:80", Entry{Kind: KindName, Host: "example.com", Port: 80}, "example.com:80"},
		{"localhost:8080", Entry{Kind: KindName, Host: "localhost", Port: 8080}, ""},
		{"a-b_c.x1.example:1", Entry{Kind: KindName, Host: "a-b_c.x1.example", Port: 1}, ""},
		{"xn--bcher-kva.example:65535", Entry{Kind: KindName, Host: "xn--bcher-kva.example", Port: 65535}, ""},
		{"*.example.com:443", Entry{Kind: KindWildcard, Host: "example.com", Port: 443}, ""},
		{"*.COM:443", Entry{Kind: KindWildcard, Host: "com", Port: 443}, "*.com:443"},
		{"192.0.2.1:443", Entry{Kind: KindAddr, Prefix: netip.MustParsePrefix("192.0.2.1/32"), Port: 443}, ""},
		{"[2001:db8::1]:443", Entry{Kind: KindAddr, Prefix: netip.MustParsePrefix("2001:db8::1/128"), Port: 443}, ""},
		{"[2001:DB8:0::1]:443", Entry{Kind: KindAddr, Prefix: netip.MustParsePrefix("2001:db8::1/128"), Port: 443}, "[2001:db8::1]:443"},
		{"10.0.0.0/8:5432", Entry{Kind: KindCIDR, Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 5432}, ""},
		{"0.0.0.0/0:443", Entry{Kind: KindCIDR, Prefix: netip.MustParsePrefix("0.0.0.0/0"), Port: 443}, ""},
		{"192.0.2.1/32:443", Entry{Kind: KindCIDR, Prefix: netip.MustParsePrefix("192.0.2.1/32"), Port: 443}, ""},
		{"[fd00::/8]:443", Entry{Kind: KindCIDR, Prefix: netip.MustParsePrefix("fd00::/8"), Port: 443}, ""},
		{"example.com:0443", Entry{Kind: KindName, Host: "example.com", Port: 443}, "example.com:443"},
	} {
		got, err := ParseEntry(tc.in)
		if err != nil {
			t.Errorf("ParseEntry(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseEntry(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		out := tc.out
		if out == "" {
			out = tc.in
		}
		if got.String() != out {
			t.Errorf("ParseEntry(%q).String() = %q, want %q", tc.in, got.String(), out)
		}
	}
}

func TestParseEntryInvalid(t *testing.T) {
	for _, tc := range []struct {
		in, reason string
	}{
		{"", "empty"},
		{"example.com", "no port"},
		{"example.com:", "no port"},
		{":443", "no host"},
		{"example.com:0", "out of range"},
		{"example.com:65536", "out of range"},
		{"example.com:123456", "out of range"},
		{"example.com:+443", "not a number"},
		{"example.com:https", "not a number"},
		{"example.com:-1", "not a number"},
		{"2001:db8::1:443", "brackets"},
		{"[2001:db8::1]", "no port"},
		{"[2001:db8::1]443", "not followed by :port"},
		{"[2001:db8::1:443", "no closing ]"},
		{"[192.0.2.1]:443", "IPv4 address is written without brackets"},
		{"[example.com]:443", "not an IPv6 address"},
		{"[fe80::1%eth0]:443", "not an IPv6 address"},
		{"[::ffff:192.0.2.1]:443", "write the IPv4 address 192.0.2.1"},
		{"192.0.2:443", "not an IPv4 address"},
		{"192.0.2.256:443", "not an IPv4 address"},
		{"01.2.3.4:443", "not an IPv4 address"},
		{"10.0.0.1/8:443", "write 10.0.0.0/8"},
		{"10.0.0.0/33:443", "longer than the address"},
		{"10.0.0.0/:443", "not a number"},
		{"10.0.0.0/08:443", "not a number"},
		{"10.0.0.0/-1:443", "not a number"},
		{"[fd00::/129]:443", "longer than the address"},
		{"fd00::/8:443", "brackets"},
		{"example.com/8:443", "not an IPv4 address"},
		{"*:443", "wildcard"},
		{"*.:443", "wildcard suffix: empty name"},
		{"*example.com:443", "wildcard"},
		{"a.*.example.com:443", "wildcard"},
		{"*.*.example.com:443", "wildcard suffix"},
		{"*.1.2.3.4:443", "all digits"},
		{"-a.example.com:443", "hyphen"},
		{"a-.example.com:443", "hyphen"},
		{"a..example.com:443", "empty label"},
		{".example.com:443", "empty label"},
		{"example.com..:443", "empty label"},
		{"exa mple.com:443", "not allowed in a name"},
		{"exa\x00mple.com:443", "not allowed in a name"},
		{"bücher.example:443", "xn--"},
		{"example.123:443", "all digits"},
		{strings.Repeat("a", 64) + ".com:443", "label longer than 63"},
		{strings.Repeat("a.", 127) + "com:443", "longer than 253"},
		{strings.Repeat("a", 400) + ":443", "longer than 300 bytes"},
	} {
		_, err := ParseEntry(tc.in)
		if err == nil {
			t.Errorf("ParseEntry(%q): no error, want %q", tc.in, tc.reason)
			continue
		}
		var ee *EntryError
		if !errors.As(err, &ee) {
			t.Errorf("ParseEntry(%q): %v is not an *EntryError", tc.in, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.reason) {
			t.Errorf("ParseEntry(%q): %q does not say %q", tc.in, msg, tc.reason)
		}
		want := tc.in
		if len(want) > 64 {
			want = want[:64] + "..."
		}
		if !strings.HasPrefix(msg, fmt.Sprintf("egress entry %q: ", want)) {
			t.Errorf("ParseEntry(%q): %q does not name the entry", tc.in, msg)
		}
		for _, goName := range []string{"netip", "strconv", "ParseAddr", "Atoi", "Prefix"} {
			if strings.Contains(msg, goName) {
				t.Errorf("ParseEntry(%q): %q names Go's %s", tc.in, msg, goName)
			}
		}
	}
}

func TestParseList(t *testing.T) {
	l, err := ParseList([]string{"example.com:443", "*.example.org:443", "10.0.0.0/8:5432"})
	if err != nil || len(l) != 3 {
		t.Fatalf("ParseList: %v, %v", l, err)
	}
	if got := strings.Join(l.Strings(), " "); got != "example.com:443 *.example.org:443 10.0.0.0/8:5432" {
		t.Errorf("Strings() = %q", got)
	}
	_, err = ParseList([]string{"bad", "example.com:443", "x:0"})
	if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), `"x:0"`) {
		t.Errorf("ParseList with two bad entries: %v, want both named", err)
	}
}

func mustList(t testing.TB, entries ...string) List {
	t.Helper()
	l, err := ParseList(entries)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestAllows(t *testing.T) {
	l := mustList(t, "example.com:443", "*.example.org:443", "api.test:8080", "192.0.2.1:443",
		"10.0.0.0/8:5432", "[2001:db8::1]:443", "[fd00::/8]:22")
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"example.com", 443, true},
		{"EXAMPLE.com", 443, true},
		{"example.com.", 443, true},
		{"example.com", 80, false},
		{"www.example.com", 443, false},
		{"a.example.org", 443, true},
		{"a.b.example.org", 443, true},
		{"example.org", 443, false}, // the suffix itself is not below itself
		{"badexample.org", 443, false},
		{"a.example.org", 80, false},
		{"api.test", 8080, true},
		{"192.0.2.1", 443, true},
		{"192.0.2.1", 80, false},
		{"192.0.2.2", 443, false},
		{"10.1.2.3", 5432, true},
		{"11.1.2.3", 5432, false},
		{"2001:db8::1", 443, true},
		{"[2001:db8::1]", 443, true},
		{"fd12::1", 22, true},
		{"fe80::1", 22, false},
		{"::ffff:192.0.2.1", 443, true}, // as its IPv4 address
		{"", 443, false},
		{"exa mple.com", 443, false},
	} {
		if got := l.Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	// A name never matches an address entry, an address never a name entry.
	if mustList(t, "192.0.2.1:443").Allows("one.example", 443) {
		t.Error("a name allowed by an address entry")
	}
	if mustList(t, "*.example.com:443").AllowsAddr(netip.MustParseAddr("192.0.2.1"), 443) {
		t.Error("an address allowed by a wildcard")
	}
	if (List{}).Allows("example.com", 443) || List(nil).AllowsAddr(netip.MustParseAddr("192.0.2.1"), 443) {
		t.Error("an empty list allows something")
	}
}

func TestWithin(t *testing.T) {
	ceiling := mustList(t, "example.com:443", "*.example.org:443", "*.b.example.net:443", "10.0.0.0/8:5432",
		"192.0.2.1:443", "[fd00::/8]:443")
	for _, tc := range []struct {
		entry string
		in    bool
	}{
		{"example.com:443", true},
		{"example.com:80", false},
		{"www.example.com:443", false},
		{"*.example.com:443", false}, // an exact name covers no wildcard
		{"a.example.org:443", true},
		{"a.b.example.org:443", true},
		{"example.org:443", false},
		{"*.example.org:443", true},
		{"*.a.example.org:443", true},
		{"*.example.net:443", false}, // wider than the ceiling's wildcard
		{"*.b.example.net:443", true},
		{"*.c.b.example.net:443", true},
		{"10.1.0.0/16:5432", true},
		{"10.0.0.0/8:5432", true},
		{"0.0.0.0/0:5432", false},
		{"11.0.0.0/16:5432", false},
		{"10.1.2.3:5432", true},
		{"10.1.2.3:5433", false},
		{"192.0.2.1:443", true},
		{"192.0.2.1/32:443", true},
		{"192.0.2.0/24:443", false}, // an address covers no wider range
		{"192.0.2.2:443", false},
		{"[fd12::1]:443", true},
		{"[fd12::/16]:443", true},
		{"[fc00::/7]:443", false},
		{"[2001:db8::1]:443", false},
	} {
		l := mustList(t, tc.entry)
		out := l.Within(ceiling)
		if got := len(out) == 0; got != tc.in {
			t.Errorf("%s within the ceiling: %v, want %v", tc.entry, got, tc.in)
		}
		if !tc.in && (len(out) != 1 || out[0] != l[0]) {
			t.Errorf("%s: Within returned %v", tc.entry, out)
		}
	}
	l := mustList(t, "example.com:443", "evil.example:443", "10.0.0.1:5432", "10.0.0.1:22")
	out := l.Within(ceiling)
	if len(out) != 2 || out[0].String() != "evil.example:443" || out[1].String() != "10.0.0.1:22" {
		t.Errorf("Within: %v, want evil.example:443 and 10.0.0.1:22", out)
	}
	if out := l.Within(nil); len(out) != len(l) {
		t.Errorf("Within an empty ceiling: %v, want every entry", out)
	}
}

func TestNonGlobal(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"10.0.0.1", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"100.128.0.1", false},
		{"127.0.0.1", true},
		{"169.254.169.254", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"172.32.0.1", false},
		{"192.0.0.9", true},
		{"192.0.2.1", true},
		{"192.168.1.1", true},
		{"198.18.0.1", true},
		{"198.51.100.1", true},
		{"203.0.113.1", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},
		{"1.1.1.1", false},
		{"8.8.8.8", false},
		{"93.184.216.34", false},
		{"::", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::a00:1", true},    // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"64:ff9b:1::1", true},
		{"100::1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"fe80::1", true},
		{"fec0::1", true},
		{"ff02::1", true},
		{"2001::1", true}, // Teredo
		{"2001:db8::1", true},
		{"2002:a00:1::1", true}, // 6to4
		{"3fff::1", true},
		{"2606:4700:4700::1111", false},
		{"2a00:1450:4001::1", false},
		{"fe80::1%eth0", true},
	} {
		if got := nonGlobal(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("nonGlobal(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	if !nonGlobal(netip.Addr{}) {
		t.Error("the zero address is global")
	}
}

// Only the list's refusals may kill a sandbox: not a network's failure, a
// malformed request or a bound.
func TestPolicyReason(t *testing.T) {
	for reason, want := range map[string]bool{
		ReasonNotListed: true, ReasonPrivateAddress: true, ReasonRawIP: true, ReasonSNIMismatch: true, ReasonNoSNI: true, ReasonHostMismatch: true,
		ReasonResolveFailed: false, ReasonDialFailed: false, ReasonTimeout: false, ReasonTooMany: false, ReasonBudget: false,
		ReasonBadRequest: false, ReasonUnsupported: false, ReasonBadHello: false, "": false,
	} {
		if PolicyReason(reason) != want {
			t.Errorf("PolicyReason(%q) = %v", reason, !want)
		}
	}
}
