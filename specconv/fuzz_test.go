package specconv

import (
	"strconv"
	"testing"
)

// FuzzParseSize: a tmpfs size maka accepts is a positive number of bytes
// that did not overflow, and reads back as itself.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1", "64k", "128M", "1g", "10%", "0", "-1k", "9223372036854775807", "4611686018427387904k", "", "k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err != nil {
			return
		}
		if n <= 0 || n > 1<<62 {
			t.Fatalf("parseSize(%q) = %d: outside (0, 2^62]", s, n)
		}
		if back, err := parseSize(strconv.FormatInt(n, 10)); err != nil || back != n {
			t.Fatalf("parseSize(%q) = %d reads back as %d, %v", s, n, back, err)
		}
	})
}
