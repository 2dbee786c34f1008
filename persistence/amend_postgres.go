package persistence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// PostgreSQL side of the migration procedures: the catalog probe (scoped
// to current_schema(), so search_path test schemas work), the in-place
// amendment (DDL is transactional), the metric widening and the metadata
// guard function.

func (postgresEngine) probe(ctx context.Context, q queryer) (tableShape, error) {
	sh := tableShape{columns: map[string]columnInfo{}}
	rows, err := q.QueryContext(ctx, `SELECT column_name, is_nullable, data_type
FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = 'task_session_subagents'`)
	if err != nil {
		return sh, err
	}
	for rows.Next() {
		var name, nullable, typ string
		if err := rows.Scan(&name, &nullable, &typ); err != nil {
			rows.Close()
			return sh, err
		}
		sh.columns[name] = columnInfo{notNull: nullable == "NO", dataType: typ}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sh, err
	}
	sh.exists = len(sh.columns) > 0
	if !sh.exists {
		return sh, nil
	}
	rows, err = q.QueryContext(ctx, `SELECT quote_ident(n.nspname) || '.' || quote_ident(ic.relname),
       COALESCE(c.conname, ''),
       (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
          FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
FROM pg_index i
JOIN pg_class t      ON t.oid = i.indrelid
JOIN pg_class ic     ON ic.oid = i.indexrelid
JOIN pg_namespace n  ON n.oid = t.relnamespace
LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = t.oid AND c.contype IN ('u', 'p')
WHERE n.nspname = current_schema() AND t.relname = 'task_session_subagents'
  AND i.indisunique AND i.indpred IS NULL`)
	if err != nil {
		return sh, err
	}
	defer rows.Close()
	for rows.Next() {
		var u uniqueIndex
		var cols *string
		if err := rows.Scan(&u.index, &u.constraint, &cols); err != nil {
			return sh, err
		}
		if cols != nil {
			u.columns = strings.Split(*cols, ",")
		}
		sh.uniques = append(sh.uniques, u)
	}
	return sh, rows.Err()
}

// hostDependency explains an ALTER or DROP that PostgreSQL refused because
// a host object (a view, a rule, another table's foreign key) depends on
// what it changes: the transaction rolled back, nothing changed, and the
// host must make the change itself around that object. Other errors pass
// through.
func hostDependency(err error, change string) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || (pe.Code != "0A000" && pe.Code != "2BP01") || strings.Contains(pe.Message, "cached plan") {
		return err
	}
	detail := pe.Detail
	if detail == "" {
		detail = pe.Message
	}
	return fmt.Errorf("%s is refused because a host object depends on it (%s); nothing changed: "+
		"drop that object, run the migration and recreate it, or make the change yourself: %w", change, detail, err)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// pgAmendStep is one statement of the PostgreSQL amendment, the failpoint
// after it, and what it changes (for hostDependency; "" for none).
type pgAmendStep struct{ sql, point, change string }

