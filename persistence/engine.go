package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
)

// This file holds every difference between the two engines that is a matter
// of SQL text, binding or error codes. The two procedures that differ as
// algorithms (the shape probe and the execution-identity amendment) live in
// amend_sqlite.go and amend_postgres.go. Everything else in the package is
// written once, against the engine interface below.

// Engine names a database engine the store runs on.
type Engine string

const (
	// SQLite is the embedded default (github.com/mattn/go-sqlite3).
	SQLite Engine = "sqlite"
	// Postgres is PostgreSQL through github.com/jackc/pgx/v5/stdlib.
	Postgres Engine = "postgres"
)

// engine is what the rest of the package may ask of an engine.
type engine interface {
	kind() Engine
	// rebind turns the package's `?` placeholders into the engine's.
	rebind(query string) string
	// bindTime is the value written into a TIMESTAMP column.
	bindTime(t time.Time) any
	// atOrAfter is "timestamp column col is at or after the instant bound
	// by atOrAfterArgs", exact to the microsecond whatever text form (SQLite)
	// or session time zone (PostgreSQL).
	atOrAfter(col string) string
	atOrAfterArgs(t time.Time) []any
	// canonArg is the instant bound for a comparison with a canon()
	// expression (canon(col) >= ?).
	canonArg(t time.Time) any
	// canon is an expression that compares and orders a timestamp column
	// correctly whatever text form it holds.
	canon(expr string) string
	// binary orders a text expression by bytes, like SQLite's BINARY.
	binary(expr string) string
	// later is the later of two timestamp expressions.
	later(a, b string) string
	// metricType is the SQL type of the three metric columns.
	metricType() string
	// timeType is the SQL type of every timestamp column the package
	// creates: TIMESTAMP on SQLite (text, which mattn reads as a time when
	// it sees that declared type), TIMESTAMPTZ on PostgreSQL.
	timeType() string
	// pairColumnDDL is the column definition of messagePairColumn, the
	// (session, tool_call_id) pair's tool-call half derived from a
	// message's metadata at write time, in a messages table the package
	// creates (standalone mode).
	pairColumnDDL() string
	// hasColumn reports whether table (in the store's schema) has column.
	hasColumn(ctx context.Context, q queryer, table, column string) (bool, error)
	// metadataObject turns a metadata text column into a JSON object, or
	// into the engine's "empty object" when it is NULL, empty, invalid or
	// not an object.
	metadataObject(col string) string
	// tune is run at the start of the backfill and health transactions.
	tune() []string
	// totalGuard is the engine variant whose metadataObject can never
	// raise, for a statement whose fast guard raised (ok=false when the
	// fast guard is already total, as on SQLite).
	totalGuard() (engine, bool)
	// jsonText is the value at path as SQL text/number (for equality with
	// a string literal).
	jsonText(md string, path ...string) string
	// jsonRaw extracts the value at path once, in the engine's raw form;
	// asStr, asInt and asTrue then type it without touching the document
	// again (except, on SQLite, to tell JSON true from 1 or a string from
	// an object, which only ambiguous values need).
	jsonRaw(md string, path ...string) string
	// asStr is a JSON string, NULL for any other type or "".
	asStr(raw, md string, path ...string) string
	// asInt is an integral JSON number >= min that fits int64, else NULL.
	asInt(raw string, min int, md string, path ...string) string
	// asTrue is 1 for JSON true, 1, "true" or "1", else 0.
	asTrue(raw string) string
	// stored turns a canon() expression back into the column's stored form.
	stored(canonExpr string) string
	// snapshot is the transaction that gives the health queries one
	// snapshot, so the two directions of the comparison agree.
	snapshot() *sql.TxOptions
	// probe, amend, widen and prepare are the per-engine migration
	// procedures (amend_sqlite.go, amend_postgres.go).
	probe(ctx context.Context, q queryer) (tableShape, error)
	amend(ctx context.Context, s *Store, sh tableShape) error
	// amendStatements is what amend would run, as text (for the plan).
	amendStatements(ctx context.Context, q catalogReader, sh tableShape) ([]string, error)
	// cacheTable is the CREATE TABLE modifier of a table the store can
	// rebuild at will ("UNLOGGED " on PostgreSQL: no WAL; emptied by a crash).
	cacheTable() string
	// emptyTable is the statement that empties one of the store's own
	// tables inside a transaction (TRUNCATE on PostgreSQL: no dead rows).
	emptyTable(name string) string
	// lockRow is the clause that locks the rows a SELECT reads until the
	// transaction ends ("" on SQLite, whose writer transaction already
	// excludes every other writer).
	lockRow() string
	// hasRelation reports whether a table, view or index of that name
	// exists (in the store's schema).
	hasRelation(ctx context.Context, q queryer, name string) (bool, error)
	widen(ctx context.Context, s *Store) (bool, error)
	// zoneTimes turns the table's timestamp-without-time-zone columns into
	// timestamptz, reading the stored wall clock as UTC (PostgreSQL).
	zoneTimes(ctx context.Context, s *Store) (bool, error)
	prepare(ctx context.Context, s *Store) error
	// fence keeps a subquery from being flattened into its parent, so an
	// expensive per-row expression (the metadata guard) runs once per row.
	fence() string
	// writableCTEs is true when the engine has data-modifying CTEs. The
	// backfill then takes its high-water mark and runs its insert in one
	// statement (backfillMarkInsertSQL), parsing each message once
	// (otherwise the mark is its own statement before the insert), and a
	// frame's texts are written in the row's upsert statement
	// (upsertTextsSQL) instead of a second statement in a transaction.
	writableCTEs() bool
	// classify maps a driver error to the package's error classes.
	classify(err error) errClass
	// execBatch runs stmts atomically, in as few round trips as the
	// engine allows (writer.go).
	execBatch(ctx context.Context, db *sql.DB, stmts []batchStatement) error
}

