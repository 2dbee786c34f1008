package persistence

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Card facts (opt-in, WithCardFacts): what a subagent card learned that
// task_session_subagents has no column for — a failure's reason, the
// answers a child gave before its latest one, the session holding its
// parent card when the card sits in a child session, and the tool calls
// that reference its child session — kept in a table of
// the layer's own beside it, one row per card, deleted with the card. No
// host column is added or changed (docs/persistence.md#texts is the same
// rule for the texts).

// factsTable is the table the facts step creates and owns.
const factsTable = "task_session_subagent_facts"

// StepFacts creates task_session_subagent_facts; it runs only on a store
// opened with WithCardFacts.
const StepFacts = "task_session_subagents.facts"

// CardFacts are the facts of one card. Zero values are "not reported" and
// never erase a stored fact.
type CardFacts struct {
	// ErrorMessage is the failure's reason as the agent gave it.
	ErrorMessage string
	// EarlierResults are the answers before the latest (ResultText), oldest
	// first; a frame without them keeps the stored list, a longer list
	// replaces it.
	EarlierResults []string
	// ParentSessionID is the session holding the parent card of a card in
	// a child session (the parent card's tool call id is the child
	// session id, the row's task session).
	ParentSessionID string
	// ReferencedBy are the tool calls whose `session` content names the
	// card's child session (TaskStop, SendMessage, …), first seen first,
	// at most MaxReferences; kept and replaced as EarlierResults are.
	ReferencedBy []string
}

// MaxReferences bounds the referring tool calls stored per card (the
// first seen).
const MaxReferences = 100

// IsZero reports facts with nothing to store.
func (f CardFacts) IsZero() bool {
	return f.ErrorMessage == "" && len(f.EarlierResults) == 0 && f.ParentSessionID == "" && len(f.ReferencedBy) == 0
}

// WithCardFacts makes the store keep each card's Frame.Facts in its own
// table, task_session_subagent_facts, which the migration step StepFacts
// creates. Without it the table is neither created nor written.
func WithCardFacts() Option { return func(s *Store) { s.factsOn = true } }

// factsColumns are the columns the facts table was created with, in
// order: a table of that name with all of them is the layer's.
var factsColumns = []string{"subagent_id", "error_message", "earlier_results", "parent_session_id"}

// referencesColumn is the facts table's column added later: the JSON
// array of the referring tool calls (CardFacts.ReferencedBy).
const referencesColumn = "referenced_by"

func factsDDL() string {
	return `CREATE TABLE IF NOT EXISTS ` + factsTable + ` (
	subagent_id       TEXT NOT NULL PRIMARY KEY REFERENCES task_session_subagents(id) ON DELETE CASCADE,
	error_message     TEXT,
	earlier_results   TEXT,
	parent_session_id TEXT,
	` + referencesColumn + `     TEXT
)`
}

// addReferencesDDL brings a facts table of the first shape (without
// referenced_by) up to date; the layer owns the table, so no host object
// changes.
const addReferencesDDL = `ALTER TABLE ` + factsTable + ` ADD COLUMN ` + referencesColumn + ` TEXT`

// planFacts is the facts step: the table when absent, the referenced_by
// column when the layer's table lacks it; a table of that name without the
// layer's columns is refused, and nothing runs.
func (s *Store) planFacts(ctx context.Context, q queryer) (ddl []string, refusal, err error) {
	exists, missing, err := s.probeOwnedTable(ctx, q, factsTable, factsColumns)
	switch {
	case err != nil:
		return nil, nil, err
	case exists && len(missing) > 0:
		return nil, fmt.Errorf("table %s exists but this layer did not create it (no column %s); "+
			"no DDL run on it and no card facts stored", factsTable, strings.Join(missing, ", ")), nil
	case exists:
		has, err := s.eng.hasColumn(ctx, q, factsTable, referencesColumn)
		if err != nil || has {
			return nil, nil, err
		}
		return []string{addReferencesDDL}, nil, nil
	}
	return []string{factsDDL()}, nil, nil
}

