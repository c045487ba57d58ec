package printable

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"sh", "sh"},
		{"/tmp/a b/c.txt", "/tmp/a b/c.txt"},
		{"héllo wörld 日本", "héllo wörld 日本"},
		// OSC title, BEL, CSI clear screen.
		{"\x1b]0;pwn\a\x1b[2J", `\x1b]0;pwn\x07\x1b[2J`},
		{"a\nb\rc\td\x00e\x7f", `a\x0ab\x0dc\x09d\x00e\x7f`},
		{`back\slash`, `back\\slash`},
		{`\x1b`, `\\x1b`},
		// C1 controls as runes (CSI is U+009B) and as stray bytes.
		{"\u009b2J", `\u{9b}2J`},
		{"\u0085", `\u{85}`},
		{"\x9b2J", `\x9b2J`},
		// Bidi overrides, isolates and marks; line and paragraph separators.
		{"evil\u202egnp.exe", `evil\u{202e}gnp.exe`},
		{"\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u{202a}\u{202b}\u{202c}\u{202d}\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{61c}`},
		{"a\u2028b\u2029c", `a\u{2028}b\u{2029}c`},
		// Not UTF-8: a lone continuation byte, a truncated sequence, an
		// overlong encoding, a surrogate half.
		{"\x80", `\x80`},
		{"\xe6\x97", `\xe6\x97`},
		{"\xc0\xaf", `\xc0\xaf`},
		{"\xed\xa0\x80", `\xed\xa0\x80`},
		{"\xff\xfe", `\xff\xfe`},
		// U+FFFD itself is printable and kept.
		{"\ufffd", "\ufffd"},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"rootless: maka cannot run:\n  a\n\tb", "rootless: maka cannot run:\n  a\n\tb"},
		{`field "a\"b": bad`, `field "a\"b": bad`},
		{"killed: syscall unshare by pid 3 (\x1b]0;pwn\a)\r", `killed: syscall unshare by pid 3 (\x1b]0;pwn\x07)\x0d`},
		{"x\u202ey\x9b", `x\u{202e}y\x9b`},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// unescape reverses String, for the round trip: what String prints names
// exactly one input.
func unescape(t *testing.T, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], `\\`):
			b.WriteByte('\\')
			i += 2
		case strings.HasPrefix(s[i:], `\x`) && i+4 <= len(s):
			v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("bad \\x escape in %q", s)
			}
			b.WriteByte(byte(v))
			i += 4
		case strings.HasPrefix(s[i:], `\u{`):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				t.Fatalf("unterminated \\u{ in %q", s)
			}
			v, err := strconv.ParseUint(s[i+3:i+end], 16, 32)
			if err != nil {
				t.Fatalf("bad \\u{} escape in %q", s)
			}
			b.WriteRune(rune(v))
			i += end + 1
		default:
			t.Fatalf("lone backslash in %q", s)
		}
	}
	return b.String()
}

// safe says what must hold of any output of String: valid UTF-8 with no
// control character, no C1 control, no bidi or other format rune, no line
// or paragraph separator.
func checkSafe(t *testing.T, in, out string, text bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("String(%q) = %q: not UTF-8", in, out)
	}
	for _, r := range out {
		if text && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Cf, r) ||
			r == '\u2028' || r == '\u2029' || !unicode.IsPrint(r) {
			t.Fatalf("escape(%q, text=%v) = %q: holds %U", in, text, out, r)
		}
	}
}

// inputs is a fuzz-ish table: every byte alone, every rune class that
// matters, and random mixes of them.
func inputs() []string {
	var in []string
	for c := 0; c < 256; c++ {
		in = append(in, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"\\z")
	}
	pieces := []string{"a", "\\", "\x1b[", "]0;", "\a", "\n", "\t", "\u009b", "\x9b", "\u202e", "\u2066",
		"\u2028", "\ufeff", "\u00ad", "\u00a0", "\U000e0001", "\ue000", "日", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe6", "\ufffd", "\\x1b", "\\u{", "}"}
	seed := uint32(1)
	for n := 0; n < 2000; n++ {
		var b strings.Builder
		for k := 0; k < 1+n%9; k++ {
			seed = seed*1664525 + 1013904223
			b.WriteString(pieces[int(seed>>16)%len(pieces)])
		}
		in = append(in, b.String())
	}
	return in
}

func TestStringTable(t *testing.T) {
	for _, in := range inputs() {
		out := String(in)
		checkSafe(t, in, out, false)
		if back := unescape(t, out); back != in {
			t.Fatalf("String(%q) = %q reads back as %q", in, out, back)
		}
		checkSafe(t, in, Text(in), true)
	}
}

func FuzzString(f *testing.F) {
	for _, in := range inputs()[:64] {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := String(in)
		checkSafe(t, in, out, false)
		if back := unescape(t, out); back != in {
			t.Fatalf("String(%q) = %q reads back as %q", in, out, back)
		}
		checkSafe(t, in, Text(in), true)
	})
}

// TestJSON: the JSON outputs (violations --format json, events) are
// encoding/json's, passed through JSON: valid JSON that decodes to the
// same values, with no raw control, DEL, C1 control, bidi or line
// separator whatever the sandbox chose.
func TestJSON(t *testing.T) {
	type rec struct {
		Comm string   `json:"comm"`
		Args []string `json:"args"`
	}
	for _, in := range inputs() {
		v := rec{Comm: in, Args: []string{"0x1", in}}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		data := JSON(raw)
		if !json.Valid(data) {
			t.Fatalf("%q: invalid JSON %q", in, data)
		}
		var back, want rec
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if back.Comm != want.Comm || back.Args[1] != want.Args[1] {
			t.Fatalf("%q: decodes as %q, encoding/json's as %q", in, back.Comm, want.Comm)
		}
		checkSafe(t, in, string(data), false)
	}
	// Astral runes that are not printable become a surrogate pair.
	if got := string(JSON([]byte("\"\U000e0001\""))); got != `"\udb40\udc01"` {
		t.Errorf("JSON(U+E0001) = %s", got)
	}
}
