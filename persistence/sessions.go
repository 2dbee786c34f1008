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
	// SessionOpen: at least one card has not reached a terminal status.
	SessionOpen = "open"
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
	// executions stored a row of it (ListCards); Open, Failed and Cancelled
	// count those not yet settled, settled as error/failed, and as
	// cancelled, by each card's collapsed status.
	Cards, Open, Failed, Cancelled int
	// Status is one of the Session* constants, derived from the counts.
	Status string
	// Executions lists the distinct agent_execution_id values of its cards,
	// in byte order.
	Executions []string
	// ChildSessions lists the child sessions its cards launched
	// (child_session_id), in byte order.
	ChildSessions []string
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
	return s.summaries(ctx, "1 = 1", nil, where, args, limit)
}

// Session returns the summary of one session; ok is false when no
// task_sessions row has that id.
func (s *Store) Session(ctx context.Context, id string) (sum SessionSummary, ok bool, err error) {
	out, err := s.summaries(ctx, "task_session_id = ?", []any{encodeID(id)}, []string{"s.id = ?"}, []any{encodeID(id)}, 1)
	if err != nil || len(out) == 0 {
		return SessionSummary{}, false, err
	}
	return out[0], true, nil
}

// summaries runs the aggregate query under the given conditions: where on
// the sessions (s), cardCond on the rows whose cards (cardsSQL: one per
// tool call, however many executions stored it) are counted.
func (s *Store) summaries(ctx context.Context, cardCond string, cardArgs []any, where []string, args []any, limit int) ([]SessionSummary, error) {
	e := s.eng
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	q := e.rebind(`SELECT s.id, s.task_id, ` + e.canon("s.started_at") + `,
	MIN(` + e.canon("c.observed_at") + `), MAX(` + e.canon("c.updated_at") + `),
	COUNT(c.id), COUNT(DISTINCT c.turn_id),
	COALESCE(SUM(CASE WHEN c.id IS NOT NULL AND c.settled_at IS NULL THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN c.tool_status IN ('error', 'failed') THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN c.tool_status = 'cancelled' THEN 1 ELSE 0 END), 0)
FROM task_sessions s LEFT JOIN (` + cardsSQL(e, cardCond) + `) c ON c.task_session_id = s.id
` + cond + `
GROUP BY s.id, s.task_id, s.started_at
ORDER BY COALESCE(` + e.canon("s.started_at") + `, MIN(` + e.canon("c.observed_at") + `)) DESC, ` + e.binary("s.id") + `
LIMIT ?`)
	args = append(append(cardArgs[:len(cardArgs):len(cardArgs)], args...), limit)
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil && e.classify(err) == errStalePlan {
		rows, err = s.reader.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SessionSummary
	index := map[string]int{}
	for rows.Next() {
		var m SessionSummary
		var started, first, last nullTime
		if err := rows.Scan(&m.ID, &m.TaskID, &started, &first, &last, &m.Cards, &m.Turns,
			&m.Open, &m.Failed, &m.Cancelled); err != nil {
			return nil, err
		}
		m.StartedAt, m.LastUpdate = first.Time, last.Time
		if started.Valid {
			m.StartedAt = started.Time
		}
		m.Status = sessionStatus(m)
		index[m.ID] = len(out)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return out, nil
	}
	err = s.eachPair(ctx, `SELECT DISTINCT task_session_id, agent_execution_id FROM task_session_subagents
WHERE task_session_id IN (%s)`, slices.Sorted(maps.Keys(index)), func(session, value string) {
		out[index[session]].Executions = append(out[index[session]].Executions, decodeID(value))
	})
	if err != nil {
		return nil, err
	}
	err = s.eachPair(ctx, `SELECT DISTINCT task_session_id, child_session_id FROM task_session_subagents
WHERE task_session_id IN (%s) AND child_session_id IS NOT NULL`, slices.Sorted(maps.Keys(index)), func(session, value string) {
		out[index[session]].ChildSessions = append(out[index[session]].ChildSessions, decodeID(value))
	})
	for i := range out {
		out[i].ID, out[i].TaskID = decodeID(out[i].ID), decodeID(out[i].TaskID)
		slices.Sort(out[i].Executions)
		slices.Sort(out[i].ChildSessions)
	}
	return out, err
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
	}
	return SessionComplete
}

// eachPair runs a two-text-column query whose %s takes one placeholder per
// id, and calls fn for every row.
func (s *Store) eachPair(ctx context.Context, query string, ids []string, fn func(a, b string)) error {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	q := s.eng.rebind(fmt.Sprintf(query, placeholders(len(ids))))
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return err
		}
		fn(a, b)
	}
	return rows.Err()
}

// placeholders is the list of n bind placeholders ("?, ?, ?") of an IN
// list.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }

// likeEscape escapes LIKE's wildcards and its escape character '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// SessionFamily returns id followed by every session reachable from it
// through its cards' child_session_id, breadth first, each once (a cycle
// stops), at most 1,000 sessions.
func (s *Store) SessionFamily(ctx context.Context, id string) ([]string, error) {
	id = encodeID(id)
	family := []string{id}
	seen := map[string]bool{id: true}
	for frontier := []string{id}; len(frontier) > 0 && len(family) < maxFamilySessions; {
		var next []string
		err := s.eachPair(ctx, `SELECT DISTINCT task_session_id, child_session_id FROM task_session_subagents
WHERE task_session_id IN (%s) AND child_session_id IS NOT NULL`, frontier, func(_, child string) {
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

// Changes returns the change mark of the given sessions' cards (through the
// session index), or of the whole table when sessionIDs is empty (a scan).
func (s *Store) Changes(ctx context.Context, sessionIDs ...string) (ChangeMark, error) {
	q := `SELECT COUNT(*), MAX(` + s.eng.canon("updated_at") + `) FROM task_session_subagents`
	args := make([]any, len(sessionIDs))
	for i, id := range sessionIDs {
		args[i] = encodeID(id)
	}
	if len(sessionIDs) > 0 {
		q += ` WHERE task_session_id IN (` + placeholders(len(sessionIDs)) + `)`
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
