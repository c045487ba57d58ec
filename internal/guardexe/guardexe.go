// Package guardexe carries maka-guard (cmd/maka-guard), a detached
// monitor's guard, inside the monitor's binary: gzipped, with its digest,
// embedded when the program is built with the guard_embed tag (`make
// monitor` and `make build` do). The monitor starts it from a sealed
// memfd (internal/embedexe) for every sandbox; a program built without it
// starts its own binary as the guard instead (`monitor --guard`), at the
// cost of a second Go start.
package guardexe

import (
	"errors"
	"os"

	"github.com/maka-runtime/maka/internal/embedexe"
)

// ErrNotCarried is Open's answer in a program built without the guard.
var ErrNotCarried = errors.New("this program does not carry maka's guard (built without the guard_embed tag)")

var prog = embedexe.New("maka-guard", embeddedGzip, embeddedDigest, ErrNotCarried)

// Carried reports whether this program carries the guard.
func Carried() bool { return prog.Carried() }

// Open returns a read-only descriptor of a sealed memfd that holds the
// guard (embedexe.Program.Open): made once per process and shared, the
// caller must not close it.
func Open() (*os.File, error) { return prog.Open() }
