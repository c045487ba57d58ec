package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Resolver looks names up; *net.Resolver is one. The proxy resolves every
// name itself (the sandbox has no resolver) and connects to the addresses it
// checked, never to the name.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects to an address ("ip:port", never a name); *net.Dialer is
// one. Tests and embedders pass their own (a network namespace's, a
// counting one).
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config is what a Proxy enforces. Zero durations and bounds take the
// defaults below.
type Config struct {
	// List is what the sandbox may reach; empty, nothing.
	List List
	// Resolver: net.DefaultResolver when nil.
	Resolver Resolver
	// Dialer: a net.Dialer when nil.
	Dialer Dialer
	// Recorder receives every refusal and the connections' counters;
	// nothing is recorded when nil.
	Recorder Recorder
	// MaxConns bounds the connections served at once (default 64); one
	// more is refused (too-many) and closed at once.
	MaxConns int
	// RequestTimeout bounds the request phase: the request line and
	// headers, the SOCKS exchange, a TLS ClientHello (default 10s). A
	// client that sends nothing is closed when it expires.
	RequestTimeout time.Duration
	// ConnectTimeout bounds resolving and connecting (default 10s).
	ConnectTimeout time.Duration
	// IdleTimeout closes a connection when no byte has passed either way
	// for that long (default 5m).
	IdleTimeout time.Duration
	// ByteBudget bounds the bytes the proxy carries, both ways, over its
	// life (0: no bound). Once spent, live connections are cut and new ones
	// refused (budget).
	ByteBudget int64
	// MaxHeaderBytes bounds an HTTP request line and headers (default
	// 8 KiB); MaxHelloBytes a TLS ClientHello (default 16 KiB).
	MaxHeaderBytes int
	MaxHelloBytes  int
	// Local, if set, says whether an address is one of this host's own
	// (an interface's): a name that resolves there is refused, as a
	// non-public address is, unless an address entry names it. A public
	// address of the host is where its own services listen: a listed
	// wildcard whose names the sandbox's author controls must not lead
	// there.
	Local func(netip.Addr) bool
}

// Defaults of Config.
const (
	DefaultMaxConns       = 64
	DefaultRequestTimeout = 10 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultMaxHeaderBytes = 8 << 10
	DefaultMaxHelloBytes  = 16 << 10
)

// ErrClosed is what Serve returns on a Proxy already closed.
var ErrClosed = errors.New("egress proxy closed")

// Proxy serves a sandbox's egress: HTTP CONNECT, plain HTTP with absolute
// URIs, and SOCKS5, on listeners it is handed, deciding every request
// against its List. It fails closed: Close ends every live connection.
type Proxy struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	spent  atomic.Int64

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	sessions  map[*session]struct{}
	wg        sync.WaitGroup
}

// New checks cfg, fills in its defaults and returns a Proxy that serves
// nothing until Serve is called.
func New(cfg Config) (*Proxy, error) {
	switch {
	case cfg.MaxConns < 0, cfg.RequestTimeout < 0, cfg.ConnectTimeout < 0, cfg.IdleTimeout < 0,
		cfg.ByteBudget < 0, cfg.MaxHeaderBytes < 0, cfg.MaxHelloBytes < 0:
		return nil, errors.New("egress proxy: negative bound in the configuration")
	case cfg.MaxHeaderBytes > 0 && cfg.MaxHeaderBytes < 256:
		return nil, errors.New("egress proxy: MaxHeaderBytes below 256")
	case cfg.MaxHelloBytes > 0 && cfg.MaxHelloBytes < 512:
		return nil, errors.New("egress proxy: MaxHelloBytes below 512")
	}
	for i, e := range cfg.List {
		if _, err := ParseEntry(e.String()); err != nil {
			return nil, fmt.Errorf("egress proxy: list entry %d: %w", i, err)
		}
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxHeaderBytes == 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.MaxHelloBytes == 0 {
		cfg.MaxHelloBytes = DefaultMaxHelloBytes
	}
	p := &Proxy{
		cfg:       cfg,
		listeners: map[net.Listener]struct{}{},
		sessions:  map[*session]struct{}{},
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Serve accepts connections on ln and serves each until it ends. It returns
// nil when ln is closed (by Close, or by the caller), ErrClosed if the
// Proxy was already closed, and other accept errors as they are (after
// retrying those that pass, as net/http does).
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	p.listeners[ln] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, ln)
		p.mu.Unlock()
	}()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !transient(err) {
				return err
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(delay):
			case <-p.ctx.Done():
				return nil
			}
			continue
		}
		delay = 0
		p.accept(c)
	}
}

