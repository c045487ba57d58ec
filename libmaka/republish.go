package libmaka

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// CopyBoundary returns a deep copy of b (its Spec included), to change
// without touching the record it came from.
func CopyBoundary(b *Boundary) (*Boundary, error) {
	data, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	var c Boundary
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// RepublishBoundary publishes the whole contract with a new boundary (e.g.
// the limits an update enforces): the record, keeping its stage, owner and
// attachment (the command that changes the boundary does not take the
// container over), and the container's maka.json (exec's base), keeping
// its process and policy. `maka recover --relaunch`, exec and every reader
// of the record then see what is enforced. If maka.json cannot be
// written, the record is put back: the two never disagree.
func (op *Op) RepublishBoundary(b *Boundary) error {
	if op.Record == nil {
		return errors.New("no contract record to republish")
	}
	prev := op.Record
	rec := *op.Record
	rec.Boundary = Hold(b)
	if err := op.lock.Publish(&rec); err != nil {
		return fmt.Errorf("republish the contract: %w", err)
	}
	if err := op.rewriteMakaJSON(b); err != nil {
		if rerr := op.lock.Publish(prev); rerr != nil {
			return fmt.Errorf("republish the contract: %w (and putting the record back: %w)", err, rerr)
		}
		return fmt.Errorf("republish the contract: %w", err)
	}
	op.Record = &rec
	return nil
}

// rewriteMakaJSON sets the boundary of the container's maka.json, if it
// has one (a container created before its record was written has none).
func (op *Op) rewriteMakaJSON(b *Boundary) error {
	if op.rt == nil {
		return nil
	}
	path := filepath.Join(op.rt.Root, op.ID, recordFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r.Boundary.Set(b)
	return writeJSONAtomic(path, r)
}
