package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeResolver answers from a table; other names do not exist.
type fakeResolver map[string][]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ss, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var as []netip.Addr
	for _, s := range ss {
		as = append(as, netip.MustParseAddr(s))
	}
	return as, nil
}

// testDialer counts its calls; it connects on loopback, to the address
// asked for or to where redirect sends it (port 443 to a test server).
type testDialer struct {
	mu       sync.Mutex
	calls    []string
	redirect map[string]string
	fail     error
}

func (d *testDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.calls = append(d.calls, addr)
	to, ok := d.redirect[addr]
	fail := d.fail
	d.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	if !ok {
		to = addr
	}
	return (&net.Dialer{}).DialContext(ctx, network, to)
}

func (d *testDialer) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

// testRecorder keeps every refusal, and counts.
type testRecorder struct {
	Counters
	mu       sync.Mutex
	refusals []Refusal
}

func (r *testRecorder) Refused(x Refusal) {
	r.Counters.Refused(x)
	r.mu.Lock()
	r.refusals = append(r.refusals, x)
	r.mu.Unlock()
}

func (r *testRecorder) Refusals() []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Refusal(nil), r.refusals...)
}

type env struct {
	t      *testing.T
	p      *Proxy
	addr   string
	rec    *testRecorder
	dialer *testDialer
	served chan error
}