// errClass is the one classification every step uses: driver error codes, never message text outside classify.
type errClass int

const (
	errOther errClass = iota
	errAlreadyExists
	errNoConflictTarget
	errUniqueViolation
	errBusy
	// errStalePlan: PostgreSQL refused a cached plan after a concurrent
	// schema change (pgx drops the cached statement; a retry succeeds).
	errStalePlan
	// errRejected: the database refused the statement itself (a data
	// exception, a constraint, an undefined or foreign object): sending it
	// again cannot succeed, unlike a lost connection, a timeout or a full
	// disk, which a later attempt may get past.
	errRejected
)

// --- SQLite -----------------------------------------------------------------

type sqliteEngine struct{}

func (sqliteEngine) kind() Engine              { return SQLite }
func (sqliteEngine) rebind(q string) string    { return q }
func (sqliteEngine) binary(expr string) string { return expr }
func (sqliteEngine) metricType() string        { return "INTEGER" }
func (sqliteEngine) timeType() string          { return "TIMESTAMP" }
func (sqliteEngine) fence() string             { return " LIMIT -1 OFFSET 0" }
func (sqliteEngine) writableCTEs() bool        { return false }
func (sqliteEngine) stored(c string) string    { return "(" + c + " || '+00:00')" }
func (sqliteEngine) snapshot() *sql.TxOptions  { return nil } // mattn ignores TxOptions; WAL fixes the snapshot at the first read
func (sqliteEngine) bindTime(t time.Time) any  { return sqliteText(t) }

// atOrAfter compares through C(); the plain text comparison before it is a
// superset filter (every text form starts with its local date, at most one
// day before the UTC date) that lets an index on col skip older rows.
func (e sqliteEngine) atOrAfter(col string) string {
	return fmt.Sprintf("(%s >= ? AND %s >= ?)", col, e.canon(col))
}

func (e sqliteEngine) atOrAfterArgs(t time.Time) []any {
	return []any{normTime(t).AddDate(0, 0, -1).Format("2006-01-02"), e.canonArg(t)}
}

func (sqliteEngine) canonArg(t time.Time) any { return sqliteCanonText(t) }
func (e sqliteEngine) later(a, b string) string {
	return fmt.Sprintf("CASE WHEN %s > %s THEN %s ELSE %s END", e.canon(a), e.canon(b), a, b)
}

