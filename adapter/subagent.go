package adapter

import acp "github.com/coder/acp-go-sdk"

// isSubagentSessionUpdate reports the subagent-session kinds
// (subagent_update, session_message, session_message_chunk).
func isSubagentSessionUpdate(u *acp.SessionUpdate) bool {
	return false
}

// resolveSessionRefs resolves `session` contents against the known child
// sessions.
func resolveSessionRefs(tx *Tx, content []acp.ToolCallContent) []SessionRef {
	return nil
}
