package persistence

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The ownership rule: no migration step and no command drops, rewrites or
// loses a column, row, index, trigger, view, constraint or foreign key this
// layer did not create. The host objects below surround a pre-amendment
// table (which the amendment must change: on SQLite by a rebuild, on
// PostgreSQL in place) and a table of the same name with an unrelated
// shape (which nothing may touch).

// hostPreAmendment sets up a host's database: the host's own tables, session
// S of task T with turn U1, and a pre-amendment task_session_subagents.
func (e *env) hostPreAmendment() {
	e.t.Helper()
	e.hostShape = true
	e.hostTables()
	e.session("S", "T")
	e.turn("U1", "S")
	e.preAmendmentTable("INTEGER")
}

// hostObjects adds a host's own objects around a pre-amendment
// task_session_subagents: an extra column with data and a CHECK, a
// table-level CHECK, an index on the extra column, a trigger on the table,
// a view over it, and another table whose foreign key references it.
func (e *env) hostObjects() {
	e.t.Helper()
	e.exec(`ALTER TABLE task_session_subagents ADD COLUMN app_notes TEXT DEFAULT 'none' CHECK (length(app_notes) < 200)`)
	if e.kind == SQLite {
		// SQLite adds a table CHECK only by a rebuild; a host that has
		// one made it with the table, so the fixture does the same.
		e.exec(`DROP TABLE task_session_subagents`)
		e.exec(`CREATE TABLE task_session_subagents (
	id TEXT PRIMARY KEY,
	task_session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
	task_id TEXT NOT NULL, turn_id TEXT, tool_call_id TEXT NOT NULL,
	parent_tool_call_id TEXT, subagent_type TEXT, description TEXT, agent_id TEXT,
	child_session_id TEXT, model TEXT, agent_status TEXT, tool_status TEXT,
	is_async INTEGER NOT NULL DEFAULT 0,
	total_tokens INTEGER, tool_use_count INTEGER, duration_ms INTEGER,
	source TEXT NOT NULL DEFAULT 'live',
	observed_at TIMESTAMP NOT NULL, settled_at TIMESTAMP, updated_at TIMESTAMP NOT NULL,
	app_notes TEXT DEFAULT 'none' CHECK (length(app_notes) < 200), -- the host's, with data
	"app rank" INTEGER NOT NULL DEFAULT 7,
	UNIQUE (task_session_id, tool_call_id),
	CONSTRAINT host_async_bool CHECK (is_async IN (0, 1)))`)
		for _, q := range indexDDL {
			e.exec(q)
		}
	} else {
		e.exec(`ALTER TABLE task_session_subagents ADD COLUMN "app rank" INTEGER NOT NULL DEFAULT 7`)
		e.exec(`ALTER TABLE task_session_subagents ADD CONSTRAINT host_async_bool CHECK (is_async IN (0, 1))`)
	}
	e.exec(`CREATE INDEX host_notes_idx ON task_session_subagents (app_notes)`)
	e.exec(`CREATE TABLE host_audit (sub_id TEXT, note TEXT)`)
	if e.kind == SQLite {
		e.exec(`CREATE TRIGGER host_audit_trg AFTER UPDATE OF app_notes ON task_session_subagents
BEGIN INSERT INTO host_audit VALUES (new.id, new.app_notes); END`)
	} else {
		e.exec(`CREATE FUNCTION host_audit_fn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO host_audit VALUES (NEW.id, NEW.app_notes); RETURN NEW; END $$`)
		e.exec(`CREATE TRIGGER host_audit_trg AFTER UPDATE OF app_notes ON task_session_subagents
FOR EACH ROW EXECUTE FUNCTION host_audit_fn()`)
	}
	e.exec(`CREATE VIEW host_notes_view AS SELECT id, task_session_id, app_notes FROM task_session_subagents`)
	e.exec(`CREATE TABLE host_refs (ref_id TEXT PRIMARY KEY, sub_id TEXT REFERENCES task_session_subagents(id))`)
}

// hostColumns are the pre-amendment columns plus the host's two.
var hostColumns = append(slices.Clone(preColumns), "app_notes", `"app rank"`)

