// Package monitor watches a running sandbox: it answers the seccomp user
// notifications of the watched syscalls, follows the cgroup's limit events,
// enforces the sandbox's timeout, and records every violation in an
// append-only journal (<state dir>/violations.jsonl). Under onViolation
// "kill" the first violation destroys the whole sandbox (cgroup.kill).
package monitor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/maka-runtime/maka/internal/printable"
)

// Record types.
const (
	TypeSyscall = "syscall" // a watched syscall was attempted
	TypeFile    = "file"    // a write-mode open aimed at a read-only part (audit)
	TypeLimit   = "limit"   // a cgroup limit was hit, or the timeout expired
)

// Limit kinds.
const (
	LimitOOMKill = "oom_kill" // memory.events oom_kill
	LimitPidsMax = "pids.max" // pids.events max: a fork refused
	LimitTimeout = "timeout"  // the sandbox outlived org.maka.timeout
)

// Actions: what the monitor did about a record.
const (
	ActionDeny  = "deny"  // the syscall was refused (errno), the sandbox lives on
	ActionKill  = "kill"  // the sandbox was destroyed
	ActionAudit = "audit" // recorded only; the kernel answered
)

// Record is one line of violations.jsonl.
type Record struct {
	Time   time.Time `json:"time"`
	Type   string    `json:"type"`
	Action string    `json:"action"`
	// Pid is the process as the container sees it (its pid namespace),
	// HostPid as the host does.
	Pid     int    `json:"pid,omitempty"`
	HostPid int    `json:"hostPid,omitempty"`
	Comm    string `json:"comm,omitempty"`
	Syscall string `json:"syscall,omitempty"`
	// Args are the syscall's six raw arguments, in hex.
	Args  []string `json:"args,omitempty"`
	Errno string   `json:"errno,omitempty"` // the answer given (deny): EPERM
	// Path and Flags: a file record's open, as the process named it.
	Path  string `json:"path,omitempty"`
	Flags string `json:"flags,omitempty"`
	// Kind, Count and Limit: a limit record (Count new events of Kind).
	Kind  string `json:"kind,omitempty"`
	Count uint64 `json:"count,omitempty"`
	Limit int64  `json:"limit,omitempty"`
}

// Summary is the record in one line, for people (run's error, the table),
// with what the sandbox chose (its process name, paths, arguments) escaped.
func (r Record) Summary() string {
	var b strings.Builder
	switch r.Type {
	case TypeSyscall:
		args := make([]string, len(r.Args))
		for i, a := range r.Args {
			args[i] = printable.String(a)
		}
		fmt.Fprintf(&b, "syscall %s(%s) by pid %d (%s)", printable.String(r.Syscall), strings.Join(args, ", "), r.Pid, printable.String(r.Comm))
	case TypeFile:
		fmt.Fprintf(&b, "%s of %s (%s) by pid %d (%s): a read-only part of the boundary",
			printable.String(r.Syscall), printable.String(r.Path), printable.String(r.Flags), r.Pid, printable.String(r.Comm))
	case TypeLimit:
		fmt.Fprintf(&b, "limit %s", printable.String(r.Kind))
		if r.Count > 0 {
			fmt.Fprintf(&b, " x%d", r.Count)
		}
		if r.Limit > 0 {
			fmt.Fprintf(&b, " (limit %d)", r.Limit)
		}
	default:
		fmt.Fprintf(&b, "%s", r.Type)
	}
	switch r.Action {
	case ActionDeny:
		fmt.Fprintf(&b, ", denied (%s)", r.Errno)
	case ActionKill:
		b.WriteString(", sandbox killed")
	}
	return b.String()
}

// JournalFile is the name of the journal in a container's state directory.
const JournalFile = "violations.jsonl"

// Journal appends records to violations.jsonl, one JSON object a line,
// each synced to disk before Append returns.
type Journal struct {
	mu sync.Mutex
	f  *os.File
}

// OpenJournal opens (creating it if needed) the journal at path.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("violations journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// Append writes r as one line and syncs it.
func (j *Journal) Append(r Record) error {
	if err := j.Write(r); err != nil {
		return err
	}
	return j.Sync()
}

// Write appends r without waiting for the disk: readers see it at once.
func (j *Journal) Write(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("violations journal: %w", err)
	}
	return nil
}

// Sync makes what Write wrote durable.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Sync()
}

// Close closes the journal.
func (j *Journal) Close() error { return j.f.Close() }

// ReadJournal reads every record of the journal at path; a missing journal
// has none. A torn last line (a crash mid-write) is ignored.
func ReadJournal(path string) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return []Record{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, _, err := ReadRecords(f)
	return recs, err
}

// ReadRecords decodes the complete lines of r; it returns how many bytes
// they took, so that a follower can resume after them.
func ReadRecords(f *os.File) ([]Record, int64, error) {
	recs := []Record{}
	var used int64
	rd := bufio.NewReader(f)
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			// EOF, with a partial line (not yet complete) or none.
			return recs, used, nil
		}
		used += int64(len(line))
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return recs, used, fmt.Errorf("%s: malformed record at byte %d: %w", f.Name(), used-int64(len(line)), err)
		}
		recs = append(recs, r)
	}
}
