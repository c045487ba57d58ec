package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzParseEntry: any string parses or is refused with an *EntryError
// naming it, without a panic; a parsed entry writes back as text that
// parses to the same entry, is valid, covers itself, and is allowed by a
// list of itself.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{"example.com:443", "*.example.com:443", "192.0.2.1:80", "[2001:db8::1]:443",
		"10.0.0.0/8:5432", "[fd00::/8]:443", "Example.COM.:1", "bad", "[::ffff:1.2.3.4]:1", "10.0.0.1/8:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEntry(s)
		if err != nil {
			var ee *EntryError
			if !errors.As(err, &ee) || !strings.HasPrefix(err.Error(), "egress entry ") {
				t.Fatalf("ParseEntry(%q): %v", s, err)
			}
			return
		}
		again, err := ParseEntry(e.String())
		if err != nil || again != e {
			t.Fatalf("ParseEntry(%q) = %+v, written %q, read back %+v, %v", s, e, e.String(), again, err)
		}
		if e.Port < 1 || e.Port > 65535 || e.Kind < KindName || e.Kind > KindCIDR {
			t.Fatalf("ParseEntry(%q) = %+v", s, e)
		}
		if !e.Covers(e) || len(List{e}.Within(List{e})) != 0 {
			t.Fatalf("%+v does not cover itself", e)
		}
		l := List{e}
		switch e.Kind {
		case KindName:
			if !l.Allows(e.Host, e.Port) || l.Allows(e.Host, e.Port%65535+1) {
				t.Fatalf("%v: Allows(%q, %d)", e, e.Host, e.Port)
			}
		case KindWildcard:
			if !l.Allows("x."+e.Host, e.Port) || l.Allows(e.Host, e.Port) {
				t.Fatalf("%v: Allows below and at the suffix", e)
			}
		case KindAddr, KindCIDR:
			if !l.AllowsAddr(e.Prefix.Addr(), e.Port) || e.Prefix.Masked() != e.Prefix {
				t.Fatalf("%v: AllowsAddr(%s)", e, e.Prefix.Addr())
			}
		}
	})
}

// FuzzClientHello: any bytes as a client's first bytes on port 443 are
// read without a panic, never past the bound; a hello read is a prefix of
// the input, and reads the same again.
func FuzzClientHello(f *testing.F) {
	f.Add(buildHello(sniExt("example.com")))
	f.Add(buildHello())
	f.Add(fragment(buildHello(sniExt("example.com")), 7))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	const limit = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, sni, err := readClientHello(bytes.NewReader(data), limit)
		if len(raw) > limit {
			t.Fatalf("read %d bytes, over the bound %d", len(raw), limit)
		}
		if !bytes.HasPrefix(data, raw) {
			t.Fatal("the bytes returned are not what was read")
		}
		serverName(data) // the parser alone, on anything
		if err != nil {
			if !errors.Is(err, errNotHello) {
				t.Fatalf("error %v", err)
			}
			return
		}
		raw2, sni2, err := readClientHello(bytes.NewReader(raw), limit)
		if err != nil || sni2 != sni || !bytes.Equal(raw2, raw) {
			t.Fatalf("read again: %q %v (first %q)", sni2, err, sni)
		}
	})
}

// fuzzConn is a connection whose reads are data, then EOF, and whose
// writes are kept (up to a bound); deadlines are ignored (reads never
// wait).
type fuzzConn struct {
	mu      sync.Mutex
	r       *bytes.Reader
	written bytes.Buffer
	closed  bool
}

func (c *fuzzConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return c.r.Read(b)
}

func (c *fuzzConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	if c.written.Len() < 1<<20 {
		c.written.Write(b)
	}
	return len(b), nil
}

func (c *fuzzConn) Written() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.written.Bytes())
}