// newEnv starts a proxy on a loopback listener with cfg, the fake
// resolver, a counting dialer and a recorder; it is closed at the test's
// end.
func newEnv(t *testing.T, cfg Config, names fakeResolver, redirect map[string]string) *env {
	t.Helper()
	e := &env{t: t, rec: &testRecorder{}, dialer: &testDialer{redirect: redirect}, served: make(chan error, 1)}
	cfg.Resolver = names
	cfg.Dialer = e.dialer
	cfg.Recorder = e.rec
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.p, e.addr = p, ln.Addr().String()
	go func() { e.served <- p.Serve(ln) }()
	t.Cleanup(func() {
		p.Close()
		select {
		case err := <-e.served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return e
}

func (e *env) dial() net.Conn {
	e.t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// refusal waits for the one refusal recorded and checks its reason.
func (e *env) refusal(reason string) Refusal {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rs := e.rec.Refusals()
		if len(rs) > 0 || time.Now().After(deadline) {
			if len(rs) != 1 {
				e.t.Fatalf("refusals %v, want one %s", rs, reason)
			}
			if rs[0].Reason != reason {
				e.t.Fatalf("refusal %v, want %s", rs[0], reason)
			}
			if rs[0].Time.IsZero() || rs[0].Proto == "" {
				e.t.Errorf("refusal %+v without time or protocol", rs[0])
			}
			return rs[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) noDial() {
	e.t.Helper()
	if calls := e.dialer.Calls(); len(calls) != 0 {
		e.t.Errorf("the Dialer was called for a refused request: %v", calls)
	}
}

func (e *env) noRefusal() {
	e.t.Helper()
	if rs := e.rec.Refusals(); len(rs) != 0 {
		e.t.Errorf("refusals %v, want none", rs)
	}
}

// echoServer echoes every connection on loopback; it returns the port.
func echoServer(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// webServer answers every request with what it received.
func webServer(t *testing.T) int {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var hs []string
		for k := range r.Header {
			hs = append(hs, k)
		}
		fmt.Fprintf(w, "method=%s host=%s uri=%s body=%s ua=%q close=%v headers=%s",
			r.Method, r.Host, r.RequestURI, body, r.Header.Get("User-Agent"), r.Close, strings.Join(sortStrings(hs), ","))
	}))
	t.Cleanup(s.Close)
	return s.Listener.Addr().(*net.TCPAddr).Port
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// tlsServer is an HTTPS server whose certificate names example.com and
// *.example.com; it returns the server and a pool trusting it.
func tlsServer(t *testing.T) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls host=%s sni=%s", r.Host, r.TLS.ServerName)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes' EOFs
	s.StartTLS()
	t.Cleanup(s.Close)
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	return s, pool
}

// connect sends CONNECT target and returns the response's status line and
// a reader positioned after its head.
func connect(t *testing.T, c net.Conn, target string) (int, *bufio.Reader, string) {
	t.Helper()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, br, string(body)
	}
	return 200, br, ""
}

func expectEcho(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := br.ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
}

// expectClosed: the proxy closed the connection (EOF or a reset), with no
// more bytes than want.
func expectClosed(t *testing.T, r io.Reader, within time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		b, err := io.ReadAll(r)
		if len(b) > 0 {
			err = fmt.Errorf("unexpected bytes %q", b)
		}
		done <- err
	}()
	select {
	case err := <-done:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection was not closed: %v", err)
		}
		if err != nil && !strings.Contains(err.Error(), "reset") {
			t.Fatal(err)
		}
	case <-time.After(within):
		t.Fatalf("the connection is still open after %s", within)
	}
}

func TestConnectAllowed(t *testing.T) {
	port := echoServer(t)
	e := newEnv(t, Config{List: mustList(t, "echo.test:"+strconv.Itoa(port), "127.0.0.1:"+strconv.Itoa(port))},
		fakeResolver{"echo.test": {"127.0.0.1"}}, nil)
	c := e.dial()
	status, br, body := connect(t, c, "Echo.Test:"+strconv.Itoa(port))
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	expectEcho(t, c, br)
	c.(*net.TCPConn).CloseWrite()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the half-close: %q, %v", rest, err)
	}
	if calls := e.dialer.Calls(); len(calls) != 1 || calls[0] != "127.0.0.1:"+strconv.Itoa(port) {
		t.Errorf("dialled %v, want the resolved address", calls)
	}
	e.noRefusal()
	dest := "echo.test:" + strconv.Itoa(port)
	waitFor(t, func() bool {
		s := e.rec.Snapshot()
		return len(s.Dests) == 1 && s.Dests[0].Closed == 1
	})
	s := e.rec.Snapshot()
	if d := s.Dests[0]; d.Dest != dest || d.Opened != 1 || d.BytesUp != 5 || d.BytesDown != 5 {
		t.Errorf("counters %+v, want %s opened once, 5 bytes each way", d, dest)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestConnectRefused(t *testing.T) {
	port := strconv.Itoa(echoServer(t))
	list := []string{"echo.test:" + port, "127.0.0.1:" + port, "private.test:" + port, "local.test:" + port,
		"mixed.test:" + port, "gone.test:" + port}
	names := fakeResolver{
		"echo.test":    {"127.0.0.1"},
		"other.test":   {"127.0.0.1"},
		"private.test": {"10.1.2.3"},
		"local.test":   {"::1", "169.254.169.254", "100.64.0.1"},
		"mixed.test":   {"192.168.1.1", "10.0.0.1"},
	}
	for _, tc := range []struct {
		name, target, reason string
		status               int
		addr                 string
	}{
		{"not listed", "other.test:" + port, ReasonNotListed, 403, ""},
		{"wrong port", "echo.test:1", ReasonNotListed, 403, ""},
		{"raw IP", "192.0.2.1:" + port, ReasonRawIP, 403, "192.0.2.1"},
		{"raw IP, wrong port", "127.0.0.1:1", ReasonRawIP, 403, "127.0.0.1"},
		{"raw IPv6", "[::1]:" + port, ReasonRawIP, 403, "::1"},
		{"name resolving to 10.x", "private.test:" + port, ReasonPrivateAddress, 403, "10.1.2.3"},
		{"name resolving to loopback and link-local", "local.test:" + port, ReasonPrivateAddress, 403, "::1"},
		{"name resolving to private addresses only", "mixed.test:" + port, ReasonPrivateAddress, 403, "192.168.1.1"},
		{"name that does not resolve", "gone.test:" + port, ReasonResolveFailed, 502, ""},
		{"not a name", "exa_mple!.test:" + port, ReasonBadRequest, 400, ""},
		{"no port", "echo.test", ReasonBadRequest, 400, ""},
		{"port 0", "echo.test:0", ReasonBadRequest, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{List: mustList(t, list...)}, names, nil)
			c := e.dial()
			status, br, body := connect(t, c, tc.target)
			if status != tc.status || !strings.Contains(body, tc.reason) {
				t.Fatalf("status %d %q, want %d saying %s", status, body, tc.status, tc.reason)
			}
			if strings.Contains(body, "lookup") || strings.Contains(body, ":53") {
				t.Errorf("the body %q tells the sandbox of the host's resolver", body)
			}
			expectClosed(t, br, 2*time.Second)
			r := e.refusal(tc.reason)
			if r.Proto != ProtoConnect {
				t.Errorf("refusal %+v: proto %s", r, r.Proto)
			}
			if tc.addr != "" && r.Addr != netip.MustParseAddr(tc.addr) {
				t.Errorf("refusal %+v: addr, want %s", r, tc.addr)
			}
			e.noDial()
		})
	}
}

// A name resolving to a private address and a public (here: listed) one
// is connected to the one that passed; the private one is never dialled.
func TestConnectSkipsPrivateAddresses(t *testing.T) {
	port := strconv.Itoa(echoServer(t))
	e := newEnv(t, Config{List: mustList(t, "mixed.test:"+port, "127.0.0.1:"+port)},
		fakeResolver{"mixed.test": {"10.0.0.1", "192.168.0.1", "127.0.0.1"}}, nil)
	c := e.dial()
	status, br, body := connect(t, c, "mixed.test:"+port)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	expectEcho(t, c, br)
	if calls := e.dialer.Calls(); len(calls) != 1 || calls[0] != "127.0.0.1:"+port {
		t.Errorf("dialled %v", calls)
	}
	e.noRefusal()
}

