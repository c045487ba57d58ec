// Package agentinit links in the resident agent of a tool sandbox
// (agent.c): a constructor that, when the program is started with Env set
// to "1", runs the agent on descriptor 3 before the Go runtime starts, and
// exits with it. internal/agent is maka's side of its protocol.
package agentinit

// #cgo CFLAGS: -Wall -Werror
import "C"

// Env makes the program the agent.
const Env = "_MAKA_AGENT"
