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
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/maka-runtime/maka/internal/printable"
)

// Record types.
const (
	TypeSyscall = "syscall" // a watched syscall was attempted
	TypeFile    = "file"    // a write-mode open aimed at a read-only part (audit)
	TypeLimit   = "limit"   // a cgroup limit was hit, or the timeout expired
	TypeNetwork = "network" // the egress proxy refused a connection
	// Never in the journal: ReadViolations adds them from its stats.
	TypeSuppressed   = "suppressed"    // records the journal's cap or rate limit dropped
	TypeJournalError = "journal_error" // records that could not be written
)

// Limit kinds.
const (
	LimitOOMKill = "oom_kill" // memory.events oom_kill
	LimitPidsMax = "pids.max" // pids.events max: a fork refused
	LimitTimeout = "timeout"  // the sandbox outlived org.maka.timeout
	// LimitMonitorLost: the sandbox's monitor died, and the sandbox was
	// killed for it (fail closed: guard.go, libmaka.FailClosed).
	LimitMonitorLost = "monitor_lost"
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
	// Repeat and Last: a folded record stands for Repeat identical ones
	// (absent: one), the first at Time, the last at Last. See Journal.
	Repeat uint64     `json:"repeat,omitempty"`
	Last   *time.Time `json:"last,omitempty"`
	// Detail: what a record ReadViolations adds says (suppressed,
	// journal_error), or a network record's cause in a few words.
	Detail string `json:"detail,omitempty"`
	// Host, Port, Addr, Reason and Proto: a network record's request as
	// the sandbox asked (Host is its choice: escape it), the address
	// refused if any, why (libmaka/egress's reasons) and how it asked
	// (connect, http, socks5).
	Host   string `json:"host,omitempty"`
	Port   int    `json:"port,omitempty"`
	Addr   string `json:"addr,omitempty"`
	Reason string `json:"reason,omitempty"`
	Proto  string `json:"proto,omitempty"`
}

// Times is how many occurrences the record stands for.
func (r Record) Times() uint64 {
	if r.Repeat == 0 {
		return 1
	}
	return r.Repeat
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
	case TypeSuppressed, TypeJournalError:
		fmt.Fprintf(&b, "%s x%d: %s", r.Type, r.Count, r.Detail)
	case TypeNetwork:
		fmt.Fprintf(&b, "network %s", r.NetworkWhat())
	default:
		fmt.Fprintf(&b, "%s", r.Type)
	}
	if r.Repeat > 1 {
		fmt.Fprintf(&b, " x%d", r.Repeat)
	}
	switch r.Action {
	case ActionDeny:
		if r.Errno == "" {
			b.WriteString(", refused")
		} else {
			fmt.Fprintf(&b, ", denied (%s)", r.Errno)
		}
	case ActionKill:
		b.WriteString(", sandbox killed")
	}
	return b.String()
}

// NetworkWhat is a network record's subject in one line: the reason, the
// destination asked for, the address refused and the protocol, with what
// the sandbox chose escaped.
func (r Record) NetworkWhat() string {
	var b strings.Builder
	b.WriteString(printable.String(r.Reason))
	if r.Host != "" {
		fmt.Fprintf(&b, " %s", printable.String(net.JoinHostPort(r.Host, strconv.Itoa(r.Port))))
	}
	if r.Addr != "" {
		fmt.Fprintf(&b, " (%s)", printable.String(r.Addr))
	}
	if r.Proto != "" {
		fmt.Fprintf(&b, " via %s", printable.String(r.Proto))
	}
	if r.Detail != "" {
		fmt.Fprintf(&b, ": %s", printable.String(r.Detail))
	}
	return b.String()
}

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