// pgAmendSteps is the amendment of a pre-amendment table, in order.
func pgAmendSteps(sh tableShape) []pgAmendStep {
	out := []pgAmendStep{{sql: lockTimeoutSQL}}
	col, has := sh.columns["agent_execution_id"]
	switch {
	case !has:
		// Existing rows take the default: the sentinel.
		out = append(out, pgAmendStep{sql: `ALTER TABLE task_session_subagents ADD COLUMN IF NOT EXISTS agent_execution_id TEXT NOT NULL DEFAULT 'unknown'`})
	case !col.notNull:
		for _, q := range []string{
			`UPDATE task_session_subagents SET agent_execution_id = 'unknown' WHERE agent_execution_id IS NULL OR agent_execution_id = ''`,
			`ALTER TABLE task_session_subagents ALTER COLUMN agent_execution_id SET DEFAULT 'unknown'`,
			`ALTER TABLE task_session_subagents ALTER COLUMN agent_execution_id SET NOT NULL`,
		} {
			out = append(out, pgAmendStep{sql: q})
		}
	}
	out[len(out)-1].point = "execution_identity.column"
	dropped := false
	for _, u := range sh.uniques {
		if !equalCols(u.columns, pairKey) {
			continue
		}
		q := `DROP INDEX ` + u.index
		if u.constraint != "" {
			q = `ALTER TABLE task_session_subagents DROP CONSTRAINT ` + quoteIdent(u.constraint)
		}
		out = append(out, pgAmendStep{sql: q, change: "dropping the unique (task_session_id, tool_call_id) of task_session_subagents"})
		dropped = true
	}
	if dropped {
		out[len(out)-1].point = "execution_identity.drop_pair"
	}
	if !sh.hasUnique(tripleKey) {
		out = append(out, pgAmendStep{sql: `ALTER TABLE task_session_subagents ADD UNIQUE (task_session_id, agent_execution_id, tool_call_id)`,
			point: "execution_identity.unique"})
	}
	if q := widenSQL(sh); q != "" {
		out = append(out, pgAmendStep{sql: q, change: "widening the metric columns of task_session_subagents to BIGINT"})
	}
	return out
}

const lockTimeoutSQL = `SET LOCAL lock_timeout = '10s'`

// amendStatements is the amendment as text, for the plan.
func (postgresEngine) amendStatements(_ context.Context, _ catalogReader, sh tableShape) ([]string, error) {
	var out []string
	for _, st := range pgAmendSteps(sh) {
		out = append(out, st.sql)
	}
	return out, nil
}

// amend makes a pre-amendment table execution-aware in one transaction;
// a rollback restores the old shape.
func (postgresEngine) amend(ctx context.Context, s *Store, sh tableShape) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, st := range pgAmendSteps(sh) {
		if _, err := s.exec(ctx, tx, st.sql); err != nil {
			if st.change != "" {
				return hostDependency(err, st.change)
			}
			return err
		}
		if st.point != "" {
			if err := s.failpoint(st.point); err != nil {
				return err
			}
		}
	}
	if _, err := s.putKey(ctx, tx, KeyExecutionSince, keyText(s.now())); err != nil {
		return err
	}
	if err := s.failpoint("execution_identity.key"); err != nil {
		return err
	}
	return tx.Commit()
}

