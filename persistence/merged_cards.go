package persistence

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Merged cards: the card collapse of cards.go kept as a table, one row per
// (task_session_id, tool_call_id), so that a session's cards, its
// summary's counts and its change mark cost its cards, not its rows (a
// session that 2,000 executions replayed holds 2,000 rows per card).
//
// Triggers on task_session_subagents keep the table in step inside every
// write's own transaction, whoever writes (this layer's upserts, a host,
// an older acpscope): an insert, or an update that only moves a row the
// way the upsert does (a status settling, a fact learned, a later
// update), is merged into the card by mergeCardSQL, a constant-cost
// upsert that needs none of the card's other rows; anything else (a
// delete, a key or an observation time rewritten, a fact lowered) rebuilds
// the one card from its rows by the collapse itself (rebuildCardSQL).
//
// What makes the merge exact: every input of the rule moves one way under
// the upsert. A row's status key (settled, observed_at, execution) only
// grows (settled_at and observed_at are write-once), so the status row is
// the row of greatest key seen; a row's turn is write-once, so the turn
// row is the least turn key seen; the earliest observation and settlement
// and the latest update are running minima and maxima; is_async only
// turns on. The facts' fallback (the greatest value of any row) is a
// running maximum as long as no row's value goes down, which is why a
// lowered fact rebuilds.

// cardsTable is the merged cards table, the layer's own.
const cardsTable = "task_session_subagent_cards"

// StepMergedCards creates task_session_subagent_cards, its triggers on
// task_session_subagents, and fills it from the existing rows, in one
// transaction; a table without its triggers is rebuilt the same way.
const StepMergedCards = "task_session_subagents.merged_cards"

// cardFacts are the columns the collapse takes from the status row, or,
// when it has none, the greatest value of any row.
var cardFacts = []string{"parent_tool_call_id", "subagent_type", "description", "agent_id", "child_session_id", "model",
	"total_tokens", "tool_use_count", "duration_ms"}

// cardStatusColumns are the status row's own columns the card keeps as
// they are.
var cardStatusColumns = []string{"id", "task_id", "agent_execution_id", "source", "agent_status", "tool_status"}

// cardColumns is every column of cardsTable, in the order mergeCardSQL and
// the rebuild write them; each is a name collapsedSQL computes: the pair,
// the rows counted, the status row's own columns and its key
// (status_settled, status_observed), the status row's facts (status_*) and
// the greatest of each (max_*), the earliest turn with its key, and the
// times and is_async as the collapse gives them.
var cardColumns = func() []string {
	cols := []string{"task_session_id", "tool_call_id", "row_count"}
	cols = append(cols, cardStatusColumns...)
	cols = append(cols, "status_settled", "status_observed")
	for _, f := range cardFacts {
		cols = append(cols, "status_"+f)
	}
	for _, f := range cardFacts {
		cols = append(cols, "max_"+f)
	}
	return append(cols, "turn_id", "turn_observed", "turn_execution", "is_async", "observed_at", "settled_at", "updated_at")
}()

// cardsDDL creates cardsTable on e. Times are stored canonical (canon).
func cardsDDL(e engine) string {
	ts, m := e.timeType(), e.metricType()
	var facts []string
	for _, prefix := range []string{"status_", "max_"} {
		for _, f := range cardFacts {
			typ := "TEXT"
			if slices.Contains([]string{"total_tokens", "tool_use_count", "duration_ms"}, f) {
				typ = m
			}
			facts = append(facts, "\t"+prefix+f+" "+typ+",")
		}
	}
	return `CREATE TABLE IF NOT EXISTS ` + cardsTable + ` (
	task_session_id    TEXT NOT NULL,
	tool_call_id       TEXT NOT NULL,
	row_count          BIGINT NOT NULL,
	id                 TEXT NOT NULL,
	task_id            TEXT NOT NULL,
	agent_execution_id TEXT NOT NULL,
	source             TEXT NOT NULL,
	agent_status       TEXT,
	tool_status        TEXT,
	status_settled     INTEGER NOT NULL,
	status_observed    ` + ts + `,
` + strings.Join(facts, "\n") + `
	turn_id            TEXT,
	turn_observed      ` + ts + `,
	turn_execution     TEXT,
	is_async           INTEGER NOT NULL,
	observed_at        ` + ts + `,
	settled_at         ` + ts + `,
	updated_at         ` + ts + `,
	PRIMARY KEY (task_session_id, tool_call_id)
)`
}

