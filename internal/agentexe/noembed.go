//go:build !agent_embed

package agentexe

// Without the agent_embed tag the program carries no agent: sandboxes'
// commands go through libcontainer's exec path.
var (
	embeddedGzip   []byte
	embeddedDigest string
)