// catalog is every object of the database (SQLite: sqlite_master;
// PostgreSQL: pg_catalog in the test's schema) with its definition, minus
// what the amendment changes by design: the subagent table's own
// definition and its unique and primary-key indexes, the layer's own
// tables, functions and keys. Column definitions of the subagent table are
// listed one by one, so a lost or changed host column shows.
func (e *env) catalog() []string {
	e.t.Helper()
	var q string
	if e.kind == SQLite {
		q = `SELECT type || ' ' || name || ' ON ' || tbl_name || ': ' || COALESCE(sql, '') FROM sqlite_master
WHERE NOT (type = 'table' AND name = 'task_session_subagents') AND name NOT LIKE 'sqlite_autoindex_task_session_subagents%'
UNION ALL
SELECT 'column ' || name || ' ' || type || ' notnull=' || "notnull" || ' default=' || COALESCE(dflt_value, 'NULL') || ' pk=' || pk
FROM pragma_table_xinfo('task_session_subagents') WHERE name NOT IN ('agent_execution_id', 'id')
UNION ALL
SELECT 'fk ' || "table" || '.' || "from" || '->' || "to" || ' ' || on_update || ' ' || on_delete FROM pragma_foreign_key_list('task_session_subagents')
UNION ALL
SELECT 'fk host_refs.' || "from" || '->' || "table" || '.' || "to" FROM pragma_foreign_key_list('host_refs')`
	} else {
		q = `SELECT 'rel ' || c.relname || ' ' || c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'i', 'S')
  AND c.relname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('u', 'p') AND conrelid = 'task_session_subagents'::regclass)
UNION ALL
SELECT 'index ' || indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
  AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('u', 'p') AND conrelid = 'task_session_subagents'::regclass)
UNION ALL
SELECT 'view ' || viewname || ': ' || definition FROM pg_views WHERE schemaname = current_schema()
UNION ALL
SELECT 'trigger ' || t.tgname || ': ' || pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND NOT t.tgisinternal
UNION ALL
SELECT 'constraint ' || c.conrelid::regclass::text || '.' || c.conname || ': ' || pg_get_constraintdef(c.oid)
FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
WHERE n.nspname = current_schema() AND NOT (c.contype IN ('u', 'p') AND c.conrelid = 'task_session_subagents'::regclass)
UNION ALL
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' notnull=' || a.attnotnull
       || ' default=' || COALESCE(pg_get_expr(d.adbin, d.adrelid), 'NULL')
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = current_schema() AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
  AND NOT (c.relname = 'task_session_subagents' AND a.attname IN ('agent_execution_id', 'total_tokens', 'tool_use_count',
       'duration_ms', 'observed_at', 'settled_at', 'updated_at'))`
	}
	rows, err := e.raw.QueryContext(e.ctx, q)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// hostOwned is the part of a catalog that the host made: the layer's own
// objects (kandev_meta, its indexes and functions, the merged cards with
// their index, triggers and function) appear after the first open and are
// left out of the comparison.
func hostOwned(cat []string) []string {
	return slices.DeleteFunc(slices.Clone(cat), func(s string) bool {
		for _, own := range []string{"kandev_meta", "idx_subagents_", "subagent_context_", "idx_task_session_messages_created_at",
			cardsTable} {
			if strings.Contains(s, own) {
				return true
			}
		}
		return false
	})
}

func (e *env) hostTable(table string) []string {
	e.t.Helper()
	var out []string
	for _, vals := range e.queryAll(`SELECT * FROM ` + table) {
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, fmt.Sprint(vals...))
	}
	slices.Sort(out)
	return out
}

