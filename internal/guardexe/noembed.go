//go:build !guard_embed

package guardexe

// Without the guard_embed tag the program carries no guard: a detached
// monitor starts its own binary as its guard.
var (
	embeddedGzip   []byte
	embeddedDigest string
)