// cardsSessionIndexDDL orders a session's cards by their latest update,
// so the change check's latest update is one seek.
func cardsSessionIndexDDL() string {
	return `CREATE INDEX IF NOT EXISTS idx_task_session_subagent_cards_updated ON ` + cardsTable + ` (task_session_id, updated_at)`
}

// Trigger names: SQLite needs one per event and condition, PostgreSQL one
// for all events (through cardsFunction).
const (
	cardsFunction       = "task_session_subagent_cards_keep"
	cardsTriggerPG      = "task_session_subagent_cards_keep"
	cardsTriggerInsert  = "task_session_subagent_cards_insert"
	cardsTriggerMerge   = "task_session_subagent_cards_update"
	cardsTriggerRebuild = "task_session_subagent_cards_rebuild"
	cardsTriggerDelete  = "task_session_subagent_cards_delete"
)

// cardsTriggers are the names of e's triggers on task_session_subagents.
func cardsTriggers(e engine) []string {
	if e.kind() == Postgres {
		return []string{cardsTriggerPG}
	}
	return []string{cardsTriggerInsert, cardsTriggerMerge, cardsTriggerRebuild, cardsTriggerDelete}
}

// mergeCardSQL merges row r (a trigger's NEW) into its card: a new card
// when it has none, else each column by the collapse's rule against the
// card's kept keys; count is what the row adds to row_count (1 for an
// insert, 0 for an update).
func mergeCardSQL(e engine, r string, count int) string {
	canon := func(c string) string { return e.canon(r + "." + c) }
	values := []string{r + ".task_session_id", r + ".tool_call_id", fmt.Sprint(count)}
	for _, c := range cardStatusColumns {
		values = append(values, r+"."+c)
	}
	values = append(values, "CASE WHEN "+canon("settled_at")+" IS NULL THEN 0 ELSE 1 END", canon("observed_at"))
	for range 2 { // the row's fact is its own and the greatest so far
		for _, f := range cardFacts {
			values = append(values, r+"."+f)
		}
	}
	turned := func(v string) string { return "CASE WHEN " + r + ".turn_id IS NULL THEN NULL ELSE " + v + " END" }
	values = append(values, r+".turn_id", turned(canon("observed_at")), turned(r+".agent_execution_id"),
		r+".is_async", canon("observed_at"), canon("settled_at"), canon("updated_at"))

	const c = cardsTable
	// The row's status key is at least the card's: it is, or now
	// outranks, the status row (settled first, then latest observed, then
	// greatest execution in byte order: the collapse's newest_settled).
	newer := `(excluded.status_settled, excluded.status_observed, ` + e.binary("excluded.agent_execution_id") + `) >= (` +
		c + `.status_settled, ` + c + `.status_observed, ` + c + `.agent_execution_id)`
	// The row's turn key is below the card's (the collapse's earliest).
	earlier := `excluded.turn_id IS NOT NULL AND (` + c + `.turn_id IS NULL OR (excluded.turn_observed, ` +
		e.binary("excluded.turn_execution") + `) < (` + c + `.turn_observed, ` + c + `.turn_execution))`
	var set []string
	pick := func(col, cond string) {
		set = append(set, col+" = CASE WHEN "+cond+" THEN excluded."+col+" ELSE "+c+"."+col+" END")
	}
	set = append(set, "row_count = "+c+".row_count + excluded.row_count")
	for _, col := range cardStatusColumns {
		if col != "agent_execution_id" { // compared by the others' conditions: set last
			pick(col, newer)
		}
	}
	pick("status_observed", newer)
	for _, f := range cardFacts {
		pick("status_"+f, newer)
		pick("max_"+f, "excluded.max_"+f+" > "+c+".max_"+f+" OR "+c+".max_"+f+" IS NULL")
	}
	pick("turn_observed", earlier)
	pick("turn_execution", earlier)
	pick("turn_id", earlier)
	pick("is_async", "excluded.is_async > "+c+".is_async")
	pick("observed_at", "excluded.observed_at < "+c+".observed_at OR "+c+".observed_at IS NULL")
	pick("settled_at", "excluded.settled_at < "+c+".settled_at OR "+c+".settled_at IS NULL")
	pick("updated_at", "excluded.updated_at > "+c+".updated_at OR "+c+".updated_at IS NULL")
	// SQLite's SET sees the row before the update, as PostgreSQL's does,
	// so the order matters only for readers of this text.
	pick("agent_execution_id", newer)
	pick("status_settled", newer)
	return `INSERT INTO ` + c + ` (` + strings.Join(cardColumns, ", ") + `)
VALUES (` + strings.Join(values, ", ") + `)
ON CONFLICT (task_session_id, tool_call_id) DO UPDATE SET
	` + strings.Join(set, ",\n\t")
}