// transient: an accept error worth retrying (out of descriptors, a
// connection aborted before it was accepted).
func transient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// accept starts serving c, or refuses it (too many connections, the
// budget spent) and closes it at once.
func (p *Proxy) accept(c net.Conn) {
	s := &session{p: p, client: c, proto: ProtoUnknown}
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		c.Close()
		return
	case len(p.sessions) >= p.cfg.MaxConns:
		p.mu.Unlock()
		c.Close()
		s.record(Refusal{Reason: ReasonTooMany, Detail: fmt.Sprintf("%d connections open, the bound", p.cfg.MaxConns)})
		return
	case p.budgetSpent():
		p.mu.Unlock()
		c.Close()
		s.record(Refusal{Reason: ReasonBudget, Detail: fmt.Sprintf("the byte budget (%d) is spent", p.cfg.ByteBudget)})
		return
	}
	p.sessions[s] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		s.serve()
		p.mu.Lock()
		delete(p.sessions, s)
		p.mu.Unlock()
	}()
}

// Close stops accepting (it closes every listener Serve is serving),
// closes every live connection, both sides, and waits until each is done
// (its Closed recorded). A Proxy closed stays closed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cancel()
	for ln := range p.listeners {
		ln.Close()
	}
	for s := range p.sessions {
		s.close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// spend counts n bytes against the budget; false once it is spent.
func (p *Proxy) spend(n int) bool {
	if p.cfg.ByteBudget == 0 {
		return true
	}
	return p.spent.Add(int64(n)) <= p.cfg.ByteBudget
}

func (p *Proxy) budgetSpent() bool {
	return p.cfg.ByteBudget > 0 && p.spent.Load() >= p.cfg.ByteBudget
}

// errBudget cuts a connection once the budget is spent.
var errBudget = errors.New("the byte budget is spent")

// target is what a client asked to reach.
type target struct {
	host string     // as asked, for records
	name string     // the normalised name; "" for an address
	ip   netip.Addr // the address asked for; invalid for a name
	port int
}

func (t target) dest() string {
	if t.name != "" {
		return net.JoinHostPort(t.name, strconv.Itoa(t.port))
	}
	return netip.AddrPortFrom(t.ip, uint16(t.port)).String()
}

// session is one client connection, from accept to close.
type session struct {
	p      *Proxy
	client net.Conn
	br     *bufio.Reader // the client's bytes, through the request phase and after
	proto  string

	mu       sync.Mutex
	upstream net.Conn
	closed   bool

	t          target // what the client asked for, once known
	dest       string // set once connected: Opened was recorded
	tunnelling atomic.Bool
	last       atomic.Int64 // when a byte last passed, either way (UnixNano)
	up, down   atomic.Int64
	budgetOnce sync.Once
}

// close closes both sides; the goroutines blocked on them return.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.client.Close()
	if s.upstream != nil {
		s.upstream.Close()
	}
}

