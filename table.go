package main

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// tableWidth is the width every table of maka's fits in: a terminal's
// default, and what a pasted bug report keeps unbroken.
const tableWidth = 80

// table lays out rows of cells as text/tabwriter does (each column as wide
// as its widest cell plus padding, at least minWidth; the last cell is not
// padded), and wraps what would pass tableWidth: minWidth is dropped, then
// the widest column that may wrap gives up width until the rows fit, and its cells continue on the
// next lines, indented under the column. A cell's first line keeps its
// beginning, so that the row's first line still starts with its key.
// Tables that fit print exactly as tabwriter printed them.
type table struct {
	minWidth, padding int
	rows              [][]string
	// keep: columns never wrapped (timestamps, pids), by index.
	keep map[int]bool
	// hang indents a cell's continuation lines further, so that in a
	// list of long items (boundary's verdict) each item's start stands out.
	hang int
	// noWrap: one line per row whatever its width, as tabwriter printed
	// it (list to a pipe: scripts, runc's own suite among them, read one
	// container per line).
	noWrap bool
}

func newTable(minWidth, padding int, keep ...int) *table {
	t := &table{minWidth: minWidth, padding: padding, keep: map[int]bool{}}
	for _, k := range keep {
		t.keep[k] = true
	}
	return t
}

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// columnFloor: a wrapped column keeps at least this much text per line.
const columnFloor = 8

func (t *table) write(w io.Writer) error {
	cols := 0
	for _, r := range t.rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return nil
	}
	// text[i]: the widest cell of column i (its text, without padding).
	text := make([]int, cols)
	for _, r := range t.rows {
		for i, c := range r {
			text[i] = max(text[i], utf8.RuneCountInString(c))
		}
	}
	// The width a column takes on the line: padded, at least minWidth;
	// the last column is its text.
	minWidth := t.minWidth
	width := func(i int) int {
		if i == cols-1 {
			return text[i]
		}
		return max(minWidth, text[i]+t.padding)
	}
	total := func() int {
		n := 0
		for i := range cols {
			n += width(i)
		}
		return n
	}
	if !t.noWrap && total() > tableWidth {
		// Room first, before any value is broken.
		minWidth = 0
	}
	for !t.noWrap && total() > tableWidth {
		widest := -1
		for i := range cols {
			if t.keep[i] || text[i] <= columnFloor {
				continue
			}
			if widest < 0 || text[i] > text[widest] || (text[i] == text[widest] && i > widest) {
				widest = i
			}
		}
		if widest < 0 {
			break // every column is at its floor: the row stays wide
		}
		text[widest]--
	}
	var b strings.Builder
	for _, r := range t.rows {
		cells := make([][]string, cols)
		lines := 1
		for i := range cols {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			cells[i] = []string{c}
			if !t.noWrap {
				cells[i] = wrapCell(c, text[i], t.hang)
			}
			lines = max(lines, len(cells[i]))
		}
		for l := range lines {
			var line strings.Builder
			for i := range cols {
				s := ""
				if l < len(cells[i]) {
					s = cells[i][l]
				}
				line.WriteString(s)
				if i < cols-1 {
					line.WriteString(strings.Repeat(" ", max(0, width(i)-utf8.RuneCountInString(s))))
				}
			}
			s := line.String()
			if l > 0 {
				// A continuation line ends where its text does.
				s = strings.TrimRight(s, " ")
			}
			b.WriteString(s + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapCell breaks s into lines of at most width characters: between words,
// or, for a word longer than a line (a path), after its last '/' or ','
// that fits, else at the width. Lines after the first start with hang
// spaces (counted in the width).
func wrapCell(s string, width, hang int) []string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return []string{s}
	}
	if hang > 0 && width-hang >= columnFloor {
		first := wrapCell(s, width, 0)[0]
		// The first line is a prefix of s; a break between words took
		// one space.
		rest := strings.TrimPrefix(s[len(first):], " ")
		lines := wrapCell(rest, width-hang, 0)
		pad := strings.Repeat(" ", hang)
		for i := range lines {
			lines[i] = pad + lines[i]
		}
		return append([]string{first}, lines...)
	}
	var lines []string
	var cur []rune
	flush := func() {
		lines = append(lines, string(cur))
		cur = cur[:0]
	}
	for i, word := range strings.Split(s, " ") {
		wr := []rune(word)
		if i > 0 {
			if len(cur) > 0 && len(cur)+1+len(wr) <= width {
				cur = append(cur, ' ')
				cur = append(cur, wr...)
				continue
			}
			if len(cur) > 0 {
				flush()
			}
		}
		for len(wr) > width {
			cut := width
			for j := width; j > width/2; j-- {
				if wr[j-1] == '/' || wr[j-1] == ',' {
					cut = j
					break
				}
			}
			lines = append(lines, string(wr[:cut]))
			wr = wr[cut:]
		}
		cur = append(cur, wr...)
	}
	if len(cur) > 0 || len(lines) == 0 {
		flush()
	}
	return lines
}

// isTerminal reports whether f is a terminal (TCGETS answers).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
