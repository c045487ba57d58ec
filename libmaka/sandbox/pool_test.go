package sandbox

import (
	"sync"
	"testing"
	"time"

	"github.com/maka-runtime/maka/internal/launch"
	"github.com/maka-runtime/maka/libmaka"
)

// idleSandbox is a pool's sandbox as claim sees it, with no container.
func idleSandbox(created time.Time, timeout int64) *Sandbox {
	ctr := &libmaka.Container{Record: libmaka.Record{Boundary: libmaka.Hold(&libmaka.Boundary{Limits: libmaka.Limits{Timeout: timeout}})}}
	return &Sandbox{launched: &launch.Launched{Container: ctr, Created: created}, initDone: make(chan struct{})}
}

// A claimed sandbox is never handed out twice, across claimers racing; a
// gone one is never handed out.
func TestClaimHandsOutEachOnce(t *testing.T) {
	m := &Manager{pools: map[string]*pool{}}
	gone := idleSandbox(time.Now(), 0)
	gone.gone = true
	p := &pool{digest: "d"} // want 0: no refill in this test
	for range 20 {
		p.idle = append(p.idle, idleSandbox(time.Now(), 0))
	}
	p.idle = append([]*Sandbox{gone}, p.idle...)
	m.pools["d"] = p
	var mu sync.Mutex
	seen := map[*Sandbox]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				s := m.claim("d")
				if s == nil {
					return
				}
				mu.Lock()
				if seen[s] {
					t.Error("a sandbox was handed out twice")
				}
				seen[s] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 20 || seen[gone] {
		t.Errorf("claimed %d (want 20), the gone one: %v", len(seen), seen[gone])
	}
	if m.claim("other") != nil {
		t.Error("a claim of another configuration got a sandbox")
	}
}

// A sandbox past half its lifetime, or whose process ended, is not fresh.
func TestPoolFreshness(t *testing.T) {
	if !idleSandbox(time.Now(), 180).fresh() || !idleSandbox(time.Now().Add(-time.Hour), 0).fresh() {
		t.Error("a young sandbox, or one without a lifetime, is fresh")
	}
	if idleSandbox(time.Now().Add(-91*time.Second), 180).fresh() {
		t.Error("a sandbox past half of its 180 s is fresh")
	}
	ended := idleSandbox(time.Now(), 0)
	close(ended.initDone)
	if ended.fresh() {
		t.Error("a sandbox whose process ended is fresh")
	}
}

func TestPoolDigest(t *testing.T) {
	a, _ := poolDigest("/b", DefaultSpec("/r", IdleArgs...))
	b, _ := poolDigest("/b", DefaultSpec("/r", IdleArgs...))
	c, _ := poolDigest("/b", DefaultSpec("/r", "sleep", "1"))
	if a != b || a == c {
		t.Errorf("digests %s %s %s", a, b, c)
	}
}
