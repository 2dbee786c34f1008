package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Trace facts (opt-in, WithTraceFacts): what an OpenTelemetry export of a
// stored session needs beyond its subagent cards — the session's turns
// (their number within the session, stop reason, token usage, the agent's
// name and version, error, times), every tool call (title, kind, status,
// parent, times) and the permission requests and answers — kept in three
// tables of the layer's own. No host table is touched. The caller hands
// normalised facts (a Writer's RecordTurn, RecordToolCall and
// RecordToolEvent); nothing here reads wire JSON.
//
// Bounds: a session keeps at most MaxTurnsPerSession turns,
// MaxToolCallsPerSession tool calls and MaxToolEventsPerSession events
// (the first stored; a later one is not stored, while what is stored goes
// on being updated), and texts are cut at MaxTraceText bytes.

// The tables the trace facts step creates and owns.
const (
	turnsTable      = "task_session_trace_turns"
	toolCallsTable  = "task_session_trace_tool_calls"
	toolEventsTable = "task_session_trace_events"
)

// StepTraceFacts creates the trace facts tables; it runs only on a store
// opened with WithTraceFacts.
const StepTraceFacts = "task_session_subagents.trace_facts"

// Per-session bounds of the trace facts.
const (
	MaxTurnsPerSession      = 1000
	MaxToolCallsPerSession  = 5000
	MaxToolEventsPerSession = 1000
	// MaxTraceText is the most bytes kept of a title, an error or an
	// event's detail (cut on a rune boundary).
	MaxTraceText = 2000
)

// ErrNoTraceStore is returned (wrapped) by ListTraceFacts when the
// database keeps no trace facts (written by an older acpscope, or without
// the option).
var ErrNoTraceStore = errors.New("persistence: this database keeps no trace facts")

// WithTraceFacts makes the store keep turns, tool calls and permission
// events (a Writer's RecordTurn, RecordToolCall, RecordToolEvent) in its
// own tables, which the migration step StepTraceFacts creates. Without it
// the tables are neither created nor written.
func WithTraceFacts() Option { return func(s *Store) { s.traceFacts.on = true } }

// traceState is the store's trace facts state: on (WithTraceFacts), ready
// (the step found or made the tables: writes go ahead), found (a read
// found them).
type traceState struct {
	on    bool
	ready atomic.Bool
	found atomic.Bool
}

// TurnUsage is a turn's token usage as the agent reported it.
type TurnUsage struct {
	InputTokens, OutputTokens, TotalTokens int64
	CachedReadTokens                       *int64
}

// TurnFact is what is known of one turn of a session. Zero fields are
// "not reported" and never erase a stored value.
type TurnFact struct {
	SessionID, TurnID string
	// Index is the turn's number within the session, from 1 (0: not
	// reported).
	Index int
	// AgentName and AgentVersion are the agent's initialize agentInfo;
	// Dialect the adapter's dialect.
	AgentName, AgentVersion, Dialect string
	StopReason                       string
	// Error is the turn's failure ("" when it has none).
	Error string
	// Traceparent is the W3C traceparent the editor sent with the turn's
	// prompt (the tap: its turn span is that span's child), "" when none.
	Traceparent        string
	Usage              *TurnUsage
	StartedAt, EndedAt time.Time
}

// ToolCallFact is what is known of one tool call. Zero fields are "not
// reported"; the first turn id and first observation are kept.
type ToolCallFact struct {
	SessionID, ToolCallID string
	TurnID                string
	// ParentSessionID is the session that launched the tool call's session
	// (a tool call of a child session); ParentToolCallID the tool call it
	// is under in its own session.
	ParentSessionID, ParentToolCallID string
	Title, Kind, Status               string
	// ChildState and ChildStopReason are a child session's state and stop
	// reason, for the tool call that is that child's card.
	ChildState, ChildStopReason string
	// SeenAt is when this fact was observed; Settled says the tool call
	// reached a terminal status then (its settlement, kept once set).
	SeenAt  time.Time
	Settled bool
}

