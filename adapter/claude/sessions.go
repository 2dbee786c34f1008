package claude

import (
	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// registry holds the child sessions announced on one connection.
type registry struct{}

func newRegistry() *registry { return &registry{} }

func (r *registry) clear(sessionID string) {}

func (d *Dialect) handleSessionForm(tx *adapter.Tx, n *acp.SessionNotification) bool {
	return false
}
