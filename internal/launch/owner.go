package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/maka-runtime/maka/libmaka"
	"golang.org/x/sys/unix"
)

// Owner keys a sandbox to whoever uses it, as the bubblewrap backend keys
// its sandboxes: a scope (a workspace, a tenant), a thread, an agent, a
// call and a kind. Scope is required; the others narrow it.
type Owner struct {
	Scope  string `json:"scope"`
	Thread string `json:"thread,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Call   string `json:"call,omitempty"`
	Kind   string `json:"kind,omitempty"`
}

// ErrOwnerBusy: another live owner holds the key.
var ErrOwnerBusy = errors.New("another owner holds it")

func (o Owner) String() string {
	return strings.Join([]string{o.Scope, o.Thread, o.Agent, o.Call, o.Kind}, "/")
}

// Key names the owner's files: fixed length whatever the fields hold.
func (o Owner) Key() string {
	sum := sha256.Sum256([]byte(strings.Join([]string{o.Scope, o.Thread, o.Agent, o.Call, o.Kind}, "\x00")))
	return hex.EncodeToString(sum[:16])
}

// OwnerFile is what an owner's sandbox is: which instance of which id (so
// that disposing of it never touches a later sandbox of the same id).
type OwnerFile struct {
	Owner   Owner     `json:"owner"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Digest  string    `json:"digest"` // the request's configuration
}

// OwnerLock is an owner key held by this process: an exclusive flock on
// <store>/owners/<key>.lock for as long as the owner's sandbox lives here.
// A process that dies releases it; the lock file is removed only by its
// holder, and a taker checks that the file it locked is still the one
// named (a remover may have unlinked it meanwhile).
type OwnerLock struct {
	dir, key string
	f        *os.File
}

func OwnersDir(rt *libmaka.Runtime) (string, error) {
	store, err := rt.Store(true)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(store.Dir, "owners")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("owners: %w", err)
	}
	return dir, nil
}

// LockOwner takes the owner key's lock, or fails with ErrOwnerBusy.
func LockOwner(dir, key string) (*OwnerLock, error) {
	path := filepath.Join(dir, key+".lock")
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("owner lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, ErrOwnerBusy
			}
			return nil, fmt.Errorf("owner lock: %w", err)
		}
		var held, named unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(path, &named) == nil && held.Ino == named.Ino && held.Dev == named.Dev {
			return &OwnerLock{dir: dir, key: key, f: f}, nil
		}
		f.Close() // removed by its last holder while we waited: again
	}
}

func (l *OwnerLock) filePath() string { return filepath.Join(l.dir, l.key+".json") }

func (l *OwnerLock) Read() (*OwnerFile, error) {
	data, err := os.ReadFile(l.filePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var of OwnerFile
	if err := json.Unmarshal(data, &of); err != nil {
		return nil, fmt.Errorf("owner file %s: %w", l.filePath(), err)
	}
	return &of, nil
}

func (l *OwnerLock) Write(of OwnerFile) error {
	data, err := json.Marshal(of)
	if err != nil {
		return err
	}
	tmp := l.filePath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, l.filePath())
}

// release gives the key up; with forget, its files go first (the owner's
// sandbox is gone).
func (l *OwnerLock) Release(forget bool) {
	if l == nil {
		return
	}
	if forget {
		os.Remove(l.filePath())
		os.Remove(filepath.Join(l.dir, l.key+".lock"))
	}
	l.f.Close()
}

// PurgeResult is what Purge did with one owner's sandbox.
type PurgeResult struct {
	Owner Owner  `json:"owner"`
	ID    string `json:"id"`
	// Result: "purged" (destroyed, or already gone), "busy" (its owner
	// lives) or "failed" (kept for the next purge, Error says why).
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// Purge destroys the sandboxes of scope's owners that are no longer alive
// (their process died) and reports those whose owner lives (busy) and those
// that could not be removed (failed, kept for the next purge). Only the
// instance an owner launched is destroyed: a later sandbox of the same id
// (its replacement) is never touched.
func Purge(rt *libmaka.Runtime, scope string) ([]PurgeResult, error) {
	if scope == "" {
		return nil, errors.New("purge: a scope is required")
	}
	dir, err := OwnersDir(rt)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("owners: %w", err)
	}
	results := []PurgeResult{}
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || len(key) != 32 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // purged meanwhile
		}
		var of OwnerFile
		if json.Unmarshal(data, &of) != nil || of.Owner.Scope != scope {
			continue
		}
		res := PurgeResult{Owner: of.Owner, ID: of.ID}
		l, err := LockOwner(dir, key)
		switch {
		case errors.Is(err, ErrOwnerBusy):
			res.Result = "busy"
		case err != nil:
			res.Result, res.Error = "failed", err.Error()
		default:
			if err := DisposeInstance(rt, of.ID, of.Created); err != nil {
				res.Result, res.Error = "failed", err.Error()
				l.Release(false)
			} else {
				res.Result = "purged"
				l.Release(true)
			}
		}
		results = append(results, res)
	}
	return results, nil
}

// DisposeInstance destroys the sandbox id if it is still the instance
// created at created; a missing one, or another instance, is done.
func DisposeInstance(rt *libmaka.Runtime, id string, created time.Time) error {
	op, err := rt.Begin(id, "purge")
	if err != nil {
		return err
	}
	defer op.End()
	if op.Record == nil || !op.Record.Created.Equal(created) {
		return nil // reaped by Begin (its owner died), gone, or replaced
	}
	ctr, err := rt.Load(id)
	if errors.Is(err, libmaka.ErrNotExist) {
		_ = rt.RemoveLeftovers(id)
		return op.Drop()
	}
	if err != nil {
		return err
	}
	return op.Teardown(ctr, nil)
}
