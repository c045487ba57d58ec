package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// captureHello is the ClientHello crypto/tls sends with cfg, as the
// records it wrote.
func captureHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	go tls.Client(c1, cfg).Handshake()
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	var hdr [5]byte
	if _, err := io.ReadFull(c2, hdr[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(c2, body); err != nil {
		t.Fatal(err)
	}
	return append(hdr[:], body...)
}

// fragment re-splits the handshake bytes of a one-record hello into
// records of at most n bytes.
func fragment(hello []byte, n int) []byte {
	msg := hello[5:]
	var out []byte
	for len(msg) > 0 {
		k := min(n, len(msg))
		out = append(out, 22, 3, 1, byte(k>>8), byte(k))
		out = append(out, msg[:k]...)
		msg = msg[k:]
	}
	return out
}

// buildHello makes a one-record ClientHello with the given extensions
// (type, data) and nothing else of note.
func buildHello(exts ...[]byte) []byte {
	body := []byte{3, 3}
	body = append(body, make([]byte, 32)...) // random
	body = append(body, 0)                   // session id
	body = append(body, 0, 2, 0x13, 0x01)    // cipher suites
	body = append(body, 1, 0)                // compression methods
	var eb []byte
	for _, e := range exts {
		eb = append(eb, e...)
	}
	if exts != nil {
		body = append(body, byte(len(eb)>>8), byte(len(eb)))
		body = append(body, eb...)
	}
	msg := append([]byte{1, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{22, 3, 1, byte(len(msg) >> 8), byte(len(msg))}, msg...)
}

func ext(typ int, data []byte) []byte {
	return append([]byte{byte(typ >> 8), byte(typ), byte(len(data) >> 8), byte(len(data))}, data...)
}

// sniExt is a server_name extension with the given (type, name) entries.
func sniExt(names ...string) []byte {
	var list []byte
	for _, n := range names {
		list = append(list, 0, byte(len(n)>>8), byte(len(n)))
		list = append(list, n...)
	}
	return ext(0, append([]byte{byte(len(list) >> 8), byte(len(list))}, list...))
}

func TestReadClientHello(t *testing.T) {
	real := captureHello(t, &tls.Config{ServerName: "Example.com"})
	noSNI := captureHello(t, &tls.Config{InsecureSkipVerify: true})
	ipOnly := captureHello(t, &tls.Config{ServerName: "192.0.2.1", InsecureSkipVerify: true})
	tls12 := captureHello(t, &tls.Config{ServerName: "example.com", MaxVersion: tls.VersionTLS12})
	for _, tc := range []struct {
		name  string
		in    []byte
		limit int
		sni   string
		err   string
	}{
		{"crypto/tls", real, 16 << 10, "Example.com", ""},
		{"crypto/tls, TLS 1.2 only", tls12, 16 << 10, "example.com", ""},
		{"crypto/tls without a server name", noSNI, 16 << 10, "", ""},
		{"crypto/tls to an address", ipOnly, 16 << 10, "", ""},
		{"fragmented in 100-byte records", fragment(real, 100), 16 << 10, "Example.com", ""},
		{"fragmented in 1-byte records", fragment(real, 1), 1 << 20, "Example.com", ""},
		{"fragmented beyond the limit", fragment(real, 1), len(real) * 2, "", "more than"},
		{"larger than the limit", real, 100, "", "more than 100 bytes"},
		{"built", buildHello(ext(10, []byte{0, 2, 0, 29}), sniExt("a.example"), ext(43, []byte{2, 3, 4})), 16 << 10, "a.example", ""},
		{"no extensions", buildHello(), 16 << 10, "", ""},
		{"two host names", buildHello(sniExt("a.example", "b.example")), 16 << 10, "", "two host names"},
		{"server_name twice", buildHello(sniExt("a.example"), sniExt("a.example")), 16 << 10, "", "extension 0 twice"},
		{"empty host name", buildHello(sniExt("")), 16 << 10, "", "empty host name"},
		{"empty server_name", buildHello(ext(0, nil)), 16 << 10, "", "server_name"},
		{"truncated extension", buildHello(ext(0, []byte{0, 9, 0, 0, 6, 'a'})), 16 << 10, "", "server_name"},
		{"HTTP", []byte("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), 16 << 10, "", "record type 71"},
		{"SSLv2 hello", []byte{0x80, 0x2e, 1, 3, 1}, 16 << 10, "", "record type 128"},
		{"application data", []byte{23, 3, 3, 0, 1, 0}, 16 << 10, "", "record type 23"},
		{"empty record", []byte{22, 3, 1, 0, 0}, 16 << 10, "", "record length 0"},
		{"oversized record", []byte{22, 3, 1, 0x40, 1}, 1 << 20, "", "record length 16385"},
		{"version 2", []byte{22, 2, 0, 0, 1, 1}, 16 << 10, "", "record version"},
		{"not a ClientHello", []byte{22, 3, 1, 0, 4, 2, 0, 0, 0}, 16 << 10, "", "handshake type 2"},
		{"cut short", real[:len(real)-1], 16 << 10, "", "stopped after part"},
		{"nothing", nil, 16 << 10, "", "stopped after part"},
		{"bytes after the hello", append(real[:5:5], append(append([]byte{}, real[5:]...), 1, 0, 0, 0)...), 16 << 10, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.name == "bytes after the hello" {
				n := len(in) - 5
				in[3], in[4] = byte(n>>8), byte(n)
				tc.err = "bytes after the ClientHello"
			}
			stream := in
			if tc.err == "" {
				// What follows the hello is left unread.
				stream = append(append([]byte{}, in...), "trailing"...)
			}
			raw, sni, err := readClientHello(bytes.NewReader(stream), tc.limit)
			if tc.err != "" {
				if !errors.Is(err, errNotHello) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sni != tc.sni {
				t.Errorf("sni %q, want %q", sni, tc.sni)
			}
			if !bytes.Equal(raw, in) {
				t.Errorf("the bytes read are not the hello's records (%d, want %d)", len(raw), len(in))
			}
		})
	}
}

// A read error other than the end of the stream (the deadline) is kept.
func TestReadClientHelloDeadline(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	c2.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, _, err := readClientHello(c2, 1024)
	if !isTimeout(err) {
		t.Fatalf("err %v, want the deadline", err)
	}
}

func TestSameName(t *testing.T) {
	for _, tc := range []struct {
		sni, name string
		want      bool
	}{
		{"example.com", "example.com", true},
		{"EXAMPLE.com", "example.com", true},
		{"example.com.", "example.com", true},
		{"www.example.com", "example.com", false},
		{"example.com", "www.example.com", false},
		{"", "example.com", false},
	} {
		if got := sameName(tc.sni, tc.name); got != tc.want {
			t.Errorf("sameName(%q, %q) = %v", tc.sni, tc.name, got)
		}
	}
}
