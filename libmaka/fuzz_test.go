package libmaka

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseSignal: what parses is a signal the kernel has (1..64), its
// number parses back to it, and a refusal says which kind of input it was.
func FuzzParseSignal(f *testing.F) {
	for _, s := range []string{"9", "KILL", "sigterm", "SIGRTMIN+3", "RTMAX-1", "0", "65", "-1", "SIGFOO", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := ParseSignal(s)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "invalid signal number") && !strings.HasPrefix(msg, "unknown signal") {
				t.Fatalf("ParseSignal(%q): %v", s, err)
			}
			return
		}
		if sig < 1 || sig > 64 {
			t.Fatalf("ParseSignal(%q) = %d: not a signal", s, sig)
		}
		if back, err := ParseSignal(strconv.Itoa(int(sig))); err != nil || back != sig {
			t.Fatalf("ParseSignal(%q) = %d, but its number parses to %d, %v", s, sig, back, err)
		}
	})
}

// FuzzValidID: an id maka accepts names a file inside the records and
// locks directories, whatever it holds, and never a path.
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"box", "a.b-c_d+e", ".", "..", "../x", "a/b", "a\x00b", strings.Repeat("x", 1025), strings.Repeat("x", MaxIDLength), strings.Repeat("x", MaxIDLength+1), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !ValidID(id) {
			return
		}
		s := &Store{Dir: "/state/key", Root: "/run/maka"}
		for _, p := range []string{s.recordPath(id), s.tempPath(id), filepath.Join(s.locksDir(), id+".lock")} {
			dir := filepath.Dir(p)
			if dir != s.recordsDir() && dir != s.locksDir() {
				t.Fatalf("id %q names %s, outside the store's directories", id, p)
			}
		}
		if len(id) > MaxIDLength || strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
			t.Fatalf("id %q accepted", id)
		}
	})
}

// plainNameRE was plainName's definition: the loop that replaced it (a
// compiled `{0,254}` cost every start 24 ms) accepts exactly what it did.
var plainNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]{0,254}$`)

// FuzzPlainName: plainName accepts what its regular expression accepts and
// never "." or "..", a "/" or a NUL, or more than 255 bytes.
func FuzzPlainName(f *testing.F) {
	for _, s := range []string{"", "a", "A9", ".", "..", ".a", "a.", "a/b", "-a", "a-b_c.d+e", "a\x00", "é", "a é", strings.Repeat("x", 255), strings.Repeat("x", 256), "pod-1234", "{id}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := plainName(s)
		if want := plainNameRE.MatchString(s) && s != "." && s != ".."; got != want {
			t.Fatalf("plainName(%q) = %v, its expression says %v", s, got, want)
		}
		if got && (s == "." || s == ".." || len(s) > 255 || strings.ContainsAny(s, "/\x00")) {
			t.Fatalf("plainName(%q) accepted", s)
		}
	})
}