// probeOwnedTable reports whether table exists and which of the layer's
// columns it lacks (all of them when it is absent).
func (s *Store) probeOwnedTable(ctx context.Context, q queryer, table string, columns []string) (exists bool, missing []string, err error) {
	for _, c := range columns {
		has, err := s.eng.hasColumn(ctx, q, table, c)
		if err != nil {
			return false, nil, err
		}
		if !has {
			missing = append(missing, c)
		}
	}
	if len(missing) < len(columns) {
		return true, missing, nil
	}
	exists, err = s.eng.hasRelation(ctx, q, table)
	return exists, missing, err
}

// migrateFacts runs the facts step of Migrate.
func (s *Store) migrateFacts(ctx context.Context, amended bool) (bool, string, error) {
	if !amended {
		return true, "execution-aware shape does not hold: facts are keyed to its rows", nil
	}
	ddl, refusal, err := s.planFacts(ctx, s.writer)
	if err == nil {
		err = refusal
	}
	if err == nil && len(ddl) > 0 {
		err = s.failpoint("facts.create")
	}
	if err == nil && len(ddl) > 0 {
		err = s.execDDL(ctx, ddl...)
	}
	if err == nil {
		s.factsReady.Store(true)
	}
	return len(ddl) == 0 && err == nil, "", err
}

// factsMergeSQL merges one card's facts into its row, found by the card's
// key: a NULL fact keeps the stored one; earlier results and references
// are replaced only by a longer list (they are only ever added).
var factsMergeSQL = `INSERT INTO ` + factsTable + ` (subagent_id, error_message, earlier_results, parent_session_id, ` +
	referencesColumn + `)
SELECT id, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT)
FROM task_session_subagents
WHERE task_session_id = ? AND agent_execution_id = ? AND tool_call_id = ?
ON CONFLICT (subagent_id) DO UPDATE SET
	error_message     = COALESCE(excluded.error_message, ` + factsTable + `.error_message),
	earlier_results   = ` + longerListSQL("earlier_results") + `,
	parent_session_id = COALESCE(excluded.parent_session_id, ` + factsTable + `.parent_session_id),
	` + referencesColumn + `     = ` + longerListSQL(referencesColumn)

// longerListSQL is longerList in SQL for a JSON list column of the facts
// table: the incoming list when the stored one is NULL or shorter.
func longerListSQL(column string) string {
	return `CASE WHEN excluded.` + column + ` IS NOT NULL AND (` + factsTable + `.` + column + ` IS NULL
		OR LENGTH(excluded.` + column + `) > LENGTH(` + factsTable + `.` + column + `))
		THEN excluded.` + column + ` ELSE ` + factsTable + `.` + column + ` END`
}

// setFacts sets r's facts to the stored form of f: "" → NULL, the parent
// session an encoded id, the failure's reason and each earlier answer
// capped at MaxSubagentText (agent text, cut like a text), the first
// MaxReferences referrers encoded ids, each list a JSON array.
func (r *row) setFacts(f CardFacts) {
	r.errorMessage, _ = capText(f.ErrorMessage, MaxSubagentText)
	r.parentSessionID = nonEmptyID(f.ParentSessionID)
	earlier := make([]string, len(f.EarlierResults))
	for i, t := range f.EarlierResults {
		if p, _ := capText(t, MaxSubagentText); p != nil {
			earlier[i] = *p
		} // an empty answer is still an answer: kept as ""
	}
	r.earlierResults = jsonList(earlier)
	refs := make([]string, 0, min(len(f.ReferencedBy), MaxReferences))
	for _, id := range f.ReferencedBy {
		if id != "" && len(refs) < MaxReferences && !slices.Contains(refs, encodeID(id)) {
			refs = append(refs, encodeID(id))
		}
	}
	r.referencedBy = jsonList(refs)
}

// jsonList is list as a JSON array, nil when empty.
func jsonList(list []string) *string {
	if len(list) == 0 {
		return nil
	}
	b, _ := json.Marshal(list)
	js := string(b)
	return &js
}

// decodeIDList reads a stored JSON array of encoded ids.
func decodeIDList(stored sql.NullString) ([]string, error) {
	if !stored.Valid {
		return nil, nil
	}
	var ids []string
	if err := json.Unmarshal([]byte(stored.String), &ids); err != nil {
		return nil, err
	}
	for i, id := range ids {
		ids[i] = decodeID(id)
	}
	return ids, nil
}

