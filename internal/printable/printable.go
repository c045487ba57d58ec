// Package printable escapes strings a sandbox chose (process names, paths,
// syscall arguments) before they reach a terminal or a log line: a name
// holding ESC ] 0 ; ... BEL or CSI 2 J would otherwise retitle or clear the
// terminal of whoever reads `maka violations`, and a bidi override or a
// newline would make a line read as something else.
package printable

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// String is s with everything that is not plainly printable escaped, so
// that it prints as one field on one line and reads back unambiguously:
// control characters (C0, DEL: ESC, BEL, newline, tab...) and bytes that
// are not UTF-8 as \xNN, C1 controls, bidi overrides and isolates, line and
// paragraph separators and every other rune Go does not call printable as
// \u{N}, and the backslash itself as \\. A string with none of these is
// returned as it is.
func String(s string) string {
	return escape(s, false)
}

// Text is String for a message of several lines (an error): newlines and
// tabs are kept and backslashes are left as they are (the message may
// quote with Go's %q), everything else String escapes is escaped.
func Text(s string) string {
	return escape(s, true)
}

func escape(s string, text bool) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !plain(r, n, text) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case plain(r, n, text):
			b.WriteString(s[i : i+n])
		case r == '\\':
			b.WriteString(`\\`)
		case r == utf8.RuneError && n == 1, r < 0x80:
			// A byte that is not UTF-8, or an ASCII control.
			b.WriteString(`\x`)
			hex2(&b, s[i])
		default:
			b.WriteString(`\u{`)
			b.WriteString(strconv.FormatInt(int64(r), 16))
			b.WriteByte('}')
		}
		i += n
	}
	return b.String()
}

// plain says whether rune r (n bytes of UTF-8) prints as itself.
func plain(r rune, n int, text bool) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return false
	case r == '\\':
		return text
	case r == '\n' || r == '\t':
		return text
	case r < 0x80:
		return r >= 0x20 && r != 0x7f
	}
	// unicode.IsPrint is false for C1 controls (Cc), bidi controls and
	// other format characters (Cf), U+2028/U+2029 (Zl, Zp), private use,
	// unassigned runes and spaces other than U+0020.
	return unicode.IsPrint(r)
}

func hex2(b *strings.Builder, c byte) {
	const digits = "0123456789abcdef"
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&0xf])
}

// JSON is the output of encoding/json with every rune String would escape
// written as a JSON \u escape instead: encoding/json already escapes
// control characters below U+0020 and U+2028/U+2029, and replaces bytes
// that are not UTF-8, but it writes DEL, C1 controls (U+009B is CSI to a
// terminal) and bidi overrides as they are. Outside its strings
// encoding/json writes only ASCII, so the document stays the same JSON,
// decoding to the same values.
func JSON(data []byte) []byte {
	i := 0
	for i < len(data) {
		r, n := utf8.DecodeRune(data[i:])
		if r != utf8.RuneError && (r < 0x80 && r != 0x7f || r >= 0x80 && unicode.IsPrint(r)) {
			i += n
			continue
		}
		break
	}
	if i == len(data) {
		return data
	}
	out := make([]byte, 0, len(data)+32)
	out = append(out, data[:i]...)
	for i < len(data) {
		r, n := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			// Not from encoding/json, which writes only UTF-8.
			out = append(out, `\ufffd`...)
		case r < 0x80 && r != 0x7f, r >= 0x80 && unicode.IsPrint(r):
			out = append(out, data[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = appendU(appendU(out, r1), r2)
		default:
			out = appendU(out, r)
		}
		i += n
	}
	return out
}

func appendU(out []byte, r rune) []byte {
	const digits = "0123456789abcdef"
	return append(out, '\\', 'u', digits[r>>12&0xf], digits[r>>8&0xf], digits[r>>4&0xf], digits[r&0xf])
}

// JSONWriter writes each Write through JSON: the writer of a json.Encoder,
// which hands it one whole document per Write.
type JSONWriter struct{ W io.Writer }

func (w JSONWriter) Write(p []byte) (int, error) {
	if _, err := w.W.Write(JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
