package claude

import (
	"strings"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// The subagent-session form lives in the adapter core, the same for every
// dialect (adapter/sessionform.go). What stays here is Claude's own: the
// background-launch receipt, and the names this package has always
// exported for the form's bounds and counters.

// Default bounds of the subagent-session registry; see adapter.SessionLimits.
const (
	MaxChildren         = adapter.MaxChildren
	MaxMessages         = adapter.MaxMessages
	MaxMessageTextBytes = adapter.MaxMessageTextBytes
	MaxMessageBytes     = adapter.MaxMessageBytes
)

// Counters of the subagent-session form (the adapter core's).
const (
	CounterChildrenAnnounced   = adapter.CounterChildrenAnnounced
	CounterChildrenEvicted     = adapter.CounterChildrenEvicted
	CounterChildReparent       = adapter.CounterChildReparent
	CounterBadSubagentUpdate   = adapter.CounterBadSubagentUpdate
	CounterBadState            = adapter.CounterBadState
	CounterBadMessage          = adapter.CounterBadMessage
	CounterChunkWithoutMessage = adapter.CounterChunkWithoutMessage
	CounterMessagesEvicted     = adapter.CounterMessagesEvicted
	CounterMessageTruncated    = adapter.CounterMessageTruncated
)

// Limits bound what the subagent-session form keeps per connection.
type Limits = adapter.SessionLimits

// launchReceiptPrefix starts the tool result claude-agent-acp reports for
// an Agent call launched in the background: a receipt naming the agent id
// and its output file, sent while the child still runs.
const launchReceiptPrefix = "Async agent launched successfully"

// IsLaunchReceipt reports whether text is Claude's receipt for a
// background launch rather than a subagent's answer.
func IsLaunchReceipt(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), launchReceiptPrefix)
}

// CanCancel reports whether the client may send session/cancel to
// childSessionID (Tracker.CanCancelChild).
func CanCancel(t *adapter.Tracker, childSessionID string) bool {
	return t.CanCancelChild(childSessionID)
}

// Disconnected records that the connection to the agent was lost
// (Tracker.Disconnected).
func Disconnected(t *adapter.Tracker) { t.Disconnected() }
