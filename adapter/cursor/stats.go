package cursor

// Stats counts what the Cursor dialect did with cursor/task traffic on one
// connection. Every counter only grows.
type Stats struct {
	// Requests counts cursor/task requests and notifications from a Cursor agent.
	Requests uint64
	// Rejected counts cursor/task requests from other agents, answered -32601.
	Rejected uint64
	// Dropped counts requests with no usable toolCallId (missing, empty, not a
	// string, longer than MaxToolCallIDBytes, params not an object) or that
	// arrived while the connection had no current session. They are answered {}.
	Dropped uint64
	// Truncated counts string fields cut to their cap.
	Truncated uint64
	// Applied counts requests merged into a card that was still active.
	Applied uint64
	// LateApplied counts requests merged into a card that had already
	// reached a terminal status this turn.
	LateApplied uint64
	// Unchanged counts requests that matched a card but changed nothing
	// (so no event was emitted).
	Unchanged uint64
	// NonSubagent counts requests naming an active tool call that is not a
	// subagent; that tool call is left untouched and the request is pending.
	NonSubagent uint64
	// PendingStored counts requests stored as pending (no card yet).
	PendingStored uint64
	// PendingMerged counts duplicate requests merged into a pending entry.
	PendingMerged uint64
	// PendingMatched counts pending entries applied when their tool_call came.
	PendingMatched uint64
	// PendingEvictedCount counts pending entries evicted by the count cap.
	PendingEvictedCount uint64
	// PendingEvictedBytes counts pending entries evicted by the byte budget.
	PendingEvictedBytes uint64
	// PendingEvictedAge counts pending entries evicted by the age cap.
	PendingEvictedAge uint64
	// PendingSwept counts pending entries dropped unmatched when their
	// session's turn ended or the session was closed, replaced or loaded.
	PendingSwept uint64
}
