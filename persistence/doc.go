// Package persistence keeps a queryable record of every subagent fan-out an
// orchestrator observes: one row of task_session_subagents per
// (task_session_id, agent_execution_id, tool_call_id), on SQLite (the
// embedded default) or PostgreSQL, through one API.
//
// Open connects by DSN and migrates (idempotently, on every open): the
// table and its indexes, the execution-aware amendment of older tables,
// then a one-time backfill from message history, guarded by activation
// keys in kandev_meta. Record stores a frame with one atomic upsert whose
// conflict clause carries every merge rule; it never fails its caller.
// ListBySession and ListByTurn read rows back in a total order; Health
// compares message history with the rows inside one read transaction.
// Writer counters are published with expvar under ExpvarName.
//
// The package imports nothing of the adapters: callers map their events to
// a Frame. See README.md for the schema, the engine differences and the
// acceptance-criteria map.
package persistence
