package libmaka

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go"
)

// An update republishes the whole contract: the record in the store and
// the container's maka.json (exec's base) hold the same boundary after it,
// and maka.json keeps what only it has (the init's process, the policy).
func TestRepublishBoundaryRewritesMakaJSON(t *testing.T) {
	rt, store := testStore(t)
	op, err := rt.Begin("u", "create")
	if err != nil {
		t.Fatal(err)
	}
	rec := testRecord(t, rt.Root, "u", StageRunning, self(t))
	rec.Boundary = Hold(&Boundary{Profile: ProfileRestricted, Limits: Limits{Memory: 128 << 20, Pids: 100}})
	if err := op.publishFirst(rec); err != nil {
		t.Fatal(err)
	}
	op.committed = true
	op.End()
	if err := os.MkdirAll(filepath.Join(rt.Root, "u"), 0o700); err != nil {
		t.Fatal(err)
	}
	pol, _ := BuiltinPolicy(ProfileRestricted)
	proc := &specs.Process{Args: []string{"sh"}, Cwd: "/"}
	if err := writeJSONAtomic(filepath.Join(rt.Root, "u", recordFile), Record{Process: Hold(proc), Boundary: rec.Boundary, Policy: Hold(pol)}); err != nil {
		t.Fatal(err)
	}

	op, err = rt.Begin("u", "update")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	nb, err := CopyBoundary(must(t, &op.Record.Boundary))
	if err != nil {
		t.Fatal(err)
	}
	nb.Limits.Memory, nb.Limits.Pids = 64<<20, 42
	if err := op.RepublishBoundary(nb); err != nil {
		t.Fatal(err)
	}
	got, err := store.Get("u")
	if err != nil {
		t.Fatal(err)
	}
	var mj Record
	data, err := os.ReadFile(filepath.Join(rt.Root, "u", recordFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &mj); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(got.Boundary)
	b, _ := json.Marshal(mj.Boundary)
	if string(a) != string(b) || must(t, &got.Boundary).Limits.Pids != 42 {
		t.Errorf("record and maka.json disagree after republish:\nrecord   %s\nmaka.json %s", a, b)
	}
	if p, pol := must(t, &mj.Process), must(t, &mj.Policy); p == nil || p.Args[0] != "sh" || pol == nil || pol.Profile != ProfileRestricted {
		t.Errorf("maka.json lost its process or policy: %+v", mj)
	}
}
