package persistence

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// preColumns is the pre-amendment shape's column list (no execution id).
var preColumns = slices.DeleteFunc(slices.Clone(finalColumns), func(c string) bool { return c == "agent_execution_id" })

// preAmendmentTable creates the two-column-key shape older builds made,
// with metrics of the given SQL type.
func (e *env) preAmendmentTable(metric string) {
	e.t.Helper()
	e.exec(`CREATE TABLE task_session_subagents (
	id TEXT PRIMARY KEY,
	task_session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
	task_id TEXT NOT NULL, turn_id TEXT, tool_call_id TEXT NOT NULL,
	parent_tool_call_id TEXT, subagent_type TEXT, description TEXT, agent_id TEXT,
	child_session_id TEXT, model TEXT, agent_status TEXT, tool_status TEXT,
	is_async INTEGER NOT NULL DEFAULT 0,
	total_tokens ` + metric + `, tool_use_count ` + metric + `, duration_ms ` + metric + `,
	source TEXT NOT NULL DEFAULT 'live',
	observed_at TIMESTAMP NOT NULL, settled_at TIMESTAMP, updated_at TIMESTAMP NOT NULL,
	UNIQUE (task_session_id, tool_call_id))`)
	for _, q := range indexDDLBefore(summaryIndex) {
		e.exec(q)
	}
}

// summaryIndex is the index the session summaries added to the schema.
const summaryIndex = "idx_subagents_session_observed"

// indexDDLBefore is indexDDL as it was before the named index was added:
// the indexes an older build's table carries.
func indexDDLBefore(name string) []string {
	return slices.DeleteFunc(slices.Clone(indexDDL), func(d string) bool { return indexName(d) == name })
}

// seedPreRows inserts n fully populated rows into a pre-amendment table.
func (e *env) seedPreRows(n int) {
	e.t.Helper()
	for i := range n {
		e.exec(`INSERT INTO task_session_subagents (`+strings.Join(preColumns, ", ")+`)
VALUES (?, 'S', 'T', 'U1', ?, 'P', 'general', 'desc', 'agent', 'child', 'model', 'completed', 'completed', 1, ?, ?, ?, 'live', ?, ?, ?)`,
			fmt.Sprintf("row%d", i), fmt.Sprintf("tc%d", i), 1000+i, i, 2000+i,
			e.ts(t0.Add(time.Duration(i)*time.Second)), e.ts(t0.Add(time.Minute)), e.ts(t0.Add(time.Minute)))
	}
}

// queryAll runs q on the raw handle and returns every row's values as the
// driver scanned them.
func (e *env) queryAll(q string) [][]any {
	e.t.Helper()
	rows, err := e.raw.QueryContext(e.ctx, q)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, vals)
	}
	return out
}

// dump is every row as text over the given columns, sorted.
func (e *env) dump(cols []string) []string {
	e.t.Helper()
	var out []string
	for _, vals := range e.queryAll(`SELECT ` + strings.Join(cols, ", ") + ` FROM task_session_subagents`) {
		var b strings.Builder
		for i, v := range vals {
			switch x := v.(type) {
			case time.Time:
				v = x.UTC().Format(time.RFC3339Nano)
			case []byte:
				v = string(x)
			}
			fmt.Fprintf(&b, "%s=%v|", cols[i], v)
		}
		out = append(out, b.String())
	}
	sort.Strings(out)
	return out
}

