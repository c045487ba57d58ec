package monitor

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/maka-runtime/maka/libmaka/egress"
)

// EgressConfig is a sandbox's egress as the monitor serves it: its list
// and the policy's bounds (libmaka.EgressLimits) and answer to a refusal.
type EgressConfig struct {
	List        []string      `json:"list"`
	MaxConns    int           `json:"maxConns"`
	IdleTimeout time.Duration `json:"idleTimeout"`
	Bytes       int64         `json:"bytes,omitempty"`
	// OnRefusal: deny (record, the sandbox lives on) or kill.
	OnRefusal string `json:"onRefusal"`
}

// egressRecorder records the proxy's refusals as violations and counts the
// rest for peak.json.
type egressRecorder struct {
	m *Monitor
	egress.Counters
}

func (r *egressRecorder) Refused(f egress.Refusal) {
	r.Counters.Refused(f)
	rec := Record{
		Time: f.Time.UTC(), Type: TypeNetwork, Action: ActionDeny,
		Host: f.Host, Port: f.Port, Reason: f.Reason, Proto: f.Proto, Detail: f.Detail,
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	if f.Addr.IsValid() {
		rec.Addr = f.Addr.String()
	}
	r.m.violation(rec, 0)
}

// absoluteResolver looks names up as absolute names, with Go's own resolver
// (the host's /etc/hosts and resolv.conf): a sandbox's name is never
// completed with the host's search domains.
type absoluteResolver struct{ r *net.Resolver }

func (a absoluteResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if !strings.HasSuffix(host, ".") {
		host += "."
	}
	return a.r.LookupNetIP(ctx, network, host)
}

// localAddrs is this host's interface addresses, read again at most every
// localAddrsTTL: a name that resolves to one is refused unless an address
// entry names it (egress.Config.Local).
type localAddrs struct {
	mu    sync.Mutex
	at    time.Time
	addrs map[netip.Addr]bool
}

const localAddrsTTL = 10 * time.Second

func (l *localAddrs) has(a netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs == nil || time.Since(l.at) > localAddrsTTL {
		set := map[netip.Addr]bool{}
		if ifas, err := net.InterfaceAddrs(); err == nil {
			for _, ifa := range ifas {
				if p, err := netip.ParsePrefix(ifa.String()); err == nil {
					set[p.Addr().Unmap()] = true
				}
			}
		}
		l.addrs, l.at = set, time.Now()
	}
	return l.addrs[a.Unmap()]
}

// ServeEgress serves the sandbox's egress proxy on ln, the listening socket
// made inside the sandbox's network namespace (libmaka.EgressListen), from
// here, outside it, until Close. It takes ownership of ln. Close ends every
// connection (fail closed: with the monitor gone, nothing answers inside).
func (m *Monitor) ServeEgress(ln *os.File, cfg EgressConfig) error {
	l, err := net.FileListener(ln)
	ln.Close()
	if err != nil {
		return fmt.Errorf("monitor %s: egress listener: %w", m.cfg.ID, err)
	}
	list, err := egress.ParseList(cfg.List)
	if err != nil {
		l.Close()
		return fmt.Errorf("monitor %s: egress: %w", m.cfg.ID, err)
	}
	rec := &egressRecorder{m: m}
	p, err := egress.New(egress.Config{
		List: list, Recorder: rec,
		Resolver:    absoluteResolver{&net.Resolver{PreferGo: true}},
		Local:       (&localAddrs{}).has,
		MaxConns:    cfg.MaxConns,
		IdleTimeout: cfg.IdleTimeout,
		ByteBudget:  cfg.Bytes,
	})
	if err != nil {
		l.Close()
		return fmt.Errorf("monitor %s: %w", m.cfg.ID, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		p.Close()
		l.Close()
		return nil
	}
	m.proxy, m.egress = p, rec
	m.egressKill = cfg.OnRefusal == ActionKill
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = p.Serve(l)
	}()
	return nil
}
