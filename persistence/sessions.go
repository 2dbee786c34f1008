package persistence

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Session statuses, derived from a session's cards by ListSessions.
const (
	// SessionEmpty: the session has no subagent card.
	SessionEmpty = "empty"
	// SessionOpen: at least one card has not reached a terminal status
	// (one the agent stopped tracking, tool status unknown, aside).
	SessionOpen = "open"
	// SessionUnknown: no card is open, and at least one is a child the
	// agent stopped tracking (tool status unknown): not running, not
	// finished.
	SessionUnknown = "unknown"
	// SessionError: every card settled, at least one as error or failed.
	SessionError = "error"
	// SessionCancelled: every card settled, none failed, at least one
	// cancelled.
	SessionCancelled = "cancelled"
	// SessionComplete: every card settled successfully.
	SessionComplete = "complete"
)

// SessionSummary is one session of ListSessions, aggregated from its
// task_sessions row and its subagent cards.
type SessionSummary struct {
	ID     string
	TaskID string
	// StartedAt is task_sessions.started_at when the host set it, else the
	// first observed_at of the session's cards (zero when it has neither).
	StartedAt time.Time
	// LastUpdate is the latest updated_at of its cards (zero without cards).
	LastUpdate time.Time
	// Turns counts the distinct turns its cards were first observed in.
	Turns int
	// Cards counts its subagent cards, one per tool call however many agent
	// executions stored a row of it (ListCards); Open, Failed, Cancelled
	// and Unknown count those not yet settled (unknown ones aside),
	// settled as error/failed, settled as cancelled, and left with the
	// tool status unknown, by each card's collapsed status.
	Cards, Open, Failed, Cancelled, Unknown int
	// Status is one of the Session* constants, derived from the counts.
	Status string
	// Executions lists the distinct agent_execution_id values of its cards,
	// in byte order.
	Executions []string
	// ChildSessions lists the child sessions its cards launched
	// (child_session_id), in byte order.
	ChildSessions []string
	// ObservationIncomplete reports that lines of the session's connection
	// went by unobserved (the tap's observer fell behind, or a line was
	// over its limit: MarkObservationIncomplete), so its cards may miss
	// what those lines said; Unobserved is how many, as the writer that
	// counted most reported.
	ObservationIncomplete bool
	Unobserved            int64
}

// SessionFilter narrows ListSessions. The zero value lists the most recent
// sessions.
type SessionFilter struct {
	// ExecutionPrefix keeps sessions with a card whose agent_execution_id
	// starts with it (exact, case-sensitive); "" keeps all.
	ExecutionPrefix string
	// Text keeps sessions whose id, or a card's tool call id, description,
	// subagent type, model, agent id or agent status, contains it
	// (ASCII case-insensitive on both engines); "" keeps all.
	Text string
	// Limit bounds the result (default 100, at most 10,000).
	Limit int
}

// DefaultSessionLimit and MaxSessionLimit bound SessionFilter.Limit.
const (
	DefaultSessionLimit = 100
	MaxSessionLimit     = 10000
)

// maxFamilySessions bounds how many sessions SessionFamily follows, so a
// hostile chain of child sessions costs a bounded number of queries.
const maxFamilySessions = 1000

// ListSessions returns sessions, most recently started first (ties by id),
// with their aggregates. Sessions without cards are included (status
// SessionEmpty). It only reads.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter) ([]SessionSummary, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultSessionLimit
	}
	limit = min(limit, MaxSessionLimit)
	var where []string
	var args []any
	if f.ExecutionPrefix != "" {
		where = append(where, `s.id IN (SELECT task_session_id FROM task_session_subagents
	WHERE substr(agent_execution_id, 1, ?) = ?)`)
		args = append(args, utf8.RuneCountInString(f.ExecutionPrefix), f.ExecutionPrefix)
	}
	if f.Text != "" {
		pat := "%" + likeEscape(strings.ToLower(f.Text)) + "%"
		ors := []string{}
		args = append(args, pat)
		for _, col := range []string{"tool_call_id", "description", "subagent_type", "model", "agent_id", "agent_status"} {
			ors = append(ors, `LOWER(`+col+`) LIKE ? ESCAPE '\'`)
			args = append(args, pat)
		}
		where = append(where, `(LOWER(s.id) LIKE ? ESCAPE '\' OR s.id IN (SELECT task_session_id FROM task_session_subagents
	WHERE `+strings.Join(ors, " OR ")+`))`)
	}
	return s.summaries(ctx, where, args, limit)
}

