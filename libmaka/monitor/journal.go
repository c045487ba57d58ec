package monitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// JournalFile is the name of the journal in a container's state directory.
const JournalFile = "violations.jsonl"

// StatsFile, beside the journal, counts what the journal could not hold:
// records its cap or rate limit suppressed, and writes that failed. It is
// small and rewritten whole (a rename) at each flush.
const StatsFile = "violations.stats.json"

// Limits bound one sandbox's journal. The sandbox chooses what it
// attempts, and every attempt of a watched syscall reaches the monitor: a
// loop of unshare under deny is ~10^4 records a second. The journal lives
// in the state root (/run: host memory) and is copied into the history
// (/var/lib/maka: host disk) at delete, so it must not grow with the
// sandbox's effort.
type Limits struct {
	// MaxRecords and MaxBytes cap the journal's lines and size.
	MaxRecords int
	MaxBytes   int64
	// Rate and Burst limit new lines (a token bucket: Rate a second, at
	// most Burst at once). Folded repeats cost nothing until a flush.
	Rate  float64
	Burst float64
}

// DefaultLimits: 4096 records or 1 MiB, whichever comes first (a record
// is ~150-250 bytes), and 100 new records a second after a burst of 1000.
// Identical records fold (see Journal), so a sandbox that repeats one
// attempt uses one line a FlushInterval however fast it loops; only
// attempts that differ (a new process name each) use the rate and the cap.
var DefaultLimits = Limits{MaxRecords: 4096, MaxBytes: 1 << 20, Rate: 100, Burst: 1000}

// LimitsEnv names the environment variable that lowers DefaultLimits
// (maka's own environment, which the detached monitor inherits: the
// operator's, never the sandbox's or the bundle's; a value above the
// default is an error), e.g.
// "records=4096,bytes=1048576,rate=100,burst=1000"; keys left out keep
// their default.
const LimitsEnv = "MAKA_JOURNAL_LIMITS"

// JournalLimits are DefaultLimits with LimitsEnv applied; a malformed
// value is an error naming the variable and the part.
func JournalLimits() (Limits, error) {
	return parseLimits(os.Getenv(LimitsEnv))
}

func parseLimits(v string) (Limits, error) {
	lim := DefaultLimits
	if strings.TrimSpace(v) == "" {
		return lim, nil
	}
	for _, part := range strings.Split(v, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.ParseFloat(val, 64)
		if !ok || err != nil || n < 0 || n > 1<<40 {
			return DefaultLimits, fmt.Errorf("%s: %q: want KEY=NUMBER (records, bytes, rate, burst), a non-negative number", LimitsEnv, part)
		}
		var ceiling float64
		switch key {
		case "records":
			lim.MaxRecords, ceiling = int(n), float64(DefaultLimits.MaxRecords)
		case "bytes":
			lim.MaxBytes, ceiling = int64(n), float64(DefaultLimits.MaxBytes)
		case "rate":
			lim.Rate, ceiling = n, DefaultLimits.Rate
		case "burst":
			lim.Burst, ceiling = n, DefaultLimits.Burst
		default:
			return DefaultLimits, fmt.Errorf("%s: unknown key %q (want records, bytes, rate or burst)", LimitsEnv, key)
		}
		// The variable only tightens: the bound on what a sandbox makes
		// the host store holds whoever sets maka's environment.
		if n > ceiling {
			return DefaultLimits, fmt.Errorf("%s: %q: %s may only be lowered (at most %g)", LimitsEnv, part, key, ceiling)
		}
	}
	return lim, nil
}

// FlushInterval is how often the monitor writes the folded repeats, the
// stats, and syncs the journal.
const FlushInterval = time.Second

// maxFoldKeys bounds the fold table: a record of a new kind past it is
// written (or suppressed) without being remembered.
const maxFoldKeys = 1024

// Stats is StatsFile: what the journal could not hold.
type Stats struct {
	// Suppressed records (counting a folded one as its repeats): ByCap
	// of them dropped at the cap, ByRate by the rate limit.
	Suppressed      uint64     `json:"suppressed"`
	ByCap           uint64     `json:"byCap,omitempty"`
	ByRate          uint64     `json:"byRate,omitempty"`
	FirstSuppressed *time.Time `json:"firstSuppressed,omitempty"`
	LastSuppressed  *time.Time `json:"lastSuppressed,omitempty"`
	// WriteErrors counts writes of the journal that failed, LastError
	// says why.
	WriteErrors uint64 `json:"writeErrors,omitempty"`
	LastError   string `json:"lastError,omitempty"`
}

func (s *Stats) suppress(n uint64, at time.Time, byRate bool) {
	if n == 0 {
		return
	}
	s.Suppressed += n
	if byRate {
		s.ByRate += n
	} else {
		s.ByCap += n
	}
	at = at.UTC()
	if s.FirstSuppressed == nil {
		s.FirstSuppressed = &at
	}
	s.LastSuppressed = &at
}

