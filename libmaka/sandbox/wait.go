package sandbox

import (
	"context"
	"fmt"
)

// Wait waits until the sandbox's init has exited and returns its exit
// code, as `maka run` exits with it: 128+N if signal N killed it (137
// when Destroy or the monitor killed it). It may be called any number of
// times, before or after the init exits, and from several goroutines.
//
// When the monitor destroyed the sandbox (a violation under onViolation
// kill, or the sandbox's timeout), the code is still the init's and the
// error is a *BoundaryViolation saying why (Code() SANDBOX_TIMEOUT or
// SANDBOX_BOUNDARY_VIOLATION), as `maka run` reports it on stderr.
//
// If ctx ends first, Wait returns -1 and ctx.Err(): the sandbox is left
// as it is (it runs on; Destroy ends it).
//
// Wait does not remove the sandbox: its cgroup, state and record stay,
// as after `maka run --keep`, until Destroy.
func (s *Sandbox) Wait(ctx context.Context) (int, error) {
	// No polling: the goroutine that reaps the init (Launch) closes
	// initDone once the kernel has reported its status. A status already
	// there is returned even if ctx is done too (select would pick either).
	select {
	case <-s.initDone:
	default:
		select {
		case <-s.initDone:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
	if s.initErr != nil {
		return -1, fmt.Errorf("sandbox %s: the exit status of its process: %w", s.ID(), s.initErr)
	}
	// The monitor records why it kills before it kills: once the init is
	// reaped, a kill of the monitor's is known here.
	if k := s.launched.MonitorErr(); k != nil {
		return s.initCode, k
	}
	return s.initCode, nil
}
