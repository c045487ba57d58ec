package libmaka

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// must is l's value, failing the test if it does not decode.
func must[T any](t *testing.T, l *Lazy[T]) *T {
	t.Helper()
	v, err := l.Get()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func sampleBoundary() *Boundary {
	b := &Boundary{Profile: ProfileRestricted}
	b.Rootfs.Path, b.Rootfs.Scaffold = "/r/rootfs", "/s/roots/x"
	b.Limits.Timeout, b.Limits.Memory = 180, 1<<30
	b.Users.Source = IDsFromPool
	b.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 200000, Size: 65536}}
	b.MaskedPaths = []string{"/proc/kcore"}
	return b
}

// A record read and written back without its boundary being asked for
// carries the boundary's bytes unchanged; one decoded and changed carries
// the change.
func TestLazyWritesBackWhatItRead(t *testing.T) {
	in, err := json.Marshal(struct {
		B Lazy[Boundary] `json:"b"`
	}{Hold(sampleBoundary())})
	if err != nil {
		t.Fatal(err)
	}
	// A key order and spacing the encoder would never write: kept as read
	// (encoding/json compacts what a Marshaler returns, nothing else).
	odd := strings.Replace(string(in), `{"profile":"restricted",`, `{"zz":1,"profile" :  "restricted",`, 1)
	var r struct {
		B Lazy[Boundary] `json:"b"`
	}
	if err := json.Unmarshal([]byte(odd), &r); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(r)
	if want := strings.Replace(odd, `" :  "`, `":"`, 1); string(out) != want {
		t.Errorf("written back changed:\n%s\n%s", odd, out)
	}
	b := must(t, &r.B)
	b.Limits.Timeout = 7
	out, _ = json.Marshal(r)
	if !strings.Contains(string(out), `"timeout":7`) {
		t.Errorf("a decoded value changed is not written: %s", out)
	}
}

func TestLazyNullAndAbsent(t *testing.T) {
	for _, in := range []string{`{}`, `{"b":null}`} {
		var r struct {
			B Lazy[Boundary] `json:"b,omitzero"`
		}
		if err := json.Unmarshal([]byte(in), &r); err != nil {
			t.Fatal(err)
		}
		if r.B.Held() || must(t, &r.B) != nil {
			t.Errorf("%s: holds a value", in)
		}
		if out, _ := json.Marshal(r); string(out) != `{}` {
			t.Errorf("%s: written as %s", in, out)
		}
	}
	var r struct {
		B Lazy[Boundary] `json:"b"`
	}
	for _, bad := range []string{`{"b":"x"}`, `{"b":[1]}`, `{"b":7}`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
	// A well-formed object of the wrong shape fails at Get, every time.
	if err := json.Unmarshal([]byte(`{"b":{"limits":"x"}}`), &r); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if v, err := r.B.Get(); err == nil || v != nil {
			t.Errorf("a boundary of the wrong shape decoded: %v %v", v, err)
		}
	}
	if _, err := HeadOf(&r.B); err == nil {
		t.Error("HeadOf read a boundary of the wrong shape")
	}
}

// The head projected from a record's bytes is the head of the decoded
// boundary: the two paths (a record read, a record given) agree, and a
// field renamed in Boundary's JSON breaks this test, not a teardown.
func TestHeadOfAgrees(t *testing.T) {
	b := sampleBoundary()
	given := Hold(b)
	raw, err := json.Marshal(given)
	if err != nil {
		t.Fatal(err)
	}
	var read Lazy[Boundary]
	if err := read.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	h1, err1 := HeadOf(&given)
	h2, err2 := HeadOf(&read)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !reflect.DeepEqual(h1, h2) {
		t.Errorf("heads differ:\ngiven %+v\nread  %+v", h1, h2)
	}
	if h2.Rootfs.Path != b.Rootfs.Path || h2.Rootfs.Scaffold != b.Rootfs.Scaffold || h2.Limits.Timeout != 180 ||
		h2.Users.Source != IDsFromPool || len(h2.UIDMappings) != 1 || h2.UIDMappings[0].HostID != 200000 {
		t.Errorf("head lost a field: %+v", h2)
	}
	if read.got {
		t.Error("HeadOf decoded the whole boundary")
	}
}

// A record whose boundary, policy or process is not an object is refused
// when read, naming the key, in JSON's words (never a Go type's).
func TestRecordFieldNotAnObject(t *testing.T) {
	rec := testRecord(t, "/run/maka", "b", StageCreated, Owner{Pid: 1, StartTime: 2, Command: "create"})
	rec.Version, rec.CgroupID = RecordVersion, 5
	rec.Boundary = Hold(sampleBoundary())
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"boundary":{`, `"boundary":"x","was":{`, "boundary: expected"},
		{`"boundary":{`, `"policy":[1],"boundary":{`, "policy: expected"},
		{`"stage":"created"`, `"stage":5`, "stage: expected"},
	} {
		bad := strings.Replace(string(data), tc.from, tc.to, 1)
		_, err := ParseRecord([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "libmaka.") {
			t.Errorf("%s: %v, want %q in JSON's words", tc.to, err, tc.want)
		}
	}
}
