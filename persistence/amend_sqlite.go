package persistence

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SQLite side of the migration procedures: the catalog probe and the
// table rebuild that makes a pre-amendment table execution-aware.

func (sqliteEngine) probe(ctx context.Context, q queryer) (tableShape, error) {
	sh := tableShape{columns: map[string]columnInfo{}}
	rows, err := q.QueryContext(ctx, `SELECT name, "notnull", type FROM pragma_table_info('task_session_subagents')`)
	if err != nil {
		return sh, err
	}
	for rows.Next() {
		var name, typ string
		var notNull int
		if err := rows.Scan(&name, &notNull, &typ); err != nil {
			rows.Close()
			return sh, err
		}
		sh.columns[name] = columnInfo{notNull: notNull != 0, dataType: strings.ToLower(typ)}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sh, err
	}
	sh.exists = len(sh.columns) > 0
	if !sh.exists {
		return sh, nil
	}
	rows, err = q.QueryContext(ctx, `SELECT name, origin FROM pragma_index_list('task_session_subagents') WHERE "unique" = 1 AND partial = 0`)
	if err != nil {
		return sh, err
	}
	var idx []uniqueIndex
	for rows.Next() {
		var name, origin string
		if err := rows.Scan(&name, &origin); err != nil {
			rows.Close()
			return sh, err
		}
		u := uniqueIndex{index: name}
		if origin == "u" || origin == "pk" {
			u.constraint = name
		}
		idx = append(idx, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sh, err
	}
	for _, u := range idx {
		cols, err := q.QueryContext(ctx, `SELECT name FROM pragma_index_info(?) ORDER BY seqno`, u.index)
		if err != nil {
			return sh, err
		}
		for cols.Next() {
			var c string
			if err := cols.Scan(&c); err != nil {
				cols.Close()
				return sh, err
			}
			u.columns = append(u.columns, c)
		}
		cols.Close()
		sh.uniques = append(sh.uniques, u)
	}
	return sh, nil
}

// amend rebuilds the table in the execution-aware shape inside one
// IMMEDIATE transaction on a pinned writer connection, with foreign keys
// off for the copy (so an orphan row cannot poison it forever) and the
// legacy rename (so views and triggers naming the table are left as they
// are: the rebuilt table takes the same name). The new table is the
// host's own definition (sqliteRebuild), so every column keeps its type,
// default and constraints; every row is copied; every index and trigger
// on the table is recreated from sqlite_master. Before committing, the
// result is checked against the catalog (sqliteVerify). Any error rolls
// back to the intact old table. execution_since is written in the same
// transaction.
func (sqliteEngine) amend(ctx context.Context, s *Store, sh tableShape) (err error) {
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range []string{`PRAGMA foreign_keys=OFF`, `PRAGMA legacy_alter_table=ON`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys=ON; PRAGMA legacy_alter_table=OFF`); rerr != nil {
			// Never hand a connection without foreign keys back to the pool.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE via the writer DSN
	if err != nil {
		return err
	}
	defer tx.Rollback()

	rb, err := sqliteRebuild(ctx, tx, sh)
	if err != nil {
		return err
	}
	for i, q := range rb.statements() {
		if _, err := s.exec(ctx, tx, q); err != nil {
			return fmt.Errorf("%w (statement %d of the rebuild)", err, i+1)
		}
		if err := s.failpoint(rb.point(i)); err != nil {
			return err
		}
	}
	if err := rb.verify(ctx, tx); err != nil {
		return err
	}
	var orphans int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_foreign_key_check('task_session_subagents')`).Scan(&orphans); err != nil {
		return err
	}
	if orphans > 0 {
		s.log.Warn("orphan rows kept by the execution-identity rebuild", "name", StepExecutionIdentity, "count", orphans)
	}
	if _, err := s.putKey(ctx, tx, KeyExecutionSince, keyText(s.now())); err != nil {
		return err
	}
	if err := s.failpoint("execution_identity.key"); err != nil {
		return err
	}
	return tx.Commit()
}

// amendStatements is the rebuild as text, for the plan.
func (sqliteEngine) amendStatements(ctx context.Context, q catalogReader, sh tableShape) ([]string, error) {
	rb, err := sqliteRebuild(ctx, q, sh)
	if err != nil {
		return nil, err
	}
	return rb.statements(), nil
}

// catalogReader is a handle or transaction the catalog is read through.
type catalogReader interface {
	queryer
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rebuild is the plan of one SQLite rebuild: the statements, and what the
// old table held, to verify the new one against.
type rebuild struct {
	create   string   // CREATE TABLE of the new table, from the host's text
	copySQL  string   // INSERT … SELECT of every row
	recreate []string // the table's indexes and triggers, from sqlite_master
	columns  []sqliteColumn
	fks      []string
	rows     int64
	names    []string // index and trigger names that must exist after
	upgraded []string // the layer's columns given their final declaration
}

// ownedUpgrade maps a declaration of one of the layer's own columns, as
// older builds wrote it, to its final one. Older builds declared the key
// "id TEXT PRIMARY KEY", under which SQLite accepts NULL (a quirk of
// non-INTEGER primary keys); the final shape says NOT NULL. A NULL id in
// the old table makes the copy fail and the rebuild roll back.
var ownedUpgrade = map[string]string{
	"id text primary key": "id TEXT NOT NULL PRIMARY KEY",
}

// tokenKey is a column item's tokens in lower case, space-separated.
func tokenKey(toks []sqlToken) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = strings.ToLower(t.text)
	}
	return strings.Join(parts, " ")
}

