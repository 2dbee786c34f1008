package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Migration step names, as they appear in WARN records and in
// MigrationReport. A pass runs them in this order.
const (
	StepMeta              = "task_session_subagents.meta"
	StepHostTables        = "task_session_subagents.host_tables"
	StepJSONGuard         = "task_session_subagents.json_guard"
	StepSchema            = "task_session_subagents.schema"
	StepWidenMetrics      = "task_session_subagents.widen_metrics"
	StepTimestamptz       = "task_session_subagents.timestamptz"
	StepExecutionIdentity = "task_session_subagents.execution_identity"
	StepExecutionSince    = "task_session_subagents.execution_since"
	StepBackfillGuard     = "task_session_subagents.backfill.guard"
	StepBackfill          = "task_session_subagents.backfill"
	// StepTexts creates task_session_subagent_texts; it runs only on a
	// store opened with WithSubagentText.
	StepTexts = "task_session_subagents.texts"
)

// Activation keys in kandev_meta.
const (
	// KeyCaptureSince: live capture is authoritative from this instant.
	KeyCaptureSince = "subagent_context_capture_since"
	// KeyBackfillThrough: the newest backfilled created_at, or "" when no
	// message qualified (no pre-capture coverage; never parsed).
	KeyBackfillThrough = "subagent_context_backfill_through"
	// KeyExecutionSince: the execution-aware shape is in place.
	KeyExecutionSince = "subagent_context_execution_since"
)

// StepResult is the outcome of one migration step.
type StepResult struct {
	Name    string
	Err     error  // nil when the step succeeded or was skipped
	Skipped bool   // the step had nothing to do, or its gate was closed
	Note    string // what the step did or why it skipped
}

// MigrationReport lists every step of one pass in order.
type MigrationReport struct{ Steps []StepResult }

// OK reports whether no step failed.
func (r MigrationReport) OK() bool {
	for _, s := range r.Steps {
		if s.Err != nil {
			return false
		}
	}
	return true
}

// Step returns the result of the named step.
func (r MigrationReport) Step(name string) (StepResult, bool) {
	for _, s := range r.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return StepResult{}, false
}

