package libmaka

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// Lazy is a JSON value kept as it was read and decoded only when a command
// asks for it. The contract record's boundary is most of the record's bytes
// and most of the cost of reading it: encoding/json builds a decoder for
// every type of the Boundary tree on first use in a process (~2 ms of CPU
// natively, tens under emulation), which `start`, `delete` and `state` paid
// for a value they never read. A Lazy that was read and not decoded is
// written back as it was read (encoding/json only compacts it), so a
// command that republishes the record (start's and delete's stage changes)
// never encodes it either.
//
// The zero Lazy holds nothing (JSON null or absent). A Lazy is not safe for
// concurrent use: its first Get of bytes read writes the decoded value. A
// record shared between goroutines (a Manager's Sandbox) holds values it
// was given, which Get only returns.
type Lazy[T any] struct {
	raw json.RawMessage // as read; nil when absent, null or replaced
	v   *T              // decoded from raw, or given
	err error           // raw's decode error, once tried
	got bool            // raw was decoded (v or err is its result)
}

// Hold returns a Lazy holding v (nil: nothing).
func Hold[T any](v *T) Lazy[T] { return Lazy[T]{v: v} }

// Get returns the value, decoding it on first use; nil, nil when nothing
// is held. A value that does not decode is an error at every Get: the
// record is then unreadable for the command that needed it, as it was for
// every command when records were decoded whole.
func (l *Lazy[T]) Get() (*T, error) {
	if l.v != nil || l.raw == nil {
		return l.v, nil
	}
	if !l.got {
		l.got = true
		var v T
		if err := json.Unmarshal(l.raw, &v); err != nil {
			l.err = JSONError(err, "value")
		} else {
			l.v = &v
		}
	}
	return l.v, l.err
}

// Set replaces the value (nil: nothing); the bytes read are dropped.
func (l *Lazy[T]) Set(v *T) { *l = Lazy[T]{v: v} }

// Held reports whether a value is held (read as non-null, or given).
func (l *Lazy[T]) Held() bool { return l.v != nil || l.raw != nil }

// IsZero makes `omitzero` leave out a Lazy that holds nothing.
func (l Lazy[T]) IsZero() bool { return !l.Held() }

// MarshalJSON writes a given or decoded value encoded, a value read and
// not decoded as it was read, and nothing as null.
func (l Lazy[T]) MarshalJSON() ([]byte, error) {
	switch {
	case l.v != nil:
		return json.Marshal(l.v)
	case l.raw != nil:
		return l.raw, nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON keeps a copy of the bytes (the decoder reuses its buffer);
// encoding/json has already checked they are one well-formed value. Only an
// object can be a T here: anything else is refused at once, not at Get.
func (l *Lazy[T]) UnmarshalJSON(b []byte) error {
	*l = Lazy[T]{}
	t := bytes.TrimSpace(b)
	if bytes.Equal(t, []byte("null")) {
		return nil
	}
	if len(t) == 0 || t[0] != '{' {
		// encoding/json adds the field's path; JSONError words it.
		return &json.UnmarshalTypeError{Value: jsonValueKind(t), Type: reflect.TypeFor[T]()}
	}
	l.raw = append(json.RawMessage(nil), t...)
	return nil
}

// BoundaryHead is the part of a recorded boundary read by the commands that
// never enforce one (start, delete, state, the fail-closed check, the id
// lease's release): the root's paths, the timeout, where the ids came from.
// Its field names are the Boundary's own JSON names, so a projection of the
// recorded bytes and headOf of the decoded value agree (lazy_test.go).
type BoundaryHead struct {
	Rootfs struct {
		Path     string `json:"path"`
		Scaffold string `json:"scaffold,omitempty"`
	} `json:"rootfs"`
	Limits struct {
		Timeout int64 `json:"timeout"`
	} `json:"limits"`
	Users struct {
		Source string `json:"source,omitempty"`
	} `json:"users"`
	UIDMappings []specs.LinuxIDMapping `json:"uidMappings,omitempty"`
}

// headOf is the head of a decoded boundary.
func headOf(b *Boundary) *BoundaryHead {
	var h BoundaryHead
	h.Rootfs.Path, h.Rootfs.Scaffold = b.Rootfs.Path, b.Rootfs.Scaffold
	h.Limits.Timeout = b.Limits.Timeout
	h.Users.Source = b.Users.Source
	h.UIDMappings = b.UIDMappings
	return &h
}

// HeadOf is the head of the boundary l holds (nil, nil if none), without
// decoding the whole of it.
func HeadOf(l *Lazy[Boundary]) (*BoundaryHead, error) {
	if l.v != nil {
		return headOf(l.v), nil
	}
	if l.raw == nil {
		return nil, nil
	}
	var h BoundaryHead
	if err := json.Unmarshal(l.raw, &h); err != nil {
		return nil, fmt.Errorf("boundary: %w", JSONError(err, "boundary"))
	}
	return &h, nil
}

// RecordedPolicy is the policy a container was created under, as its
// record keeps it (p), or, for a record from a maka that kept only the
// profile, that built-in profile of b; nil, nil if the record has neither.
// exec and update hold a sandbox to it, never to today's --policy: a looser
// file must not loosen a running sandbox.
func RecordedPolicy(p *Lazy[Policy], b *Lazy[Boundary]) (*Policy, error) {
	if p.Held() {
		pol, err := p.Get()
		if err != nil {
			return nil, fmt.Errorf("the recorded policy: %w", err)
		}
		return pol, nil
	}
	bv, err := b.Get()
	if err != nil {
		return nil, fmt.Errorf("the recorded boundary: %w", err)
	}
	if bv == nil {
		return nil, nil
	}
	return BuiltinPolicy(bv.Profile)
}

// jsonValueKind names the JSON value b starts, as encoding/json's
// UnmarshalTypeError does.
func jsonValueKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == '"':
		return "string"
	case b[0] == '[':
		return "array"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	}
	return "number"
}
