package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/maka-runtime/maka/libmaka/monitor"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

var violationsCommand = &cli.Command{
	Name:      "violations",
	Usage:     "print what a container tried against its boundary (watched syscalls, limits, audited writes)",
	ArgsUsage: "<container-id>  ||  --prune [--older-than DURATION]",
	Description: `The violations command prints the container's violation records, oldest
first: watched syscalls it attempted (mount, unshare, ptrace, bpf, module
loads, ...), limits it hit (oom_kill, pids.max, timeout) and, with file audit
on, writes aimed at read-only places. They are kept in
<root>/<container-id>/violations.jsonl while the container exists.
Identical records (same type, syscall, process name, action, errno) are
folded into one with a count (repeat) and its first and last time. The
journal is capped (4096 records, 1 MiB, 100 new records a second after a
burst of 1000); a last "suppressed" record says how many were dropped.
When the container has stopped, <root>/<container-id>/peak.json holds its
peak usage (memory, pids, each tmpfs) and, if the monitor destroyed it,
how long it took to empty (killed.emptyAfterMs).

Both outlive the container: when it is deleted (or a foreground run ends,
or recover reaps it) they are kept in the contract store (--state-dir),
and violations ID prints the last instance of ID that recorded something.
They are kept for 7 days, and at most the last 20 instances of an id;
--prune removes those older than --older-than (default 7 days) now.

EXAMPLE:
       # maka violations --format json box1`,
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
		&cli.BoolFlag{Name: "prune", Usage: "remove the kept violations of deleted containers older than --older-than"},
		&cli.DurationFlag{Name: "older-than", Value: libmaka.HistoryRetention, Usage: "with --prune: the age of what is removed"},
	},
	Action: func(c *cli.Context) error {
		if c.Bool("prune") {
			return pruneViolations(c)
		}
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		format := c.String("format")
		if format != "table" && format != "json" {
			return fmt.Errorf("--format: unknown format %q (want table or json)", format)
		}
		journal, err := journalOf(c, c.Args().First())
		if err != nil {
			return err
		}
		recs, stats, err := monitor.ReadViolations(journal)
		if err != nil {
			return fmt.Errorf("violations %s: %w", c.Args().First(), err)
		}
		// What the journal could not hold, last: a suppressed record
		// (its cap, its rate limit) and a journal_error one.
		recs = append(recs, stats.Notes()...)
		if format == "json" {
			return printJSON(recs)
		}
		return violationsTable(os.Stdout, recs)
	},
}

// violationsTable writes the records as violations' table.
func violationsTable(out io.Writer, recs []monitor.Record) error {
	// TIME (0) and PID (3) are never broken.
	w := newTable(4, 2, 0, 3)
	w.row("TIME", "TYPE", "ACTION", "PID", "COMM", "WHAT")
	p := libmaka.Printable
	for _, r := range recs {
		w.row(r.Time.Format("2006-01-02T15:04:05.000Z07:00"), p(r.Type), p(r.Action), pidText(r.Pid), p(r.Comm), what(r))
	}
	return w.write(out)
}