// describe is the engine-neutral shape: columns with nullability and
// default, unique column lists, index names, foreign keys.
func (e *env) describe() []string {
	e.t.Helper()
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	sh, err := e.eng().probe(e.ctx, e.raw)
	if err != nil {
		e.t.Fatal(err)
	}
	var q string
	if e.kind == SQLite {
		q = `SELECT name, COALESCE(dflt_value, '') FROM pragma_table_info('task_session_subagents')`
	} else {
		q = `SELECT column_name, COALESCE(column_default, '') FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'task_session_subagents'`
	}
	defaults := map[string]string{}
	rows, err := e.raw.QueryContext(e.ctx, q)
	if err != nil {
		e.t.Fatal(err)
	}
	for rows.Next() {
		var c, d string
		if err := rows.Scan(&c, &d); err != nil {
			e.t.Fatal(err)
		}
		defaults[c] = strings.TrimSuffix(d, "::text")
	}
	rows.Close()
	for c, info := range sh.columns {
		add("column %s notnull=%v default=%s", c, info.notNull, defaults[c])
	}
	for _, u := range sh.uniques {
		add("unique %s", strings.Join(u.columns, ","))
	}
	if e.kind == SQLite {
		q = `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'task_session_subagents' AND sql IS NOT NULL`
	} else {
		q = `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'task_session_subagents'
AND indexname LIKE 'idx_%'`
	}
	rows, err = e.raw.QueryContext(e.ctx, q)
	if err != nil {
		e.t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		add("index %s", n)
	}
	rows.Close()
	if e.kind == SQLite {
		q = `SELECT "from" || '->' || "table" || '(' || "to" || ') ' || on_delete FROM pragma_foreign_key_list('task_session_subagents')`
	} else {
		q = `SELECT a.attname || '->' || cf.relname || '(' || af.attname || ') ' ||
       CASE c.confdeltype WHEN 'c' THEN 'CASCADE' ELSE c.confdeltype::text END
FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
JOIN pg_class cf ON cf.oid = c.confrelid
JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = c.confkey[1]
WHERE c.contype = 'f' AND t.relname = 'task_session_subagents' AND n.nspname = current_schema()`
	}
	rows, err = e.raw.QueryContext(e.ctx, q)
	if err != nil {
		e.t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		add("fk %s", n)
	}
	rows.Close()
	sort.Strings(out)
	return out
}

// wantShape is the final shape, identical on both engines (S1, S4).
var wantShape = func() []string {
	notNull := map[string]bool{"id": true, "task_session_id": true, "task_id": true, "tool_call_id": true,
		"agent_execution_id": true, "is_async": true, "source": true, "observed_at": true, "updated_at": true}
	defaults := map[string]string{"agent_execution_id": "'unknown'", "is_async": "0", "source": "'live'"}
	var out []string
	for _, c := range finalColumns {
		out = append(out, fmt.Sprintf("column %s notnull=%v default=%s", c, notNull[c], defaults[c]))
	}
	out = append(out, "unique id", "unique task_session_id,agent_execution_id,tool_call_id",
		"index idx_subagents_observed_at", "index idx_subagents_session_changed", "index idx_subagents_session_child",
		"index idx_subagents_session_id", "index idx_subagents_session_observed",
		"index idx_subagents_task_id", "index idx_subagents_turn_id",
		"fk task_session_id->task_sessions(id) CASCADE")
	sort.Strings(out)
	return out
}()

func metricTypes(e *env) []string {
	return columnTypes(e, "total_tokens", "tool_use_count", "duration_ms")
}

func timeTypes(e *env) []string { return columnTypes(e, "observed_at", "settled_at", "updated_at") }

func columnTypes(e *env, cols ...string) []string {
	sh, err := e.eng().probe(e.ctx, e.raw)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, c := range cols {
		out = append(out, sh.columns[c].dataType)
	}
	return out
}

// Criteria .21, .23, .49 of the README table
func TestFreshSchema(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.store()
		if got := e.describe(); !slices.Equal(got, wantShape) {
			t.Fatalf("shape\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantShape, "\n"))
		}
		want := "integer"
		if e.kind == Postgres {
			want = "bigint"
		}
		if got := metricTypes(e); !slices.Equal(got, []string{want, want, want}) {
			t.Fatalf("metric types %v", got)
		}
	})
}

// Criteria .23 of the README table: one classifier, by code.
func TestErrorClassification(t *testing.T) {
	pg := postgresEngine{}
	for code, want := range map[string]errClass{"42P07": errAlreadyExists, "42701": errAlreadyExists, "42710": errAlreadyExists,
		"42P10": errNoConflictTarget, "23505": errUniqueViolation, "XX000": errOther} {
		if got := pg.classify(fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Message: "already exists"})); got != want {
			t.Errorf("%s: %v", code, got)
		}
	}
	if pg.classify(errors.New("relation already exists")) != errOther {
		t.Error("PostgreSQL matched error text")
	}
	sq := sqliteEngine{}
	if sq.classify(sqlite3.Error{Code: sqlite3.ErrBusy}) != errBusy ||
		sq.classify(sqlite3.Error{Code: sqlite3.ErrConstraint, ExtendedCode: sqlite3.ErrConstraintUnique}) != errUniqueViolation ||
		sq.classify(errors.New("table x already exists")) != errAlreadyExists ||
		sq.classify(errors.New("duplicate column name: y")) != errAlreadyExists {
		t.Error("SQLite classification")
	}
}