func (c *fuzzConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *fuzzConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1080} }
func (c *fuzzConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// The list and names of FuzzRequest: which addresses a dial may reach, by
// port, and which names are behind each.
var (
	fuzzList = []string{"ok.test:80", "ok.test:443", "*.wild.test:443", "10.1.2.3:8080", "[2001:4860::1]:443"}
	// fuzzAllowed: every address:port a request allowed by fuzzList can
	// dial, with the names whose TLS or Host may go there ("" for the
	// address entries, which ask no name).
	fuzzAllowed = map[string]func(name string) bool{
		"8.8.8.8:80":         func(n string) bool { return n == "ok.test" },
		"8.8.8.8:443":        func(n string) bool { return n == "ok.test" },
		"8.8.4.4:443":        func(n string) bool { return below(n, "wild.test") },
		"10.1.2.3:8080":      nil,
		"[2001:4860::1]:443": nil,
	}
)

type fuzzResolver struct{}

func (fuzzResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch {
	case host == "ok.test":
		return []netip.Addr{netip.MustParseAddr("8.8.8.8")}, nil
	case below(host, "wild.test"):
		return []netip.Addr{netip.MustParseAddr("10.9.9.9"), netip.MustParseAddr("8.8.4.4")}, nil
	case host == "priv.test":
		return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
	case host == "none.test":
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr("1.1.1.1")}, nil
}

// fuzzDialer fails the test when asked for an address the list does not
// allow; it hands out connections that keep what is sent upstream.
type fuzzDialer struct {
	t     *testing.T
	mu    sync.Mutex
	dials map[string]*fuzzConn
}

func (d *fuzzDialer) DialContext(_ context.Context, network, addr string) (net.Conn, error) {
	if _, ok := fuzzAllowed[addr]; !ok || network != "tcp" {
		d.t.Errorf("dialled %s %s, which the list does not allow", network, addr)
		return nil, errors.New("not allowed")
	}
	c := &fuzzConn{r: bytes.NewReader([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))}
	d.mu.Lock()
	d.dials[addr] = c
	d.mu.Unlock()
	return c, nil
}

// FuzzRequest: any bytes as a client's first (and only) bytes are served
// without a panic; the Dialer is called only for what the list allows; TLS
// sent on to a name on port 443 names that name, and an HTTP request sent
// on names in its Host header the name behind the address.
func FuzzRequest(f *testing.F) {
	f.Add([]byte("CONNECT ok.test:80 HTTP/1.1\r\nHost: ok.test:80\r\n\r\nhello"))
	f.Add(append([]byte("CONNECT a.wild.test:443 HTTP/1.1\r\n\r\n"), buildHello(sniExt("a.wild.test"))...))
	f.Add(append([]byte("CONNECT a.wild.test:443 HTTP/1.1\r\n\r\n"), buildHello(sniExt("b.wild.test"))...))
	f.Add([]byte("GET http://ok.test/x HTTP/1.1\r\nHost: ok.test\r\n\r\n"))
	f.Add([]byte("POST http://ok.test/x HTTP/1.1\r\nHost: ok.test\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n"))
	f.Add([]byte("GET http://priv.test:8080/ HTTP/1.1\r\nHost: priv.test:8080\r\n\r\n"))
	f.Add(append([]byte{5, 1, 0, 5, 1, 0, 3, 7}, "ok.test\x00\x50hello"...))
	f.Add(append([]byte{5, 1, 0, 5, 1, 0, 1, 10, 1, 2, 3, 0x1f, 0x90}, "x"...))
	f.Add([]byte{4, 1, 0, 80, 1, 2, 3, 4, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzServe(t, data)
	})
}

// fuzzServe serves data as a client's bytes and checks what reached the
// Dialer; it returns the addresses dialled.
func fuzzServe(t *testing.T, data []byte) []string {
	d := &fuzzDialer{t: t, dials: map[string]*fuzzConn{}}
	list, err := ParseList(fuzzList)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{List: list, Resolver: fuzzResolver{}, Dialer: d, Recorder: &Counters{}})
	if err != nil {
		t.Fatal(err)
	}
	client := &fuzzConn{r: bytes.NewReader(data)}
	s := &session{p: p, client: client, proto: ProtoUnknown}
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.serve()
	}()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("still serving 5s after the client's bytes ended:\n%s", buf[:runtime.Stack(buf, true)])
	}
	var dialled []string
	for addr, up := range d.dials {
		dialled = append(dialled, addr)
		name := s.t.name
		if ok := fuzzAllowed[addr]; ok != nil && !ok(name) {
			t.Fatalf("%s reached for the name %q", addr, name)
		}
		sent := up.Written()
		if len(sent) == 0 || name == "" {
			continue
		}
		switch {
		case strings.HasSuffix(addr, ":443"):
			_, sni, err := readClientHello(bytes.NewReader(sent), DefaultMaxHelloBytes)
			if err != nil || !sameName(sni, name) {
				t.Fatalf("sent to %s for %s: a hello naming %q (%v)", addr, name, sni, err)
			}
		case s.proto == ProtoHTTP:
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(sent)))
			if err != nil {
				t.Fatalf("sent to %s: not a request: %v", addr, err)
			}
			host, _, _ := hostPort(req.Host)
			if !strings.EqualFold(strings.TrimSuffix(host, "."), name) {
				t.Fatalf("sent to %s for %s: Host %q", addr, name, req.Host)
			}
			io.Copy(io.Discard, req.Body)
		}
	}
	return dialled
}

// The fuzz harness is not vacuous: allowed requests reach the Dialer and
// their bytes are checked.
func TestFuzzRequestHarness(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte("CONNECT ok.test:80 HTTP/1.1\r\n\r\nhello"), "8.8.8.8:80"},
		{append([]byte("CONNECT a.wild.test:443 HTTP/1.1\r\n\r\n"), buildHello(sniExt("a.wild.test"))...), "8.8.4.4:443"},
		{append([]byte("CONNECT a.wild.test:443 HTTP/1.1\r\n\r\n"), buildHello(sniExt("b.wild.test"))...), ""},
		{[]byte("GET http://ok.test/x HTTP/1.1\r\nHost: ok.test\r\n\r\n"), "8.8.8.8:80"},
		{[]byte("GET http://ok.test/x HTTP/1.1\r\nHost: wild.test\r\n\r\n"), ""},
		{append([]byte{5, 1, 0, 5, 1, 0, 3, 7}, "ok.test\x00\x50hello"...), "8.8.8.8:80"},
		{[]byte{5, 1, 0, 5, 1, 0, 1, 10, 1, 2, 3, 0x1f, 0x90}, "10.1.2.3:8080"},
		{[]byte("GET http://priv.test:8080/ HTTP/1.1\r\nHost: priv.test:8080\r\n\r\n"), ""},
	} {
		got := strings.Join(fuzzServe(t, tc.in), " ")
		if got != tc.want {
			t.Errorf("%q: dialled %q, want %q", tc.in, got, tc.want)
		}
	}
}
