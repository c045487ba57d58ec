package launch

import (
	"errors"
	"fmt"

	"github.com/maka-runtime/maka/libmaka"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// ErrNoContract is exec's refusal for a container whose maka.json holds no
// boundary: nothing to hold the command to, so no command.
var ErrNoContract = errors.New("its contract (maka.json in its state dir) is missing or holds no boundary: exec cannot be held to the policy the container was created under, and is refused (maka delete it and create it again)")

// ExecBase is what a new process in a container is built on and held to,
// from its maka.json: the init's process spec (the base of the command's
// environment, user and capabilities; a plain default for a record from a
// maka that kept none), the boundary, and the policy the container was
// created under (libmaka.RecordedPolicy). The CLI's exec and the Go API's
// commands both take it from here, so both are held to the same contract.
func ExecBase(rec *libmaka.Record) (specs.Process, *libmaka.Boundary, *libmaka.Policy, error) {
	b, err := rec.Boundary.Get()
	if err != nil {
		return specs.Process{}, nil, nil, fmt.Errorf("its contract's boundary: %w", err)
	}
	if b == nil {
		return specs.Process{}, nil, nil, ErrNoContract
	}
	pol, err := libmaka.RecordedPolicy(&rec.Policy, &rec.Boundary)
	if err != nil {
		return specs.Process{}, nil, nil, err
	}
	init, err := rec.Process.Get()
	if err != nil {
		return specs.Process{}, nil, nil, fmt.Errorf("its contract's process: %w", err)
	}
	if init == nil {
		return specs.Process{Cwd: "/", Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}, b, pol, nil
	}
	return *init, b, pol, nil
}