func (s *session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// setUpstream keeps c so that close reaches it; false (and c closed) when
// the session was closed meanwhile.
func (s *session) setUpstream(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.upstream = c
	return true
}

// maxRecordedHost bounds what a refusal keeps of the host asked for.
const maxRecordedHost = 255

// record hands r to the Recorder, completed. Once the Proxy is closed, a
// closed session records nothing more (its failures are the shutdown's).
func (s *session) record(r Refusal) {
	if s.p.ctx.Err() != nil && s.isClosed() {
		return
	}
	r.Time = time.Now()
	if r.Proto == "" {
		r.Proto = s.proto
	}
	if len(r.Host) > maxRecordedHost {
		r.Host = r.Host[:maxRecordedHost]
	}
	if len(r.Detail) > 512 {
		r.Detail = r.Detail[:512]
	}
	s.p.cfg.Recorder.Refused(r)
}

func (s *session) serve() {
	defer func() {
		s.close()
		if s.dest != "" {
			s.p.cfg.Recorder.Closed(s.dest, s.up.Load(), s.down.Load())
		}
	}()
	// A connection that cannot be bounded in time is not served.
	if s.client.SetDeadline(time.Now().Add(s.p.cfg.RequestTimeout)) != nil {
		return
	}
	s.br = bufio.NewReaderSize(&idleReader{c: s.client, s: s}, s.p.cfg.MaxHeaderBytes)
	first, err := s.br.Peek(1)
	if err != nil {
		if isTimeout(err) {
			s.record(Refusal{Reason: ReasonTimeout, Detail: fmt.Sprintf("nothing sent within %s", s.p.cfg.RequestTimeout)})
		}
		// A client gone without a word asked for nothing.
		return
	}
	switch first[0] {
	case 5:
		s.proto = ProtoSOCKS5
		s.socks()
	case 4:
		s.record(Refusal{Reason: ReasonUnsupported, Detail: "SOCKS4: only SOCKS5 is served"})
		// SOCKS4's "request rejected or failed".
		s.replyAndClose([]byte{0, 0x5b, 0, 0, 0, 0, 0, 0})
	case recordHandshake:
		s.record(Refusal{Reason: ReasonBadRequest, Detail: "TLS to the proxy itself: ask with CONNECT host:443 first"})
		s.replyAndClose(tlsAlert)
	default:
		s.http()
	}
}

// tlsAlert is a fatal access_denied alert: what a TLS client is told when
// its ClientHello is refused after the tunnel was granted.
var tlsAlert = []byte{21, 3, 3, 0, 2, 2, 49}

// writeClient writes a reply of the request phase, within RequestTimeout
// (resolving and connecting may have used the phase's deadline).
func (s *session) writeClient(b []byte) error {
	if err := s.client.SetWriteDeadline(time.Now().Add(s.p.cfg.RequestTimeout)); err != nil {
		return err
	}
	_, err := s.client.Write(b)
	return err
}

// replyAndClose writes b, then closes so that the client reads it: it
// half-closes, reads (and drops) what the client still sends for a moment,
// then closes. A close with unread bytes would reset the connection, and
// the client could lose the reply.
func (s *session) replyAndClose(b []byte) {
	if s.writeClient(b) != nil {
		return
	}
	if cw, ok := s.client.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil && s.client.SetReadDeadline(time.Now().Add(500*time.Millisecond)) == nil {
			_, _ = io.CopyN(io.Discard, s.client, 256<<10)
		}
	}
}

// check decides t against the list and, for a name, resolves it: it
// returns the addresses that passed, in the resolver's order, or the
// refusal. The Dialer is called only with what check returned.
func (s *session) check(t target) ([]netip.AddrPort, *Refusal) {
	list := s.p.cfg.List
	if t.ip.IsValid() {
		if !list.AllowsAddr(t.ip, t.port) {
			return nil, &Refusal{Host: t.host, Port: t.port, Addr: t.ip, Reason: ReasonRawIP,
				Detail: "an address asked for: only an address or range entry allows it"}
		}
		return []netip.AddrPort{netip.AddrPortFrom(t.ip, uint16(t.port))}, nil
	}
	if !list.Allows(t.name, t.port) {
		return nil, &Refusal{Host: t.host, Port: t.port, Reason: ReasonNotListed,
			Detail: "no egress entry names " + t.dest()}
	}
	// A lookup reaches the name's own servers: under a wildcard, the
	// names themselves can carry data out. Each is charged to the byte
	// budget.
	if !s.p.spend(lookupCost) {
		return nil, &Refusal{Host: t.host, Port: t.port, Reason: ReasonBudget,
			Detail: fmt.Sprintf("the byte budget (%d) is spent", s.p.cfg.ByteBudget)}
	}
	ctx, cancel := context.WithTimeout(s.p.ctx, s.p.cfg.ConnectTimeout)
	defer cancel()
	addrs, err := s.p.cfg.Resolver.LookupNetIP(ctx, "ip", t.name)
	if err != nil {
		return nil, &Refusal{Host: t.host, Port: t.port, Reason: ReasonResolveFailed, Detail: cause(err)}
	}
	var pass []netip.AddrPort
	var refused netip.Addr
	local := false
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if !a.IsValid() {
			continue
		}
		if list.AllowsAddr(a, t.port) {
			// Named by an address entry: passes whatever it is.
		} else if isLocal := s.p.cfg.Local != nil && s.p.cfg.Local(a); nonGlobal(a) || isLocal {
			if !refused.IsValid() {
				refused, local = a, isLocal && !nonGlobal(a)
			}
			continue
		}
		if len(pass) < maxTries {
			pass = append(pass, netip.AddrPortFrom(a, uint16(t.port)))
		}
	}
	if len(pass) == 0 {
		if refused.IsValid() {
			detail := "resolves to a non-public address no entry names"
			if local {
				detail = "resolves to an address of this host no entry names"
			}
			return nil, &Refusal{Host: t.host, Port: t.port, Addr: refused, Reason: ReasonPrivateAddress, Detail: detail}
		}
		return nil, &Refusal{Host: t.host, Port: t.port, Reason: ReasonResolveFailed, Detail: "no address"}
	}
	return pass, nil
}