// mergeableUpdateSQL is true when the update from o (OLD) to n (NEW)
// moves the row only the way the upsert does, so mergeCardSQL keeps the
// card exact: the same key and observation, a settlement and a turn set at
// most once, is_async not turned off, updated_at not earlier, and no fact
// lowered or unset. NULL never results.
func mergeableUpdateSQL(e engine, o, n string) string {
	same := func(c string) string { return o + "." + c + " = " + n + "." + c }
	conds := []string{same("task_session_id"), same("tool_call_id"), same("agent_execution_id"),
		e.canon(o+".observed_at") + " = " + e.canon(n+".observed_at"),
		"(" + o + ".settled_at IS NULL OR " + e.canon(o+".settled_at") + " = " + e.canon(n+".settled_at") + ")",
		"(" + o + ".turn_id IS NULL OR " + same("turn_id") + ")",
		n + ".is_async >= " + o + ".is_async",
		e.canon(n+".updated_at") + " >= " + e.canon(o+".updated_at"),
	}
	for _, f := range cardFacts {
		conds = append(conds, "("+o+"."+f+" IS NULL OR "+n+"."+f+" >= "+o+"."+f+")")
	}
	falseValue := "0"
	if e.kind() == Postgres {
		falseValue = "false"
	}
	return "COALESCE((" + strings.Join(conds, "\n\tAND ") + "), " + falseValue + ")"
}

// rebuildCardSQL is the two statements that make the card of row r's pair
// (a trigger's OLD or NEW) again from its rows, by the collapse itself:
// none when it has no rows left.
func rebuildCardSQL(e engine, r string) []string {
	pair := "task_session_id = " + r + ".task_session_id AND tool_call_id = " + r + ".tool_call_id"
	return []string{
		`DELETE FROM ` + cardsTable + ` WHERE ` + pair,
		fillCardsSQL(e, pair),
	}
}

// fillCardsSQL inserts the cards of the rows cond selects, computed by
// the collapse (collapsedSQL) with the keys the merge needs.
func fillCardsSQL(e engine, cond string) string {
	return `INSERT INTO ` + cardsTable + ` (` + strings.Join(cardColumns, ", ") + `)
` + collapsedSQL(e, cond, cardColumns)
}

