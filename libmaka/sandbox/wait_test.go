package sandbox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/maka-runtime/maka/internal/launch"
)

// waitable is a sandbox as Wait sees it, with no container: its init's end
// is what the test says it is.
func waitable() *Sandbox {
	return &Sandbox{launched: &launch.Launched{}, initDone: make(chan struct{})}
}

// Wait returns the init's code once it is reaped, to every waiter, and
// again to one that comes later.
func TestWaitReturnsTheInitsCode(t *testing.T) {
	s := waitable()
	var wg sync.WaitGroup
	codes := make([]int, 3)
	errs := make([]error, 3)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], errs[i] = s.Wait(context.Background())
		}()
	}
	time.Sleep(50 * time.Millisecond) // the waiters block meanwhile
	s.initCode = 137
	close(s.initDone)
	wg.Wait()
	for i := range codes {
		if codes[i] != 137 || errs[i] != nil {
			t.Errorf("waiter %d: %d %v, want 137", i, codes[i], errs[i])
		}
	}
	if code, err := s.Wait(context.Background()); code != 137 || err != nil {
		t.Errorf("after the init was reaped: %d %v, want 137", code, err)
	}
}

// A cancelled or expired ctx ends the wait, not the sandbox.
func TestWaitHonoursContext(t *testing.T) {
	s := waitable()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if code, err := s.Wait(ctx); code != -1 || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %d %v", code, err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if code, err := s.Wait(ctx); code != -1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %d %v", code, err)
	}
	select {
	case <-s.initDone:
		t.Error("the wait's end ended the init")
	default:
	}
	// A status already there wins over a ctx that is also done.
	s.initCode = 7
	close(s.initDone)
	if code, err := s.Wait(ctx); code != 7 || err != nil {
		t.Errorf("exited: %d %v", code, err)
	}
}