// statements is the rebuild in order. point names the failpoint after
// each (tests inject failures there).
func (r rebuild) statements() []string {
	out := []string{r.create, r.copySQL,
		`DROP TABLE task_session_subagents`, `ALTER TABLE task_session_subagents_new RENAME TO task_session_subagents`}
	out = append(out, r.recreate...)
	return append(out, indexDDLFor(sqliteEngine{})...)
}

func (r rebuild) point(i int) string {
	switch i {
	case 0:
		return "execution_identity.create"
	case 1:
		return "execution_identity.copy"
	case 3:
		return "execution_identity.swap"
	case len(r.statements()) - 1:
		return "execution_identity.indexes"
	}
	return ""
}

// sqliteColumn is one column as pragma_table_xinfo reports it.
type sqliteColumn struct {
	name, typ, dflt string
	notNull, pk     int
	hidden          int // 2, 3: generated (not copied: SQLite computes it)
	hasDefault      bool
}

func sqliteColumns(ctx context.Context, q queryer, table string) ([]sqliteColumn, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sqliteColumn
	for rows.Next() {
		var c sqliteColumn
		var d sql.NullString
		if err := rows.Scan(&c.name, &c.typ, &c.notNull, &d, &c.pk, &c.hidden); err != nil {
			return nil, err
		}
		c.dflt, c.hasDefault = d.String, d.Valid
		out = append(out, c)
	}
	return out, rows.Err()
}

func sqliteStrings(ctx context.Context, q queryer, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// sqliteRebuild plans the rebuild of a pre-amendment table from the
// catalog, or refuses, naming the object and what the host can do, when
// the rebuild could not keep everything.
func sqliteRebuild(ctx context.Context, q catalogReader, sh tableShape) (rebuild, error) {
	var r rebuild
	var tableSQL string
	if err := q.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'task_session_subagents'`).Scan(&tableSQL); err != nil {
		return r, err
	}
	refuse := func(format string, args ...any) (rebuild, error) {
		return r, fmt.Errorf("the execution-identity rebuild of task_session_subagents cannot keep "+format+"; no DDL run", args...)
	}
	def, err := splitTableDef(tableSQL)
	if err != nil {
		return refuse("its definition (%v): add agent_execution_id TEXT NOT NULL DEFAULT 'unknown' and UNIQUE (task_session_id, agent_execution_id, tool_call_id) yourself", err)
	}
	// The temporary name must be free: a table of that name is not the
	// layer's to drop (its own rebuilds run in one transaction and leave
	// none behind).
	var taken bool
	if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'task_session_subagents_new')`).Scan(&taken); err != nil {
		return r, err
	}
	if taken {
		return refuse("its data under the temporary name task_session_subagents_new, which an object of the database already has: rename that object")
	}
	// Another table's foreign key whose parent key is the pair unique
	// would lose its parent key.
	refs, err := sqliteStrings(ctx, q, `SELECT DISTINCT m.name FROM sqlite_master m, pragma_foreign_key_list(m.name) f
WHERE m.type = 'table' AND m.name <> 'task_session_subagents' AND f."table" = 'task_session_subagents'
  AND f."to" IN ('task_session_id', 'tool_call_id')
  AND (SELECT COUNT(*) FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id) = 2`)
	if err != nil {
		return r, err
	}
	if len(refs) > 0 {
		return refuse("the foreign key of table %s, whose parent key (task_session_id, tool_call_id) the amendment makes non-unique: "+
			"point that foreign key at task_session_subagents(id) first", strings.Join(refs, ", "))
	}
	var items []string
	lastColumn := -1
	hasExec := false
	for _, it := range def.items {
		switch {
		case it.isUniqueOn(pairKey):
			continue // the pre-amendment key: the amendment replaces it
		case it.column != "" && ownedUpgrade[tokenKey(it.tokens)] != "":
			items = append(items, ownedUpgrade[tokenKey(it.tokens)])
			r.upgraded = append(r.upgraded, it.column)
		case it.column == "agent_execution_id":
			if !it.isPlainTextColumn() {
				return refuse("column agent_execution_id as declared (%s): declare it TEXT NOT NULL DEFAULT 'unknown' yourself", it.text)
			}
			hasExec = true
			items = append(items, `agent_execution_id TEXT NOT NULL DEFAULT 'unknown'`)
		default:
			items = append(items, it.text)
		}
		if it.column != "" {
			lastColumn = len(items) - 1
		}
	}
	if !hasExec {
		items = slices.Insert(items, lastColumn+1, `agent_execution_id TEXT NOT NULL DEFAULT 'unknown'`)
	}
	if !sh.hasUnique(tripleKey) {
		items = append(items, `UNIQUE (task_session_id, agent_execution_id, tool_call_id)`)
	}
	r.create = "CREATE TABLE task_session_subagents_new (\n\t" + strings.Join(items, ",\n\t") + "\n)"
	if def.tail != "" {
		r.create += " " + def.tail
	}

	if r.columns, err = sqliteColumns(ctx, q, "task_session_subagents"); err != nil {
		return r, err
	}
	var names, exprs []string
	for _, c := range r.columns {
		if c.hidden != 0 {
			continue // generated: SQLite computes it in the new table
		}
		names = append(names, quoteIdent(c.name))
		if c.name == "agent_execution_id" {
			exprs = append(exprs, `COALESCE(NULLIF(agent_execution_id, ''), 'unknown')`)
		} else {
			exprs = append(exprs, quoteIdent(c.name))
		}
	}
	r.copySQL = fmt.Sprintf(`INSERT INTO task_session_subagents_new (%s) SELECT %s FROM task_session_subagents`,
		strings.Join(names, ", "), strings.Join(exprs, ", "))

	// Indexes (except the pair unique the amendment drops) and triggers,
	// as their own text; automatic indexes come back with the constraints.
	rows, err := q.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_master
WHERE tbl_name = 'task_session_subagents' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name`)
	if err != nil {
		return r, err
	}
	defer rows.Close()
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			return r, err
		}
		if typ == "index" && slices.ContainsFunc(sh.uniques, func(u uniqueIndex) bool { return u.index == name && equalCols(u.columns, pairKey) }) {
			continue
		}
		if typ == "index" && slices.ContainsFunc(indexDDLFor(sqliteEngine{}), func(d string) bool { return strings.Contains(d, " "+name+" ") }) {
			continue // the layer's own, recreated by indexDDL
		}
		r.recreate = append(r.recreate, text)
		r.names = append(r.names, name)
	}
	if err := rows.Err(); err != nil {
		return r, err
	}
	if r.fks, err = sqliteStrings(ctx, q, sqliteFKQuery); err != nil {
		return r, err
	}
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM task_session_subagents`).Scan(&r.rows); err != nil {
		return r, err
	}
	return r, nil
}