// StoredToolCall is a tool call as ListTraceFacts reads it.
type StoredToolCall struct {
	SessionID, ToolCallID, TurnID     string
	ParentSessionID, ParentToolCallID string
	Title, Kind, Status               string
	ChildState, ChildStopReason       string
	FirstSeenAt, UpdatedAt            time.Time
	SettledAt                         *time.Time
}

// ToolEventFact is one event of a tool call: a permission request or its
// answer. EventID makes it unique within its session (a retry writes it
// once).
type ToolEventFact struct {
	SessionID, EventID string
	ToolCallID, TurnID string
	// Name is the event's name (acp.permission.request, .answer); Title
	// the tool call's title as the request gave it; Detail the options
	// offered or the answer.
	Name, Title, Detail string
	At                  time.Time
}

// TraceFacts are the trace facts of a set of sessions.
type TraceFacts struct {
	Turns     []TurnFact       // by session, then Index
	ToolCalls []StoredToolCall // by first observation
	Events    []ToolEventFact  // by time, then EventID
}

// traceColumns are the columns each table is created with: a table of
// that name with all of them is the layer's.
var traceColumns = map[string][]string{
	turnsTable:      {"session_id", "turn_id", "turn_index", "stop_reason", "agent_name"},
	toolCallsTable:  {"session_id", "tool_call_id", "turn_id", "title", "kind", "first_seen_at"},
	toolEventsTable: {"session_id", "event_id", "tool_call_id", "name", "at"},
}

// traceDDL is the tables' DDL on e.
func traceDDL(e engine) []string {
	m, t := e.metricType(), e.timeType()
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + turnsTable + ` (
	session_id         TEXT NOT NULL,
	turn_id            TEXT NOT NULL,
	turn_index         ` + m + `,
	agent_name         TEXT,
	agent_version      TEXT,
	dialect            TEXT,
	stop_reason        TEXT,
	error_message      TEXT,
	traceparent        TEXT,
	input_tokens       ` + m + `,
	output_tokens      ` + m + `,
	total_tokens       ` + m + `,
	cached_read_tokens ` + m + `,
	started_at         ` + t + `,
	ended_at           ` + t + `,
	PRIMARY KEY (session_id, turn_id)
)`,
		`CREATE TABLE IF NOT EXISTS ` + toolCallsTable + ` (
	session_id          TEXT NOT NULL,
	tool_call_id        TEXT NOT NULL,
	turn_id             TEXT,
	parent_session_id   TEXT,
	parent_tool_call_id TEXT,
	title               TEXT,
	kind                TEXT,
	status              TEXT,
	child_state         TEXT,
	child_stop_reason   TEXT,
	first_seen_at       ` + t + ` NOT NULL,
	updated_at          ` + t + ` NOT NULL,
	settled_at          ` + t + `,
	PRIMARY KEY (session_id, tool_call_id)
)`,
		`CREATE INDEX IF NOT EXISTS idx_trace_tool_calls_parent_session ON ` + toolCallsTable + ` (parent_session_id)`,
		`CREATE TABLE IF NOT EXISTS ` + toolEventsTable + ` (
	session_id   TEXT NOT NULL,
	event_id     TEXT NOT NULL,
	tool_call_id TEXT NOT NULL,
	turn_id      TEXT,
	name         TEXT NOT NULL,
	title        TEXT,
	detail       TEXT,
	at           ` + t + ` NOT NULL,
	PRIMARY KEY (session_id, event_id)
)`,
	}
}

// planTraceFacts is the step's DDL: the tables (and index) when absent;
// a table of one of those names without the layer's columns is refused,
// and nothing runs.
func (s *Store) planTraceFacts(ctx context.Context, q queryer) (ddl []string, refusal, err error) {
	all := true
	for _, table := range []string{turnsTable, toolCallsTable, toolEventsTable} {
		exists, missing, err := s.probeOwnedTable(ctx, q, table, traceColumns[table])
		switch {
		case err != nil:
			return nil, nil, err
		case exists && len(missing) > 0:
			return nil, fmt.Errorf("table %s exists but this layer did not create it (no column %s); "+
				"no DDL run on it and no trace facts stored", table, strings.Join(missing, ", ")), nil
		case !exists:
			all = false
		}
	}
	if all {
		has, err := s.eng.hasRelation(ctx, q, "idx_trace_tool_calls_parent_session")
		if err != nil || has {
			return nil, nil, err
		}
	}
	return traceDDL(s.eng), nil, nil
}

