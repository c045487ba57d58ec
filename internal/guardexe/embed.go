//go:build guard_embed

package guardexe

import _ "embed" // the guard's binary

// Built by `make guard` (cmd/maka-guard, freestanding) before any program
// that embeds it.
var (
	//go:embed maka-guard.gz
	embeddedGzip []byte
	//go:embed maka-guard.sha256
	embeddedDigest string
)
