package libmaka

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/moby/sys/capability"
)

// limitsFile is a limits object as a policy file writes it: each key is
// optional, and one that is left out keeps the profile's value.
type limitsFile struct {
	Memory    *int64   `json:"memory"`
	Swap      *int64   `json:"swap"`
	Pids      *int64   `json:"pids"`
	Cpus      *float64 `json:"cpus"`
	TmpfsSize *int64   `json:"tmpfsSize"`
	Timeout   *int64   `json:"timeout"`
}

// mergeInto sets in l every key the file gives (l may be nil: no object).
func (f *limitsFile) mergeInto(l *Limits) {
	if f == nil {
		return
	}
	setGiven(&l.Memory, f.Memory)
	setGiven(&l.Swap, f.Swap)
	setGiven(&l.Pids, f.Pids)
	setGiven(&l.Cpus, f.Cpus)
	setGiven(&l.TmpfsSize, f.TmpfsSize)
	setGiven(&l.Timeout, f.Timeout)
}

// idPoolFile is an idPool object as a policy file writes it.
type idPoolFile struct {
	Start *uint32 `json:"start"`
	Size  *uint32 `json:"size"`
	Count *uint32 `json:"count"`
}

func (f *idPoolFile) mergeInto(p *IDPool) {
	if f == nil {
		return
	}
	setGiven(&p.Start, f.Start)
	setGiven(&p.Size, f.Size)
	setGiven(&p.Count, f.Count)
}

// setGiven sets *dst to the file's value where the file gives the key
// (src not nil): a key left out keeps the profile's value.
func setGiven[T any](dst, src *T) {
	if src != nil {
		*dst = *src
	}
}

// decodeStrict decodes exactly one JSON object into v: unknown keys, a
// second document and trailing bytes are errors. Errors name the policy key
// and say what was expected in JSON's terms, never in Go's.
func decodeStrict(data []byte, v any) error {
	if off := InvalidUTF8(data); off >= 0 {
		return fmt.Errorf("policy: malformed JSON: a byte that is not UTF-8 (at byte %d): JSON text is UTF-8", off)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return JSONError(err, "policy")
	}
	// encoding/json takes null for any object, as nothing to set: the file
	// would silently be the restricted profile.
	if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("null")) {
		return errors.New("policy: expected an object, got null")
	}
	// A second document would be silently ignored by a plain Decode: the
	// file would not mean what it says.
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return fmt.Errorf("a second JSON document follows the policy object (at byte %d): a policy file holds one object", dec.InputOffset()-int64(len(extra)))
	default:
		return fmt.Errorf("unexpected data after the policy object: %w", JSONError(err, "policy"))
	}
}

// InvalidUTF8 is the offset of the first byte of data that is not UTF-8,
// or -1. JSON text is UTF-8 (RFC 8259); encoding/json would silently
// replace such a byte with U+FFFD, and the document would not mean what
// its bytes say.
func InvalidUTF8(data []byte) int64 {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return int64(i)
		}
		i += n
	}
	return -1
}

// JSONError rewrites encoding/json's errors (which name Go types and
// struct fields) in the document's own terms: the key, what JSON value was
// expected and what was found. doc names the document ("policy").
func JSONError(err error, doc string) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("empty %s: expected a JSON object", doc)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: the document ends early")
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("malformed JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error())
	case errors.As(err, &typeErr):
		key := typeErr.Field
		if key == "" {
			key = doc
		}
		return fmt.Errorf("%s: expected %s, got %s", key, jsonKind(typeErr.Type, typeErr.Value), jsonValue(typeErr.Value))
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown key %s", name)
	}
	return fmt.Errorf("malformed %s: %s", doc, strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names what a Go type accepts, as JSON.
func jsonKind(t reflect.Type, got string) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if strings.HasPrefix(got, "number") {
			return "a whole number within range"
		}
		return "a number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another kind of value"
}

// jsonValue names what the document held (json's Value: "string",
// "number 1.5", "array", "object", "bool").
func jsonValue(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "array":
		return "an array"
	case v == "object":
		return "an object"
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number "):
		return strings.TrimPrefix(v, "number ")
	case v == "number":
		return "a number"
	}
	return v
}

