package sandbox

import (
	"strings"

	"github.com/maka-runtime/maka/internal/launch"
)

// Owner keys a sandbox to whoever uses it, as the bubblewrap backend keys
// its sandboxes: a scope (a workspace, a tenant), a thread, an agent, a
// call and a kind. Scope is required; the others narrow it.
type Owner struct {
	Scope  string `json:"scope"`
	Thread string `json:"thread,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Call   string `json:"call,omitempty"`
	Kind   string `json:"kind,omitempty"`
}

// ErrOwnerBusy: another live owner holds the key.
var ErrOwnerBusy = launch.ErrOwnerBusy

func (o Owner) String() string {
	return strings.Join([]string{o.Scope, o.Thread, o.Agent, o.Call, o.Kind}, "/")
}

// PurgeResult is what Manager.Purge did with one owner's sandbox.
type PurgeResult struct {
	Owner Owner  `json:"owner"`
	ID    string `json:"id"`
	// Result: "purged" (destroyed, or already gone), "busy" (its owner
	// lives) or "failed" (kept for the next purge, Error says why).
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}