// cardsTriggerDDL is e's statements that (re)create the triggers, after
// dropping any of theirs.
func cardsTriggerDDL(e engine) []string {
	const rows = "task_session_subagents"
	var ddl []string
	for _, t := range cardsTriggers(e) {
		ddl = append(ddl, `DROP TRIGGER IF EXISTS `+t+pgOn(e, rows))
	}
	if e.kind() == Postgres {
		body := func(stmts ...string) string { return strings.Join(stmts, ";\n\t\t") + ";" }
		rebuildNew := `IF OLD.task_session_id <> NEW.task_session_id OR OLD.tool_call_id <> NEW.tool_call_id THEN
			` + body(rebuildCardSQL(e, "NEW")...) + `
		END IF`
		return append(ddl, `CREATE OR REPLACE FUNCTION `+cardsFunction+`() RETURNS trigger LANGUAGE plpgsql AS $cards$
BEGIN
	IF TG_OP = 'INSERT' THEN
		`+body(mergeCardSQL(e, "NEW", 1))+`
	ELSIF TG_OP = 'UPDATE' AND `+mergeableUpdateSQL(e, "OLD", "NEW")+` THEN
		`+body(mergeCardSQL(e, "NEW", 0))+`
	ELSIF TG_OP = 'UPDATE' THEN
		`+body(append(rebuildCardSQL(e, "OLD"), rebuildNew)...)+`
	ELSE
		`+body(rebuildCardSQL(e, "OLD")...)+`
	END IF;
	RETURN NULL;
END
$cards$`,
			`CREATE TRIGGER `+cardsTriggerPG+` AFTER INSERT OR UPDATE OR DELETE ON `+rows+`
	FOR EACH ROW EXECUTE FUNCTION `+cardsFunction+`()`)
	}
	trigger := func(name, event, when string, stmts ...string) string {
		if when != "" {
			when = "\nWHEN " + when
		}
		return `CREATE TRIGGER ` + name + ` AFTER ` + event + ` ON ` + rows + when + `
BEGIN
	` + strings.Join(stmts, ";\n\t") + `;
END`
	}
	mergeable := mergeableUpdateSQL(e, "OLD", "NEW")
	return append(ddl,
		trigger(cardsTriggerInsert, "INSERT", "", mergeCardSQL(e, "NEW", 1)),
		trigger(cardsTriggerMerge, "UPDATE", mergeable, mergeCardSQL(e, "NEW", 0)),
		// NEW's pair is rebuilt too (a no-op when it is OLD's).
		trigger(cardsTriggerRebuild, "UPDATE", "NOT "+mergeable, append(rebuildCardSQL(e, "OLD"), rebuildCardSQL(e, "NEW")...)...),
		trigger(cardsTriggerDelete, "DELETE", "", rebuildCardSQL(e, "OLD")...))
}

// pgOn is " ON table" on PostgreSQL (DROP TRIGGER names the table there),
// "" on SQLite.
func pgOn(e engine, table string) string {
	if e.kind() == Postgres {
		return " ON " + table
	}
	return ""
}

// cardsColumnsOwned are the columns by which a table named cardsTable is
// recognised as the layer's.
var cardsColumnsOwned = []string{"task_session_id", "tool_call_id", "row_count", "status_settled", "turn_execution"}

// planMergedCards is the merged cards step: nothing when the table and
// every trigger exist; else the table, its index, the triggers and the
// fill from the rows (after emptying it), run in one transaction. A table
// of that name the layer did not make is refused.
func (s *Store) planMergedCards(ctx context.Context, q queryer) (ddl []string, refusal, err error) {
	exists, missing, err := s.probeOwnedTable(ctx, q, cardsTable, cardsColumnsOwned)
	switch {
	case err != nil:
		return nil, nil, err
	case exists && len(missing) > 0:
		return nil, fmt.Errorf("table %s exists but this layer did not create it (no column %s); "+
			"no DDL run on it and cards are collapsed from the rows", cardsTable, strings.Join(missing, ", ")), nil
	}
	complete := exists
	for _, t := range cardsTriggers(s.eng) {
		if !complete {
			break
		}
		complete, err = hasTrigger(ctx, s.eng, q, t)
		if err != nil {
			return nil, nil, err
		}
	}
	if complete {
		return nil, nil, nil
	}
	ddl = append(ddl, cardsDDL(s.eng), cardsSessionIndexDDL())
	if s.eng.kind() == Postgres {
		// Writers wait until the table is filled and the triggers are in.
		ddl = append(ddl, `LOCK TABLE task_session_subagents IN SHARE ROW EXCLUSIVE MODE`)
	}
	ddl = append(ddl, `DELETE FROM `+cardsTable)
	ddl = append(ddl, cardsTriggerDDL(s.eng)...)
	return append(ddl, fillCardsSQL(s.eng, "1 = 1")), nil, nil
}