// longerList is factsMergeSQL's rule for earlier_results in Go (mergeRows):
// a newer list replaces the older only when it is longer, so a replay that
// learned fewer answers never erases them.
func longerList(older, newer *string) *string {
	if newer != nil && (older == nil || len(*newer) > len(*older)) {
		return newer
	}
	return older
}

// hasFacts reports whether r carries facts to write.
func (r row) hasFacts() bool {
	return r.errorMessage != nil || r.earlierResults != nil || r.parentSessionID != nil || r.referencedBy != nil
}

// factsStatement is the statement that merges r's facts into the facts
// table after r's own row is written (in the same batch or transaction);
// ok is false when the store keeps no facts or r has none.
func (s *Store) factsStatement(r row) (st batchStatement, ok bool) {
	if !s.factsReady.Load() || !r.hasFacts() {
		return st, false
	}
	return batchStatement{s.eng.rebind(factsMergeSQL), []any{r.errorMessage, r.earlierResults, r.parentSessionID,
		r.referencedBy, r.sessionID, r.executionID, r.toolCallID}}, true
}

// writeFacts stores r's facts after its row was written (Record). Facts
// are never part of the row's own statement: a failure is logged and
// counted like a failed write, and the next frame of the card writes them
// again.
func (s *Store) writeFacts(ctx context.Context, f *Frame, r row) {
	st, ok := s.factsStatement(r)
	if !ok {
		return
	}
	if _, err := s.writer.ExecContext(ctx, st.sql, st.args...); err != nil {
		s.counters.add(CounterFailed)
		s.log.Warn("subagent card facts persist failed", "session_id", f.TaskSessionID, "tool_call_id", f.ToolCallID, "error", err)
	}
}

// ErrNoFactStore is returned (wrapped) by SubagentFacts when the database
// keeps no card facts (no facts table).
var ErrNoFactStore = errors.New("persistence: this database keeps no subagent card facts")

// SubagentFacts returns the facts stored for the card with the given key
// (the execution id as stored). A card without facts gives the zero value.
func (s *Store) SubagentFacts(ctx context.Context, sessionID, executionID, toolCallID string) (CardFacts, error) {
	var out CardFacts
	refs, err := s.factsReferences(ctx)
	if err != nil {
		return out, err
	}
	var msg, earlier, parent, referrers sql.NullString
	err = s.reader.QueryRowContext(ctx, s.eng.rebind(`SELECT f.error_message, f.earlier_results, f.parent_session_id, `+refs+`
FROM `+factsTable+` f JOIN task_session_subagents t ON t.id = f.subagent_id
WHERE t.task_session_id = ? AND t.agent_execution_id = ? AND t.tool_call_id = ?`),
		encodeID(sessionID), encodeID(executionID), encodeID(toolCallID)).Scan(&msg, &earlier, &parent, &referrers)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.ErrorMessage = msg.String
	if parent.Valid {
		out.ParentSessionID = decodeID(parent.String)
	}
	if earlier.Valid {
		if err := json.Unmarshal([]byte(earlier.String), &out.EarlierResults); err != nil {
			return out, fmt.Errorf("card facts: earlier_results: %w", err)
		}
	}
	if out.ReferencedBy, err = decodeIDList(referrers); err != nil {
		return out, fmt.Errorf("card facts: %s: %w", referencesColumn, err)
	}
	return out, nil
}

// factsReferences is the select expression of the referring tool calls in
// a read of the facts table (f): its column, or NULL in a table of the
// first shape (a database not migrated since, read by a read-only
// store). It returns ErrNoFactStore (wrapped) when the table is absent.
func (s *Store) factsReferences(ctx context.Context) (string, error) {
	has, err := s.eng.hasRelation(ctx, s.reader, factsTable)
	if err != nil {
		return "", err
	}
	if !has {
		return "", fmt.Errorf("%w", ErrNoFactStore)
	}
	if has, err = s.eng.hasColumn(ctx, s.reader, factsTable, referencesColumn); err != nil || !has {
		return "CAST(NULL AS TEXT)", err
	}
	return "f." + referencesColumn, nil
}