func equalCols(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// widenSQL is the ALTER that makes int4 metrics bigint, "" when none is
// narrower (so a converged database runs no DDL).
func widenSQL(sh tableShape) string {
	var parts []string
	for _, c := range []string{"total_tokens", "tool_use_count", "duration_ms"} {
		if info, ok := sh.columns[c]; ok && info.dataType != "bigint" {
			parts = append(parts, fmt.Sprintf("ALTER COLUMN %s TYPE BIGINT", c))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return `ALTER TABLE task_session_subagents ` + strings.Join(parts, ", ")
}

func (e postgresEngine) widen(ctx context.Context, s *Store) (bool, error) {
	sh, err := e.probe(ctx, s.writer)
	if err != nil || !sh.exists || sh.foreign() != nil {
		return false, err // a foreign table is reported by the amendment step
	}
	q := widenSQL(sh)
	if q == "" {
		return false, nil
	}
	if _, err = s.exec(ctx, s.writer, q); err != nil {
		return false, hostDependency(err, "widening the metric columns of task_session_subagents to BIGINT")
	}
	return true, nil
}

// zoneTimes turns observed_at, settled_at and updated_at from timestamp
// (the shape older builds and the existing implementation created) into
// timestamptz, reading each stored wall clock as UTC whatever the session
// TimeZone. One ALTER in a transaction with a lock timeout; no DDL when
// every column is already timestamptz.
func (e postgresEngine) zoneTimes(ctx context.Context, s *Store) (bool, error) {
	sh, err := e.probe(ctx, s.writer)
	if err != nil || !sh.exists || sh.foreign() != nil {
		return false, err // a foreign table is reported by the amendment step
	}
	q := zoneSQL(sh)
	if q == "" {
		return false, nil
	}
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := s.exec(ctx, tx, lockTimeoutSQL); err != nil {
		return false, err
	}
	if _, err := s.exec(ctx, tx, q); err != nil {
		return false, hostDependency(err, "turning the timestamps of task_session_subagents into timestamptz")
	}
	if err := s.failpoint("timestamptz.alter"); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// zoneSQL is the ALTER that turns the table's timestamp columns into
// timestamptz, "" when none is left.
func zoneSQL(sh tableShape) string {
	var parts []string
	for _, c := range []string{"observed_at", "settled_at", "updated_at"} {
		if info, ok := sh.columns[c]; ok && info.dataType == "timestamp without time zone" {
			parts = append(parts, fmt.Sprintf("ALTER COLUMN %[1]s TYPE TIMESTAMPTZ USING %[1]s AT TIME ZONE 'UTC'", c))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return `ALTER TABLE task_session_subagents ` + strings.Join(parts, ", ")
}

// prepare creates the two functions the package needs, each once (no DDL
// when present): the metadata guard pgJSONFunc and pgPairFunc, which a
// messages table created in standalone mode uses for its generated column.
// PostgreSQL 16+ checks validity with pg_input_is_valid; older servers
// catch the cast error in an exception block. Both functions are declared
// IMMUTABLE (a generated column requires it; jsonb input is immutable).
func (e postgresEngine) prepare(ctx context.Context, s *Store) error {
	ddl, err := e.missingFunctions(ctx, s.writer)
	if err != nil {
		return err
	}
	for _, q := range ddl {
		if _, err := s.exec(ctx, s.writer, q); err != nil && e.classify(err) != errAlreadyExists {
			return err
		}
	}
	return nil
}

// missingFunctions is the CREATE FUNCTION of each function absent from the
// current schema, in dependency order.
func (e postgresEngine) missingFunctions(ctx context.Context, q catalogReader) ([]string, error) {
	var schema string
	if err := q.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range e.functionsDDL(quoteIdent(schema)) {
		exists, err := queryBool(ctx, q, `SELECT EXISTS (
	SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
	WHERE n.nspname = current_schema() AND p.proname = $1)`, f.name)
		if err != nil {
			return nil, err
		}
		if !exists {
			out = append(out, f.ddl)
		}
	}
	return out, nil
}

type pgFunction struct{ name, ddl string }

// functionsDDL is the CREATE FUNCTION of each function, in dependency
// order. pgPairFunc calls the guard schema-qualified, so a host session
// with another search_path still computes the generated column.
func (e postgresEngine) functionsDDL(schema string) []pgFunction {
	guard := `CREATE FUNCTION ` + e.jsonFunc + `(doc text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE j jsonb;
BEGIN
	IF doc IS NULL OR doc = '' THEN RETURN '{}'::jsonb; END IF;
	BEGIN
		j := doc::jsonb;
	EXCEPTION WHEN others THEN
		RETURN '{}'::jsonb;
	END;
	IF jsonb_typeof(j) = 'object' THEN RETURN j; END IF;
	RETURN '{}'::jsonb;
END $$`
	if e.hasInputIsValid {
		guard = `CREATE FUNCTION ` + e.jsonFunc + `(doc text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT CASE WHEN pg_input_is_valid(doc, 'jsonb') AND jsonb_typeof(doc::jsonb) = 'object'
	            THEN doc::jsonb ELSE '{}'::jsonb END
$$`
	}
	pair := `CREATE FUNCTION ` + pgPairFunc + `(doc text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE md jsonb;
BEGIN
	-- Only text starting with '{' can be an object; the rest skips the cast.
	IF doc IS NULL OR left(ltrim(doc, E' \t\n\r'), 1) <> '{' THEN RETURN NULL; END IF;
	md := ` + schema + `.` + e.jsonFunc + `(doc);
	RETURN ` + messagePairExpr(e, "md") + `;
END $$`
	return []pgFunction{{e.jsonFunc, guard}, {pgPairFunc, pair}}
}
