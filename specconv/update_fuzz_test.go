package specconv

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseResources: update --resources's file, likewise.
func FuzzParseResources(f *testing.F) {
	for _, s := range []string{
		`{"memory":{"limit":1048576,"swap":-1},"pids":{"limit":10},"cpu":{"quota":1000,"period":100000,"cpus":"0"}}`,
		`{"memory":{"limit":"lots"}}`, `{"pids":{"limit":1.5}}`, `{"unified":{"memory.max":"1"}}`, `[]`, `{`, ``, "{\"cpu\":{\"cpus\":\"0\xff\"}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseResources("/r.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--resources /r.json: ") || goInternals.MatchString(err.Error()) {
				t.Fatalf("error %q: must name the file and no Go type", err)
			}
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("a --resources file that is not UTF-8 parsed: %q", data)
		}
		roundTripResources(t, r)
	})
}

// roundTripResources: what ParseResources accepted, encoded and parsed
// again, encodes to the same bytes (the accepted document means one thing).
func roundTripResources(t *testing.T, v any) {
	t.Helper()
	a, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("accepted value does not encode: %v", err)
	}
	v2, err := ParseResources("/r.json", a)
	if err != nil {
		t.Fatalf("re-encoded %s refused: %v", a, err)
	}
	b, _ := json.Marshal(v2)
	if !bytes.Equal(a, b) {
		t.Fatalf("round trip changed the value:\n%s\n%s", a, b)
	}
}