// Criteria .21, .25 of the README table
func TestPreFeatureDatabase(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		e.session("S", "T")
		e.turn("U1", "S")
		e.message(message{ID: "m1", Session: "S", Task: "T", Turn: "U1", Metadata: subagentMeta("tc1", "completed", nil), Created: t0})
		e.message(message{ID: "m2", Session: "S", Task: "T", Turn: "U1", Metadata: `{"kind":"text"}`, Created: t0})
		dumpHost := func() string {
			var b strings.Builder
			rows, _ := e.raw.Query(`SELECT id, task_session_id, task_id, turn_id, metadata FROM task_session_messages ORDER BY id`)
			defer rows.Close()
			for rows.Next() {
				var a, b2, c, d, m any
				rows.Scan(&a, &b2, &c, &d, &m)
				fmt.Fprintf(&b, "%v %v %v %v %s\n", a, b2, c, d, m)
			}
			return b.String()
		}
		before := dumpHost()
		s := e.open(hooks{})
		if dumpHost() != before {
			t.Fatal("host rows changed")
		}
		r := one(t, s, "S")
		if r.Source != SourceBackfill || r.ID != "m1" {
			t.Fatalf("row %+v", r)
		}
	})
}

// Criteria .22, .53 of the README table
func TestMigrateTwiceIsIdempotent(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ExecutionID = "E1" }))
		e.message(message{ID: "m1", Session: "S", Task: "T", Turn: "U1", Metadata: subagentMeta("tc9", "", nil), Created: t0})
		shape, rows, keys := e.describe(), e.allRows(), e.keys()
		for range 2 {
			rep := s.Migrate(e.ctx)
			if !rep.OK() {
				t.Fatalf("%+v", rep)
			}
			names := []string{StepWidenMetrics, StepExecutionIdentity, StepExecutionSince, StepBackfillGuard}
			if e.kind == Postgres {
				names = append(names, StepTimestamptz)
			}
			for _, name := range names {
				if st, _ := rep.Step(name); !st.Skipped {
					t.Fatalf("%s ran on a converged database: %+v", name, st)
				}
			}
		}
		if !slices.Equal(e.describe(), shape) || !slices.Equal(e.allRows(), rows) || fmt.Sprint(e.keys()) != fmt.Sprint(keys) {
			t.Fatal("a replay changed the schema, rows or keys")
		}
		if r := one(t, s, "S"); r.AgentExecutionID != "E1" {
			t.Fatalf("re-sentinelled: %+v", r)
		}
	})
}

// A store of the build before the summaries' index (every step done, its
// key present, cards of two executions) gains the index in the schema
// step on its next pass, and only that: the dry run plans exactly that
// statement, the read-only open (acpscope web, sessions) reads it without
// the index, the pass changes no row or key and reads the same
// summaries, and the pass after it runs nothing.
func TestMigrateAddsSummaryIndex(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		for i, exec := range []string{"E1", "E2", "E2"} {
			s.Record(e.ctx, frame(fmt.Sprint("tc", i%2), func(f *Frame) {
				f.ExecutionID, f.ToolStatus, f.ObservedAt = exec, "completed", t0.Add(time.Duration(i)*time.Second)
			}))
		}
		e.exec(`DROP INDEX ` + summaryIndex)
		for _, q := range indexDDLBefore(summaryIndex) {
			e.exec(q) // what the older build left: every other index
		}
		shape, rows, keys := e.describe(), e.allRows(), e.keys()
		if slices.Contains(shape, "index "+summaryIndex) {
			t.Fatal("fixture keeps the index")
		}
		ro, err := OpenReadOnly(e.ctx, e.dsn)
		if err != nil {
			t.Fatalf("read-only open of the older store: %v", err)
		}
		defer ro.Close()
		before, err := ro.ListSessions(e.ctx, SessionFilter{})
		if err != nil || len(before) != 1 || before[0].Cards != 2 {
			t.Fatalf("older store's summaries %+v %v", before, err)
		}
		plan, err := ro.Plan(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Statements) != 1 || plan.Statements[0].Step != StepSchema ||
			indexName(plan.Statements[0].SQL) != summaryIndex || len(plan.Refusals) != 0 {
			t.Fatalf("plan:\n%s", plan)
		}
		rep := s.Migrate(e.ctx)
		if st, _ := rep.Step(StepSchema); !rep.OK() || st.Skipped {
			t.Fatalf("pass: %+v", rep)
		}
		if got := e.describe(); !slices.Equal(got, wantShape) {
			t.Fatalf("shape\n%s", strings.Join(got, "\n"))
		}
		if !slices.Equal(e.allRows(), rows) || fmt.Sprint(e.keys()) != fmt.Sprint(keys) {
			t.Fatal("the pass changed rows or keys")
		}
		after, err := ro.ListSessions(e.ctx, SessionFilter{})
		if err != nil || !slices.EqualFunc(after, before, func(a, b SessionSummary) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			t.Fatalf("summaries changed: %+v, were %+v (%v)", after, before, err)
		}
		if plan, err := ro.Plan(e.ctx); err != nil || !plan.Empty() {
			t.Fatalf("converged plan %v:\n%s", err, plan)
		}
	})
}

