package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
)

// http serves a client that spoke first with something other than SOCKS:
// CONNECT host:port, or a request with an absolute http:// URI.
func (s *session) http() {
	s.proto = ProtoHTTP
	head, r, status := s.readHead()
	if r != nil {
		s.refuseHTTP(status, *r)
		return
	}
	req, err := http.ReadRequest(s.br)
	if err != nil {
		s.refuseHTTP(http.StatusBadRequest, Refusal{Reason: ReasonBadRequest, Detail: "malformed HTTP request"})
		return
	}
	if req.Method == http.MethodConnect {
		s.proto = ProtoConnect
		s.connect(req)
		return
	}
	s.forward(req, head)
}

// readHead waits until the buffer holds the whole request line and
// headers (at most MaxHeaderBytes) and returns a copy of them.
func (s *session) readHead() ([]byte, *Refusal, int) {
	for {
		b, _ := s.br.Peek(s.br.Buffered())
		if i := headEnd(b); i >= 0 {
			return bytes.Clone(b[:i]), nil, 0
		}
		if len(b) >= s.br.Size() {
			return nil, &Refusal{Reason: ReasonBadRequest,
				Detail: fmt.Sprintf("request line and headers longer than %d bytes", s.br.Size())}, http.StatusRequestHeaderFieldsTooLarge
		}
		if _, err := s.br.Peek(len(b) + 1); err != nil {
			if isTimeout(err) {
				return nil, &Refusal{Reason: ReasonTimeout,
					Detail: fmt.Sprintf("no whole request head within %s", s.p.cfg.RequestTimeout)}, http.StatusRequestTimeout
			}
			return nil, &Refusal{Reason: ReasonBadRequest, Detail: "the client stopped mid-request"}, http.StatusBadRequest
		}
	}
}

// headEnd is the length of the head in b (through the empty line that ends
// it, CRLF or bare LF as net/http reads them), or -1.
func headEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// target makes the target of host and port as a client named them: an
// address, or a valid name (normalised).
func (s *session) target(host string, port int) (target, *Refusal) {
	t := target{host: host, port: port}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return t, &Refusal{Host: host, Port: port, Reason: ReasonBadRequest, Detail: "an address with a zone"}
		}
		t.ip = a.Unmap()
		return t, nil
	}
	name, reason := normalName(host)
	if reason != "" {
		return t, &Refusal{Host: host, Port: port, Reason: ReasonBadRequest, Detail: "not a host name: " + reason}
	}
	t.name = name
	return t, nil
}

// connect serves CONNECT host:port; a refusal is an HTTP status.
func (s *session) connect(req *http.Request) {
	host, portStr, err := net.SplitHostPort(req.URL.Host)
	if req.URL.Host == "" || err != nil {
		s.refuseHTTP(http.StatusBadRequest, Refusal{Reason: ReasonBadRequest, Host: req.RequestURI,
			Detail: "CONNECT names no host:port"})
		return
	}
	port, reason := parsePort(portStr)
	if reason != "" {
		s.refuseHTTP(http.StatusBadRequest, Refusal{Reason: ReasonBadRequest, Host: host, Detail: reason})
		return
	}
	t, r := s.target(host, port)
	if r != nil {
		s.refuseHTTP(http.StatusBadRequest, *r)
		return
	}
	s.connectAndTunnel(t, []byte("HTTP/1.1 200 Connection established\r\n\r\n"),
		func(r Refusal) { s.refuseHTTP(statusOf(r.Reason), r) })
}