// Session returns the summary of one session; ok is false when no
// task_sessions row has that id.
func (s *Store) Session(ctx context.Context, id string) (sum SessionSummary, ok bool, err error) {
	out, err := s.summaries(ctx, []string{"s.id = ?"}, []any{encodeID(id)}, 1)
	if err != nil || len(out) == 0 {
		return SessionSummary{}, false, err
	}
	return out[0], true, nil
}

// summaries reads the summaries of the sessions (s) the conditions in
// where select, at most limit, most recently started first. The cost is
// the listed sessions', not the store's: a first query picks the page
// (summaryPageSQL), and only the rows of the page's sessions are counted
// (summaryCountsSQL), each session's without the collapse's windows when
// one execution wrote it. Every query of one call reads one snapshot, so
// a session's counts are never taken by the wrong path while an execution
// joins it.
func (s *Store) summaries(ctx context.Context, where []string, args []any, limit int) ([]SessionSummary, error) {
	out, err := s.readSummaries(ctx, where, args, limit)
	if err != nil && s.eng.classify(err) == errStalePlan {
		out, err = s.readSummaries(ctx, where, args, limit)
	}
	return out, err
}

// readSummaries is one attempt of summaries, in one read transaction.
func (s *Store) readSummaries(ctx context.Context, where []string, args []any, limit int) ([]SessionSummary, error) {
	e := s.eng
	tx, err := s.reader.BeginTx(ctx, e.snapshot())
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	rows, err := tx.QueryContext(ctx, e.rebind(summaryPageSQL(e, cond)), append(args[:len(args):len(args)], limit)...)
	if err != nil {
		return nil, err
	}
	var out []SessionSummary
	index := map[string]int{}
	var single, multi []any
	var started []bool // by index: the session's started_at is set
	for rows.Next() {
		var m SessionSummary
		var startedAt nullTime
		var oneExecution sql.NullBool
		if err := rows.Scan(&m.ID, &m.TaskID, &startedAt, &oneExecution); err != nil {
			rows.Close()
			return nil, err
		}
		m.StartedAt = startedAt.Time
		started = append(started, startedAt.Valid)
		index[m.ID] = len(out)
		out = append(out, m)
		switch {
		case !oneExecution.Valid: // no cards
		case oneExecution.Bool:
			single = append(single, m.ID)
		default:
			multi = append(multi, m.ID)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	merged, err := s.mergedCards(ctx, tx)
	if err != nil {
		return nil, err
	}
	if len(single)+len(multi) > 0 {
		q := summaryCountsSQL(e, len(multi), len(single))
		if merged {
			q = mergedCountsSQL(len(multi) + len(single))
		}
		rows, err := tx.QueryContext(ctx, e.rebind(q), append(multi, single...)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var c SessionSummary
			var first, last nullTime
			if err := rows.Scan(&id, &first, &last, &c.Cards, &c.Turns, &c.Open, &c.Failed, &c.Cancelled, &c.Unknown); err != nil {
				rows.Close()
				return nil, err
			}
			m := &out[index[id]]
			if !started[index[id]] {
				m.StartedAt = first.Time
			}
			m.LastUpdate, m.Cards, m.Turns, m.Open, m.Failed, m.Cancelled, m.Unknown = last.Time, c.Cards, c.Turns, c.Open, c.Failed, c.Cancelled, c.Unknown
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	ids := slices.Sorted(maps.Keys(index))
	err = eachPair(ctx, tx, e, executionsSQL, ids, func(session, value string) {
		out[index[session]].Executions = append(out[index[session]].Executions, decodeID(value))
	})
	if err != nil {
		return nil, err
	}
	err = eachPair(ctx, tx, e, childSessionsSQL, ids, func(session, value string) {
		out[index[session]].ChildSessions = append(out[index[session]].ChildSessions, decodeID(value))
	})
	if err != nil {
		return nil, err
	}
	if err := s.readGaps(ctx, tx, ids, index, out); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Status = sessionStatus(out[i])
		out[i].ID, out[i].TaskID = decodeID(out[i].ID), decodeID(out[i].TaskID)
		slices.Sort(out[i].Executions)
		slices.Sort(out[i].ChildSessions)
	}
	return out, tx.Commit()
}

// summaryPageSQL selects the page of sessions cond (a WHERE clause on
// task_sessions s, or "") keeps: most recently started first (started_at,
// else the first observation of its rows, which is its cards' first: a
// card's observed_at is its rows' least), ties by id in byte order, at most
// the last placeholder's count. Each comes with its task id, canonical
// started_at, and whether one execution wrote its rows (oneExecutionSQL:
// two seeks in the key's index; NULL: no rows). The first observation is
// read through idx_subagents_session_observed (one seek on PostgreSQL,
// where canon is the column itself; the session's index entries on
// SQLite), only for sessions without started_at (COALESCE stops at the
// first value).
func summaryPageSQL(e engine, cond string) string {
	return `SELECT id, task_id, started_c, ` + oneExecutionSQL("page.id") + `
FROM (SELECT s.id, s.task_id, ` + e.canon("s.started_at") + ` AS started_c,
		COALESCE(` + e.canon("s.started_at") + `, (SELECT MIN(` + e.canon("observed_at") + `) FROM task_session_subagents
			WHERE task_session_id = s.id)) AS recent_c
	FROM task_sessions s
	` + cond + `
	ORDER BY recent_c DESC, ` + e.binary("s.id") + `
	LIMIT ?) page
ORDER BY recent_c DESC, ` + e.binary("id")
}

// summaryCountsSQL aggregates the cards of the page's sessions, one row
// per session that has any: task_session_id, first observation, last
// update, cards, distinct turns, open, failed and cancelled cards. Its
// placeholders are multi session ids several executions wrote, whose rows
// are collapsed (cardsSQL, restricted to them through the session index),
// then single ids one execution wrote, whose rows are their cards already
// (one row per tool call: the key is session, execution, tool call) and
// are counted as they are, through the same index and without a window.
// Both give the collapse's values: times canonical, a card open while no
// row has settled (a settled_at that does not read as a time counts as
// none, as in the collapse), failed and cancelled by its status row's
// tool_status (TestSummaryPathsAreTheCollapse).
func summaryCountsSQL(e engine, multi, single int) string {
	summaryCardColumns := []string{"task_session_id", "turn_id", "tool_status", "observed_at", "settled_at", "updated_at"}
	var parts []string
	if multi > 0 {
		parts = append(parts, `SELECT task_session_id, turn_id, tool_status,
		observed_at AS observed_c, settled_at AS settled_c, updated_at AS updated_c
	FROM (`+collapsedSQL(e, "task_session_id IN ("+placeholders(multi)+")", summaryCardColumns)+`) collapsed`)
	}
	if single > 0 {
		parts = append(parts, `SELECT task_session_id, turn_id, tool_status,
		`+e.canon("observed_at")+` AS observed_c, `+e.canon("settled_at")+` AS settled_c, `+e.canon("updated_at")+` AS updated_c
	FROM task_session_subagents
	WHERE task_session_id IN (`+placeholders(single)+`)`)
	}
	return summaryAggregateSQL(parts...)
}

// mergedCountsSQL is summaryCountsSQL read from the merged cards of n
// sessions (n placeholders), whose rows are the cards as the collapse
// gives them (times canonical): the cost is the sessions' cards, through
// the table's key.
func mergedCountsSQL(n int) string {
	return summaryAggregateSQL(`SELECT task_session_id, turn_id, tool_status,
		observed_at AS observed_c, settled_at AS settled_c, updated_at AS updated_c
	FROM ` + cardsTable + `
	WHERE task_session_id IN (` + placeholders(n) + `)`)
}

// summaryAggregateSQL counts, per session, the cards the parts select
// (each gives task_session_id, turn_id, tool_status and the canonical
// observed_c, settled_c and updated_c of one card per row): the columns
// summaryCountsSQL documents.
func summaryAggregateSQL(parts ...string) string {
	return `SELECT task_session_id, MIN(observed_c), MAX(updated_c), COUNT(*), COUNT(DISTINCT turn_id),
	SUM(CASE WHEN settled_c IS NULL AND COALESCE(tool_status, '') <> 'unknown' THEN 1 ELSE 0 END),
	SUM(CASE WHEN tool_status IN ('error', 'failed') THEN 1 ELSE 0 END),
	SUM(CASE WHEN tool_status = 'cancelled' THEN 1 ELSE 0 END),
	SUM(CASE WHEN tool_status = 'unknown' AND settled_c IS NULL THEN 1 ELSE 0 END)
FROM (` + strings.Join(parts, "\nUNION ALL\n") + `) cards
GROUP BY task_session_id`
}

// sessionStatus derives a session's status from its counts.
func sessionStatus(m SessionSummary) string {
	switch {
	case m.Cards == 0:
		return SessionEmpty
	case m.Open > 0:
		return SessionOpen
	case m.Failed > 0:
		return SessionError
	case m.Cancelled > 0:
		return SessionCancelled
	case m.Unknown > 0:
		return SessionUnknown
	}
	return SessionComplete
}

// eachPair runs, on q, a two-text-column query whose %s takes one
// placeholder per id, and calls fn for every row.
func eachPair(ctx context.Context, q queryer, e engine, query string, ids []string, fn func(a, b string)) error {
	return eachRow(ctx, q, e, query, ids, func(rows *sql.Rows) error {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return err
		}
		fn(a, b)
		return nil
	})
}

// placeholders is n comma-separated "?" (the list of an IN).
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// likeEscape escapes LIKE's wildcards and its escape character '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// executionsSQL reads the distinct executions of the sessions its %s
// lists (pairs of session and execution) by skipping through the key's
// index (task_session_id, then agent_execution_id): one seek per
// execution, whatever the number of rows each wrote.
const executionsSQL = `WITH RECURSIVE executions (task_session_id, agent_execution_id) AS (
	SELECT s.id, (SELECT MIN(agent_execution_id) FROM task_session_subagents WHERE task_session_id = s.id)
	FROM task_sessions s
	WHERE s.id IN (%s)
	UNION ALL
	SELECT x.task_session_id, (SELECT MIN(t.agent_execution_id) FROM task_session_subagents t
		WHERE t.task_session_id = x.task_session_id AND t.agent_execution_id > x.agent_execution_id)
	FROM executions x
	WHERE x.agent_execution_id IS NOT NULL)
SELECT task_session_id, agent_execution_id FROM executions WHERE agent_execution_id IS NOT NULL`

// childSessionsSQL reads the child sessions of the sessions its %s lists
// (pairs of session and child), through childIndex.
const childSessionsSQL = `SELECT DISTINCT task_session_id, child_session_id FROM task_session_subagents
WHERE task_session_id IN (%s) AND child_session_id IS NOT NULL`

// SessionFamily returns id followed by every session reachable from it
// through its cards' child_session_id, breadth first, each once (a cycle
// stops), at most 1,000 sessions.
func (s *Store) SessionFamily(ctx context.Context, id string) ([]string, error) {
	id = encodeID(id)
	family := []string{id}
	seen := map[string]bool{id: true}
	for frontier := []string{id}; len(frontier) > 0 && len(family) < maxFamilySessions; {
		var next []string
		err := eachPair(ctx, s.reader, s.eng, childSessionsSQL, frontier, func(_, child string) {
			if !seen[child] && len(family) < maxFamilySessions {
				seen[child] = true
				family = append(family, child)
				next = append(next, child)
			}
		})
		if err != nil {
			return nil, err
		}
		slices.Sort(next)
		frontier = next
	}
	for i, f := range family {
		family[i] = decodeID(f)
	}
	return family, nil
}

// ListFamily returns the family of a session (SessionFamily) and the cards
// of every session in it (ListCards: one per tool call): the session's own
// cards first, then each child session's, each in ListBySession order.
func (s *Store) ListFamily(ctx context.Context, id string) (family []string, cards []SubagentContext, err error) {
	family, err = s.SessionFamily(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	for _, sid := range family {
		rows, err := s.ListCards(ctx, sid)
		if err != nil {
			return nil, nil, err
		}
		cards = append(cards, rows...)
	}
	return family, cards, nil
}

// ChangeMark summarises the cards of some sessions so that a reader can
// tell cheaply whether anything changed: any insert raises Cards, any
// merged observation raises LastUpdate (updated_at is monotonic).
type ChangeMark struct {
	Cards      int64
	LastUpdate time.Time
}

// Token is the mark as an opaque string; equal tokens mean no change seen.
func (m ChangeMark) Token() string {
	return fmt.Sprintf("%d.%d", m.Cards, m.LastUpdate.UnixMicro())
}

// changesSQL is the change mark's query of n sessions (n placeholders,
// twice over: the count's, then the latest update's), or of the whole
// table when n is 0. For sessions, both read idx_subagents_session_changed
// only (changeIndex), never the rows: the count its entries, the latest
// update the index's order (one seek for one session). Two scalar
// subqueries, so that neither aggregate's plan depends on the other's.
func changesSQL(e engine, n int) string {
	cond := ""
	if n > 0 {
		cond = ` WHERE task_session_id IN (` + placeholders(n) + `)`
	}
	return `SELECT (SELECT COUNT(*) FROM task_session_subagents` + cond + `),
	(SELECT MAX(` + e.canon("updated_at") + `) FROM task_session_subagents` + cond + `)`
}

// mergedChangesSQL is changesSQL read from the merged cards: the rows
// counted as each card keeps their number (row_count, the same count as
// the rows'), and the latest update through
// idx_task_session_subagent_cards_updated (one seek for one session).
func mergedChangesSQL(n int) string {
	cond := ""
	if n > 0 {
		cond = ` WHERE task_session_id IN (` + placeholders(n) + `)`
	}
	return `SELECT (SELECT CAST(COALESCE(SUM(row_count), 0) AS BIGINT) FROM ` + cardsTable + cond + `),
	(SELECT MAX(updated_at) FROM ` + cardsTable + cond + `)`
}

// Changes returns the change mark of the given sessions' cards (through the
// session index), or of the whole table when sessionIDs is empty (a scan).
//
// A store with the merged cards reads the same mark from them
// (mergedChangesSQL): the cost is the sessions' cards, not their rows.
func (s *Store) Changes(ctx context.Context, sessionIDs ...string) (ChangeMark, error) {
	q := changesSQL(s.eng, len(sessionIDs))
	if merged, err := s.mergedCards(ctx, s.reader); err != nil {
		return ChangeMark{}, err
	} else if merged {
		q = mergedChangesSQL(len(sessionIDs))
	}
	args := make([]any, 2*len(sessionIDs))
	for i, id := range sessionIDs {
		args[i], args[len(sessionIDs)+i] = encodeID(id), encodeID(id)
	}
	var m ChangeMark
	var last nullTime
	err := s.reader.QueryRowContext(ctx, s.eng.rebind(q), args...).Scan(&m.Cards, &last)
	if err == sql.ErrNoRows {
		err = nil
	}
	m.LastUpdate = last.Time
	return m, err
}
