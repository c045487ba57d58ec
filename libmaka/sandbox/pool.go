package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
)

// PoolScope is the owner scope of a pool's idle sandboxes: Purge(PoolScope)
// (or `maka purge --scope pool`) removes those of a program that died.
const PoolScope = "pool"

// MaxPool bounds the sandboxes one Prewarm keeps ready.
const MaxPool = 64

// ErrClosed: the Manager was closed.
var ErrClosed = errors.New("the manager is closed")

// pool is the idle sandboxes of one configuration.
type pool struct {
	digest  string
	bundle  string
	spec    *specs.Spec
	want    int
	idle    []*Sandbox
	filling int
}

// Prewarm launches n sandboxes of req's configuration ahead of need, and
// keeps n ready: a Launch of the same configuration without an ID claims
// one (its ID is then the pool's, pool-…) instead of launching, and the
// pool refills in the background. req.ID and req.Owner must be empty (an
// owner is set when a sandbox is claimed). Pool sandboxes are ordinary
// sandboxes of this Manager, keyed to the owner scope PoolScope while idle;
// a claimed one is never handed out again, and Close destroys the idle
// ones. A sandbox's lifetime (the policy's timeout) counts from its launch:
// one that has lived half of it is not handed out, but replaced. It
// returns once n are ready, or with the first launch's error (a
// *specconv.RejectedError: nothing of the pool is kept).
func (m *Manager) Prewarm(ctx context.Context, req Request, n int) error {
	if req.ID != "" || req.Owner != nil {
		return errors.New("prewarm: a pool's request names no ID and no owner (they are set at claim)")
	}
	if n < 1 || n > MaxPool {
		return fmt.Errorf("prewarm: %d sandboxes: want 1 to %d", n, MaxPool)
	}
	bundle, spec, err := m.configOf(req)
	if err != nil {
		return err
	}
	digest, err := poolDigest(bundle, spec)
	if err != nil {
		return err
	}
	m.poolMu.Lock()
	if m.closed {
		m.poolMu.Unlock()
		return ErrClosed
	}
	p := m.pools[digest]
	if p == nil {
		p = &pool{digest: digest, bundle: bundle, spec: spec}
		m.pools[digest] = p
	}
	p.want = n
	m.poolMu.Unlock()
	for {
		m.poolMu.Lock()
		ready := len(p.idle)
		m.poolMu.Unlock()
		if ready >= n {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.fillOne(p); err != nil {
			return fmt.Errorf("prewarm: %w", err)
		}
	}
}

// poolDigest names a configuration: the same bundle and spec compile to
// the same boundary under a Manager's one policy.
func poolDigest(bundle string, spec *specs.Spec) (string, error) {
	data, err := json.Marshal(struct {
		Bundle string
		Spec   *specs.Spec
	}{bundle, spec})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// newID is a fresh sandbox id with prefix.
func newID(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// fillOne launches one sandbox into p, keyed to PoolScope while idle.
func (m *Manager) fillOne(p *pool) error {
	id := newID("pool-")
	owner := launch.Owner{Scope: PoolScope, Call: id}
	dir, err := launch.OwnersDir(m.rt)
	if err != nil {
		return err
	}
	l, err := launch.LockOwner(dir, owner.Key())
	if err != nil {
		return err
	}
	s, err := m.launch(id, p.bundle, p.spec, l, "")
	if err != nil {
		l.Release(true)
		return err
	}
	if err := l.Write(launch.OwnerFile{Owner: owner, ID: id, Created: s.launched.Created, Digest: p.digest}); err != nil {
		_ = s.Destroy()
		return err
	}
	m.poolMu.Lock()
	if m.closed {
		m.poolMu.Unlock()
		_ = s.Destroy()
		return ErrClosed
	}
	p.idle = append(p.idle, s)
	m.poolMu.Unlock()
	go m.watchIdle(p, s)
	return nil
}

// watchIdle replaces an idle sandbox whose process ends (its timeout, a
// violation) while it waits in the pool.
func (m *Manager) watchIdle(p *pool, s *Sandbox) {
	<-s.initDone
	m.poolMu.Lock()
	was := len(p.idle)
	p.idle = removeSandbox(p.idle, s)
	removed := len(p.idle) < was
	if removed {
		m.refillLocked(p)
	}
	m.poolMu.Unlock()
	if removed {
		_ = s.Destroy()
	}
}

func removeSandbox(list []*Sandbox, s *Sandbox) []*Sandbox {
	for i, x := range list {
		if x == s {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

// claim takes an idle sandbox of the configuration digest out of its pool
// for good (nil: none ready) and starts a refill. One that has lived half
// its lifetime, or whose process ended, is destroyed instead.
func (m *Manager) claim(digest string) *Sandbox {
	for {
		m.poolMu.Lock()
		p := m.pools[digest]
		if p == nil || len(p.idle) == 0 || m.closed {
			m.poolMu.Unlock()
			return nil
		}
		s := p.idle[0]
		p.idle = p.idle[1:]
		m.refillLocked(p)
		m.poolMu.Unlock()
		if s.fresh() {
			// Its pool key goes: the claimer's owner, if any, comes next.
			s.owner.Release(true)
			s.owner = nil
			return s
		}
		_ = s.Destroy()
	}
}

// fresh: the sandbox's process runs and has more than half its lifetime
// left.
func (s *Sandbox) fresh() bool {
	select {
	case <-s.initDone:
		return false
	default:
	}
	if s.isGone() {
		return false
	}
	if t := s.Boundary().Limits.Timeout; t > 0 {
		return time.Since(s.launched.Created) < time.Duration(t)*time.Second/2
	}
	return true
}

// refillLocked starts launches until p holds (or is filling) what it
// wants. m.poolMu is held.
func (m *Manager) refillLocked(p *pool) {
	for len(p.idle)+p.filling < p.want && !m.closed {
		p.filling++
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			err := m.fillOne(p)
			m.poolMu.Lock()
			p.filling--
			m.poolMu.Unlock()
			if err != nil && !errors.Is(err, ErrClosed) {
				logrus.Warnf("sandbox pool: refill: %v", err)
			}
		}()
	}
}

// Close stops the pools' refills and destroys their idle sandboxes; the
// sandboxes handed out stay the caller's. Launch and Prewarm fail with
// ErrClosed afterwards.
func (m *Manager) Close() error {
	m.poolMu.Lock()
	m.closed = true
	var idle []*Sandbox
	for _, p := range m.pools {
		idle = append(idle, p.idle...)
		p.idle = nil
	}
	m.poolMu.Unlock()
	m.wg.Wait()
	var errs []error
	for _, s := range idle {
		errs = append(errs, s.Destroy())
	}
	return errors.Join(errs...)
}
