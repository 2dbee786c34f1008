package adapter

import acp "github.com/coder/acp-go-sdk"

// CounterUnknownUpdates counts session updates of a kind the SDK does not
// know (kept by the SDK as raw bytes); they change nothing here.
const CounterUnknownUpdates = "unknown_updates"

// CounterUnknownSessionRefs counts `session` tool-call contents naming a
// session that is not an announced child (shown unavailable).
const CounterUnknownSessionRefs = "unknown_session_refs"

// isSubagentSessionUpdate reports the subagent-session kinds
// (subagent_update, session_message, session_message_chunk), recognised by
// their explicit discriminators.
func isSubagentSessionUpdate(u *acp.SessionUpdate) bool {
	return u.SubagentUpdate != nil || u.SessionMessage != nil || u.SessionMessageChunk != nil
}

// resolveSessionRefs resolves `session` tool-call contents against the
// announced child sessions. A reference never creates, reparents or grants
// anything: an unknown target is reported with Known false (shown
// unavailable). Without the client capability the contents are dropped and
// counted.
func resolveSessionRefs(tx *Tx, content []acp.ToolCallContent) []SessionRef {
	var refs []SessionRef
	for _, c := range content {
		if c.Session == nil {
			continue
		}
		if !tx.t.conn.SubagentsDeclared {
			tx.t.counters[CounterSubagentFramesOff]++
			continue
		}
		id := string(c.Session.SessionId)
		known := id != "" && tx.ParentSession(id) != ""
		if !known {
			tx.t.counters[CounterUnknownSessionRefs]++
		}
		refs = append(refs, SessionRef{SessionID: id, Known: known})
	}
	return refs
}
