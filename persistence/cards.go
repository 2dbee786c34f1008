package persistence

import (
	"context"
	"database/sql"
	"slices"
	"strings"
)

// A subagent card is one (task_session_id, tool_call_id) pair: the child
// the agent launched. Its rows are one per agent execution that saw it (a
// session loaded by a new agent process is a new execution, with its own
// key, and never writes an earlier execution's row). The card reads
// collapse those rows into one, by these rules:
//
//   - the "status row" is the newest settled row when any row is settled
//     (a card never goes back to open because a later execution's replay
//     is still under way), else the newest row; "newest" orders by
//     observed_at, then agent_execution_id, both descending (byte order);
//   - status (agent_status, tool_status), id, source, task and execution
//     are the status row's;
//   - every other fact (parent, type, description, agent id, child
//     session, model, metrics) is the status row's, or, when it has none,
//     the greatest value another execution's row has (a fact once learned
//     is never unset by an execution that did not learn it);
//   - settled_at is the first settlement of any execution, observed_at the
//     first observation, updated_at the latest, is_async true if any row's;
//   - turn_id is the earliest row's that has one (earliest by observed_at,
//     then agent_execution_id): a card stays in the turn that launched it.
//
// Texts and facts of the layer's own tables are read by the status row's
// key (the card's AgentExecutionID).

// cardPartition is the window every collapsed column is computed over.
const cardPartition = "PARTITION BY task_session_id, tool_call_id"

// cardsSQL is the query of the collapsed cards of the rows cond selects
// (a condition on task_session_subagents' own columns): every column of
// finalColumns, in that order, one row per pair, unordered; observed_at,
// settled_at and updated_at come out canonical (engine.canon).
func cardsSQL(e engine, cond string) string { return collapsedSQL(e, cond, finalColumns) }

// collapsedSQL is cardsSQL with only the given columns of finalColumns,
// in that order: each by the same rule, and the window sorts carry only
// the columns the rule needs for them (a reader that counts cards need not
// sort their descriptions).
func collapsedSQL(e engine, cond string, columns []string) string {
	cols := make([]string, len(columns))
	// The rows' columns the windows order and partition by, then those
	// the wanted columns are made of (the times come canonical, below).
	base := []string{"task_session_id", "tool_call_id", "agent_execution_id", "turn_id"}
	need := func(c string) {
		if !slices.Contains(base, c) && !slices.Contains([]string{"observed_at", "settled_at", "updated_at"}, c) {
			base = append(base, c)
		}
	}
	for i, c := range columns {
		// The merged cards' keys (merged_cards.go): the rows counted, the
		// status row's own settlement and observation, its own facts
		// (status_*) and the greatest of each (max_*), the turn row's key.
		fact, own := strings.CutPrefix(c, "status_")
		greatest, isMax := strings.CutPrefix(c, "max_")
		switch {
		case c == "row_count":
			cols[i] = "COUNT(*) OVER whole"
		case c == "status_settled":
			cols[i] = "CASE WHEN settled_c IS NULL THEN 0 ELSE 1 END"
		case c == "status_observed":
			cols[i] = "observed_c"
		case c == "turn_observed":
			cols[i] = "FIRST_VALUE(CASE WHEN turn_id IS NULL THEN NULL ELSE observed_c END) OVER earliest"
		case c == "turn_execution":
			cols[i] = "FIRST_VALUE(CASE WHEN turn_id IS NULL THEN NULL ELSE agent_execution_id END) OVER earliest"
		case own && slices.Contains(cardFacts, fact):
			cols[i] = fact
			need(fact)
		case isMax && slices.Contains(cardFacts, greatest):
			cols[i] = "MAX(" + greatest + ") OVER whole"
			need(greatest)
		case c == "turn_id":
			cols[i] = "FIRST_VALUE(turn_id) OVER earliest"
		case slices.Contains(cardFacts, c):
			cols[i] = "COALESCE(" + c + ", MAX(" + c + ") OVER whole)"
			need(c)
		case c == "is_async":
			cols[i] = "MAX(is_async) OVER whole"
			need(c)
		case c == "observed_at":
			cols[i] = "MIN(observed_c) OVER whole"
		case c == "settled_at":
			cols[i] = "MIN(settled_c) OVER whole"
		case c == "updated_at":
			cols[i] = "MAX(updated_c) OVER whole"
		default: // the status row's own
			cols[i] = c
			need(c)
		}
		cols[i] += " AS " + c
	}
	exec := e.binary("agent_execution_id")
	// Three windows only: each ordered one costs a sort of the rows.
	return `SELECT ` + strings.Join(columns, ", ") + `
FROM (SELECT ` + strings.Join(cols, ",\n\t") + `,
	ROW_NUMBER() OVER newest_settled AS status_rank
	FROM (SELECT ` + strings.Join(base, ", ") + `, ` + e.canon("observed_at") + ` AS observed_c, ` + e.canon("settled_at") + ` AS settled_c, ` +
		e.canon("updated_at") + ` AS updated_c
		FROM task_session_subagents
		WHERE ` + cond + `) canon_rows
	WINDOW whole AS (` + cardPartition + `),
		newest_settled AS (` + cardPartition + ` ORDER BY CASE WHEN settled_c IS NULL THEN 1 ELSE 0 END, observed_c DESC, ` + exec + ` DESC),
		earliest AS (` + cardPartition + ` ORDER BY CASE WHEN turn_id IS NULL THEN 1 ELSE 0 END, observed_c, ` + exec + `)) cards
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
//
// A session that one execution wrote (the common case) has one row per
// card already, and is read as ListBySession reads it: the collapse's
// window sorts are paid only by sessions that several executions wrote.
//
// A store with the merged cards (StepMergedCards) reads them as they are
// kept, through the table's key: the cost is the session's cards.
func (s *Store) ListCards(ctx context.Context, sessionID string) ([]SubagentContext, error) {
	id := encodeID(sessionID)
	if merged, err := s.mergedCards(ctx, s.reader); err != nil {
		return nil, err
	} else if merged {
		return s.query(ctx, s.eng.rebind(mergedCardsSQL(s.eng)), id)
	}
	var one sql.NullBool
	err := s.reader.QueryRowContext(ctx, s.eng.rebind(`SELECT `+oneExecutionSQL("?")), id, id).Scan(&one)
	if err == nil && (!one.Valid || one.Bool) {
		return s.ListBySession(ctx, sessionID)
	}
	return s.query(ctx, s.eng.rebind(orderedCardsSQL(s.eng, "task_session_id = ?")), id)
}

// oneExecutionSQL is whether one execution wrote the rows of the session
// the expression session names (used twice: a placeholder takes two
// values): the least and greatest execution id of its rows, each one
// lookup in the key's index (task_session_id leads it, agent_execution_id
// follows), are equal; NULL when it has no rows. Such a session has one
// row per card (the key is session, execution, tool call), so its rows
// are its cards without the collapse.
func oneExecutionSQL(session string) string {
	span := func(agg string) string {
		return `(SELECT ` + agg + `(agent_execution_id) FROM task_session_subagents WHERE task_session_id = ` + session + `)`
	}
	return span("MIN") + ` = ` + span("MAX")
}