// Migrate runs one pass of the migration sequence. Every step is
// idempotent; a failing step is logged at WARN ("migration failed" with
// name and error), leaves its key absent and is retried by the next pass.
// Nothing propagates: the report is for callers and tests that want it.
func (s *Store) Migrate(ctx context.Context) MigrationReport {
	var rep MigrationReport
	if s.readOnly {
		rep.Steps = append(rep.Steps, StepResult{Name: StepMeta, Err: errReadOnly})
		return rep
	}
	if unlock, err := s.migrationLock(ctx); err != nil {
		rep.Steps = append(rep.Steps, StepResult{Name: StepMeta, Err: fmt.Errorf("migration lock: %w", err)})
		return rep
	} else {
		defer unlock()
	}
	run := func(name string, f func() (skipped bool, note string, err error)) StepResult {
		skipped, note, err := safeStep(f)
		res := StepResult{Name: name, Err: err, Skipped: skipped, Note: note}
		if err != nil {
			s.log.Warn("migration failed", "name", name, "error", err)
		}
		rep.Steps = append(rep.Steps, res)
		return res
	}
	run(StepMeta, func() (bool, string, error) {
		ddl, err := s.planMeta(ctx, s.writer)
		if err == nil {
			err = s.execDDL(ctx, ddl...)
		}
		return len(ddl) == 0 && err == nil, "", err
	})
	if s.eng.kind() == Postgres {
		// Before the host tables: a messages table created now uses pgPairFunc.
		run(StepJSONGuard, func() (bool, string, error) { return false, "", s.eng.prepare(ctx, s) })
	}
	if s.hostTables {
		run(StepHostTables, func() (bool, string, error) { return false, "", s.createHostTables(ctx) })
	}
	run(StepSchema, func() (bool, string, error) {
		ddl, err := s.planSchema(ctx, s.writer)
		if err == nil {
			err = s.execDDL(ctx, ddl...)
		}
		return len(ddl) == 0 && err == nil, "", err
	})
	run(StepWidenMetrics, func() (bool, string, error) {
		changed, err := s.eng.widen(ctx, s)
		return !changed, "", err
	})
	if s.eng.kind() == Postgres {
		run(StepTimestamptz, func() (bool, string, error) {
			changed, err := s.eng.zoneTimes(ctx, s)
			return !changed, "", err
		})
	}
	run(StepExecutionIdentity, func() (bool, string, error) {
		sh, err := s.eng.probe(ctx, s.writer)
		switch {
		case err != nil:
			return false, "", err
		case sh.foreign() != nil:
			return false, "", sh.foreign()
		case sh.amended():
			return true, "already execution-aware", nil
		case sh.preAmendment():
			return false, "amended", s.eng.amend(ctx, s, sh)
		case !sh.exists:
			return false, "", errors.New("table task_session_subagents is missing")
		}
		return false, "", errors.New("unrecognised shape of task_session_subagents; no DDL run")
	})
	amended := false
	run(StepExecutionSince, func() (bool, string, error) {
		sh, err := s.eng.probe(ctx, s.writer)
		if err != nil {
			return false, "", err
		}
		if !sh.amended() {
			return false, "", errors.New("execution-aware shape does not hold; key not written")
		}
		amended = true
		keys, err := readKeys(ctx, s.writer, s.eng)
		if err != nil {
			return false, "", err
		}
		if _, ok := keys[KeyExecutionSince]; ok {
			return true, "", nil // an existing value is kept
		}
		n, err := s.putKey(ctx, s.writer, KeyExecutionSince, keyText(s.now()))
		return n == 0, "", err
	})
	runBackfill := false
	run(StepBackfillGuard, func() (bool, string, error) {
		if !amended {
			return true, "execution-aware shape does not hold: no backfill before the amendment", nil
		}
		keys, err := readKeys(ctx, s.writer, s.eng)
		if err != nil {
			return false, "", err
		}
		if _, ok := keys[KeyExecutionSince]; !ok {
			return true, "execution_since absent: no backfill before the amendment", nil
		}
		_, c := keys[KeyCaptureSince]
		_, b := keys[KeyBackfillThrough]
		if c && b {
			return true, "already backfilled", nil
		}
		runBackfill = true
		return false, "", nil
	})
	if runBackfill {
		run(StepBackfill, func() (bool, string, error) {
			n, err := s.backfill(ctx)
			return false, fmt.Sprintf("%d rows", n), err
		})
	}
	if s.texts {
		run(StepTexts, func() (bool, string, error) {
			if !amended {
				return true, "execution-aware shape does not hold: texts are keyed to its rows", nil
			}
			ddl, refusal, err := s.planTexts(ctx, s.writer)
			if err == nil {
				err = refusal
			}
			if err == nil && len(ddl) > 0 {
				err = s.failpoint("texts.create")
			}
			if err == nil {
				err = s.execDDL(ctx, ddl...)
			}
			if err == nil {
				s.textsReady.Store(true)
			}
			return len(ddl) == 0 && err == nil, "", err
		})
	}
	if s.factsOn {
		run(StepFacts, func() (bool, string, error) { return s.migrateFacts(ctx, amended) })
	}
	if s.gapsOn {
		run(StepObservationGaps, func() (bool, string, error) { return s.migrateGaps(ctx) })
	}
	run(StepMergedCards, func() (bool, string, error) { return s.migrateMergedCards(ctx, amended) })
	if s.traceFacts.on {
		run(StepTraceFacts, func() (bool, string, error) { return s.migrateTraceFacts(ctx) })
	}
	return rep
}

// errReadOnly is the step error of Migrate on a store from OpenReadOnly.
var errReadOnly = errors.New("persistence: the store is open read-only; no migration runs")

