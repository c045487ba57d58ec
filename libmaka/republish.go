package libmaka

import (
	"encoding/json"
	"errors"
	"fmt"
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

// RepublishBoundary publishes the record with a new boundary (e.g. the
// limits an update enforces), keeping its stage, owner and attachment: the
// command that changes the boundary does not take the container over.
// `maka recover --relaunch` and every reader of the record then see what
// is enforced.
func (op *Op) RepublishBoundary(b *Boundary) error {
	if op.Record == nil {
		return errors.New("no contract record to republish")
	}
	rec := *op.Record
	rec.Boundary = b
	if err := op.lock.Publish(&rec); err != nil {
		return fmt.Errorf("republish the contract: %w", err)
	}
	op.Record = &rec
	return nil
}