// hopHeaders are the hop-by-hop headers a proxy does not forward (RFC 9110
// 7.6.1, and those of older practice).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// forward serves a request with an absolute http:// URI: its Host header
// must name the URI's host; it is sent on, in origin form, with the
// hop-by-hop headers removed and Connection: close, and the response is
// copied back as it comes. One request per connection: nothing the client
// sends after it is read.
func (s *session) forward(req *http.Request, head []byte) {
	if !req.URL.IsAbs() {
		s.refuseHTTP(http.StatusBadRequest, Refusal{Reason: ReasonBadRequest,
			Detail: "origin-form request (" + req.Method + " /path): a proxy request names the whole URI (" + req.Method + " http://host/path)"})
		return
	}
	if req.URL.Scheme != "http" {
		s.refuseHTTP(http.StatusBadRequest, Refusal{Reason: ReasonBadRequest,
			Detail: "scheme " + req.URL.Scheme + ": only http:// is forwarded (ask for https with CONNECT host:443)"})
		return
	}
	host, port, reason := hostPort(req.URL.Host)
	if reason != "" {
		s.refuseHTTP(http.StatusBadRequest, Refusal{Reason: ReasonBadRequest, Host: req.URL.Host, Detail: "URI host: " + reason})
		return
	}
	t, r := s.target(host, port)
	if r != nil {
		s.refuseHTTP(http.StatusBadRequest, *r)
		return
	}
	s.t = t
	if r := s.checkHost(t, req, head); r != nil {
		s.refuseHTTP(statusOf(r.Reason), *r)
		return
	}
	addrs, r := s.check(t)
	if r != nil {
		s.refuseHTTP(statusOf(r.Reason), *r)
		return
	}
	up, r := s.dial(t, addrs)
	if up == nil {
		if r != nil {
			s.refuseHTTP(statusOf(r.Reason), *r)
		}
		return
	}
	for _, c := range req.Header.Values("Connection") {
		for _, name := range strings.Split(c, ",") {
			if name = textproto.TrimString(name); name != "" {
				req.Header.Del(name)
			}
		}
	}
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Write adds none then
	}
	req.Close = true
	s.startTunnel()
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if err := req.Write(&sideWriter{s: s, c: up, count: &s.up}); err != nil {
			s.cut(err)
		}
	}()
	s.pump(&sideWriter{s: s, c: s.client, count: &s.down}, &idleReader{c: up, s: s}, s.client)
	s.close()
	<-sent
}

// hostPort splits an http URI's or Host header's host[:port] (port 80
// when absent).
func hostPort(hp string) (string, int, string) {
	if hp == "" {
		return "", 0, "empty"
	}
	host, portStr, err := net.SplitHostPort(hp)
	if err != nil {
		// No port: the whole is the host ([v6] without a port too).
		if strings.HasPrefix(hp, "[") && strings.HasSuffix(hp, "]") {
			return hp[1 : len(hp)-1], 80, ""
		}
		if strings.IndexByte(hp, ':') >= 0 {
			return "", 0, "not host[:port]"
		}
		return hp, 80, ""
	}
	if portStr == "" {
		return host, 80, ""
	}
	port, reason := parsePort(portStr)
	if reason != "" {
		return "", 0, reason
	}
	return host, port, ""
}

// checkHost requires the request's Host header (net/http drops it from
// the request it parses when the URI is absolute, so it is read from the
// head again) to name the URI's host and port: a server behind an allowed
// address may serve other hosts by that header.
func (s *session) checkHost(t target, req *http.Request, head []byte) *Refusal {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head)))
	if _, err := tp.ReadLine(); err != nil {
		return &Refusal{Host: t.host, Port: t.port, Reason: ReasonBadRequest, Detail: "malformed HTTP request"}
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return &Refusal{Host: t.host, Port: t.port, Reason: ReasonBadRequest, Detail: "malformed HTTP headers"}
	}
	hosts := h.Values("Host")
	switch {
	case len(hosts) > 1:
		return &Refusal{Host: t.host, Port: t.port, Reason: ReasonBadRequest, Detail: "more than one Host header"}
	case len(hosts) == 0 && req.ProtoAtLeast(1, 1):
		return &Refusal{Host: t.host, Port: t.port, Reason: ReasonBadRequest, Detail: "HTTP/1.1 request without a Host header"}
	case len(hosts) == 0:
		return nil
	}
	host, port, reason := hostPort(hosts[0])
	if reason == "" {
		var ht target
		var r *Refusal
		if ht, r = s.target(host, port); r == nil && ht.name == t.name && ht.ip == t.ip && ht.port == t.port {
			return nil
		}
	}
	return &Refusal{Host: t.host, Port: t.port, Reason: ReasonHostMismatch,
		Detail: fmt.Sprintf("Host header %q, URI host %s", hosts[0], t.dest())}
}

// statusOf is the HTTP status of a refusal's reason.
func statusOf(reason string) int {
	switch reason {
	case ReasonBadRequest, ReasonUnsupported:
		return http.StatusBadRequest
	case ReasonTimeout:
		return http.StatusRequestTimeout
	case ReasonResolveFailed, ReasonDialFailed:
		return http.StatusBadGateway
	}
	return http.StatusForbidden
}

// refuseHTTP records r and answers it: the status and one line saying why,
// then the connection is closed.
func (s *session) refuseHTTP(status int, r Refusal) {
	s.record(r)
	body := "maka egress refused: " + r.String() + "\n"
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	b.WriteString("Connection: close\r\n\r\n")
	b.WriteString(body)
	s.replyAndClose([]byte(b.String()))
}