// Criteria .7, .23, .29 of the README table
func TestWideMetrics(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		e.session("S", "T")
		e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc-old", "completed",
			map[string]any{"duration_ms": int64(1<<31 + 5)}), Created: t0})
		s := e.open(hooks{})
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TotalTokens, f.TurnID = 3_000_000_000, "" }))
		rows, _ := s.ListBySession(e.ctx, "S")
		if len(rows) != 2 || *rows[0].DurationMs != 1<<31+5 || *rows[1].TotalTokens != 3_000_000_000 || s.Counters().Failed != 0 {
			t.Fatalf("rows %s counters %+v", mustJSON(rows), s.Counters())
		}
	})
}

// Criteria .22, .23 of the README table: int4 metrics from the existing implementation widen.
func TestWidenInt4Metrics(t *testing.T) {
	e := newEnv(t, Postgres)
	t.Parallel()
	e.hostTables()
	e.session("S", "T")
	e.exec(strings.Replace(subagentsTableDDL(e.eng(), "task_session_subagents"), "BIGINT", "INTEGER", 3))
	e.exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, tool_call_id, total_tokens, tool_use_count, duration_ms, observed_at, updated_at)
VALUES ('r1', 'S', 'T', 'tc1', 2147483647, 0, 5, ?, ?)`, e.ts(t0), e.ts(t0))
	if got := metricTypes(e); got[0] != "integer" {
		t.Fatalf("fixture %v", got)
	}
	before := e.allRows()
	s := e.open(hooks{})
	if got := metricTypes(e); !slices.Equal(got, []string{"bigint", "bigint", "bigint"}) {
		t.Fatalf("metric types %v", got)
	}
	if !slices.Equal(e.allRows(), before) {
		t.Fatal("values changed")
	}
	if st, _ := s.Migrate(e.ctx).Step(StepWidenMetrics); !st.Skipped || st.Err != nil {
		t.Fatalf("second pass widened again: %+v", st)
	}
}

// Criteria .49, .51 of the README table
func TestAmendPreAmendmentTable(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		e.session("S", "T")
		e.turn("U1", "S")
		metric := "INTEGER"
		e.preAmendmentTable(metric)
		e.seedPreRows(3)
		before := e.dump(preColumns)
		e.open(hooks{})
		if got := e.dump(preColumns); !slices.Equal(got, before) {
			t.Fatalf("rows changed:\n%v\n%v", before, got)
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE agent_execution_id = 'unknown'`); n != 3 {
			t.Fatalf("%d rows carry the sentinel", n)
		}
		want := wantShape
		if got := e.describe(); !slices.Equal(got, want) {
			t.Fatalf("shape\n%s", strings.Join(got, "\n"))
		}
		if _, ok := parseKey(e.keys()[KeyExecutionSince]); !ok {
			t.Fatalf("execution_since %q", e.keys()[KeyExecutionSince])
		}
	})
}

