package persistence

import (
	"context"
	"strings"
)

// A subagent card is one (task_session_id, tool_call_id) pair: the child
// the agent launched. Its rows are one per agent execution that saw it (a
// session loaded by a new agent process is a new execution, with its own
// key, and never writes an earlier execution's row). The card reads
// collapse those rows into one, by these rules:
//
//   - status (agent_status, tool_status), id, source and execution are the
//     "status row"'s: the newest settled row when any row is settled (a
//     card never goes back to open because a later execution's replay is
//     still under way), else the newest row;
//   - settled_at is the first settlement of any execution, observed_at the
//     first observation, updated_at the latest, is_async true if any row's;
//   - turn_id is the earliest execution's (the first row with a turn): a
//     card stays in the turn that launched it;
//   - every other fact (parent, type, description, agent id, child
//     session, model, metrics) is the newest execution's that has it.
//
// "Newest" orders rows by observed_at, then agent_execution_id, both
// descending (byte order); "earliest" is the reverse.

// cardPartition is the window every collapsed column is computed over.
const cardPartition = "PARTITION BY task_session_id, tool_call_id"

// cardsSQL is the query of the collapsed cards of the rows cond selects
// (a condition on task_session_subagents' own columns): every column of
// finalColumns, in that order, one row per pair, unordered; observed_at,
// settled_at and updated_at come out canonical (engine.canon).
func cardsSQL(e engine, cond string) string {
	observed := e.canon("observed_at")
	exec := e.binary("agent_execution_id")
	newest := observed + " DESC, " + exec + " DESC"
	// newestWith is the newest row's value of col among the rows that have
	// one (NULL when none has).
	newestWith := func(col string) string {
		return "FIRST_VALUE(" + col + ") OVER (" + cardPartition + " ORDER BY CASE WHEN " + col +
			" IS NULL THEN 1 ELSE 0 END, " + newest + ")"
	}
	cols := make([]string, len(finalColumns))
	for i, c := range finalColumns {
		switch c {
		case "turn_id":
			cols[i] = "FIRST_VALUE(turn_id) OVER (" + cardPartition +
				" ORDER BY CASE WHEN turn_id IS NULL THEN 1 ELSE 0 END, " + observed + ", " + exec + ")"
		case "parent_tool_call_id", "subagent_type", "description", "agent_id", "child_session_id", "model",
			"total_tokens", "tool_use_count", "duration_ms":
			cols[i] = newestWith(c)
		case "is_async":
			cols[i] = "MAX(is_async) OVER (" + cardPartition + ")"
		case "observed_at":
			cols[i] = "MIN(" + observed + ") OVER (" + cardPartition + ")"
		case "settled_at":
			cols[i] = "MIN(" + e.canon("settled_at") + ") OVER (" + cardPartition + ")"
		case "updated_at":
			cols[i] = "MAX(" + e.canon("updated_at") + ") OVER (" + cardPartition + ")"
		default: // the status row's own
			cols[i] = c
		}
		cols[i] += " AS " + c
	}
	return `SELECT ` + selectColumns + `
FROM (SELECT ` + strings.Join(cols, ",\n\t") + `,
	ROW_NUMBER() OVER (` + cardPartition + ` ORDER BY CASE WHEN settled_at IS NULL THEN 1 ELSE 0 END, ` + newest + `) AS status_rank
	FROM task_session_subagents
	WHERE ` + cond + `) cards
WHERE status_rank = 1`
}

// orderedCardsSQL is cardsSQL in ListBySession order (observed_at is
// already canonical there).
func orderedCardsSQL(e engine, cond string) string {
	return cardsSQL(e, cond) + `
ORDER BY observed_at, ` + e.binary("tool_call_id") + `, ` + e.binary("agent_execution_id")
}

// ListCards returns a session's subagent cards: one per tool call however
// many agent executions stored a row of it, collapsed by the rules above,
// in ListBySession order. ListBySession keeps the raw per-execution rows.
func (s *Store) ListCards(ctx context.Context, sessionID string) ([]SubagentContext, error) {
	return s.query(ctx, s.eng.rebind(orderedCardsSQL(s.eng, "task_session_id = ?")), encodeID(sessionID))
}