// migrateTraceFacts runs the step (planTraceFacts).
func (s *Store) migrateTraceFacts(ctx context.Context) (bool, string, error) {
	ddl, refusal, err := s.planTraceFacts(ctx, s.writer)
	if err == nil {
		err = refusal
	}
	if err == nil && len(ddl) > 0 {
		err = s.failpoint("trace_facts.create")
	}
	if err == nil {
		err = s.execDDL(ctx, ddl...)
	}
	if err == nil {
		s.traceFacts.ready.Store(true)
	}
	return len(ddl) == 0 && err == nil, "", err
}

// typed is a placeholder of an integer or time value in a SELECT list:
// PostgreSQL infers such a parameter as text, so it is cast there.
func typed(e engine, sqlType string) string {
	if e.kind() == Postgres {
		return "CAST(? AS " + sqlType + ")"
	}
	return "?"
}

// capped is the condition of an insert under a per-session cap: the row
// exists (an update goes on), or the session has fewer than limit rows
// (the primary key's range: an index-only count). Its arguments are the
// session, the row's key, and the session again.
func capped(table, key string, limit int) string {
	return `WHERE EXISTS (SELECT 1 FROM ` + table + ` WHERE session_id = ? AND ` + key + ` = ?)
   OR (SELECT COUNT(*) FROM ` + table + ` WHERE session_id = ?) < ` + strconv.Itoa(limit)
}

// turnUpsertSQL inserts or updates a turn: reported values replace stored
// ones, the first start is kept.
func turnUpsertSQL(e engine) string {
	m, t := typed(e, e.metricType()), typed(e, e.timeType())
	return e.rebind(`INSERT INTO ` + turnsTable + ` (session_id, turn_id, turn_index, agent_name, agent_version, dialect,
	stop_reason, error_message, traceparent, input_tokens, output_tokens, total_tokens, cached_read_tokens, started_at, ended_at)
SELECT ?, ?, ` + m + `, ?, ?, ?, ?, ?, ?, ` + m + `, ` + m + `, ` + m + `, ` + m + `, ` + t + `, ` + t + `
` + capped(turnsTable, "turn_id", MaxTurnsPerSession) + `
ON CONFLICT (session_id, turn_id) DO UPDATE SET
	turn_index = COALESCE(excluded.turn_index, ` + turnsTable + `.turn_index),
	agent_name = COALESCE(excluded.agent_name, ` + turnsTable + `.agent_name),
	agent_version = COALESCE(excluded.agent_version, ` + turnsTable + `.agent_version),
	dialect = COALESCE(excluded.dialect, ` + turnsTable + `.dialect),
	stop_reason = COALESCE(excluded.stop_reason, ` + turnsTable + `.stop_reason),
	error_message = COALESCE(excluded.error_message, ` + turnsTable + `.error_message),
	traceparent = COALESCE(excluded.traceparent, ` + turnsTable + `.traceparent),
	input_tokens = COALESCE(excluded.input_tokens, ` + turnsTable + `.input_tokens),
	output_tokens = COALESCE(excluded.output_tokens, ` + turnsTable + `.output_tokens),
	total_tokens = COALESCE(excluded.total_tokens, ` + turnsTable + `.total_tokens),
	cached_read_tokens = COALESCE(excluded.cached_read_tokens, ` + turnsTable + `.cached_read_tokens),
	started_at = COALESCE(` + turnsTable + `.started_at, excluded.started_at),
	ended_at = COALESCE(excluded.ended_at, ` + turnsTable + `.ended_at)`)
}