// A pre-amendment table with the host's objects: the amendment keeps every
// host column with its data, index, trigger, view, CHECK and foreign key,
// through the migration and through every command after it.
func TestOwnershipHostObjects(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostPreAmendment()
		e.hostObjects()
		e.seedPreRows(3)
		e.exec(`UPDATE task_session_subagents SET app_notes = 'kept ' || id, "app rank" = 3`)
		e.exec(`INSERT INTO host_refs VALUES ('r1', 'row1')`)
		catalog := hostOwned(e.catalog())
		rows := e.dump(hostColumns)
		audit, refs := e.hostTable("host_audit"), e.hostTable("host_refs")
		check := func(when string) {
			t.Helper()
			if got := hostOwned(e.catalog()); !slices.Equal(got, catalog) {
				t.Fatalf("%s: host objects changed:\nbefore:\n%s\nafter:\n%s", when, strings.Join(catalog, "\n"), strings.Join(got, "\n"))
			}
			got := slices.DeleteFunc(e.dump(hostColumns), func(r string) bool { return !strings.HasPrefix(r, "id=row") })
			if !slices.Equal(got, rows) {
				t.Fatalf("%s: host rows changed:\n%v\n%v", when, rows, got)
			}
			if !slices.Equal(e.hostTable("host_audit"), audit) || !slices.Equal(e.hostTable("host_refs"), refs) {
				t.Fatalf("%s: other host tables changed", when)
			}
		}
		s := e.open(hooks{})
		check("after the first open")
		if st, _ := s.Migrate(e.ctx).Step(StepExecutionIdentity); st.Err != nil || !st.Skipped {
			t.Fatalf("the amendment did not apply: %+v\n%s", st, e.logs)
		}
		check("after a second pass")
		if _, err := s.Health(e.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ListBySession(e.ctx, "S"); err != nil {
			t.Fatal(err)
		}
		s.Record(e.ctx, frame("tc-new"))
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE tool_call_id = 'tc-new' AND app_notes = 'none' AND "app rank" = 7`); n != 1 {
			t.Fatalf("a live write did not take the host's defaults (%d)", n)
		}
		check("after health, list and a write")
		// The host's trigger and CHECK still act.
		e.exec(`UPDATE task_session_subagents SET app_notes = 'audited' WHERE id = 'row0'`)
		if n := e.count(`SELECT COUNT(*) FROM host_audit WHERE note = 'audited'`); n != 1 {
			t.Fatalf("the host's trigger did not fire (%d)", n)
		}
		if _, err := e.raw.ExecContext(e.ctx, `UPDATE task_session_subagents SET is_async = 5`); err == nil {
			t.Fatal("the host's CHECK is gone")
		}
		if n := e.count(`SELECT COUNT(*) FROM host_notes_view`); n != 4 {
			t.Fatalf("the host's view reads %d rows", n)
		}
	})
}

// A table of the same name with an unrelated shape is never touched: the
// pass reports why and changes nothing; a read-only open says it needs
// migration.
func TestOwnershipUnrelatedTable(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostShape = true
		e.hostTables()
		e.exec(`CREATE TABLE task_session_subagents (id TEXT PRIMARY KEY, task_id TEXT, total_tokens INTEGER, payload TEXT NOT NULL)`)
		e.exec(`CREATE INDEX host_payload_idx ON task_session_subagents (payload)`)
		e.exec(`INSERT INTO task_session_subagents VALUES ('a', 't', 1, 'one'), ('b', 't', 2, 'two')`)
		catalog, rows := hostOwned(e.catalog()), e.hostTable("task_session_subagents")
		s := e.open(hooks{})
		rep := s.Migrate(e.ctx)
		st, _ := rep.Step(StepExecutionIdentity)
		if st.Err == nil || !strings.Contains(st.Err.Error(), "did not create") {
			t.Fatalf("want a refusal naming the table, got %+v", st)
		}
		if got := hostOwned(e.catalog()); !slices.Equal(got, catalog) {
			t.Fatalf("the unrelated table changed:\n%s\n--\n%s", strings.Join(catalog, "\n"), strings.Join(got, "\n"))
		}
		if got := e.hostTable("task_session_subagents"); !slices.Equal(got, rows) {
			t.Fatalf("rows changed: %v", got)
		}
		if _, err := OpenReadOnly(e.ctx, e.dsn); !errors.Is(err, ErrNeedsMigration) || !strings.Contains(err.Error(), "did not create") {
			t.Fatalf("read-only open: want ErrNeedsMigration naming the table, got %v", err)
		}
		plan, err := PlanMigration(e.ctx, e.dsn)
		if err != nil || len(plan.Refusals) != 1 || !strings.Contains(plan.String(), "did not create") {
			t.Fatalf("plan %v:\n%s", err, plan)
		}
	})
}

// The plainest case: a host column with data, and (on an empty table) the
// host's own index and trigger, through the amendment.
func TestOwnershipExtraColumn(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostPreAmendment()
		e.exec(`ALTER TABLE task_session_subagents ADD COLUMN app_notes TEXT`)
		e.exec(`CREATE INDEX host_notes_idx ON task_session_subagents (app_notes)`)
		e.exec(`CREATE TABLE host_audit (sub_id TEXT, note TEXT)`)
		if e.kind == SQLite {
			e.exec(`CREATE TRIGGER host_audit_trg AFTER INSERT ON task_session_subagents
BEGIN INSERT INTO host_audit VALUES (new.id, new.app_notes); END`)
		}
		e.seedPreRows(2)
		e.exec(`UPDATE task_session_subagents SET app_notes = 'note of ' || id`)
		catalog, rows := hostOwned(e.catalog()), e.dump(append(slices.Clone(preColumns), "app_notes"))
		e.open(hooks{})
		if got := e.dump(append(slices.Clone(preColumns), "app_notes")); !slices.Equal(got, rows) {
			t.Fatalf("host rows changed:\n%v\n%v", rows, got)
		}
		if got := hostOwned(e.catalog()); !slices.Equal(got, catalog) {
			t.Fatalf("host objects changed:\n%s\n--\n%s", strings.Join(catalog, "\n"), strings.Join(got, "\n"))
		}
	})
}

// Where a host object depends on what the amendment must change, the step
// refuses, names the object and what to do, and changes nothing: on
// PostgreSQL a view over a timestamp column (timestamptz needs ALTER
// TYPE), on SQLite another table's foreign key whose parent key is the
// pair the amendment makes non-unique.
func TestOwnershipRefusesDependents(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostShape = true
		e.hostTables()
		e.session("S", "T")
		e.preAmendmentTable("INTEGER")
		e.seedPreRows(2)
		step, want := StepTimestamptz, "host_observed_view"
		if e.kind == SQLite {
			e.exec(`CREATE TABLE host_pair_refs (s TEXT, tc TEXT, FOREIGN KEY (s, tc) REFERENCES task_session_subagents (task_session_id, tool_call_id))`)
			step, want = StepExecutionIdentity, "host_pair_refs"
		} else {
			e.exec(`CREATE VIEW host_observed_view AS SELECT id, observed_at FROM task_session_subagents`)
		}
		catalog, rows := hostOwned(e.catalog()), e.dump(preColumns)
		s := e.open(hooks{})
		st, _ := s.Migrate(e.ctx).Step(step)
		if st.Err == nil || !strings.Contains(st.Err.Error(), want) {
			t.Fatalf("want a refusal naming %s, got %+v", want, st)
		}
		if got := e.dump(preColumns); !slices.Equal(got, rows) {
			t.Fatalf("rows changed")
		}
		if e.kind == SQLite {
			if got := hostOwned(e.catalog()); !slices.Equal(got, catalog) {
				t.Fatalf("host objects changed:\n%s\n--\n%s", strings.Join(catalog, "\n"), strings.Join(got, "\n"))
			}
		}
		if !strings.Contains(e.logs.String(), want) {
			t.Fatalf("the WARN does not name %s:\n%s", want, e.logs)
		}
	})
}

// The CREATE TABLE splitter reads host text: it never panics, every item
// is a substring of the input, and a definition it accepts round-trips.
func FuzzSplitTableDef(f *testing.F) {
	for _, seed := range []string{
		`CREATE TABLE t (a TEXT, "b c" INTEGER DEFAULT 7, UNIQUE (a, "b c"), CHECK (a <> ','))`,
		"CREATE TABLE t (a TEXT -- note, with comma\n, b /* ( */ INT) WITHOUT ROWID",
		`CREATE TABLE t ([x] TEXT, ` + "`y`" + ` TEXT, CONSTRAINT k UNIQUE (task_session_id, tool_call_id) ON CONFLICT REPLACE)`,
		`CREATE TABLE t AS SELECT 1`, `CREATE TABLE t (a 'unterminated`, `CREATE TABLE t (`, `((((`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		def, err := splitTableDef(sql)
		if err != nil {
			return
		}
		for _, it := range def.items {
			if !strings.Contains(sql, it.text) || len(it.tokens) == 0 {
				t.Fatalf("item %q is not from the input", it.text)
			}
			_ = it.isUniqueOn(pairKey)
			_ = it.isPlainTextColumn()
		}
	})
}