// The passing addresses are tried in order until one answers.
func TestConnectTriesAddressesInOrder(t *testing.T) {
	port := strconv.Itoa(echoServer(t))
	e := newEnv(t, Config{List: mustList(t, "two.test:"+port, "127.0.0.2:"+port, "127.0.0.1:"+port)},
		fakeResolver{"two.test": {"127.0.0.2", "127.0.0.1"}}, map[string]string{"127.0.0.2:" + port: "127.0.0.1:1"})
	c := e.dial()
	status, br, body := connect(t, c, "two.test:"+port)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	expectEcho(t, c, br)
	if calls := e.dialer.Calls(); len(calls) != 2 || calls[0] != "127.0.0.2:"+port || calls[1] != "127.0.0.1:"+port {
		t.Errorf("dialled %v", calls)
	}
}

func TestConnectDialFailed(t *testing.T) {
	e := newEnv(t, Config{List: mustList(t, "down.test:80", "127.0.0.1:80")}, fakeResolver{"down.test": {"127.0.0.1"}}, nil)
	e.dialer.fail = errors.New("connection refused")
	c := e.dial()
	status, _, body := connect(t, c, "down.test:80")
	if status != 502 || !strings.Contains(body, ReasonDialFailed) {
		t.Fatalf("status %d %q", status, body)
	}
	e.refusal(ReasonDialFailed)
	if s := e.rec.Snapshot(); len(s.Dests) != 0 {
		t.Errorf("a failed dial counted as opened: %+v", s.Dests)
	}
}

// TLS through CONNECT to port 443: the ClientHello must name the host.
func TestConnectTLS(t *testing.T) {
	srv, pool := tlsServer(t)
	redirect := map[string]string{"127.0.0.1:443": srv.Listener.Addr().String()}
	list := mustList(t, "example.com:443", "www.example.com:443", "127.0.0.1:443")
	names := fakeResolver{"example.com": {"127.0.0.1"}, "www.example.com": {"127.0.0.1"}}

	t.Run("allowed, through net/http's proxy support", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		client := &http.Client{Transport: &http.Transport{
			Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: e.addr}),
			TLSClientConfig: &tls.Config{RootCAs: pool},
		}}
		defer client.CloseIdleConnections()
		resp, err := client.Get("https://www.example.com/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "tls host=www.example.com sni=www.example.com" {
			t.Errorf("body %q", body)
		}
		e.noRefusal()
	})

	for _, tc := range []struct {
		name, target, sni, reason string
	}{
		{"SNI mismatch", "example.com:443", "www.example.com", ReasonSNIMismatch},
		{"no SNI", "example.com:443", "", ReasonNoSNI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{List: list}, names, redirect)
			c := e.dial()
			status, br, body := connect(t, c, tc.target)
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			tc1 := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: tc.sni, RootCAs: pool, InsecureSkipVerify: tc.sni == ""})
			err := tc1.Handshake()
			if err == nil || !strings.Contains(err.Error(), "access denied") {
				t.Fatalf("handshake: %v, want the proxy's access_denied alert", err)
			}
			r := e.refusal(tc.reason)
			if r.Host != "example.com" || r.Port != 443 {
				t.Errorf("refusal %+v", r)
			}
			e.noDial()
		})
	}

	t.Run("not TLS on 443", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		c := e.dial()
		status, br, _ := connect(t, c, "example.com:443")
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
		rest, _ := io.ReadAll(br)
		if string(rest) != string(tlsAlert) {
			t.Errorf("after plain HTTP on 443: %q", rest)
		}
		e.refusal(ReasonBadHello)
		e.noDial()
	})

	// An address on 443, allowed by an address entry, has no name to
	// match: it is tunnelled as it is.
	t.Run("raw IP on 443", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		c := e.dial()
		status, br, _ := connect(t, c, "127.0.0.1:443")
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		tc1 := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: "example.com", RootCAs: pool})
		if err := tc1.Handshake(); err != nil {
			t.Fatal(err)
		}
		e.noRefusal()
	})
}