// toolCallUpsertSQL inserts or updates a tool call: the first turn, first
// observation and settlement are kept, reported values replace stored
// ones.
func toolCallUpsertSQL(e engine) string {
	t := typed(e, e.timeType())
	return e.rebind(`INSERT INTO ` + toolCallsTable + ` (session_id, tool_call_id, turn_id, parent_session_id, parent_tool_call_id,
	title, kind, status, child_state, child_stop_reason, first_seen_at, updated_at, settled_at)
SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ` + t + `, ` + t + `, ` + t + `
` + capped(toolCallsTable, "tool_call_id", MaxToolCallsPerSession) + `
ON CONFLICT (session_id, tool_call_id) DO UPDATE SET
	turn_id = COALESCE(` + toolCallsTable + `.turn_id, excluded.turn_id),
	parent_session_id = COALESCE(excluded.parent_session_id, ` + toolCallsTable + `.parent_session_id),
	parent_tool_call_id = COALESCE(excluded.parent_tool_call_id, ` + toolCallsTable + `.parent_tool_call_id),
	title = COALESCE(excluded.title, ` + toolCallsTable + `.title),
	kind = COALESCE(excluded.kind, ` + toolCallsTable + `.kind),
	status = COALESCE(excluded.status, ` + toolCallsTable + `.status),
	child_state = COALESCE(excluded.child_state, ` + toolCallsTable + `.child_state),
	child_stop_reason = COALESCE(excluded.child_stop_reason, ` + toolCallsTable + `.child_stop_reason),
	updated_at = CASE WHEN ` + toolCallsTable + `.settled_at IS NULL THEN excluded.updated_at ELSE ` + toolCallsTable + `.updated_at END,
	settled_at = COALESCE(` + toolCallsTable + `.settled_at, excluded.settled_at)`)
}

// toolEventInsertSQL inserts an event once, under its session's cap.
func toolEventInsertSQL(e engine) string {
	t := typed(e, e.timeType())
	return e.rebind(`INSERT INTO ` + toolEventsTable + ` (session_id, event_id, tool_call_id, turn_id, name, title, detail, at)
SELECT ?, ?, ?, ?, ?, ?, ?, ` + t + `
` + capped(toolEventsTable, "event_id", MaxToolEventsPerSession) + `
ON CONFLICT (session_id, event_id) DO NOTHING`)
}

// nullText is s as a nullable column value ("" is NULL), cut at
// MaxTraceText bytes and made storable.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return cleanText(cutText(s, MaxTraceText))
}

// nullID is an id as a nullable column value ("" is NULL).
func nullID(id string) any {
	if id == "" {
		return nil
	}
	return encodeID(id)
}

// cutText cuts s to at most n bytes on a rune boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

func (s *Store) nullTimeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.eng.bindTime(t)
}

func nullInt(n int64, ok bool) any {
	if !ok {
		return nil
	}
	return n
}

// traceStatement is the statement writing one queued trace fact.
func (s *Store) traceStatement(f *traceFact) batchStatement {
	switch {
	case f.turn != nil:
		t := f.turn
		args := []any{encodeID(t.SessionID), encodeID(t.TurnID), nullInt(int64(t.Index), t.Index > 0),
			nullText(t.AgentName), nullText(t.AgentVersion), nullText(t.Dialect), nullText(t.StopReason), nullText(t.Error), nullText(t.Traceparent)}
		if u := t.Usage; u != nil {
			var cached any
			if u.CachedReadTokens != nil {
				cached = *u.CachedReadTokens
			}
			args = append(args, u.InputTokens, u.OutputTokens, u.TotalTokens, cached)
		} else {
			args = append(args, nil, nil, nil, nil)
		}
		args = append(args, s.nullTimeArg(t.StartedAt), s.nullTimeArg(t.EndedAt),
			encodeID(t.SessionID), encodeID(t.TurnID), encodeID(t.SessionID))
		return batchStatement{turnUpsertSQL(s.eng), args}
	case f.call != nil:
		c := f.call
		var settled any
		if c.Settled {
			settled = s.eng.bindTime(c.SeenAt)
		}
		return batchStatement{toolCallUpsertSQL(s.eng), []any{encodeID(c.SessionID), encodeID(c.ToolCallID), nullID(c.TurnID),
			nullID(c.ParentSessionID), nullID(c.ParentToolCallID), nullText(c.Title), nullText(c.Kind), nullText(c.Status), nullText(c.ChildState), nullText(c.ChildStopReason),
			s.eng.bindTime(c.SeenAt), s.eng.bindTime(c.SeenAt), settled,
			encodeID(c.SessionID), encodeID(c.ToolCallID), encodeID(c.SessionID)}}
	default:
		ev := f.event
		return batchStatement{toolEventInsertSQL(s.eng), []any{encodeID(ev.SessionID), encodeID(ev.EventID), encodeID(ev.ToolCallID),
			nullID(ev.TurnID), cleanText(cutText(ev.Name, MaxTraceText)), nullText(ev.Title), nullText(ev.Detail), s.eng.bindTime(ev.At),
			encodeID(ev.SessionID), encodeID(ev.EventID), encodeID(ev.SessionID)}}
	}
}

