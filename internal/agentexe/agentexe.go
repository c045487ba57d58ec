// Package agentexe carries maka-agent (cmd/maka-agent), the resident agent
// of a tool sandbox, inside the program that launches sandboxes, as maka
// carries maka-monitor: gzipped, with its digest, embedded when the program
// is built with the agent_embed tag (`make build` and the test fixtures
// are). The agent is exec'd by libcontainer's init inside the sandbox's
// root, so it must be a static program of its own: maka hands it over as a
// sealed memfd (internal/embedexe), never as a path in a root the sandbox
// could write or the image could lack.
package agentexe

import (
	"errors"
	"os"

	"github.com/maka-runtime/maka/internal/embedexe"
)

// ErrNotCarried is Open's answer in a program built without the agent.
var ErrNotCarried = errors.New("this program does not carry maka's agent (build it with `make`, or with the agent_embed tag after `make agent`)")

var prog = embedexe.New("maka-agent", embeddedGzip, embeddedDigest, ErrNotCarried)

// Carried reports whether this program carries the agent.
func Carried() bool { return prog.Carried() }

// Open returns a read-only descriptor of a sealed memfd that holds the
// agent (embedexe.Program.Open): made once per process and shared, the
// caller must not close it.
func Open() (*os.File, error) { return prog.Open() }
