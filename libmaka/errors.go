package libmaka

import (
	"errors"
	"fmt"

	"github.com/opencontainers/runc/libcontainer"
)

// Sentinel errors. Callers test them with errors.Is. Their texts are the
// strings that clients such as containerd and conmon match, so they are
// produced here and nowhere else.
var (
	// ErrNotExist: "container X does not exist" (containerd maps it to NotFound).
	ErrNotExist = errors.New("does not exist")
	// ErrExist: create with an id that is already taken.
	ErrExist = errors.New("already exists")
	// ErrNotRunning: signal to a container whose init has exited.
	ErrNotRunning = errors.New("container not running")
	// ErrWrongState: an operation the container's current status forbids.
	ErrWrongState = errors.New("invalid container state")
	// ErrNoCgroup2: the host is not in cgroup v2 unified mode.
	ErrNoCgroup2 = errors.New("cgroup v2 unified hierarchy required")
	// ErrHostUnfit: the host lacks something maka needs (CheckHostSupport).
	ErrHostUnfit = errors.New("maka cannot run sandboxes on this host")
)

// containerError wraps err with the container id in the shape clients parse:
// "container <id> does not exist", "container <id> already exists".
func containerError(id string, err error) error {
	switch {
	case errors.Is(err, libcontainer.ErrNotExist):
		return fmt.Errorf("container %s %w", id, ErrNotExist)
	case errors.Is(err, libcontainer.ErrExist):
		return fmt.Errorf("container %s %w", id, ErrExist)
	case errors.Is(err, libcontainer.ErrNotRunning):
		return ErrNotRunning
	case errors.Is(err, libcontainer.ErrInvalidID):
		if len(id) > 64 {
			return InvalidIDError(id)
		}
		return fmt.Errorf("container id %q: %w (%s)", id, err, IDRule)
	}
	return err
}

// StateError reports an operation refused by the container's status.
func StateError(id, op string, status Status) error {
	return fmt.Errorf("cannot %s container %s: it is %s: %w", op, id, status, ErrWrongState)
}