// The reads of ListTraceFacts: the rows of the sessions the %s lists, by
// primary key (each table's key starts with session_id).
const (
	listTurnsSQL = `SELECT session_id, turn_id, turn_index, agent_name, agent_version, dialect, stop_reason, error_message, traceparent,
	input_tokens, output_tokens, total_tokens, cached_read_tokens, started_at, ended_at
FROM ` + turnsTable + ` WHERE session_id IN (%s) ORDER BY session_id, turn_index, started_at`
	listToolCallsSQL = `SELECT session_id, tool_call_id, turn_id, parent_session_id, parent_tool_call_id, title, kind, status,
	child_state, child_stop_reason, first_seen_at, updated_at, settled_at
FROM ` + toolCallsTable + ` WHERE session_id IN (%s) ORDER BY first_seen_at, session_id, tool_call_id`
	listToolEventsSQL = `SELECT session_id, event_id, tool_call_id, turn_id, name, title, detail, at
FROM ` + toolEventsTable + ` WHERE session_id IN (%s) ORDER BY at, event_id`
	// childToolSessionsSQL finds the sessions whose tool calls name one of
	// the %s sessions as their parent (idx_trace_tool_calls_parent_session).
	childToolSessionsSQL = `SELECT DISTINCT session_id FROM ` + toolCallsTable + ` WHERE parent_session_id IN (%s)`
)

// hasTraceFacts reports whether the database has the trace facts tables.
func (s *Store) hasTraceFacts(ctx context.Context) (bool, error) {
	if s.traceFacts.found.Load() || s.traceFacts.ready.Load() {
		return true, nil
	}
	for _, table := range []string{turnsTable, toolCallsTable, toolEventsTable} {
		has, err := s.eng.hasRelation(ctx, s.reader, table)
		if err != nil || !has {
			return false, err
		}
	}
	s.traceFacts.found.Store(true)
	return true, nil
}