// Criteria .24, .33, .50, .52 of the README table: a failure after each amendment step leaves the
// exact pre-amendment shape, no key, and a WARN; the next pass activates.
func TestAmendmentFailpoints(t *testing.T) {
	points := map[Engine][]string{
		SQLite:   {"execution_identity.create", "execution_identity.copy", "execution_identity.swap", "execution_identity.indexes", "execution_identity.key"},
		Postgres: {"execution_identity.column", "execution_identity.drop_pair", "execution_identity.unique", "execution_identity.key"},
	}
	for _, kind := range []Engine{SQLite, Postgres} {
		for _, point := range points[kind] {
			t.Run(string(kind)+"/"+point, func(t *testing.T) {
				e := newEnv(t, kind)
				t.Parallel()
				e.hostTables()
				e.session("S", "T")
				e.turn("U1", "S")
				e.preAmendmentTable("INTEGER")
				e.seedPreRows(2)
				e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc-hist", "completed", nil), Created: t0})
				// The schema step, before the amendment, adds the index older
				// tables lack: the shape a failed amendment must leave.
				shape, rows := append(e.describe(), "index "+summaryIndex, "index "+changeIndex, "index "+childIndex), e.dump(preColumns)
				sort.Strings(shape)
				fail := true
				s := e.open(hooks{fail: func(p string) error {
					if fail && p == point {
						return errors.New("injected")
					}
					return nil
				}})
				if !strings.Contains(e.logs.String(), "name="+StepExecutionIdentity) || !strings.Contains(e.logs.String(), "level=WARN") {
					t.Fatalf("no WARN naming the step:\n%s", e.logs)
				}
				if !slices.Equal(e.describe(), shape) || !slices.Equal(e.dump(preColumns), rows) {
					t.Fatalf("not the pre-amendment shape:\n%s", strings.Join(e.describe(), "\n"))
				}
				if k := e.keys(); len(k) != 0 {
					t.Fatalf("keys written: %v", k)
				}
				fail = false
				if rep := s.Migrate(e.ctx); !rep.OK() {
					t.Fatalf("%+v", rep)
				}
				h, err := s.Health(e.ctx)
				if err != nil || h.State != StateFullyActivated {
					t.Fatalf("health %+v %v", h, err)
				}
				if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE source = 'backfill'`); n != 1 {
					t.Fatalf("%d backfill rows", n)
				}
			})
		}
	}
}

// Criteria .51 of the README table
func TestExecutionSinceSelfHeal(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{})
		_ = s
		// Open ran one pass on an empty database: schema init made the shape,
		// the amendment step had nothing to do, the next step wrote the key.
		e2 := e.keys()
		if _, ok := parseKey(e2[KeyExecutionSince]); !ok {
			t.Fatalf("keys %v", e2)
		}
		e.exec(`DELETE FROM kandev_meta WHERE key = ?`, KeyExecutionSince)
		rep := s.Migrate(e.ctx)
		if st, _ := rep.Step(StepExecutionIdentity); !st.Skipped {
			t.Fatalf("rebuilt: %+v", st)
		}
		if st, _ := rep.Step(StepExecutionSince); st.Skipped || st.Err != nil {
			t.Fatalf("key not written: %+v", st)
		}
		if _, ok := e.keys()[KeyExecutionSince]; !ok {
			t.Fatal("no execution_since")
		}
	})
}

// Criteria .51, .53 of the README table
func TestExecutionSincePreserved(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		const x = "2026-01-02T03:04:05Z"
		e.exec(`INSERT INTO kandev_meta (key, value) VALUES (?, ?)`, KeyExecutionSince, x)
		s := e.open(hooks{})
		s.Migrate(e.ctx)
		if got := e.keys()[KeyExecutionSince]; got != x {
			t.Fatalf("execution_since %q", got)
		}
	})
}

// Criteria .35, .51 of the README table: activated by the existing implementation (final shape,
// both backfill keys, no execution_since, trimmed timestamp text).
func TestActivatedByExistingImplementation(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		e.session("S", "T")
		ddl := subagentsTableDDL(e.eng(), "task_session_subagents")
		if e.kind == Postgres { // int4 metrics, timestamp without time zone
			ddl = strings.ReplaceAll(strings.Replace(ddl, "BIGINT", "INTEGER", 3), "TIMESTAMPTZ", "TIMESTAMP")
		}
		e.exec(ddl)
		for _, q := range indexDDL {
			e.exec(q)
		}
		observed := any("2026-07-30 01:39:37.2712+00:00") // mattn's trimmed form
		if e.kind == Postgres {
			observed = e.ts(t0)
		}
		e.exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, tool_call_id, agent_execution_id, total_tokens, observed_at, updated_at)
VALUES ('r1', 'S', 'T', 'tc1', 'E', 7, ?, ?)`, observed, observed)
		e.exec(`INSERT INTO kandev_meta (key, value) VALUES (?, '2026-07-29T00:00:00Z'), (?, '')`, KeyCaptureSince, KeyBackfillThrough)
		e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc-hist", "", nil), Created: t0})
		if h, _ := (&Store{eng: e.eng(), reader: e.raw}).Health(e.ctx); h.State != StateAmendmentIncomplete || h.ExecutionIDsReliable {
			t.Fatalf("before: %+v", h)
		}
		before := e.allRows()
		s := e.open(hooks{})
		if !slices.Equal(before, e.allRows()) {
			t.Fatal("rows changed")
		}
		s2, err := s.Health(e.ctx)
		if err != nil || s2.State != StateFullyActivated {
			t.Fatalf("health %+v %v", s2, err)
		}
		k := e.keys()
		if k[KeyCaptureSince] != "2026-07-29T00:00:00Z" || k[KeyBackfillThrough] != "" || len(k) != 3 {
			t.Fatalf("keys %v", k)
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 1 {
			t.Fatal("backfill re-ran")
		}
		s.Migrate(e.ctx)
		if !slices.Equal(before, e.allRows()) {
			t.Fatal("rows changed")
		}
		r := one(t, s, "S")
		if e.kind == SQLite && !r.ObservedAt.Equal(time.Date(2026, 7, 30, 1, 39, 37, 271200000, time.UTC)) {
			t.Fatalf("trimmed text read as %v", r.ObservedAt)
		}
	})
}

// Criteria .37, .49, .53 of the README table: activated before the amendment existed.
func TestActivatedPreAmendment(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		e.session("S", "T")
		e.turn("U1", "S")
		e.preAmendmentTable("INTEGER")
		e.seedPreRows(2)
		e.exec(`INSERT INTO kandev_meta (key, value) VALUES (?, '2026-08-01T00:00:00Z'), (?, '2026-07-31T23:00:00Z')`, KeyCaptureSince, KeyBackfillThrough)
		e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc-hist", "", nil), Created: t0})
		e.open(hooks{})
		k := e.keys()
		if k[KeyCaptureSince] != "2026-08-01T00:00:00Z" || k[KeyBackfillThrough] != "2026-07-31T23:00:00Z" {
			t.Fatalf("keys changed: %v", k)
		}
		if _, ok := parseKey(k[KeyExecutionSince]); !ok {
			t.Fatalf("execution_since %q", k[KeyExecutionSince])
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 2 {
			t.Fatalf("backfill re-ran (%d rows)", n)
		}
		if got := e.describe(); !slices.Equal(got, wantShape) {
			t.Fatalf("shape\n%s", strings.Join(got, "\n"))
		}
	})
}

// Criteria .52 of the README table: amendment, then key, then backfill, in one pass.
func TestOrderInOnePass(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		e.session("S", "T")
		e.turn("U1", "S")
		e.preAmendmentTable("INTEGER")
		e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc-hist", "", nil), Created: t0})
		e.open(hooks{})
		k := e.keys()
		exec, ok1 := parseKey(k[KeyExecutionSince])
		capture, ok2 := parseKey(k[KeyCaptureSince])
		if !ok1 || !ok2 || exec.After(capture) {
			t.Fatalf("keys %v", k)
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE agent_execution_id = 'unknown' AND source = 'backfill'`); n != 1 {
			t.Fatalf("%d backfill rows", n)
		}
	})
}

// Criteria .41, .50 of the README table: writes before the amendment applies fail softly.
func TestWriteBeforeAmendment(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		e.session("S", "T")
		e.preAmendmentTable("INTEGER")
		s := e.open(hooks{fail: func(p string) error {
			if p == "execution_identity.key" {
				return errors.New("injected")
			}
			return nil
		}})
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TurnID = "" }))
		if c := s.Counters(); c.Failed != 1 || c.Persisted != 0 {
			t.Fatalf("counters %+v", c)
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 0 {
			t.Fatal("row written onto the pre-amendment table")
		}
		logs := e.logs.String()
		if !strings.Contains(logs, "session_id=S") || !strings.Contains(logs, "tool_call_id=tc1") {
			t.Fatalf("WARN lacks ids:\n%s", logs)
		}
	})
}