// maxTries bounds the addresses tried for one name.
const maxTries = 8

// lookupCost is what one lookup charges to the byte budget: about a DNS
// query's size.
const lookupCost = 64

// dial connects to the first of addrs that answers. Opened is recorded on
// success; nil without a refusal means the session was closed meanwhile.
func (s *session) dial(t target, addrs []netip.AddrPort) (net.Conn, *Refusal) {
	ctx, cancel := context.WithTimeout(s.p.ctx, s.p.cfg.ConnectTimeout)
	defer cancel()
	var last error
	for _, a := range addrs {
		c, err := s.p.cfg.Dialer.DialContext(ctx, "tcp", a.String())
		if err == nil {
			if !s.setUpstream(c) {
				return nil, nil
			}
			s.dest = t.dest()
			s.p.cfg.Recorder.Opened(s.dest)
			return c, nil
		}
		last = err
		if ctx.Err() != nil || s.isClosed() {
			break
		}
	}
	if s.isClosed() {
		return nil, nil
	}
	return nil, &Refusal{Host: t.host, Port: t.port, Addr: addrs[len(addrs)-1].Addr(), Reason: ReasonDialFailed, Detail: cause(last)}
}

// cause says why a lookup or a dial failed in a few words: the sandbox
// reads it, and the error itself may name the host's own resolver.
func cause(err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return "no such host"
	case isTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "unreachable"
	case errors.As(err, &dns):
		return "lookup failed"
	}
	return "failed"
}

// connectAndTunnel serves a CONNECT, HTTP's or SOCKS's, to t once its
// request is read: it checks t, connects and tunnels. ok is the protocol's
// success reply; refuse records a refusal and answers it in the
// protocol's terms, then closes. A name on port 443 is answered ok before
// the checks of its TLS ClientHello (the client sends it only then) and
// connected only after them, so that no upstream is reached for a hello
// that is refused: a refusal from there is a TLS alert (the protocol's
// reply is spent), a failed dial only recorded. Anything else is
// connected before the answer, so that a failure is the protocol's
// refusal.
func (s *session) connectAndTunnel(t target, ok []byte, refuse func(Refusal)) {
	s.t = t
	addrs, r := s.check(t)
	if r != nil {
		refuse(*r)
		return
	}
	if tlsGated(t) {
		if err := s.writeClient(ok); err != nil {
			return
		}
		raw, r := s.readHello(t)
		if r != nil {
			s.record(*r)
			s.replyAndClose(tlsAlert)
			return
		}
		if raw == nil {
			return
		}
		up, r := s.dial(t, addrs)
		if up == nil {
			if r != nil {
				s.record(*r)
			}
			return
		}
		if _, err := (&sideWriter{s: s, c: up, count: &s.up}).Write(raw); err != nil {
			s.cut(err)
			return
		}
		s.tunnel(up)
		return
	}
	up, r := s.dial(t, addrs)
	if up == nil {
		if r != nil {
			refuse(*r)
		}
		return
	}
	if err := s.writeClient(ok); err != nil {
		return
	}
	s.tunnel(up)
}

// readHello reads the client's TLS ClientHello (bounded in size and time)
// and requires its server name to be the name asked for; it returns the
// bytes read, to replay to the upstream. Neither bytes nor a refusal: the
// connection is closed.
func (s *session) readHello(t target) ([]byte, *Refusal) {
	if s.client.SetReadDeadline(time.Now().Add(s.p.cfg.RequestTimeout)) != nil {
		return nil, nil
	}
	raw, sni, err := readClientHello(s.br, s.p.cfg.MaxHelloBytes)
	switch {
	case err != nil && isTimeout(err):
		return nil, &Refusal{Host: t.host, Port: t.port, Reason: ReasonTimeout,
			Detail: fmt.Sprintf("no whole TLS ClientHello within %s", s.p.cfg.RequestTimeout)}
	case err != nil:
		return nil, &Refusal{Host: t.host, Port: t.port, Reason: ReasonBadHello, Detail: err.Error()}
	case sni == "":
		return nil, &Refusal{Host: t.host, Port: t.port, Reason: ReasonNoSNI,
			Detail: "the TLS ClientHello names no server; it must name " + t.name}
	case !sameName(sni, t.name):
		return nil, &Refusal{Host: t.host, Port: t.port, Reason: ReasonSNIMismatch,
			Detail: fmt.Sprintf("the TLS ClientHello names %q, not %s", sni, t.name)}
	}
	return raw, nil
}

