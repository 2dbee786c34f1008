// Package adapter normalises the subagent activity of ACP agents into one
// payload for every agent.
//
// A Tracker follows the tool calls of one connection. Feed it the
// connection's initialize exchange, every session/update notification and
// the session lifecycle; it calls the consumer back with an Event per tool
// call change. Events of recognised subagents carry a Payload whose JSON
// shape is the persistence contract ({"kind":"subagent_task",
// "subagent_task":{…}, "background_work":{…}}).
//
// How each agent reports subagents is a Dialect, chosen once per
// connection: explicitly by name, else from initialize's agentInfo.name,
// else generic. This package registers the opencode, auggie, copilot,
// gemini, codex and generic dialects, one file each (opencode.go, …);
// adapter/claude and adapter/cursor register theirs. claudecode.go holds
// the part of Claude's legacy form every dialect reads.
//
// The common pipeline, for every dialect:
//
//   - recognition rules R1–R5 (Claude toolName Agent/Task, a "task" title,
//     rawInput._toolName "task", the Auggie "sub-agent-<type>:" title, the
//     AIR marker _meta.jetbrains.air.subagent);
//   - merge classes: fill-if-empty for description, prompt, subagent_type
//     and result text; overwrite-if-present for status, agent id, model,
//     child session id and output file; overwrite-if-positive for metrics;
//     overwrite-if-reported for tool_use_count; sticky booleans;
//   - a monotonic tool status (pending < in_progress < terminal; the first
//     terminal status wins);
//   - nesting by _meta.claudeCode.parentToolUseId;
//   - a per-session completed set where late enrichment still applies until
//     the prompt ends.
//
// Bad input is read field by field: a wrong-typed field is ignored alone and
// counted; nothing an agent sends panics out of the Tracker, and every store
// is bounded (counts and bytes), evictions counted.
//
// Child sessions of the ACP subagent-session form (adapter/claude, when the
// client declares clientCapabilities.subagents) become cards in their
// parent session with the same Payload, plus a ChildSession view; their
// messages are MessageView events. Replayer and ReplayCapture drive a
// Tracker from recorded JSON-RPC traffic.
package adapter