// bufConn reads through a bufio.Reader that may hold bytes already read.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func TestHTTPForward(t *testing.T) {
	port := webServer(t)
	p := strconv.Itoa(port)
	list := mustList(t, "web.test:"+p, "127.0.0.1:"+p)
	names := fakeResolver{"web.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}}

	t.Run("through net/http's proxy support", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, nil)
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: e.addr})}}
		defer client.CloseIdleConnections()
		resp, err := client.Post("http://web.test:"+p+"/a?b=c", "text/plain", strings.NewReader("payload"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := "method=POST host=web.test:" + p + " uri=/a?b=c body=payload"
		if !strings.HasPrefix(string(body), want) || !strings.Contains(string(body), "close=true") {
			t.Errorf("body %q, want %q... close=true", body, want)
		}
		e.noRefusal()
	})

	t.Run("hop-by-hop headers removed, the rest kept", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, nil)
		c := e.dial()
		fmt.Fprintf(c, "GET http://web.test:%s/x HTTP/1.1\r\nHost: web.test:%s\r\nConnection: keep-alive, X-Hop\r\n"+
			"X-Hop: 1\r\nProxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\nKeep-Alive: 300\r\n"+
			"X-Keep: yes\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n", p, p)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		got := string(body)
		if !strings.Contains(got, "headers=Connection,X-Keep") {
			t.Errorf("headers forwarded: %q, want X-Keep and the proxy's Connection: close only", got)
		}
		if !strings.Contains(got, `ua=""`) || !strings.Contains(got, "body=body") || !strings.Contains(got, "uri=/x ") {
			t.Errorf("forwarded %q: want no User-Agent added, the body, the origin-form URI", got)
		}
		e.noRefusal()
	})

	for _, tc := range []struct {
		name, request, reason string
		status                int
	}{
		{"Host mismatch", "GET http://web.test:" + p + "/ HTTP/1.1\r\nHost: other.test:" + p + "\r\n\r\n", ReasonHostMismatch, 403},
		{"Host port mismatch", "GET http://web.test:" + p + "/ HTTP/1.1\r\nHost: web.test\r\n\r\n", ReasonHostMismatch, 403},
		{"no Host in HTTP/1.1", "GET http://web.test:" + p + "/ HTTP/1.1\r\n\r\n", ReasonBadRequest, 400},
		{"origin-form", "GET / HTTP/1.1\r\nHost: web.test:" + p + "\r\n\r\n", ReasonBadRequest, 400},
		{"https URI", "GET https://web.test:" + p + "/ HTTP/1.1\r\nHost: web.test:" + p + "\r\n\r\n", ReasonBadRequest, 400},
		{"not listed", "GET http://other.test:" + p + "/ HTTP/1.1\r\nHost: other.test:" + p + "\r\n\r\n", ReasonNotListed, 403},
		{"default port not listed", "GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n", ReasonNotListed, 403},
		{"raw IP", "GET http://127.0.0.2:" + p + "/ HTTP/1.1\r\nHost: 127.0.0.2:" + p + "\r\n\r\n", ReasonRawIP, 403},
		{"malformed", "GET\x00 / HTTP/1.1\r\n\r\n", ReasonBadRequest, 400},
		{"not HTTP", "hello there\n\n", ReasonBadRequest, 400},
		{"head too large", "GET http://web.test:" + p + "/ HTTP/1.1\r\nX: " + strings.Repeat("a", 9000) + "\r\n\r\n", ReasonBadRequest, 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{List: list}, names, nil)
			c := e.dial()
			io.WriteString(c, tc.request)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.reason) || !strings.HasSuffix(string(body), "\n") ||
				strings.Count(string(body), "\n") != 1 {
				t.Fatalf("%d %q, want %d and one line saying %s", resp.StatusCode, body, tc.status, tc.reason)
			}
			expectClosed(t, br, 2*time.Second)
			r := e.refusal(tc.reason)
			if r.Proto != ProtoHTTP {
				t.Errorf("refusal %+v: proto", r)
			}
			e.noDial()
		})
	}
}

// socksHello sends the greeting and checks the answer: no authentication.
func socksHello(t *testing.T, c net.Conn) {
	t.Helper()
	c.Write([]byte{5, 1, 0})
	var b [2]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || b != [2]byte{5, 0} {
		t.Fatalf("SOCKS greeting: %v %v", b, err)
	}
}

// socksRequest sends a request and returns the reply code.
func socksRequest(t *testing.T, c net.Conn, req []byte) byte {
	t.Helper()
	c.Write(req)
	var b [10]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatalf("SOCKS reply: %v", err)
	}
	if b[0] != 5 {
		t.Fatalf("SOCKS reply %v", b)
	}
	return b[1]
}

func socksName(name string, port int) []byte {
	return append(append([]byte{5, 1, 0, 3, byte(len(name))}, name...), byte(port>>8), byte(port))
}