// foldKey is what makes two records identical: not the pid, the time or
// the arguments (an address, a fresh flag mix), which a loop varies.
type foldKey struct {
	typ, syscall, comm, action, errno, path, flags, kind string
	// A network record's: the same refusal of the same destination.
	host, reason, proto string
	port                int
}

func keyOf(r Record) foldKey {
	return foldKey{r.Type, r.Syscall, r.Comm, r.Action, r.Errno, r.Path, r.Flags, r.Kind, r.Host, r.Reason, r.Proto, r.Port}
}

// fold is a kind of record already in the journal, and its repeats since
// the last flush.
type fold struct {
	rec         Record
	pending     uint64 // repeats not yet written
	count       uint64 // their limit events (limit records)
	first, last time.Time
}

// Journal appends records to violations.jsonl, one JSON object a line,
// bounded by its Limits. The first record of a kind is written at once
// (readers, `maka events`, see it); its repeats are counted and written as
// one line (repeat, last) at the next Flush. A kill record is written at
// once, never folded or dropped: it says why the sandbox died.
type Journal struct {
	mu     sync.Mutex
	f      *os.File
	stats  string // StatsFile's path
	lim    Limits
	tmpfs  bool // no fsync: see Flush
	lines  int
	bytes  int64
	tokens float64
	refill time.Time
	folds  map[foldKey]*fold
	st     Stats
	dirty  bool // st changed since the last flush
	closed bool
}

// OpenJournal opens (creating it if needed) the journal at path, bounded
// by JournalLimits.
func OpenJournal(path string) (*Journal, error) {
	lim, err := JournalLimits()
	if err != nil {
		return nil, err
	}
	return OpenJournalLimits(path, lim)
}

// OpenJournalLimits opens the journal at path bounded by lim. What the
// file and its stats already hold counts against the caps.
func OpenJournalLimits(path string, lim Limits) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("violations journal: %w", err)
	}
	j := &Journal{f: f, stats: filepath.Join(filepath.Dir(path), StatsFile), lim: lim, tokens: lim.Burst, refill: time.Now(), folds: map[foldKey]*fold{}}
	lines, size, err := countLines(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("violations journal: %w", err)
	}
	j.lines, j.bytes = lines, size
	if st, err := readStats(j.stats); err == nil {
		j.st = st
	}
	var sfs unix.Statfs_t
	if unix.Fstatfs(int(f.Fd()), &sfs) == nil && (sfs.Type == unix.TMPFS_MAGIC || sfs.Type == unix.RAMFS_MAGIC) {
		j.tmpfs = true
	}
	return j, nil
}

func countLines(f *os.File) (int, int64, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, 0, err
	}
	n, size := 0, int64(0)
	buf := make([]byte, 64<<10)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		size += int64(k)
		if err == io.EOF {
			return n, size, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}

// Append records r: written at once if it is new (within the cap and the
// rate limit), counted if it repeats a record already written, counted as
// suppressed otherwise. Nothing waits for the disk. A failed write is
// returned, and counted in the stats.
func (j *Journal) Append(r Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r.Action == ActionKill {
		return j.writeLocked(r)
	}
	k := keyOf(r)
	if f := j.folds[k]; f != nil {
		if f.pending == 0 {
			f.first = r.Time
		}
		f.pending++
		f.count += r.Count
		f.last = r.Time
		return nil
	}
	if j.full(r) {
		j.st.suppress(1, r.Time, false)
		j.dirty = true
		return nil
	}
	if !j.take() {
		j.st.suppress(1, r.Time, true)
		j.dirty = true
		return nil
	}
	if err := j.writeLocked(r); err != nil {
		return err
	}
	if len(j.folds) < maxFoldKeys {
		j.folds[k] = &fold{rec: r}
	}
	return nil
}

// full reports whether r's line would pass the caps.
func (j *Journal) full(r Record) bool {
	line, _ := json.Marshal(r)
	return j.lines+1 > j.lim.MaxRecords || j.bytes+int64(len(line))+1 > j.lim.MaxBytes
}

// take takes a token of the rate limit.
func (j *Journal) take() bool {
	now := time.Now()
	j.tokens += now.Sub(j.refill).Seconds() * j.lim.Rate
	j.refill = now
	if j.tokens > j.lim.Burst {
		j.tokens = j.lim.Burst
	}
	if j.tokens < 1 {
		return false
	}
	j.tokens--
	return true
}

func (j *Journal) writeLocked(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if _, err := j.f.Write(line); err != nil {
		j.st.WriteErrors++
		j.st.LastError = err.Error()
		j.dirty = true
		return fmt.Errorf("violations journal: %w", err)
	}
	j.lines++
	j.bytes += int64(len(line))
	return nil
}