// safeStep runs f, turning a panic into the step's error.
func safeStep(f func() (bool, string, error)) (skipped bool, note string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

func (s *Store) execDDL(ctx context.Context, stmts ...string) error {
	for _, q := range stmts {
		if _, err := s.exec(ctx, s.writer, q); err != nil && s.eng.classify(err) != errAlreadyExists {
			return err
		}
	}
	return nil
}

const putKeySQL = `INSERT INTO kandev_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`

// putKey inserts an activation key unless present; an existing value is
// kept byte for byte. It reports how many rows it inserted.
func (s *Store) putKey(ctx context.Context, x execer, key, value string) (int64, error) {
	res, err := s.exec(ctx, x, s.eng.rebind(putKeySQL), key, value)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readKeys returns the activation keys present (a present key may be "").
func readKeys(ctx context.Context, q queryer, e engine) (map[string]string, error) {
	return queryKeys(ctx, q, e.rebind(`SELECT key, value FROM kandev_meta WHERE key IN (?, ?, ?)`),
		KeyCaptureSince, KeyBackfillThrough, KeyExecutionSince)
}

// queryKeys runs a kandev_meta query of (key, value) rows and returns them
// as a map.
func queryKeys(ctx context.Context, q queryer, query string, args ...any) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	keys := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		keys[k] = v
	}
	return keys, rows.Err()
}

// migrationLockSQL takes (or releases) the lock that makes concurrent
// passes on one PostgreSQL schema run one after another (two processes
// opening a new database at once would otherwise race on CREATE TABLE IF
// NOT EXISTS). It is an advisory lock, keyed by the schema: no object is
// created or touched.
const migrationLockSQL = `SELECT %s(hashtext(current_schema() || '.subagent_context_migration'))`

// migrationLock holds the PostgreSQL migration lock on a connection of
// its own until unlock. SQLite needs none (its writer transactions are
// immediate), nor does a pool of one connection (the host's: the pass
// would wait for the connection the lock holds).
func (s *Store) migrationLock(ctx context.Context) (unlock func(), err error) {
	if s.eng.kind() != Postgres || s.writer.Stats().MaxOpenConnections == 1 {
		return func() {}, nil
	}
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(migrationLockSQL, "pg_advisory_lock")); err != nil {
		conn.Close()
		return nil, err
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(uctx, fmt.Sprintf(migrationLockSQL, "pg_advisory_unlock"))
		conn.Close()
	}, nil
}

// --- DDL ----------------------------------------------------------------------

const metaDDL = `CREATE TABLE IF NOT EXISTS kandev_meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL DEFAULT ''
)`

// hostTablesDDL creates the minimal host tables of standalone mode. The
// messages table keeps metadata as JSON text on both engines, and carries
// the derived messagePairColumn (see messagesIndexDDL).
func hostTablesDDL(e engine) []string {
	ts := e.timeType()
	return []string{
		`CREATE TABLE IF NOT EXISTS task_sessions (
	id         TEXT PRIMARY KEY,
	task_id    TEXT NOT NULL DEFAULT '',
	started_at ` + ts + `,
	updated_at ` + ts + `
)`,
		`CREATE TABLE IF NOT EXISTS task_session_turns (
	id              TEXT PRIMARY KEY,
	task_session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
	task_id         TEXT NOT NULL DEFAULT '',
	started_at      ` + ts + `,
	created_at      ` + ts + `,
	updated_at      ` + ts + `
)`,
		`CREATE TABLE IF NOT EXISTS task_session_messages (
	id              TEXT PRIMARY KEY,
	task_session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
	task_id         TEXT DEFAULT '',
	turn_id         TEXT REFERENCES task_session_turns(id) ON DELETE CASCADE,
	metadata        TEXT DEFAULT '{}',
	created_at      ` + ts + ` NOT NULL,
	updated_at      ` + ts + ` NOT NULL,
	` + e.pairColumnDDL() + `
)`,
	}
}

// messagesIndexDDL is the index health reads messages through. A messages
// table with messagePairColumn (one this package created) gets a partial
// index holding exactly what health needs of each subagent message, so
// health reads the index alone and parses no metadata. A table without it
// (a host's, or one an older build created; the package never alters an
// existing table) gets a created_at index, so health parses only the
// messages since capture_since.
func messagesIndexDDL(hasPairColumn bool) string {
	if hasPairColumn {
		return `CREATE INDEX IF NOT EXISTS idx_task_session_messages_subagent ON task_session_messages
	(created_at, task_session_id, ` + messagePairColumn + `, task_id) WHERE ` + messagePairColumn + ` IS NOT NULL`
	}
	return `CREATE INDEX IF NOT EXISTS idx_task_session_messages_created_at ON task_session_messages (created_at)`
}

