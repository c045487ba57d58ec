//go:build agent_embed

package agentexe

import _ "embed" // the agent's binary

// Built by `make agent` (cmd/maka-agent, static) before any program that
// embeds it.
var (
	//go:embed maka-agent.gz
	embeddedGzip []byte
	//go:embed maka-agent.sha256
	embeddedDigest string
)