// KnownCapability reports whether name is a capability the kernel has
// (CAP_ and the name, as runtime-spec writes them), from the list the
// capability library maka's libcontainer uses keeps: a typo is an error,
// not a silently useless whitelist entry.
func KnownCapability(name string) bool {
	n, ok := strings.CutPrefix(name, "CAP_")
	if !ok {
		return false
	}
	for _, c := range capability.ListKnown() {
		if strings.ToUpper(c.String()) == n {
			return true
		}
	}
	return false
}

// limitKey is one key of a limits object, read from Limits.
type limitKey struct {
	name string
	get  func(Limits) float64
	// zeroUnlimited: 0 means no limit (so a default of 0 exceeds any
	// ceiling); swap instead takes -1 for unlimited and 0 for none.
	zeroUnlimited bool
	format        func(float64) string
}

var limitKeys = []limitKey{
	{"memory", func(l Limits) float64 { return float64(l.Memory) }, true, formatBytes},
	{"swap", func(l Limits) float64 { return float64(l.Swap) }, false, formatBytes},
	{"pids", func(l Limits) float64 { return float64(l.Pids) }, true, formatPlain},
	{"cpus", func(l Limits) float64 { return l.Cpus }, true, formatPlain},
	{"tmpfsSize", func(l Limits) float64 { return float64(l.TmpfsSize) }, true, formatBytes},
	// A default timeout of 0 under a ceiling gets the ceiling (see the
	// checker), so it is not an error.
	{"timeout", func(l Limits) float64 { return float64(l.Timeout) }, false, func(v float64) string { return formatPlain(v) + " s" }},
}

func formatBytes(v float64) string { return FormatSize(int64(v)) }
func formatPlain(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// checkLimits: no negative value (but swap's -1, unlimited), and no
// default above its ceiling. Each error names the key.
func checkLimits(def, max Limits) []string {
	var errs []string
	for _, k := range limitKeys {
		for _, l := range []struct {
			obj string
			v   Limits
		}{{"defaultLimits", def}, {"maxLimits", max}} {
			v := k.get(l.v)
			if v < 0 && !(k.name == "swap" && v == -1) {
				msg := fmt.Sprintf("%s.%s: %s is negative", l.obj, k.name, formatPlain(v))
				if k.name == "swap" {
					msg += " (-1 means unlimited)"
				}
				errs = append(errs, msg)
			}
		}
		d, m := k.get(def), k.get(max)
		if d < 0 && d != -1 || m < 0 && m != -1 {
			continue // reported above
		}
		unlimitedCeiling := m == 0 && k.zeroUnlimited || m == -1 || m == 0 && k.name == "timeout"
		if unlimitedCeiling {
			continue
		}
		switch {
		case k.zeroUnlimited && d == 0, k.name == "swap" && d == -1:
			errs = append(errs, fmt.Sprintf("defaultLimits.%s: unlimited is above maxLimits.%s (%s)", k.name, k.name, k.format(m)))
		case d > m:
			errs = append(errs, fmt.Sprintf("defaultLimits.%s: %s is above maxLimits.%s (%s)", k.name, k.format(d), k.name, k.format(m)))
		}
	}
	return errs
}

// String prints limits for people: "unlimited" where there is no limit
// (0, or swap's -1), never a bare 0; swap 0 is "none".
func (l Limits) String() string {
	var parts []string
	for _, k := range limitKeys {
		v := k.get(l)
		var s string
		switch {
		case k.name == "swap" && v == 0:
			s = "none"
		case v == 0 || v == -1 && k.name == "swap":
			s = "unlimited"
		default:
			s = k.format(v)
		}
		name := k.name
		if name == "tmpfsSize" {
			name = "tmpfs"
		}
		parts = append(parts, name+" "+s)
	}
	return strings.Join(parts, ", ")
}

// Describe names the policy for people: the profile, and the file that
// changed it ("restricted (modified by /etc/maka/policy.json)").
func (p *Policy) Describe() string {
	switch {
	case p.Source == "":
		return p.Profile + " (built-in)"
	case p.Modified:
		return p.Profile + " (modified by " + p.Source + ")"
	}
	return p.Profile + " (as built in, read from " + p.Source + ")"
}