// SQLite rebuilds of host definitions the tokenizer must follow: a quoted
// table name, comments with commas and parentheses, a generated column,
// a collation, a named pair constraint with ON CONFLICT, WITHOUT ROWID;
// and a declaration the rebuild cannot keep, which it refuses by name.
func TestOwnershipSQLiteDefinitions(t *testing.T) {
	t.Parallel()
	base := `id TEXT NOT NULL PRIMARY KEY,
	task_session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
	task_id TEXT NOT NULL, turn_id TEXT, tool_call_id TEXT NOT NULL COLLATE NOCASE, -- (host, note)
	parent_tool_call_id TEXT, subagent_type TEXT, description TEXT, agent_id TEXT,
	child_session_id TEXT, model TEXT, agent_status TEXT, tool_status TEXT,
	is_async INTEGER NOT NULL DEFAULT 0,
	total_tokens INTEGER, tool_use_count INTEGER, duration_ms INTEGER,
	source TEXT NOT NULL DEFAULT 'live',
	observed_at TIMESTAMP NOT NULL, settled_at TIMESTAMP, updated_at TIMESTAMP NOT NULL,
	/* host columns, ( */ app_len INTEGER GENERATED ALWAYS AS (length(description)) VIRTUAL,
	app_notes TEXT DEFAULT 'a,b'`
	for _, c := range []struct {
		name, ddl, refuse string
	}{
		{"quoted and generated", `CREATE TABLE "task_session_subagents" (` + base + `,
	CONSTRAINT pair_key UNIQUE (task_session_id, tool_call_id) ON CONFLICT ABORT)`, ""},
		{"without rowid", `CREATE TABLE task_session_subagents (` + base + `,
	UNIQUE ("task_session_id", [tool_call_id])) WITHOUT ROWID`, ""},
		{"execution column with a check", `CREATE TABLE task_session_subagents (` + base + `,
	agent_execution_id TEXT CHECK (agent_execution_id <> 'x'),
	UNIQUE (task_session_id, tool_call_id))`, "agent_execution_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, SQLite)
			e.hostShape = true
			e.hostTables()
			e.session("S", "T")
			e.exec(c.ddl)
			e.exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, tool_call_id, description, observed_at, updated_at, app_notes)
VALUES ('r1', 'S', 'T', 'tc1', 'four', ?, ?, 'kept')`, e.ts(t0), e.ts(t0))
			cols := []string{"id", "tool_call_id", "description", "app_len", "app_notes"}
			catalog, rows := hostOwned(e.catalog()), e.dump(cols)
			s := e.open(hooks{})
			st, _ := s.Migrate(e.ctx).Step(StepExecutionIdentity)
			if got := e.dump(cols); !slices.Equal(got, rows) {
				t.Fatalf("rows changed:\n%v\n%v", rows, got)
			}
			if c.refuse != "" {
				if st.Err == nil || !strings.Contains(st.Err.Error(), c.refuse) {
					t.Fatalf("want a refusal naming %s, got %+v", c.refuse, st)
				}
				if got := hostOwned(e.catalog()); !slices.Equal(got, catalog) {
					t.Fatal("a refused rebuild changed the catalog")
				}
				return
			}
			if st.Err != nil || !st.Skipped {
				t.Fatalf("the amendment did not apply: %+v\n%s", st, e.logs)
			}
			if got := hostOwned(e.catalog()); !slices.Equal(got, catalog) {
				t.Fatalf("host objects changed:\n%s\n--\n%s", strings.Join(catalog, "\n"), strings.Join(got, "\n"))
			}
			s.Record(e.ctx, frame("tc2", func(f *Frame) { f.TurnID = "" }))
			if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 2 {
				t.Fatalf("%d rows after a write", n)
			}
		})
	}
}

// A host table under the rebuild's temporary name is never dropped: the
// rebuild refuses, naming it.
func TestOwnershipTemporaryName(t *testing.T) {
	t.Parallel()
	e := newEnv(t, SQLite)
	e.hostTables()
	e.session("S", "T")
	e.preAmendmentTable("INTEGER")
	e.exec(`CREATE TABLE task_session_subagents_new (host TEXT)`)
	e.exec(`INSERT INTO task_session_subagents_new VALUES ('mine')`)
	s := e.open(hooks{})
	st, _ := s.Migrate(e.ctx).Step(StepExecutionIdentity)
	if st.Err == nil || !strings.Contains(st.Err.Error(), "task_session_subagents_new") {
		t.Fatalf("want a refusal naming the table, got %+v", st)
	}
	if got := e.hostTable("task_session_subagents_new"); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("the host's table changed: %v", got)
	}
}