func TestSOCKS5(t *testing.T) {
	port := echoServer(t)
	p := strconv.Itoa(port)
	srv, pool := tlsServer(t)
	redirect := map[string]string{"127.0.0.1:443": srv.Listener.Addr().String()}
	list := mustList(t, "echo.test:"+p, "127.0.0.1:"+p, "example.com:443", "127.0.0.1:443", "private.test:"+p)
	names := fakeResolver{"echo.test": {"127.0.0.1"}, "example.com": {"127.0.0.1"}, "private.test": {"10.0.0.7"}}

	t.Run("domain", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		c := e.dial()
		socksHello(t, c)
		if code := socksRequest(t, c, socksName("echo.test", port)); code != 0 {
			t.Fatalf("reply %d", code)
		}
		expectEcho(t, c, bufio.NewReader(c))
		e.noRefusal()
	})

	t.Run("IPv4, listed", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		c := e.dial()
		socksHello(t, c)
		if code := socksRequest(t, c, []byte{5, 1, 0, 1, 127, 0, 0, 1, byte(port >> 8), byte(port)}); code != 0 {
			t.Fatalf("reply %d", code)
		}
		expectEcho(t, c, bufio.NewReader(c))
	})

	t.Run("TLS to 443 with the right SNI", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		c := e.dial()
		socksHello(t, c)
		if code := socksRequest(t, c, socksName("example.com", 443)); code != 0 {
			t.Fatalf("reply %d", code)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "example.com", RootCAs: pool})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		e.noRefusal()
	})

	t.Run("TLS to 443 with another SNI", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		c := e.dial()
		socksHello(t, c)
		if code := socksRequest(t, c, socksName("example.com", 443)); code != 0 {
			t.Fatalf("reply %d", code)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "www.example.com", RootCAs: pool})
		if err := tc.Handshake(); err == nil {
			t.Fatal("handshake passed")
		}
		e.refusal(ReasonSNIMismatch)
		e.noDial()
	})

	for _, tc := range []struct {
		name   string
		req    []byte
		code   byte
		reason string
	}{
		{"IPv4 not listed", []byte{5, 1, 0, 1, 8, 8, 8, 8, 0, 53}, 2, ReasonRawIP},
		{"IPv6 not listed", append([]byte{5, 1, 0, 4}, append(netip.MustParseAddr("2001:4860::8888").AsSlice(), 1, 187)...), 2, ReasonRawIP},
		{"domain not listed", socksName("other.test", port), 2, ReasonNotListed},
		{"domain resolving to 10.x", socksName("private.test", port), 2, ReasonPrivateAddress},
		{"domain not resolving", socksName("echo.test", 1), 2, ReasonNotListed},
		{"bad request version", []byte{4, 1, 0, 1, 127, 0, 0, 1, 0, 80}, 1, ReasonBadRequest},
		{"BIND", []byte{5, 2, 0, 1, 127, 0, 0, 1, 0, 80}, 7, ReasonUnsupported},
		{"UDP ASSOCIATE", []byte{5, 3, 0, 1, 0, 0, 0, 0, 0, 0}, 7, ReasonUnsupported},
		{"address type 9", []byte{5, 1, 0, 9, 1, 2, 3, 4, 0, 80}, 8, ReasonUnsupported},
		{"bad name", socksName("a b", port), 1, ReasonBadRequest},
		{"port 0", socksName("echo.test", 0), 1, ReasonBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{List: list}, names, redirect)
			c := e.dial()
			socksHello(t, c)
			if code := socksRequest(t, c, tc.req); code != tc.code {
				t.Fatalf("reply %d, want %d", code, tc.code)
			}
			expectClosed(t, c, 2*time.Second)
			r := e.refusal(tc.reason)
			if r.Proto != ProtoSOCKS5 {
				t.Errorf("refusal %+v: proto", r)
			}
			e.noDial()
		})
	}

	t.Run("no acceptable method", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		c := e.dial()
		c.Write([]byte{5, 1, 2}) // username/password only
		var b [2]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b != [2]byte{5, 0xff} {
			t.Fatalf("reply %v %v", b, err)
		}
		expectClosed(t, c, 2*time.Second)
		e.refusal(ReasonUnsupported)
	})

	t.Run("SOCKS4", func(t *testing.T) {
		e := newEnv(t, Config{List: list}, names, redirect)
		c := e.dial()
		c.Write([]byte{4, 1, 0, 80, 127, 0, 0, 1, 0})
		var b [8]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[1] != 0x5b {
			t.Fatalf("reply %v %v", b, err)
		}
		expectClosed(t, c, 2*time.Second)
		e.refusal(ReasonUnsupported)
		e.noDial()
	})
}

func TestSilentClientClosed(t *testing.T) {
	e := newEnv(t, Config{RequestTimeout: 200 * time.Millisecond}, nil, nil)
	for _, first := range []string{"", "GET http://x", "\x05\x01", "CONNECT example.com:443 HTTP/1.1\r\n"} {
		e.rec.mu.Lock()
		e.rec.refusals = nil
		e.rec.mu.Unlock()
		c := e.dial()
		start := time.Now()
		io.WriteString(c, first)
		io.ReadAll(c) // a 408 for a partial HTTP head, nothing otherwise
		if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
			t.Errorf("first bytes %q: closed after %s, want the 200ms deadline", first, d)
		}
		e.refusal(ReasonTimeout)
	}
}