// createHostTables is the standalone host-tables step: the tables when
// absent, then the index that fits the messages table found.
func (s *Store) createHostTables(ctx context.Context) error {
	ddl, err := s.planHostTables(ctx, s.writer)
	if err != nil {
		return err
	}
	return s.execDDL(ctx, ddl...)
}

// subagentsTableDDL is the final, execution-aware shape (22 columns). The
// metric columns have no default: a default of 0 would fabricate a
// measurement. There are no CHECK constraints; the write API enforces the
// rules.
func subagentsTableDDL(e engine, name string) string {
	m, ts := e.metricType(), e.timeType()
	return `CREATE TABLE IF NOT EXISTS ` + name + ` (
	id                  TEXT NOT NULL PRIMARY KEY,
	task_session_id     TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
	task_id             TEXT NOT NULL,
	turn_id             TEXT,
	tool_call_id        TEXT NOT NULL,
	agent_execution_id  TEXT NOT NULL DEFAULT 'unknown',
	parent_tool_call_id TEXT,
	subagent_type       TEXT,
	description         TEXT,
	agent_id            TEXT,
	child_session_id    TEXT,
	model               TEXT,
	agent_status        TEXT,
	tool_status         TEXT,
	is_async            INTEGER NOT NULL DEFAULT 0,
	total_tokens        ` + m + `,
	tool_use_count      ` + m + `,
	duration_ms         ` + m + `,
	source              TEXT NOT NULL DEFAULT 'live',
	observed_at         ` + ts + ` NOT NULL,
	settled_at          ` + ts + `,
	updated_at          ` + ts + ` NOT NULL,
	UNIQUE (task_session_id, agent_execution_id, tool_call_id)
)`
}

// indexDDL keeps the names existing databases carry; none mentions
// agent_execution_id, which a pre-amendment table lacks.
var indexDDL = []string{
	`CREATE INDEX IF NOT EXISTS idx_subagents_session_id ON task_session_subagents (task_session_id)`,
	`CREATE INDEX IF NOT EXISTS idx_subagents_task_id ON task_session_subagents (task_id)`,
	`CREATE INDEX IF NOT EXISTS idx_subagents_turn_id ON task_session_subagents (turn_id)`,
	// Health reads the rows observed since a bound through it.
	`CREATE INDEX IF NOT EXISTS idx_subagents_observed_at ON task_session_subagents (observed_at)`,
	// The session summaries read a session's first observation through it
	// (summaryPageSQL): one seek on PostgreSQL, the session's entries
	// without its rows on SQLite.
	`CREATE INDEX IF NOT EXISTS idx_subagents_session_observed ON task_session_subagents (task_session_id, observed_at)`,
}

// Indexes added for the change check (docs/persistence.md#changes).
const (
	changeIndex = "idx_subagents_session_changed"
	childIndex  = "idx_subagents_session_child"
)

// indexDDLFor is every index of the layer's table on e: indexDDL, then
// the change check's two. changeIndex orders a session's rows by their
// canonical updated_at (engine.canon: the column itself on PostgreSQL, an
// expression on SQLite), so the session's latest update is one seek and
// its row count reads only that index; childIndex holds only the rows
// that launched a child session, so a session's family is read without
// its other rows.
func indexDDLFor(e engine) []string {
	return append(slices.Clone(indexDDL),
		`CREATE INDEX IF NOT EXISTS `+changeIndex+` ON task_session_subagents (task_session_id, `+e.canon("updated_at")+`)`,
		`CREATE INDEX IF NOT EXISTS `+childIndex+` ON task_session_subagents (task_session_id, child_session_id)
	WHERE child_session_id IS NOT NULL`)
}

// finalColumns is the column list of the final shape, in order.
var finalColumns = []string{
	"id", "task_session_id", "task_id", "turn_id", "tool_call_id", "agent_execution_id",
	"parent_tool_call_id", "subagent_type", "description", "agent_id", "child_session_id", "model",
	"agent_status", "tool_status", "is_async", "total_tokens", "tool_use_count", "duration_ms",
	"source", "observed_at", "settled_at", "updated_at",
}