// canon is the canonicaliser C(x): UTC "YYYY-MM-DD HH:MM:SS.ffffff" for any
// text strftime understands (T or space, Z, ±HH:MM or no offset, any
// fraction length), NULL for garbage.
func (sqliteEngine) canon(x string) string {
	frac := fmt.Sprintf("CASE WHEN substr(%[1]s, 20, 1) = '.' THEN substr(substr(%[1]s, 21), 1, "+
		"length(substr(%[1]s, 21)) - length(ltrim(substr(%[1]s, 21), '0123456789'))) ELSE '' END", x)
	slow := fmt.Sprintf("strftime('%%Y-%%m-%%d %%H:%%M:%%S', %s) || '.' || substr((%s) || '000000', 1, 6)", x, frac)
	// Fast path: the fixed-width UTC text this package (and the host)
	// writes is already canonical up to its "+00:00" suffix.
	return fmt.Sprintf("(CASE WHEN %[1]s GLOB '%[2]s+00:00' OR %[1]s GLOB '%[2]s' THEN substr(%[1]s, 1, 26) ELSE %[3]s END)",
		x, canonGlob, slow)
}

// canonGlob matches "YYYY-MM-DD HH:MM:SS.ffffff".
const canonGlob = "[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-5][0-9].[0-9][0-9][0-9][0-9][0-9][0-9]"

func (sqliteEngine) totalGuard() (engine, bool) { return nil, false }
func (sqliteEngine) tune() []string             { return nil }

// pairColumnDDL is a virtual generated column: no storage, computed where
// it is indexed (idx_task_session_messages_subagent), and read from that
// index by the health query. The expression is the health query's own
// message filter (messagePairExpr), total like the metadata guard, so a
// malformed document yields NULL and never fails the host's insert.
func (e sqliteEngine) pairColumnDDL() string {
	return messagePairColumn + " TEXT GENERATED ALWAYS AS (" + messagePairExpr(e, e.metadataObject("metadata")) + ") VIRTUAL"
}

func (sqliteEngine) lockRow() string    { return "" }
func (sqliteEngine) cacheTable() string { return "" }

// emptyTable: SQLite's DELETE without WHERE drops the pages at once.
func (sqliteEngine) emptyTable(name string) string { return "DELETE FROM " + name }

