package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// goInternals matches what an error must never show a user: Go's type and
// struct-field names, encoding/json's own prefix.
var goInternals = regexp.MustCompile(`specs\.|libmaka\.|Go value|Go struct|struct field|(^|[^.\w])json: `)

// roundTrip: what parse accepted, encoded and parsed again, encodes to the
// same bytes (the accepted document means one thing).
func roundTrip[T any](t *testing.T, parse func([]byte) (T, error), v T) {
	t.Helper()
	a, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("accepted value does not encode: %v", err)
	}
	v2, err := parse(a)
	if err != nil {
		t.Fatalf("re-encoded %s refused: %v", a, err)
	}
	b, _ := json.Marshal(v2)
	if !bytes.Equal(a, b) {
		t.Fatalf("round trip changed the value:\n%s\n%s", a, b)
	}
}

// FuzzParseProcess: exec --process's file either parses (and round-trips)
// or is refused by an error naming the file, in JSON's terms.
func FuzzParseProcess(f *testing.F) {
	for _, s := range []string{
		`{"args":["sh","-c","true"],"cwd":"/","env":["PATH=/bin"],"user":{"uid":1,"gid":2}}`,
		`{"args":"true"}`, `{"user":{"uid":-1}}`, `[]`, `null`, `{"rlimits":[{"type":"RLIMIT_NOFILE","hard":1,"soft":1}]}`,
		`{"capabilities":{"bounding":["CAP_KILL"]},"terminal":true,"consoleSize":{"height":1,"width":2}}`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseProcessFile("/p.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--process /p.json: ") || goInternals.MatchString(err.Error()) {
				t.Fatalf("error %q: must name the file and no Go type", err)
			}
			return
		}
		if p == nil || !utf8.Valid(data) {
			t.Fatal("nil process or a file that is not UTF-8 accepted")
		}
		roundTrip(t, func(b []byte) (any, error) { return parseProcessFile("/p.json", b) }, any(p))
	})
}
