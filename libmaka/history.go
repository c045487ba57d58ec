package libmaka

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/maka-runtime/maka/libmaka/monitor"
	"golang.org/x/sys/unix"
)

// A sandbox's violations and peak outlive it: when its state goes (delete,
// a foreground run's end, a Manager's Destroy, recover), they are copied
// into the contract store's history, where `maka violations ID` finds them
// until they are pruned: automatically once older than HistoryRetention or
// beyond the newest HistoryPerID instances of an id, or by
// `maka violations --prune`.
const (
	HistoryRetention = 7 * 24 * time.Hour
	HistoryPerID     = 20
)

// historyFiles are what is kept of a sandbox's state directory. The
// journal is copied within monitor.DefaultLimits (it is bounded when
// written, but a journal written before the bounds, or by another build,
// may not be), with its stats.
var historyFiles = []string{monitor.JournalFile, monitor.StatsFile, monitor.PeakFile}

// historyStamp names an instance by its creation time (sortable).
const historyStamp = "20060102T150405.000000000Z"

// HistoryEntry is one past instance of a sandbox.
type HistoryEntry struct {
	ID      string
	Created time.Time
	// Dir holds its violations.jsonl and peak.json (either may be absent).
	Dir string
}

func (s *Store) historyDir() string { return filepath.Join(s.Dir, "history") }

// Archive copies the violation journal and peak of instance created of
// container id, whose state directory is stateDir, into the history. An
// instance that recorded nothing and never stopped (a failed create) is not
// kept; archiving twice keeps the first copy.
func (s *Store) Archive(id string, created time.Time, stateDir string) error {
	var have []string
	for _, name := range historyFiles {
		if fi, err := os.Stat(filepath.Join(stateDir, name)); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			have = append(have, name)
		}
	}
	if len(have) == 0 {
		return nil
	}
	parent := filepath.Join(s.historyDir(), id)
	dir := filepath.Join(parent, created.UTC().Format(historyStamp))
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".archive-")
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; a leftover on error
	for _, name := range have {
		var err error
		switch name {
		case monitor.StatsFile: // with the journal
		case monitor.JournalFile:
			lim, _ := monitor.JournalLimits() // malformed: the defaults
			err = monitor.CopyJournal(filepath.Join(stateDir, name), filepath.Join(tmp, name), lim)
		default:
			err = copyFile(filepath.Join(stateDir, name), filepath.Join(tmp, name))
		}
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	if !slices.Contains(have, monitor.JournalFile) && slices.Contains(have, monitor.StatsFile) {
		if err := copyFile(filepath.Join(stateDir, monitor.StatsFile), filepath.Join(tmp, monitor.StatsFile)); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) && !errors.Is(err, unix.ENOTEMPTY) {
		return fmt.Errorf("history: %w", err)
	}
	_, err = s.pruneID(id, time.Now().Add(-HistoryRetention))
	return err
}

// History lists the kept instances of container id, oldest first.
func (s *Store) History(id string) ([]HistoryEntry, error) {
	entries, err := os.ReadDir(filepath.Join(s.historyDir(), id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var out []HistoryEntry
	for _, e := range entries {
		t, err := time.Parse(historyStamp, e.Name())
		if err != nil || !e.IsDir() {
			continue // a temporary directory, or not ours
		}
		out = append(out, HistoryEntry{ID: id, Created: t, Dir: filepath.Join(s.historyDir(), id, e.Name())})
	}
	slices.SortFunc(out, func(a, b HistoryEntry) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// PruneHistory removes every kept instance created before cutoff, and all
// but the newest HistoryPerID of each id; it returns how many it removed.
func (s *Store) PruneHistory(cutoff time.Time) (int, error) {
	entries, err := os.ReadDir(s.historyDir())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	total := 0
	for _, e := range entries {
		if !e.IsDir() || !ValidID(e.Name()) {
			continue
		}
		n, err := s.pruneID(e.Name(), cutoff)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (s *Store) pruneID(id string, cutoff time.Time) (int, error) {
	hist, err := s.History(id)
	if err != nil {
		return 0, err
	}
	removed := 0
	for i, h := range hist {
		if h.Created.Before(cutoff) || i < len(hist)-HistoryPerID {
			if err := os.RemoveAll(h.Dir); err != nil {
				return removed, fmt.Errorf("history: %w", err)
			}
			removed++
		}
	}
	if removed == len(hist) {
		_ = os.Remove(filepath.Join(s.historyDir(), id)) // empty now
	}
	return removed, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