func (sqliteEngine) hasRelation(ctx context.Context, q queryer, name string) (bool, error) {
	return queryBool(ctx, q, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?)`, name)
}

func (sqliteEngine) hasColumn(ctx context.Context, q queryer, table, column string) (bool, error) {
	// table_xinfo, unlike table_info, lists generated columns.
	return queryBool(ctx, q, `SELECT EXISTS (SELECT 1 FROM pragma_table_xinfo(?) WHERE name = ?)`, table, column)
}

// metadataObject is total on SQLite: json_valid never raises.
func (sqliteEngine) metadataObject(col string) string {
	// A \u0000 escape reads as {} too, as on PostgreSQL, whose jsonb
	// rejects it; this keeps the two engines' backfills identical.
	return fmt.Sprintf("CASE WHEN json_valid(%[1]s) AND json_type(%[1]s) = 'object' AND instr(%[1]s, '\\u0000') = 0 "+
		"THEN %[1]s ELSE '{}' END", col)
}

func sqlitePath(path []string) string { return "'$." + strings.Join(path, ".") + "'" }

func (sqliteEngine) jsonText(md string, path ...string) string {
	return fmt.Sprintf("json_extract(%s, %s)", md, sqlitePath(path))
}

// jsonRaw is json_extract: TEXT for strings (and for objects and arrays,
// as JSON text), INTEGER or REAL for numbers, 1/0 for true/false, NULL.
func (sqliteEngine) jsonRaw(md string, path ...string) string {
	return fmt.Sprintf("json_extract(%s, %s)", md, sqlitePath(path))
}

func (sqliteEngine) asStr(v, md string, path ...string) string {
	return fmt.Sprintf("CASE WHEN typeof(%[1]s) = 'text' AND %[1]s <> '' AND (substr(%[1]s, 1, 1) NOT IN ('{', '[') "+
		"OR json_type(%[2]s, %[3]s) = 'text') THEN %[1]s END", v, md, sqlitePath(path))
}

func (sqliteEngine) asInt(v string, min int, md string, path ...string) string {
	return fmt.Sprintf("CASE WHEN typeof(%[1]s) = 'integer' AND %[1]s >= %[2]d AND (%[1]s > 1 OR json_type(%[3]s, %[4]s) = 'integer') THEN %[1]s "+
		"WHEN typeof(%[1]s) = 'real' AND %[1]s >= %[2]d AND %[1]s < 9223372036854775807.0 AND %[1]s = CAST(%[1]s AS INTEGER) "+
		"THEN CAST(%[1]s AS INTEGER) END", v, min, md, sqlitePath(path))
}

func (sqliteEngine) asTrue(v string) string {
	return fmt.Sprintf("CASE WHEN typeof(%[1]s) = 'integer' AND %[1]s = 1 THEN 1 "+
		"WHEN typeof(%[1]s) = 'text' AND %[1]s IN ('true', '1') THEN 1 ELSE 0 END", v)
}

func (sqliteEngine) classify(err error) errClass {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch {
		case se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked:
			return errBusy
		case se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey:
			return errUniqueViolation
		}
	}
	if err == nil {
		return errOther
	}
	// SQLite reports these only as text; the matching stays in this function.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "already exists"), strings.Contains(msg, "duplicate column name"):
		return errAlreadyExists
	case strings.Contains(msg, "ON CONFLICT clause does not match any PRIMARY KEY or UNIQUE constraint"):
		return errNoConflictTarget
	}
	if errors.As(err, &se) && (se.Code == sqlite3.ErrConstraint || se.Code == sqlite3.ErrMismatch ||
		se.Code == sqlite3.ErrTooBig || se.Code == sqlite3.ErrRange || se.Code == sqlite3.ErrError) {
		return errRejected
	}
	return errOther
}

// sqliteLayout is how the package writes every SQLite timestamp: fixed
// width, UTC, microseconds.
const sqliteLayout = "2006-01-02 15:04:05.000000+00:00"

// sqliteCanonLayout is the output of the canonicaliser C().
const sqliteCanonLayout = "2006-01-02 15:04:05.000000"

func sqliteText(t time.Time) string { return normTime(t).Format(sqliteLayout) }

func sqliteCanonText(t time.Time) string { return normTime(t).Format(sqliteCanonLayout) }

// --- PostgreSQL -------------------------------------------------------------

type postgresEngine struct {
	// jsonFunc is the name of the metadata-validity function created by the
	// migration (pg_input_is_valid on 16+, an exception block before).
	jsonFunc string
	// hasInputIsValid is true on PostgreSQL 16+.
	hasInputIsValid bool
	// total selects the guard function over the fast cast.
	total bool
}

// pgJSONFunc guards metadata on PostgreSQL: valid JSON objects pass, all
// else (NULL, ”, 'null', '{', '[1]') reads as '{}'.
const pgJSONFunc = "subagent_context_json_object"

// pgPairFunc computes messagePairColumn from metadata text on PostgreSQL.
const pgPairFunc = "subagent_context_message_pair"

func (postgresEngine) kind() Engine           { return Postgres }
func (postgresEngine) metricType() string     { return "BIGINT" }
func (postgresEngine) timeType() string       { return "TIMESTAMPTZ" }
func (postgresEngine) fence() string          { return " OFFSET 0" }
func (postgresEngine) writableCTEs() bool     { return true }
func (postgresEngine) stored(c string) string { return c }
func (postgresEngine) snapshot() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}
func (postgresEngine) bindTime(t time.Time) any        { return normTime(t) }
func (postgresEngine) atOrAfter(col string) string     { return col + " >= ?" }
func (postgresEngine) atOrAfterArgs(t time.Time) []any { return []any{normTime(t)} }
func (postgresEngine) canonArg(t time.Time) any        { return normTime(t) }
func (postgresEngine) canon(expr string) string        { return expr }
func (postgresEngine) binary(expr string) string       { return expr + ` COLLATE "C"` }
func (postgresEngine) later(a, b string) string        { return fmt.Sprintf("GREATEST(%s, %s)", a, b) }

func (postgresEngine) rebind(q string) string {
	var b strings.Builder
	n := 0
	inQuote := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == '\'' {
			inQuote = !inQuote
		}
		if c == '?' && !inQuote {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// metadataObject has two forms. The fast one casts only text that starts
// with '{' (after JSON whitespace), so NULL, ”, 'null', '[1]' and 'abc'
// read as {} without a cast; text like '{' still raises, and the statement
// is then rerun with the total form, the guard function, under a
// savepoint (Store.guarded). Both forms give the same result.
func (e postgresEngine) metadataObject(col string) string {
	if e.total {
		return fmt.Sprintf("%s(%s::text)", e.jsonFunc, col)
	}
	return fmt.Sprintf("CASE WHEN left(ltrim(%[1]s::text, E' \\t\\n\\r'), 1) = '{' THEN %[1]s::jsonb ELSE '{}'::jsonb END", col)
}

// tune gives the window sort and the set operations of one transaction
// enough memory to stay off disk at a million rows. TimeZone UTC makes
// every conversion between timestamp and timestamptz inside the
// transaction read a wall clock as UTC, whatever the session's TimeZone:
// the backfill copies a host's timestamp-without-time-zone created_at into
// timestamptz columns (binds need nothing: a bound time.Time takes the
// type of the column it is compared with). synchronous_commit off
// (this transaction only; it changes nothing for the read-only health
// transaction) lets the backfill's commit return before its WAL is flushed:
// a crash in that window loses the whole transaction, rows and both keys
// together, and the next open runs the backfill again, so the backfill
// stays all-or-nothing and only the wait for the disk goes.
func (postgresEngine) tune() []string {
	return []string{`SET LOCAL work_mem = '256MB'`, `SET LOCAL TimeZone = 'UTC'`, `SET LOCAL synchronous_commit = off`}
}

// pairColumnDDL is a stored generated column (PostgreSQL has no virtual
// ones, and an index-only scan cannot read an indexed expression): the
// function pgPairFunc, created by the migration, applies the total
// metadata guard and messagePairExpr.
func (postgresEngine) pairColumnDDL() string {
	return messagePairColumn + " TEXT GENERATED ALWAYS AS (" + pgPairFunc + "(metadata)) STORED"
}

func (postgresEngine) lockRow() string    { return " FOR UPDATE" }
func (postgresEngine) cacheTable() string { return "UNLOGGED " }

func (postgresEngine) emptyTable(name string) string { return "TRUNCATE " + name }

func (postgresEngine) hasRelation(ctx context.Context, q queryer, name string) (bool, error) {
	return queryBool(ctx, q, `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = current_schema() AND c.relname = $1)`, name)
}

func (postgresEngine) hasColumn(ctx context.Context, q queryer, table, column string) (bool, error) {
	return queryBool(ctx, q, `SELECT EXISTS (SELECT 1 FROM pg_attribute a
	JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = current_schema() AND c.relname = $1 AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped)`, table, column)
}

func (e postgresEngine) totalGuard() (engine, bool) {
	e.total = true
	return e, true
}

func pgPath(path []string) string { return "'{" + strings.Join(path, ",") + "}'" }

func (postgresEngine) jsonText(md string, path ...string) string {
	return fmt.Sprintf("(%s #>> %s)", md, pgPath(path))
}

// jsonRaw is the jsonb value at path.
func (postgresEngine) jsonRaw(md string, path ...string) string {
	return fmt.Sprintf("(%s #> %s)", md, pgPath(path))
}

func (postgresEngine) asStr(v, _ string, _ ...string) string {
	return fmt.Sprintf("CASE WHEN jsonb_typeof(%[1]s) = 'string' THEN NULLIF(%[1]s #>> '{}', '') END", v)
}

func (postgresEngine) asInt(v string, min int, _ string, _ ...string) string {
	return fmt.Sprintf("CASE WHEN jsonb_typeof(%[1]s) = 'number' AND %[1]s::numeric >= %[2]d "+
		"AND %[1]s::numeric <= 9223372036854775807 AND %[1]s::numeric = trunc(%[1]s::numeric) "+
		"THEN %[1]s::numeric::bigint END", v, min)
}

func (postgresEngine) asTrue(v string) string {
	return fmt.Sprintf("CASE WHEN jsonb_typeof(%[1]s) = 'boolean' AND %[1]s = 'true'::jsonb THEN 1 "+
		"WHEN jsonb_typeof(%[1]s) = 'number' AND %[1]s::text = '1' THEN 1 "+
		"WHEN jsonb_typeof(%[1]s) = 'string' AND %[1]s #>> '{}' IN ('true', '1') THEN 1 ELSE 0 END", v)
}

func (postgresEngine) classify(err error) errClass {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return errOther
	}
	switch pe.Code {
	case "42P07", "42701", "42710", "42P06", "42723":
		return errAlreadyExists
	case "42P10":
		return errNoConflictTarget
	case "23505":
		return errUniqueViolation
	case "40001", "40P01", "55P03":
		return errBusy
	case "0A000":
		if strings.Contains(pe.Message, "cached plan") {
			return errStalePlan
		}
	}
	switch pe.Code[:min(2, len(pe.Code))] {
	case "22", "23", "42": // data exception, integrity constraint, syntax or access rule
		return errRejected
	}
	return errOther
}

// --- shared -----------------------------------------------------------------

// messagePairColumn is the derived column of a messages table the package
// creates: the message's tool_call_id when it counts for health (kind
// subagent_task and a non-empty JSON string tool_call_id), else NULL.
const messagePairColumn = "subagent_context_tool_call_id"

// messagePairExpr is that value for a metadata object md (already through
// the guard), as SQLite's generated column and PostgreSQL's pgPairFunc
// compute it. The health query's JSON path composes the same two parts in
// layers, so each message's metadata is read once per field.
func messagePairExpr(e engine, md string) string {
	return "CASE WHEN " + subagentKind(e, md) + " THEN " + pairToolCall(e, e.jsonRaw(md, "tool_call_id"), md) + " END"
}

// subagentKind is the condition that metadata object md is a subagent card.
func subagentKind(e engine, md string) string {
	return e.jsonText(md, "normalized", "kind") + " = 'subagent_task'"
}

// pairToolCall is the tool-call half of a message's pair: its raw
// $.tool_call_id when that is a non-empty JSON string, else NULL.
func pairToolCall(e engine, raw, md string) string { return e.asStr(raw, md, "tool_call_id") }

func queryBool(ctx context.Context, q queryer, query string, args ...any) (bool, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var b bool
	if rows.Next() {
		if err := rows.Scan(&b); err != nil {
			return false, err
		}
	}
	return b, rows.Err()
}

// normTime is the one time normalisation before every bind: UTC, truncated
// to microseconds (the resolution both engines keep).
func normTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// keyLayout is the lexical form of every activation key the package writes:
// RFC 3339, UTC, always six fraction digits. time.RFC3339Nano parses it and
// the second-precision keys older builds wrote.
const keyLayout = "2006-01-02T15:04:05.000000Z07:00"

func keyText(t time.Time) string { return normTime(t).Format(keyLayout) }

// parseDBTime reads a timestamp the way either engine returns it: a
// time.Time from a declared TIMESTAMP column, or text from an expression
// (SQLite aggregates and C()).
func parseDBTime(v any) (time.Time, bool) {
	switch x := v.(type) {
	case time.Time:
		if x.IsZero() {
			return time.Time{}, false
		}
		return x.UTC(), true
	case string:
		return parseTimeText(x)
	case []byte:
		return parseTimeText(string(x))
	}
	return time.Time{}, false
}

var timeTextLayouts = []string{
	sqliteCanonLayout,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05",
}

func parseTimeText(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range timeTextLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// nullTime scans a nullable timestamp from either engine.
type nullTime struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (n *nullTime) Scan(v any) error {
	if v == nil {
		*n = nullTime{}
		return nil
	}
	t, ok := parseDBTime(v)
	if !ok {
		return fmt.Errorf("persistence: unreadable timestamp %v", v)
	}
	*n = nullTime{Time: t, Valid: true}
	return nil
}

func (n nullTime) ptr() *time.Time {
	if !n.Valid {
		return nil
	}
	t := n.Time
	return &t
}
