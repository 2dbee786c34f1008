// Package cursor is the Cursor dialect of the subagent adapter: it enriches
// Cursor's bare "Task: Subagent task" cards with the metadata Cursor sends
// out of band in its cursor/task request.
//
// Plug a Handler into your acp.Client's HandleExtensionMethod and feed the
// connection's adapter.Tracker as usual. Importing this package registers
// the dialect under adapter.DialectCursor, so a Tracker picks it when the
// agent's initialize agentInfo.name contains "cursor" (or when configured
// explicitly, e.g. with NewDialect to change the limits).
//
// What the package guarantees:
//
//   - In a Cursor connection, cursor/task always gets the result {} (never
//     an error), whatever its params; as a notification it is processed and
//     never answered. From any other agent it gets -32601 exactly as a
//     client without the adapter would answer, and no state changes. Every
//     other method gets -32601.
//   - Params are read field by field (ParseTaskParams): a wrong-typed field
//     is ignored alone, subagentType and durationMs are never read, and
//     strings are capped (MaxToolCallIDBytes, MaxPromptBytes, MaxFieldBytes).
//   - The request and the tool_call are correlated by toolCallId in any
//     order: whichever arrives second merges. Description, prompt, model and
//     agent id fill empty fields only. A request after the card completed
//     still enriches it with exactly one update carrying the terminal status;
//     a request that changes nothing emits nothing.
//   - A completion rawOutput.isBackground == true sets is_async (sticky); a
//     "-fast" model suffix is informational only. Both reads happen for
//     Cursor connections only.
//   - Unmatched requests wait in a pending store bounded per session by
//     count, bytes and age (Limits), with evictions counted; it is cleared
//     at the end of the session's prompt turn and whenever a session is
//     created, loaded, closed or the Tracker is reset.
//
// See README.md for the scenario-to-test map and the choices made.
package cursor