// --- shape probe ------------------------------------------------------------

type columnInfo struct {
	notNull  bool
	dataType string
}

type uniqueIndex struct {
	index      string // index name (schema-qualified and quoted on PostgreSQL)
	constraint string // owning constraint, "" for a bare unique index
	columns    []string
}

// tableShape is what the probe learns from the catalogs; DDL text is never
// parsed.
type tableShape struct {
	exists  bool
	columns map[string]columnInfo
	uniques []uniqueIndex
}

var (
	tripleKey = []string{"task_session_id", "agent_execution_id", "tool_call_id"}
	pairKey   = []string{"task_session_id", "tool_call_id"}
)

func (t tableShape) hasUnique(cols []string) bool {
	for _, u := range t.uniques {
		if slices.Equal(u.columns, cols) {
			return true
		}
	}
	return false
}

// amended is the end state E: the execution column is NOT NULL, a unique
// covers exactly the triple, none covers exactly the pair.
func (t tableShape) amended() bool {
	c, ok := t.columns["agent_execution_id"]
	return t.exists && ok && c.notNull && t.hasUnique(tripleKey) && !t.hasUnique(pairKey)
}

// foreign reports, for an existing table, the columns of the layer's shape
// it lacks (the execution column aside, which the amendment adds) as an
// error: a table of that name the layer did not create, which no step may
// touch. nil when the table is absent or has every column.
func (t tableShape) foreign() error {
	if !t.exists {
		return nil
	}
	var missing []string
	for _, c := range finalColumns {
		if _, ok := t.columns[c]; !ok && c != "agent_execution_id" {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("table task_session_subagents exists but this layer did not create it (no column %s); "+
		"no DDL run on it: rename it, or keep the subagent contexts in another database or schema", strings.Join(missing, ", "))
}

// preAmendment is P: the table exists and lacks the column or has the pair
// unique.
func (t tableShape) preAmendment() bool {
	_, ok := t.columns["agent_execution_id"]
	return t.exists && (!ok || t.hasUnique(pairKey))
}

// --- backfill ---------------------------------------------------------------

// qualifyingCTE selects the messages the backfill may derive a row from:
// valid-object metadata (anything else reads as {}), kind subagent_task,
// non-empty session and task ids, a non-empty string tool_call_id and (on
// SQLite) a parseable created_at. Others are skipped silently. Each layer
// is fenced so the metadata guard and each JSON extraction run once per
// message. With fields, the q rows also carry the raw field values.
func qualifyingCTE(e engine, fields bool) string {
	raw := ""
	if fields {
		st := func(name string) string {
			return ",\n\t       " + e.jsonRaw("md", "normalized", "subagent_task", name) + " AS r_" + name
		}
		raw = ",\n\t       " + e.jsonRaw("md", "parent_tool_call_id") + " AS r_parent_tool_call_id" +
			",\n\t       " + e.jsonRaw("md", "status") + " AS r_tool_status" +
			st("subagent_type") + st("description") + st("agent_id") + st("child_session_id") + st("model") +
			st("status") + st("is_async") + st("total_tokens") + st("tool_use_count") + st("duration_ms")
	}
	return `src AS (
	SELECT m.id, m.task_session_id, m.task_id, m.turn_id, m.created_at, m.updated_at,
	       ` + e.metadataObject("m.metadata") + ` AS md
	FROM task_session_messages m
	WHERE m.task_session_id <> '' AND m.task_id <> ''` + e.fence() + `
), a AS (
	SELECT id, task_session_id, task_id, turn_id, created_at, updated_at, md,
	       ` + e.jsonRaw("md", "tool_call_id") + ` AS r_tool_call_id` + raw + `
	FROM src
	WHERE ` + e.jsonText("md", "normalized", "kind") + ` = 'subagent_task'` + e.fence() + `
), q AS (
	SELECT a.*, ` + e.asStr("r_tool_call_id", "md", "tool_call_id") + ` AS tcid,
	       ` + e.canon("created_at") + ` AS created_c
	FROM a
)`
}

func terminalList() string {
	quoted := make([]string, len(TerminalToolStatuses))
	for i, s := range TerminalToolStatuses {
		quoted[i] = "'" + s + "'"
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}

func backfillMaxSQL(e engine) string {
	return `WITH ` + qualifyingCTE(e, false) + `
SELECT MAX(created_c) FROM q WHERE tcid IS NOT NULL AND created_c IS NOT NULL`
}

// backfillInsertSQL is the one unbounded INSERT … SELECT (no batching, no limit): rank 1 per
// (session, tool_call_id) by created_at then id, both descending (the newest message of a pair wins),
// every value derived by the same rules as live writes, and a
// target-less ON CONFLICT DO NOTHING so an earlier live or backfill
// row, or a primary-key collision, is kept rather than raised. Values are
// derived before the ranking (the fence keeps the planner from moving the
// derivation above the sort), so the sort carries small rows, not the
// parsed metadata; on PostgreSQL that keeps a million-row sort in memory.
// The partition keys sort by bytes: equality, and so the partitions, are
// the same under any deterministic collation, and a byte sort is several
// times cheaper than a libc collation (C.UTF-8 included) on PostgreSQL.
func backfillInsertSQL(e engine) string {
	return backfillRankedCTE(e) + "\n" + backfillInsertTail(e)
}

// backfillMarkInsertSQL is, for an engine with data-modifying CTEs
// (PostgreSQL), the high-water mark and the insert in one statement: the
// ranked rows are materialised once (they are read twice), so each
// message's metadata is parsed once instead of twice. MAX over the ranked
// rows is MAX over every qualifying message, since each partition keeps
// its rows and the filter is the one backfillMaxSQL applies. Both read one
// snapshot, so the mark is exactly the newest message the insert saw: it
// cannot over-claim, and no longer under-claims either. Returns the mark
// and the number of rows inserted.
func backfillMarkInsertSQL(e engine) string {
	return backfillRankedCTE(e) + `, ins AS (
` + backfillInsertTail(e) + `
RETURNING 1
)
SELECT (SELECT MAX(created_c) FROM ranked), (SELECT COUNT(*) FROM ins)`
}

// backfillRankedCTE is the WITH clause both backfill forms share: the
// qualifying messages, their derived values and the ranking.
func backfillRankedCTE(e engine) string {
	str := func(name string, path ...string) string { return e.asStr("r_"+name, "md", path...) }
	st := func(name string) string { return str(name, "normalized", "subagent_task", name) }
	num := func(name string, min int) string {
		return e.asInt("r_"+name, min, "md", "normalized", "subagent_task", name)
	}
	return `WITH ` + qualifyingCTE(e, true) + `, derived AS (
	SELECT id, task_session_id, task_id, NULLIF(turn_id, '') AS turn_id, tcid, created_c,
	       ` + str("parent_tool_call_id", "parent_tool_call_id") + ` AS parent_tool_call_id,
	       ` + st("subagent_type") + ` AS subagent_type,
	       ` + st("description") + ` AS description,
	       ` + st("agent_id") + ` AS agent_id,
	       ` + st("child_session_id") + ` AS child_session_id,
	       ` + st("model") + ` AS model,
	       ` + str("status", "normalized", "subagent_task", "status") + ` AS agent_status,
	       ` + str("tool_status", "status") + ` AS tool_status,
	       ` + e.asTrue("r_is_async") + ` AS is_async,
	       ` + num("total_tokens", 1) + ` AS total_tokens,
	       ` + num("tool_use_count", 0) + ` AS tool_use_count,
	       ` + num("duration_ms", 1) + ` AS duration_ms,
	       COALESCE(` + e.canon("updated_at") + `, created_c) AS updated_c
	FROM q
	WHERE tcid IS NOT NULL AND created_c IS NOT NULL` + e.fence() + `
), ranked AS (
	SELECT derived.*, ROW_NUMBER() OVER (
		PARTITION BY ` + e.binary("task_session_id") + `, ` + e.binary("tcid") + `
		ORDER BY created_c DESC, ` + e.binary("id") + ` DESC) AS rn
	FROM derived
)`
}

// backfillInsertTail is the INSERT that reads the ranked CTE.
func backfillInsertTail(e engine) string {
	return `INSERT INTO task_session_subagents (
	id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id,
	parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model,
	agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms,
	source, observed_at, settled_at, updated_at)
SELECT id, task_session_id, task_id, turn_id, tcid, 'unknown',
	parent_tool_call_id, subagent_type, description, agent_id, child_session_id, model,
	agent_status, tool_status, is_async, total_tokens, tool_use_count, duration_ms,
	'backfill', ` + e.stored("created_c") + `,
	CASE WHEN tool_status IN ` + terminalList() + ` THEN ` + e.stored("updated_c") + ` END,
	` + e.stored("updated_c") + `
FROM ranked
WHERE rn = 1
ON CONFLICT DO NOTHING`
}

// backfill runs the one-time backfill from message history as one writer transaction: high-water
// mark, INSERT … SELECT, capture_since sampled after the insert, both keys
// (existing values kept), commit. Any error rolls all of it back: rows and keys land together or not at all.
func (s *Store) backfill(ctx context.Context) (int64, error) {
	tx, err := s.writer.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE (writer DSN)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	for _, q := range s.eng.tune() {
		if _, err := s.exec(ctx, tx, q); err != nil {
			return 0, err
		}
	}
	var (
		high nullTime
		n    int64
	)
	if s.eng.writableCTEs() {
		if err := s.guarded(ctx, tx, func(e engine) error {
			s.trace(backfillMarkInsertSQL(e))
			return tx.QueryRowContext(ctx, backfillMarkInsertSQL(e)).Scan(&high, &n)
		}); err != nil {
			return 0, fmt.Errorf("high-water mark and insert: %w", err)
		}
	} else if err := s.guarded(ctx, tx, func(e engine) error {
		s.trace(backfillMaxSQL(e))
		return tx.QueryRowContext(ctx, backfillMaxSQL(e)).Scan(&high)
	}); err != nil {
		return 0, fmt.Errorf("high-water mark: %w", err)
	}
	through := ""
	if high.Valid {
		through = keyText(high.Time)
	}
	if err := s.failpoint("backfill.max"); err != nil {
		return 0, err
	}
	if !s.eng.writableCTEs() {
		if err := s.guarded(ctx, tx, func(e engine) error {
			res, err := s.exec(ctx, tx, backfillInsertSQL(e))
			if err == nil {
				n, err = res.RowsAffected()
			}
			return err
		}); err != nil {
			return 0, fmt.Errorf("insert: %w", err)
		}
	}
	if err := s.failpoint("backfill.insert"); err != nil {
		return 0, err
	}
	if _, err := s.putKey(ctx, tx, KeyCaptureSince, keyText(s.now())); err != nil {
		return 0, err
	}
	if err := s.failpoint("backfill.capture_since"); err != nil {
		return 0, err
	}
	if _, err := s.putKey(ctx, tx, KeyBackfillThrough, through); err != nil {
		return 0, err
	}
	if err := s.failpoint("backfill.backfill_through"); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// guarded runs a statement built by f with the engine's fast metadata
// guard; if that fails and the engine has a total guard (PostgreSQL), it
// rolls back to a savepoint and runs f again with the total guard. So a
// malformed history row costs a second scan, never a failed pass, and a
// clean history never pays for an exception block per row.
func (s *Store) guarded(ctx context.Context, tx *sql.Tx, f func(e engine) error) error {
	total, ok := s.eng.totalGuard()
	if !ok {
		return f(s.eng)
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT metadata_guard`); err != nil {
		return err
	}
	err := f(s.eng)
	if err == nil {
		_, err = tx.ExecContext(ctx, `RELEASE SAVEPOINT metadata_guard`)
		return err
	}
	if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT metadata_guard`); rerr != nil {
		return errors.Join(err, rerr)
	}
	return f(total)
}

// parseKey reads an activation key value as a timestamp (RFC 3339, any
// fraction length); "" is the sentinel and never parses.
func parseKey(v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}