func TestMaxConns(t *testing.T) {
	e := newEnv(t, Config{MaxConns: 2}, nil, nil)
	a, b := e.dial(), e.dial()
	// Both are being served (a request phase each) before the third comes.
	waitFor(t, func() bool {
		e.p.mu.Lock()
		defer e.p.mu.Unlock()
		return len(e.p.sessions) == 2
	})
	c := e.dial()
	expectClosed(t, c, 2*time.Second)
	r := e.refusal(ReasonTooMany)
	if r.Proto != ProtoUnknown {
		t.Errorf("refusal %+v", r)
	}
	// One slot freed, a new connection is served.
	a.Close()
	waitFor(t, func() bool {
		e.p.mu.Lock()
		defer e.p.mu.Unlock()
		return len(e.p.sessions) == 1
	})
	d := e.dial()
	io.WriteString(d, "GET / HTTP/1.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(d), nil)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("after a slot was freed: %v %v", resp, err)
	}
	_ = b
}

func TestCloseEndsLiveTunnels(t *testing.T) {
	port := echoServer(t)
	p := strconv.Itoa(port)
	e := newEnv(t, Config{List: mustList(t, "echo.test:"+p, "127.0.0.1:"+p)}, fakeResolver{"echo.test": {"127.0.0.1"}}, nil)
	var readers []*bufio.Reader
	for range 3 {
		c := e.dial()
		status, br, _ := connect(t, c, "echo.test:"+p)
		if status != 200 {
			t.Fatal(status)
		}
		expectEcho(t, c, br)
		readers = append(readers, br)
	}
	silent := e.dial() // in its request phase
	if err := e.p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, br := range readers {
		expectClosed(t, br, 2*time.Second)
	}
	expectClosed(t, silent, 2*time.Second)
	if s := e.rec.Snapshot(); len(s.Dests) != 1 || s.Dests[0].Opened != 3 || s.Dests[0].Closed != 3 {
		t.Errorf("after Close: %+v, want 3 opened and closed", s.Dests)
	}
	if _, err := net.DialTimeout("tcp", e.addr, time.Second); err == nil {
		t.Error("the listener still accepts after Close")
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := e.p.Serve(ln); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
}

func TestIdleTimeout(t *testing.T) {
	port := echoServer(t)
	p := strconv.Itoa(port)
	e := newEnv(t, Config{List: mustList(t, "echo.test:"+p, "127.0.0.1:"+p), IdleTimeout: 300 * time.Millisecond},
		fakeResolver{"echo.test": {"127.0.0.1"}}, nil)
	c := e.dial()
	status, br, _ := connect(t, c, "echo.test:"+p)
	if status != 200 {
		t.Fatal(status)
	}
	// Traffic keeps it open past the idle timeout...
	var start time.Time
	for i := range 5 {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		expectEcho(t, c, br)
		start = time.Now()
	}
	// ...silence ends it.
	expectClosed(t, br, 3*time.Second)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("closed after %s of silence, want 300ms", d)
	}
	e.noRefusal()
}