// tlsGated: a connection to a name on port 443 carries TLS whose server
// name must be that name.
func tlsGated(t target) bool {
	return t.port == 443 && t.name != ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// idleReader reads one side of a session. In the request phase it reads
// under the deadline the session set; once tunnelling, each read waits at
// most IdleTimeout, and longer only while bytes pass the other way.
type idleReader struct {
	c net.Conn
	s *session
}

func (r *idleReader) Read(b []byte) (int, error) {
	if !r.s.tunnelling.Load() {
		return r.c.Read(b)
	}
	idle := r.s.p.cfg.IdleTimeout
	for {
		if err := r.c.SetReadDeadline(time.Now().Add(idle)); err != nil {
			return 0, err
		}
		n, err := r.c.Read(b)
		if n > 0 {
			r.s.touch()
		}
		if n == 0 && err != nil && isTimeout(err) && r.s.activeWithin(idle) && !r.s.isClosed() {
			continue
		}
		return n, err
	}
}

func (s *session) touch() { s.last.Store(time.Now().UnixNano()) }

func (s *session) activeWithin(d time.Duration) bool {
	return time.Since(time.Unix(0, s.last.Load())) < d
}

// sideWriter writes to one side of a session, counting the bytes against
// the side's counter and the proxy's budget, each write bounded by
// IdleTimeout.
type sideWriter struct {
	s     *session
	c     net.Conn
	count *atomic.Int64
}

func (w *sideWriter) Write(b []byte) (int, error) {
	if !w.s.p.spend(len(b)) {
		return 0, errBudget
	}
	if err := w.c.SetWriteDeadline(time.Now().Add(w.s.p.cfg.IdleTimeout)); err != nil {
		return 0, err
	}
	n, err := w.c.Write(b)
	w.count.Add(int64(n))
	if n > 0 {
		w.s.touch()
	}
	return n, err
}

// startTunnel ends the request phase: the request deadline is lifted, idle
// timeouts rule from here.
func (s *session) startTunnel() {
	// Lifted or not, every read and write from here sets its own.
	_ = s.client.SetDeadline(time.Time{})
	s.touch()
	s.tunnelling.Store(true)
}

// tunnel copies both ways until both ends are done, an error, the idle
// timeout or the budget; an end's EOF is passed on as a half-close.
func (s *session) tunnel(up net.Conn) {
	s.startTunnel()
	toUp := &sideWriter{s: s, c: up, count: &s.up}
	toClient := &sideWriter{s: s, c: s.client, count: &s.down}
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		// What the request phase read ahead goes first; then the
		// client's socket itself, spliced.
		if n := s.br.Buffered(); n > 0 {
			b, _ := s.br.Peek(n)
			if _, err := toUp.Write(b); err != nil {
				s.cut(err)
				return
			}
			_, _ = s.br.Discard(n)
		}
		if !s.splicePump(toUp, s.client, up) {
			s.pump(toUp, s.br, up)
		}
	}()
	if !s.splicePump(toClient, up, s.client) {
		s.pump(toClient, &idleReader{c: up, s: s}, s.client)
	}
	<-done
}

// pump copies src to w; at src's EOF it half-closes w's side (or closes
// the session if it cannot), on any other end it closes the session.
func (s *session) pump(w *sideWriter, src io.Reader, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				s.cut(werr)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
			s.close()
			return
		}
		if err != nil {
			s.cut(err)
			return
		}
	}
}

// cut closes the session for err, recording a spent budget once.
func (s *session) cut(err error) {
	if errors.Is(err, errBudget) {
		s.budgetOnce.Do(func() {
			s.record(Refusal{Host: s.t.host, Port: s.t.port, Reason: ReasonBudget, Detail: fmt.Sprintf("the byte budget (%d) is spent", s.p.cfg.ByteBudget)})
		})
	}
	s.close()
}