// TraceFamily returns the sessions whose tool calls descend from those
// given: each given session, then the sessions whose stored tool calls
// name one of them as their parent session, and so on (at most
// maxFamilyDepth levels). Without trace facts it returns the given ones.
func (s *Store) TraceFamily(ctx context.Context, sessionIDs ...string) ([]string, error) {
	out := append([]string(nil), sessionIDs...)
	if ok, err := s.hasTraceFacts(ctx); err != nil || !ok || len(sessionIDs) == 0 {
		return out, err
	}
	seen := map[string]bool{}
	for _, id := range out {
		seen[id] = true
	}
	next := out
	for depth := 0; depth < maxFamilyDepth && len(next) > 0; depth++ {
		ids := make([]string, len(next))
		for i, id := range next {
			ids[i] = encodeID(id)
		}
		next = nil
		err := eachRow(ctx, s.reader, s.eng, childToolSessionsSQL, ids, func(rows *sql.Rows) error {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			if id = decodeID(id); !seen[id] {
				seen[id] = true
				next = append(next, id)
				out = append(out, id)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// maxFamilyDepth bounds TraceFamily's levels of child sessions.
const maxFamilyDepth = 16

// eachRow runs, on q, query (its %s: one placeholder per id) and calls
// fn on each row.
func eachRow(ctx context.Context, q queryer, e engine, query string, ids []string, fn func(*sql.Rows) error) error {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, e.rebind(fmt.Sprintf(query, placeholders(len(ids)))), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ListTraceFacts returns the turns, tool calls and events of the given
// sessions, in three queries. It returns ErrNoTraceStore (wrapped) when
// the database keeps no trace facts.
func (s *Store) ListTraceFacts(ctx context.Context, sessionIDs ...string) (TraceFacts, error) {
	var out TraceFacts
	if ok, err := s.hasTraceFacts(ctx); err != nil {
		return out, err
	} else if !ok {
		return out, fmt.Errorf("%w (sessions %s)", ErrNoTraceStore, strings.Join(sessionIDs, ", "))
	}
	if len(sessionIDs) == 0 {
		return out, nil
	}
	ids := make([]string, len(sessionIDs))
	for i, id := range sessionIDs {
		ids[i] = encodeID(id)
	}
	err := eachRow(ctx, s.reader, s.eng, listTurnsSQL, ids, func(rows *sql.Rows) error {
		var t TurnFact
		var index, in, outTok, total, cached sql.NullInt64
		var name, version, dialect, stop, failure, parent sql.NullString
		var start, end nullTime
		if err := rows.Scan(&t.SessionID, &t.TurnID, &index, &name, &version, &dialect, &stop, &failure, &parent,
			&in, &outTok, &total, &cached, &start, &end); err != nil {
			return err
		}
		t.SessionID, t.TurnID, t.Index = decodeID(t.SessionID), decodeID(t.TurnID), int(index.Int64)
		t.AgentName, t.AgentVersion, t.Dialect, t.StopReason, t.Error = name.String, version.String, dialect.String, stop.String, failure.String
		t.Traceparent = parent.String
		if in.Valid || outTok.Valid || total.Valid {
			t.Usage = &TurnUsage{InputTokens: in.Int64, OutputTokens: outTok.Int64, TotalTokens: total.Int64}
			if cached.Valid {
				n := cached.Int64
				t.Usage.CachedReadTokens = &n
			}
		}
		t.StartedAt, t.EndedAt = start.Time, end.Time
		out.Turns = append(out.Turns, t)
		return nil
	})
	if err != nil {
		return out, err
	}
	err = eachRow(ctx, s.reader, s.eng, listToolCallsSQL, ids, func(rows *sql.Rows) error {
		var c StoredToolCall
		var turn, parentSession, parentCall, title, kind, status, childState, childStop sql.NullString
		var first, updated, settled nullTime
		if err := rows.Scan(&c.SessionID, &c.ToolCallID, &turn, &parentSession, &parentCall, &title, &kind, &status,
			&childState, &childStop, &first, &updated, &settled); err != nil {
			return err
		}
		c.SessionID, c.ToolCallID, c.TurnID = decodeID(c.SessionID), decodeID(c.ToolCallID), decodeID(turn.String)
		c.ParentSessionID, c.ParentToolCallID = decodeID(parentSession.String), decodeID(parentCall.String)
		c.Title, c.Kind, c.Status = title.String, kind.String, status.String
		c.ChildState, c.ChildStopReason = childState.String, childStop.String
		c.FirstSeenAt, c.UpdatedAt, c.SettledAt = first.Time, updated.Time, settled.ptr()
		out.ToolCalls = append(out.ToolCalls, c)
		return nil
	})
	if err != nil {
		return out, err
	}
	err = eachRow(ctx, s.reader, s.eng, listToolEventsSQL, ids, func(rows *sql.Rows) error {
		var ev ToolEventFact
		var turn, title, detail sql.NullString
		var at nullTime
		if err := rows.Scan(&ev.SessionID, &ev.EventID, &ev.ToolCallID, &turn, &ev.Name, &title, &detail, &at); err != nil {
			return err
		}
		ev.SessionID, ev.EventID, ev.ToolCallID, ev.TurnID = decodeID(ev.SessionID), decodeID(ev.EventID), decodeID(ev.ToolCallID), decodeID(turn.String)
		ev.Title, ev.Detail, ev.At = title.String, detail.String, at.Time
		out.Events = append(out.Events, ev)
		return nil
	})
	return out, err
}