func TestByteBudget(t *testing.T) {
	port := echoServer(t)
	p := strconv.Itoa(port)
	e := newEnv(t, Config{List: mustList(t, "echo.test:"+p, "127.0.0.1:"+p), ByteBudget: 100},
		fakeResolver{"echo.test": {"127.0.0.1"}}, nil)
	c := e.dial()
	status, br, _ := connect(t, c, "echo.test:"+p)
	if status != 200 {
		t.Fatal(status)
	}
	expectEcho(t, c, br) // 10 bytes of 100
	c.Write([]byte(strings.Repeat("x", 200)))
	io.ReadAll(br)
	r := e.refusal(ReasonBudget)
	if r.Host != "echo.test" || r.Port != port {
		t.Errorf("refusal %+v", r)
	}
	// Spent: a new connection is refused at once.
	d := e.dial()
	expectClosed(t, d, 2*time.Second)
	waitFor(t, func() bool { return len(e.rec.Refusals()) == 2 })
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{MaxConns: -1}, {IdleTimeout: -time.Second}, {ByteBudget: -1}, {MaxHeaderBytes: 10}, {MaxHelloBytes: 100},
		{List: List{{Kind: KindName, Host: "bad name", Port: 443}}},
		{List: List{{Kind: KindName, Host: "example.com"}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

func TestRefusalString(t *testing.T) {
	r := Refusal{Host: "evil\x1b]0;x\x07.test", Port: 443, Reason: ReasonNotListed, Proto: ProtoConnect, Detail: "a\nb"}
	s := r.String()
	if strings.ContainsAny(s, "\x1b\x07\n") || !strings.HasPrefix(s, "not-listed ") || !strings.Contains(s, "via connect") {
		t.Errorf("String() = %q", s)
	}
}

// slowResolver answers only when its context ends.
type slowResolver struct{}

func (slowResolver) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, &net.DNSError{Err: "i/o timeout", Name: host, Server: "10.0.0.53:53", IsTimeout: true}
}

func TestResolveTimeout(t *testing.T) {
	d := &testDialer{}
	rec := &testRecorder{}
	p, err := New(Config{List: mustList(t, "slow.test:80"), Resolver: slowResolver{}, Dialer: d, Recorder: rec,
		ConnectTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go p.Serve(ln)
	defer p.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	status, _, body := connect(t, c, "slow.test:80")
	if status != 502 || !strings.Contains(body, "resolve-failed") || !strings.Contains(body, "timed out") || strings.Contains(body, "10.0.0.53") {
		t.Fatalf("%d %q", status, body)
	}
	if len(d.Calls()) != 0 {
		t.Error("dialled")
	}
}

// Serve returns nil when its caller closes the listener; the Proxy goes on
// serving its other listeners.
func TestServeReturnsWhenListenerClosed(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ln1, _ := net.Listen("tcp", "127.0.0.1:0")
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	done1, done2 := make(chan error, 1), make(chan error, 1)
	go func() { done1 <- p.Serve(ln1) }()
	go func() { done2 <- p.Serve(ln2) }()
	ln1.Close()
	select {
	case err := <-done1:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	c, err := net.Dial("tcp", ln2.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 400 {
		t.Fatalf("the other listener: %v %v", resp, err)
	}
	p.Close()
	if err := <-done2; err != nil {
		t.Errorf("Serve after Close: %v", err)
	}
}

func TestCounters(t *testing.T) {
	var c Counters
	if s := c.Snapshot(); len(s.Dests) != 0 || s.Refusals != nil || s.LastRefusal != nil {
		t.Fatalf("zero Counters: %+v", s)
	}
	c.Opened("a.test:443")
	c.Opened("a.test:443")
	c.Closed("a.test:443", 10, 20)
	c.Refused(Refusal{Reason: ReasonNotListed, Host: "b.test", Port: 443})
	c.Refused(Refusal{Reason: ReasonNotListed, Host: "c.test", Port: 443})
	c.Refused(Refusal{Reason: ReasonRawIP})
	s := c.Snapshot()
	if len(s.Dests) != 1 || s.Dests[0] != (DestStats{Dest: "a.test:443", Opened: 2, Closed: 1, BytesUp: 10, BytesDown: 20}) {
		t.Errorf("dests %+v", s.Dests)
	}
	if s.Refusals[ReasonNotListed] != 2 || s.Refusals[ReasonRawIP] != 1 || s.LastRefusal.Reason != ReasonRawIP {
		t.Errorf("refusals %+v, last %+v", s.Refusals, s.LastRefusal)
	}
	// The snapshot is a copy.
	s.Refusals[ReasonRawIP] = 99
	s.Dests[0].Opened = 99
	if s2 := c.Snapshot(); s2.Refusals[ReasonRawIP] != 1 || s2.Dests[0].Opened != 2 {
		t.Error("the snapshot shares the counters")
	}
	// Destinations beyond the bound add up under OtherDests.
	for i := range maxDests + 10 {
		c.Opened(fmt.Sprintf("h%d.test:443", i))
	}
	s = c.Snapshot()
	if len(s.Dests) != maxDests+1 {
		t.Fatalf("%d destinations kept, want %d", len(s.Dests), maxDests+1)
	}
	for _, d := range s.Dests {
		if d.Dest == OtherDests && d.Opened != 11 {
			t.Errorf("%+v, want 11 opened", d)
		}
	}
}

// A name resolving to public IPv6 and IPv4 addresses is dialled at each, in
// order, as ip:port ([v6]:port); never at the name.
func TestDialsResolvedAddresses(t *testing.T) {
	e := newEnv(t, Config{List: mustList(t, "v6.test:8443")},
		fakeResolver{"v6.test": {"2606:4700::1111", "fd00::1", "::ffff:1.1.1.1"}}, nil)
	e.dialer.fail = errors.New("no network in this test")
	c := e.dial()
	status, _, body := connect(t, c, "v6.test:8443")
	if status != 502 || !strings.Contains(body, ReasonDialFailed) {
		t.Fatalf("%d %q", status, body)
	}
	if calls := strings.Join(e.dialer.Calls(), " "); calls != "[2606:4700::1111]:8443 1.1.1.1:8443" {
		t.Errorf("dialled %q", calls)
	}
	if r := e.refusal(ReasonDialFailed); r.Addr != netip.MustParseAddr("1.1.1.1") {
		t.Errorf("refusal %+v", r)
	}
}

// HTTP/1.0 may leave the Host header out: the URI's host is the one.
func TestHTTP10WithoutHost(t *testing.T) {
	port := webServer(t)
	p := strconv.Itoa(port)
	e := newEnv(t, Config{List: mustList(t, "web.test:"+p, "127.0.0.1:"+p)}, fakeResolver{"web.test": {"127.0.0.1"}}, nil)
	c := e.dial()
	io.WriteString(c, "GET http://web.test:"+p+"/old HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(body), "method=GET host=web.test:"+p+" uri=/old ") {
		t.Errorf("body %q", body)
	}
	e.noRefusal()
}

// A name that resolves to one of the host's own addresses is refused, even
// a public one, unless an address entry names it.
func TestHostsOwnAddressesRefused(t *testing.T) {
	port := echoServer(t)
	p := strconv.Itoa(port)
	local := func(a netip.Addr) bool { return a == netip.MustParseAddr("8.8.4.4") }
	names := fakeResolver{"self.test": {"8.8.4.4"}, "echo.test": {"127.0.0.1"}}
	e := newEnv(t, Config{List: mustList(t, "self.test:"+p), Local: local}, names, nil)
	status, _, _ := connect(t, e.dial(), "self.test:"+p)
	if status != 403 {
		t.Fatalf("a name on the host's own address: %d", status)
	}
	r := e.refusal(ReasonPrivateAddress)
	if r.Addr != netip.MustParseAddr("8.8.4.4") || !strings.Contains(r.Detail, "this host") {
		t.Errorf("refusal %+v", r)
	}
	e.noDial()
	// Named by an address entry: it passes (dialled where the test's
	// dialer sends it).
	e = newEnv(t, Config{List: mustList(t, "self.test:"+p, "8.8.4.4:"+p), Local: local}, names,
		map[string]string{"8.8.4.4:" + p: "127.0.0.1:" + p})
	c := e.dial()
	status, br, _ := connect(t, c, "self.test:"+p)
	if status != 200 {
		t.Fatalf("named by an address entry: %d", status)
	}
	expectEcho(t, c, br)
	e.noRefusal()
}

// Each lookup is charged to the byte budget: names cannot carry data out
// through the host's resolver without bound.
func TestLookupsChargedToTheBudget(t *testing.T) {
	names := fakeResolver{}
	e := newEnv(t, Config{List: mustList(t, "*.exfil.test:443"), ByteBudget: 3*lookupCost + 10}, names, nil)
	for i := range 3 {
		status, _, _ := connect(t, e.dial(), fmt.Sprintf("d%d.exfil.test:443", i))
		if status != 502 {
			t.Fatalf("lookup %d: %d", i, status)
		}
	}
	status, _, _ := connect(t, e.dial(), "d3.exfil.test:443")
	if status != 403 {
		t.Fatalf("a lookup past the budget: %d", status)
	}
	var reasons []string
	for _, r := range e.rec.Refusals() {
		reasons = append(reasons, r.Reason)
	}
	if strings.Join(reasons, ",") != "resolve-failed,resolve-failed,resolve-failed,budget" {
		t.Errorf("refusals %q", reasons)
	}
}

// TCP urgent data (which splice(2) does not pass) does not stall a tunnel:
// that direction is copied from then on, as read(2) steps over the byte.
func TestUrgentDataDoesNotStallTheTunnel(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				// read(2) and write(2) (no splice): the urgent byte is
				// stepped over.
				_, _ = io.Copy(struct{ io.Writer }{c}, struct{ io.Reader }{c})
			}()
		}
	}()
	p := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	e := newEnv(t, Config{List: mustList(t, "127.0.0.1:"+p)}, fakeResolver{}, nil)
	c := e.dial()
	status, br, _ := connect(t, c, "127.0.0.1:"+p)
	if status != 200 {
		t.Fatal(status)
	}
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	send := func(b string, flags int) {
		var serr error
		if err := rc.Write(func(fd uintptr) bool {
			serr = unix.Sendmsg(int(fd), []byte(b), nil, nil, flags)
			return true
		}); err != nil || serr != nil {
			t.Fatal(err, serr)
		}
	}
	send("a", 0)
	time.Sleep(50 * time.Millisecond)
	send("!", unix.MSG_OOB)
	time.Sleep(50 * time.Millisecond)
	send("b\n", 0)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := br.ReadString('\n')
	if err != nil || line != "ab\n" {
		t.Errorf("through the tunnel: %q, %v", line, err)
	}
}