// MaxFactSummary is the most characters of a failure's reason that
// ListCardFacts reads per card (a page of many cards shows a summary; the
// whole stored reason is SubagentFacts').
const MaxFactSummary = 2000

// CardFactsSummary is one card's facts as a page of many cards reads them
// (ListCardFacts): the failure's reason cut at MaxFactSummary characters,
// whether earlier answers are stored (not the answers: they are read per
// card), and the parent card's session.
type CardFactsSummary struct {
	// SessionID, ExecutionID and ToolCallID are the key of the row the
	// facts belong to (the execution id as stored).
	SessionID   string
	ExecutionID string
	ToolCallID  string
	// ErrorMessage is the failure's reason, at most MaxFactSummary
	// characters; ErrorTruncated when the stored reason is longer.
	ErrorMessage   string
	ErrorTruncated bool
	// HasEarlierResults is true when earlier answers are stored.
	HasEarlierResults bool
	// ParentSessionID is CardFacts.ParentSessionID.
	ParentSessionID string
	// ReferencedBy is CardFacts.ReferencedBy (at most MaxReferences ids).
	ReferencedBy []string
}

// listCardFactsSQL reads the facts summaries of the rows of the sessions
// its second %s lists (one placeholder each; the first is the referrers'
// expression, factsReferences): one join through the session index and
// the facts' primary key (EXPLAIN: SQLite "SEARCH t USING INDEX
// idx_subagents_session_id", then "SEARCH f USING INDEX" of its primary
// key; PostgreSQL an index scan of idx_subagents_session_id and a nested
// loop over task_session_subagent_facts_pkey).
var listCardFactsSQL = `SELECT t.task_session_id, t.agent_execution_id, t.tool_call_id,
	SUBSTR(f.error_message, 1, ` + strconv.Itoa(MaxFactSummary) + `),
	CASE WHEN LENGTH(f.error_message) > ` + strconv.Itoa(MaxFactSummary) + ` THEN 1 ELSE 0 END,
	CASE WHEN f.earlier_results IS NULL THEN 0 ELSE 1 END,
	f.parent_session_id, %s
FROM ` + factsTable + ` f JOIN task_session_subagents t ON t.id = f.subagent_id
WHERE t.task_session_id IN (%s)`

// ListCardFacts returns, in one query, the facts summaries of every row of
// the given sessions that has facts, in no particular order: what a page
// of those sessions' cards shows beside them (ListCards and ListFamily
// return the cards; a card's facts are its AgentExecutionID row's). With
// the merged cards (StepMergedCards) only the rows cards are read by (each
// card's status row) are read: the cost is the cards'. It returns
// ErrNoFactStore (wrapped) when the database keeps no card facts.
func (s *Store) ListCardFacts(ctx context.Context, sessionIDs ...string) ([]CardFactsSummary, error) {
	refs, err := s.factsReferences(ctx)
	if err != nil {
		return nil, err
	}
	if len(sessionIDs) == 0 {
		return nil, nil
	}
	args := make([]any, len(sessionIDs))
	for i, id := range sessionIDs {
		args[i] = encodeID(id)
	}
	query := listCardFactsSQL
	if merged, err := s.mergedCards(ctx, s.reader); err != nil {
		return nil, err
	} else if merged {
		query = mergedCardFactsSQL
	}
	q := s.eng.rebind(fmt.Sprintf(query, refs, placeholders(len(sessionIDs))))
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []CardFactsSummary
	for rows.Next() {
		var c CardFactsSummary
		var msg, parent, referrers sql.NullString
		var cut, earlier int
		if err := rows.Scan(&c.SessionID, &c.ExecutionID, &c.ToolCallID, &msg, &cut, &earlier, &parent, &referrers); err != nil {
			return nil, err
		}
		if c.ReferencedBy, err = decodeIDList(referrers); err != nil {
			return nil, fmt.Errorf("card facts: %s: %w", referencesColumn, err)
		}
		c.SessionID, c.ExecutionID, c.ToolCallID = decodeID(c.SessionID), decodeID(c.ExecutionID), decodeID(c.ToolCallID)
		c.ErrorMessage, c.ErrorTruncated, c.HasEarlierResults = msg.String, cut == 1, earlier == 1
		if parent.Valid {
			c.ParentSessionID = decodeID(parent.String)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