func pidText(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

// what is the record's subject in a table cell, with what the sandbox
// chose (arguments, paths) escaped.
func what(r monitor.Record) string {
	p := libmaka.Printable
	switch r.Type {
	case monitor.TypeSyscall:
		args := make([]string, len(r.Args))
		for i, a := range r.Args {
			args[i] = p(a)
		}
		s := p(r.Syscall) + "(" + strings.Join(args, ", ") + ")"
		if r.Errno != "" {
			s += " = " + p(r.Errno)
		}
		return s + repeated(r)
	case monitor.TypeFile:
		return p(r.Syscall) + " " + p(r.Path) + " " + p(r.Flags) + repeated(r)
	case monitor.TypeSuppressed, monitor.TypeJournalError:
		return strconv.FormatUint(r.Count, 10) + " record(s): " + p(r.Detail)
	case monitor.TypeNetwork:
		return r.NetworkWhat() + repeated(r)
	case monitor.TypeLimit:
		s := p(r.Kind)
		if r.Count > 0 {
			s += " x" + strconv.FormatUint(r.Count, 10)
		}
		if r.Limit > 0 {
			s += " (limit " + strconv.FormatInt(r.Limit, 10) + ")"
		}
		return s
	}
	return ""
}

// repeated says how often a folded record happened, and until when.
func repeated(r monitor.Record) string {
	if r.Repeat <= 1 {
		return ""
	}
	s := " x" + strconv.FormatUint(r.Repeat, 10)
	if r.Last != nil {
		s += " (last " + r.Last.Format("15:04:05.000") + ")"
	}
	return s
}

// journalFollower yields the records appended to a journal as they come
// (inotify on the file), for `maka events`.
type journalFollower struct {
	f   *os.File
	ifd int
	off int64
}

func followJournal(path string) (*journalFollower, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	ifd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		f.Close()
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(ifd, path, unix.IN_MODIFY|unix.IN_DELETE_SELF); err != nil {
		unix.Close(ifd)
		f.Close()
		return nil, err
	}
	return &journalFollower{f: f, ifd: ifd}, nil
}

// run sends each new record to out, from the journal's start, until the
// journal is removed (the container deleted) or unreadable.
func (jf *journalFollower) run(out chan<- monitor.Record) {
	defer close(out)
	defer jf.f.Close()
	defer unix.Close(jf.ifd)
	buf := make([]byte, 4096)
	for {
		if _, err := jf.f.Seek(jf.off, 0); err != nil {
			return
		}
		recs, used, err := monitor.ReadRecords(jf.f)
		if err != nil {
			return
		}
		jf.off += used
		for _, r := range recs {
			out <- r
		}
		n, err := unix.Read(jf.ifd, buf)
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&(unix.IN_DELETE_SELF|unix.IN_IGNORED) != 0 {
				return
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// journalOf is the violation journal of container id: the live one, or
// else the one kept of its last instance.
func journalOf(c *cli.Context, id string) (string, error) {
	ctr, err := loadContainer(c)
	if err == nil {
		return filepath.Join(ctr.StateDir(), monitor.JournalFile), nil
	}
	if !errors.Is(err, libmaka.ErrNotExist) {
		return "", err
	}
	rt, rerr := runtimeOf(c)
	if rerr != nil {
		return "", rerr
	}
	store, serr := rt.Store(false)
	if serr != nil || store == nil || !libmaka.ValidID(id) {
		return "", err
	}
	hist, herr := store.History(id)
	if herr != nil {
		return "", herr
	}
	if len(hist) == 0 {
		return "", err
	}
	// The last instance: its journal may be absent (only a peak was kept),
	// which reads as no records.
	return filepath.Join(hist[len(hist)-1].Dir, monitor.JournalFile), nil
}

// pruneViolations removes what is kept of deleted containers older than
// --older-than.
func pruneViolations(c *cli.Context) error {
	if err := checkArgs(c, 0, exactArgs); err != nil {
		return fmt.Errorf("--prune takes no container id: it prunes every kept instance older than --older-than")
	}
	age := c.Duration("older-than")
	if age < 0 {
		return fmt.Errorf("--older-than %s: must not be negative", age)
	}
	rt, err := runtimeOf(c)
	if err != nil {
		return err
	}
	store, err := rt.Store(false)
	if err != nil || store == nil {
		return err
	}
	n, err := store.PruneHistory(time.Now().Add(-age))
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "violations: pruned %d kept instance(s)\n", n)
	return nil
}

// denialSummary is one line saying what the monitor denied (deny mode),
// grouped by syscall in the order first seen, and how many connections the
// egress proxy refused: "" if nothing.
func denialSummary(recs []monitor.Record) string {
	counts := map[string]int{}
	var order []string
	refused := 0
	for _, r := range recs {
		if r.Type == monitor.TypeNetwork {
			refused += int(r.Times())
			continue
		}
		if r.Action != monitor.ActionDeny {
			continue
		}
		what := libmaka.Printable(r.Syscall)
		if what == "" {
			what = libmaka.Printable(r.Type)
		}
		if counts[what] == 0 {
			order = append(order, what)
		}
		counts[what] += int(r.Times())
	}
	var lines []string
	if len(order) > 0 {
		total := 0
		parts := make([]string, len(order))
		for i, w := range order {
			parts[i] = fmt.Sprintf("%s x%d", w, counts[w])
			total += counts[w]
		}
		lines = append(lines, fmt.Sprintf("%d call(s) denied: %s", total, strings.Join(parts, ", ")))
	}
	if refused > 0 {
		lines = append(lines, fmt.Sprintf("%d connection(s) refused by the egress proxy", refused))
	}
	return strings.Join(lines, "; ")
}