const sqliteFKQuery = `SELECT id || ' ' || seq || ' ' || "table" || ' ' || "from" || ' ' || COALESCE("to", '') || ' ' || on_update || ' ' || on_delete || ' ' || "match"
FROM pragma_foreign_key_list('task_session_subagents') ORDER BY id, seq`

// verify checks the rebuilt table against what the old one held: every
// column with its type, nullability, default and key position (the
// execution column excepted: the amendment sets it), the foreign keys,
// the row count, and every recreated index and trigger.
func (r rebuild) verify(ctx context.Context, q catalogReader) error {
	cols, err := sqliteColumns(ctx, q, "task_session_subagents")
	if err != nil {
		return err
	}
	for _, old := range r.columns {
		if old.name == "agent_execution_id" || slices.Contains(r.upgraded, old.name) {
			continue
		}
		i := slices.IndexFunc(cols, func(c sqliteColumn) bool { return c.name == old.name })
		if i < 0 || cols[i] != old {
			return fmt.Errorf("the rebuild would change column %s of task_session_subagents; rolled back", old.name)
		}
	}
	fks, err := sqliteStrings(ctx, q, sqliteFKQuery)
	if err != nil {
		return err
	}
	if !slices.Equal(fks, r.fks) {
		return errors.New("the rebuild would change the foreign keys of task_session_subagents; rolled back")
	}
	var n int64
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM task_session_subagents`).Scan(&n); err != nil {
		return err
	}
	if n != r.rows {
		return fmt.Errorf("the rebuild copied %d of %d rows; rolled back", n, r.rows)
	}
	for _, name := range r.names {
		var ok bool
		if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?)`, name).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the rebuild would lose %s; rolled back", name)
		}
	}
	return nil
}

// widen has nothing to do on SQLite, whose INTEGER is 64-bit.
func (sqliteEngine) widen(context.Context, *Store) (bool, error) { return false, nil }

// zoneTimes has nothing to do on SQLite: its timestamps are UTC text.
func (sqliteEngine) zoneTimes(context.Context, *Store) (bool, error) { return false, nil }

// prepare has nothing to do on SQLite (json_valid is built in).
func (sqliteEngine) prepare(context.Context, *Store) error { return nil }