// migrateMergedCards runs the merged cards step of Migrate: the plan's
// statements in one transaction (SQLite: BEGIN IMMEDIATE, so no write
// comes between the fill and the triggers).
func (s *Store) migrateMergedCards(ctx context.Context, amended bool) (bool, string, error) {
	if !amended {
		return true, "execution-aware shape does not hold: cards are collapsed from its rows", nil
	}
	ddl, refusal, err := s.planMergedCards(ctx, s.writer)
	if err == nil {
		err = refusal
	}
	if err != nil || len(ddl) == 0 {
		return err == nil, "", err
	}
	if err := s.failpoint("cards.create"); err != nil {
		return false, "", err
	}
	if err := s.execInTx(ctx, ddl); err != nil {
		return false, "", err
	}
	s.cardsFound.Store(true)
	return false, "", nil
}

// execInTx runs stmts, statements without parameters, in one transaction
// on the writer.
func (s *Store) execInTx(ctx context.Context, stmts []string) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range stmts {
		if _, err := s.exec(ctx, tx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// hasTrigger reports whether a trigger of that name exists on
// task_session_subagents (PostgreSQL: in the current schema).
func hasTrigger(ctx context.Context, e engine, q queryer, name string) (bool, error) {
	if e.kind() == Postgres {
		return queryBool(ctx, q, `SELECT EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
	JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = current_schema() AND c.relname = 'task_session_subagents' AND t.tgname = $1)`, name)
	}
	return queryBool(ctx, q, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ? AND tbl_name = 'task_session_subagents')`, name)
}

// mergedCards reports whether reads may take the cards from cardsTable:
// the table exists (the step makes it filled and with its triggers, in one
// transaction). Once found it is not probed again.
func (s *Store) mergedCards(ctx context.Context, q queryer) (bool, error) {
	if s.cardsFound.Load() {
		return true, nil
	}
	exists, missing, err := s.probeOwnedTable(ctx, q, cardsTable, cardsColumnsOwned)
	if err != nil || !exists || len(missing) > 0 {
		return false, err
	}
	s.cardsFound.Store(true)
	return true, nil
}

// cardReadColumns are finalColumns as read from cardsTable: each fact the
// status row's, else the greatest any row had.
var cardReadColumns = func() string {
	cols := slices.Clone(finalColumns)
	for i, c := range cols {
		if slices.Contains(cardFacts, c) {
			cols[i] = "COALESCE(status_" + c + ", max_" + c + ") AS " + c
		}
	}
	return strings.Join(cols, ", ")
}()

// mergedCardsSQL reads a session's cards from cardsTable in ListBySession
// order: its cards' entries of the primary key, then a sort of the cards.
func mergedCardsSQL(e engine) string {
	return `SELECT ` + cardReadColumns + `
FROM ` + cardsTable + `
WHERE task_session_id = ?
ORDER BY observed_at, ` + e.binary("tool_call_id") + `, ` + e.binary("agent_execution_id")
}

// mergedCardFactsSQL is listCardFactsSQL joined through the merged cards
// instead of the rows: the facts of each card's status row (the row a
// card's facts are read by), through the cards' key and the facts'
// primary key, whatever the number of rows behind each card.
var mergedCardFactsSQL = strings.Replace(listCardFactsSQL, "JOIN task_session_subagents t", "JOIN "+cardsTable+" t", 1)