// Flush writes the repeats counted since the last flush (one line for
// each kind: repeat, the first and last time), the stats if they changed,
// and syncs the journal. On a tmpfs (the state root is /run) there is no
// sync: the file is in memory, no disk can lose it, and fsync there only
// costs a system call; a journal on a disk (--root elsewhere) is synced
// here, once a FlushInterval and after a kill, never once a record (a
// flood of records would be a flood of disk writes).
func (j *Journal) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.flushLocked()
}

func (j *Journal) flushLocked() error {
	var errs []error
	for _, f := range j.folds {
		if f.pending == 0 {
			continue
		}
		r := f.rec
		r.Time, r.Repeat = f.first, f.pending
		last := f.last
		r.Last = &last
		if r.Type == TypeLimit {
			r.Count = f.count
		}
		if j.full(r) {
			j.st.suppress(f.pending, f.last, false)
			j.dirty = true
		} else if err := j.writeLocked(r); err != nil {
			errs = append(errs, err)
		}
		f.pending, f.count = 0, 0
	}
	if j.dirty {
		if err := writeStats(j.stats, j.st); err != nil {
			errs = append(errs, fmt.Errorf("violations stats: %w", err))
		} else {
			j.dirty = false
		}
	}
	if !j.tmpfs {
		if err := j.f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("violations journal: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Stats is what the journal could not hold, so far.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st
}

// Close flushes and closes the journal.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	ferr := j.flushLocked()
	return errors.Join(ferr, j.f.Close())
}

func writeStats(path string, st Stats) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// readStats reads StatsFile; a missing one is all zero.
func readStats(path string) (Stats, error) {
	var st Stats
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// ReadViolations reads the journal at path with its records folded (each
// kind once, in the order first seen: repeat the total, last the latest
// time), and the stats beside it.
func ReadViolations(path string) ([]Record, Stats, error) {
	recs, err := ReadJournal(path)
	if err != nil {
		return nil, Stats{}, err
	}
	st, err := readStats(filepath.Join(filepath.Dir(path), StatsFile))
	return Fold(recs), st, err
}

// Fold merges identical records (as the journal folds them), keeping the
// first one's place; kill records stay as they are.
func Fold(recs []Record) []Record {
	out := make([]Record, 0, len(recs))
	at := map[foldKey]int{}
	for _, r := range recs {
		if r.Action == ActionKill {
			out = append(out, r)
			continue
		}
		last := r.Time
		if r.Last != nil && r.Last.After(last) {
			last = *r.Last
		}
		i, ok := at[keyOf(r)]
		if !ok {
			at[keyOf(r)] = len(out)
			if r.Repeat > 1 || r.Last != nil {
				r.Last = &last
			}
			out = append(out, r)
			continue
		}
		m := &out[i]
		m.Repeat = m.Times() + r.Times()
		if r.Type == TypeLimit {
			m.Count += r.Count
		}
		if r.Time.Before(m.Time) {
			m.Time = r.Time
		}
		if m.Last == nil || last.After(*m.Last) {
			m.Last = &last
		}
	}
	return out
}

// Notes are the records ReadViolations' stats add for people: how many
// records were suppressed, how many could not be written.
func (s Stats) Notes() []Record {
	var out []Record
	if s.Suppressed > 0 {
		r := Record{Type: TypeSuppressed, Action: "drop", Count: s.Suppressed,
			Detail: fmt.Sprintf("%d at the journal's cap, %d by its rate limit", s.ByCap, s.ByRate)}
		if s.FirstSuppressed != nil {
			r.Time = *s.FirstSuppressed
		}
		r.Last = s.LastSuppressed
		out = append(out, r)
	}
	if s.WriteErrors > 0 {
		out = append(out, Record{Type: TypeJournalError, Action: "lost", Count: s.WriteErrors, Detail: s.LastError})
	}
	return out
}

// CopyJournal copies the journal src to dst (the history) within lim's
// caps, cut at a line; the records left out are added to the stats, which
// go to StatsFile beside dst.
func CopyJournal(src, dst string, lim Limits) error {
	st, err := readStats(filepath.Join(filepath.Dir(src), StatsFile))
	if err != nil {
		st = Stats{}
	}
	in, err := os.Open(src)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if in != nil {
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		rd := bufio.NewReader(in)
		w := bufio.NewWriter(out)
		lines, size := 0, int64(0)
		var left uint64
		var lastLeft time.Time
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				break // EOF, or a torn last line
			}
			if lines+1 > lim.MaxRecords || size+int64(len(line)) > lim.MaxBytes {
				var r Record
				if json.Unmarshal(line, &r) == nil {
					left += r.Times()
					lastLeft = r.Time
				} else {
					left++
				}
				continue
			}
			if _, err := w.Write(line); err != nil {
				out.Close()
				return err
			}
			lines++
			size += int64(len(line))
		}
		if err := w.Flush(); err != nil {
			out.Close()
			return err
		}
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		st.suppress(left, lastLeft, false)
	}
	if st == (Stats{}) {
		return nil
	}
	return writeStats(filepath.Join(filepath.Dir(dst), StatsFile), st)
}
