package persistence

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The suite runs every scenario on both engines: SQLite in t.TempDir(),
// PostgreSQL in a fresh schema (search_path) of the server named by
// ACP_TEST_POSTGRES_DSN. Without that DSN, or with the server unreachable,
// the PostgreSQL half skips, except under CI=true where it fails.

const pgEnv = "ACP_TEST_POSTGRES_DSN"

var (
	pgOnce  sync.Once
	pgAdmin *sql.DB
	pgErr   error
)

func postgresBase(t testing.TB) string {
	t.Helper()
	base := os.Getenv(pgEnv)
	if base == "" {
		pgUnavailable(t, pgEnv+" is not set")
	}
	pgOnce.Do(func() {
		pgAdmin, pgErr = sql.Open("pgx", base)
		if pgErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pgErr = pgAdmin.PingContext(ctx)
		}
	})
	if pgErr != nil {
		pgUnavailable(t, "PostgreSQL unreachable: "+pgErr.Error())
	}
	return base
}

func pgUnavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is mandatory under CI=true: %s", why)
	}
	t.Skip(why)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// postgresDSN creates an isolated schema and returns a DSN whose every
// pooled connection has it as search_path.
func postgresDSN(t testing.TB) string {
	t.Helper()
	base := postgresBase(t)
	schema := "acp_test_" + randHex(6)
	if _, err := pgAdmin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pgAdmin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

// logBuffer collects log records for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// env is one engine's fixture for one test.
type env struct {
	t    testing.TB
	kind Engine
	dsn  string
	raw  *sql.DB // a raw handle for seeding and inspection, outside the store
	logs *logBuffer
	ctx  context.Context
	// hostShape: hostTables creates the tables as the host (Kandev) does —
	// timestamp without time zone, no derived pair column — instead of the
	// standalone shape this package creates.
	hostShape bool
}

// engines runs f once per engine as parallel subtests.
func engines(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	t.Parallel()
	for _, kind := range []Engine{SQLite, Postgres} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			f(t, newEnv(t, kind))
		})
	}
}

// layouts runs f as parallel subtests on both engines, each once with the
// messages table standalone mode creates (health reads the derived pair
// column) and once with a host's (health parses metadata).
func layouts(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	t.Parallel()
	for _, host := range []bool{false, true} {
		for _, kind := range []Engine{SQLite, Postgres} {
			name := string(kind) + "/standalone"
			if host {
				name = string(kind) + "/host"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, kind)
				e.hostShape = host
				f(t, e)
			})
		}
	}
}

func newEnv(t testing.TB, kind Engine) *env {
	t.Helper()
	e := &env{t: t, kind: kind, logs: &logBuffer{}, ctx: context.Background()}
	var err error
	switch kind {
	case SQLite:
		e.dsn = "sqlite://" + filepath.Join(t.TempDir(), "acp.db")
		e.raw, err = sql.Open("sqlite3", sqliteDSN(strings.TrimPrefix(e.dsn, "sqlite://"), "immediate"))
		e.raw.SetMaxOpenConns(1)
	case Postgres:
		e.dsn = postgresDSN(t)
		// describe_exec: the raw handle caches no plan, so it survives the
		// schema changes the tests provoke.
		e.raw, err = sql.Open("pgx", e.dsn+"&default_query_exec_mode=describe_exec")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.raw.Close() })
	return e
}

func (e *env) eng() engine {
	if e.kind == SQLite {
		return sqliteEngine{}
	}
	return postgresEngine{jsonFunc: pgJSONFunc}
}

// open opens a store on the env's database; hooks apply before the first
// migration pass.
func (e *env) open(h hooks, opts ...Option) *Store {
	e.t.Helper()
	opts = append([]Option{WithLogger(slog.New(slog.NewTextHandler(e.logs, nil))), withHooks(h)}, opts...)
	s, err := Open(e.ctx, e.dsn, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}

// store opens a migrated store and asserts the pass succeeded.
func (e *env) store(opts ...Option) *Store {
	e.t.Helper()
	s := e.open(hooks{}, opts...)
	rep := s.Migrate(e.ctx)
	if !rep.OK() {
		e.t.Fatalf("migration: %+v", rep)
	}
	return s
}

func withHooks(h hooks) Option { return func(s *Store) { s.hooks = h } }

func (e *env) exec(q string, args ...any) {
	e.t.Helper()
	if _, err := e.raw.ExecContext(e.ctx, e.eng().rebind(q), args...); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

func (e *env) count(q string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.raw.QueryRowContext(e.ctx, e.eng().rebind(q), args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// ts is a time as the engine stores it.
func (e *env) ts(t time.Time) any { return e.eng().bindTime(t) }

// hostTables creates the surrounding tables only, in the standalone shape
// (with what it needs on PostgreSQL: the functions) or, with e.hostShape,
// in the host's.
func (e *env) hostTables() {
	e.t.Helper()
	e.exec(metaDDL)
	if e.hostShape {
		for _, q := range kandevHostDDL {
			e.exec(q)
		}
		return
	}
	if pg, ok := e.eng().(postgresEngine); ok {
		var schema string
		if err := e.raw.QueryRow(`SELECT current_schema()`).Scan(&schema); err != nil {
			e.t.Fatal(err)
		}
		for _, f := range pg.functionsDDL(quoteIdent(schema)) {
			if _, err := e.raw.Exec(f.ddl); err != nil && pg.classify(err) != errAlreadyExists {
				e.t.Fatal(err)
			}
		}
	}
	for _, q := range hostTablesDDL(e.eng()) {
		e.exec(q)
	}
	e.exec(messagesIndexDDL(true))
}

// kandevHostDDL is the host's own shape of the tables the package reads:
// timestamp without time zone on PostgreSQL, no derived column, a
// created_at index (as the README advises a host that runs health).
var kandevHostDDL = []string{
	`CREATE TABLE IF NOT EXISTS task_sessions (id TEXT PRIMARY KEY, task_id TEXT NOT NULL DEFAULT '', started_at TIMESTAMP, updated_at TIMESTAMP)`,
	`CREATE TABLE IF NOT EXISTS task_session_turns (id TEXT PRIMARY KEY,
	task_session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
	task_id TEXT NOT NULL DEFAULT '', started_at TIMESTAMP, created_at TIMESTAMP, updated_at TIMESTAMP)`,
	`CREATE TABLE IF NOT EXISTS task_session_messages (id TEXT PRIMARY KEY,
	task_session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
	task_id TEXT DEFAULT '', turn_id TEXT REFERENCES task_session_turns(id) ON DELETE CASCADE,
	metadata TEXT DEFAULT '{}', created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS idx_task_session_messages_created_at ON task_session_messages (created_at)`,
}

func (e *env) session(id, task string) {
	e.t.Helper()
	e.exec(`INSERT INTO task_sessions (id, task_id) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, task)
}

func (e *env) turn(id, session string) {
	e.t.Helper()
	e.exec(`INSERT INTO task_session_turns (id, task_session_id) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, session)
}

// message is a history row; Metadata nil stores NULL.
type message struct {
	ID, Session string
	Task        any // string or nil
	Turn        any // string or nil
	Metadata    any // string or nil
	Created     any // time.Time (bound per engine) or raw text
	Updated     any
}

func (e *env) message(m message) {
	e.t.Helper()
	conv := func(v any) any {
		if t, ok := v.(time.Time); ok {
			return e.ts(t)
		}
		return v
	}
	if m.Updated == nil {
		m.Updated = m.Created
	}
	e.exec(`INSERT INTO task_session_messages (id, task_session_id, task_id, turn_id, metadata, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)`, m.ID, m.Session, m.Task, m.Turn, m.Metadata, conv(m.Created), conv(m.Updated))
}

// subagentMeta builds message metadata for a subagent card.
func subagentMeta(toolCallID, status string, fields map[string]any) string {
	st := map[string]any{"description": "", "prompt": "", "subagent_type": ""}
	for k, v := range fields {
		st[k] = v
	}
	md := map[string]any{"tool_call_id": toolCallID, "normalized": map[string]any{"kind": "subagent_task", "subagent_task": st}}
	if status != "" {
		md["status"] = status
	}
	return mustJSON(md)
}

// allRows dumps the table as sorted text, every column, so two dumps can be
// compared for identity.
func (e *env) allRows() []string { return e.dump(finalColumns) }

// keys returns the activation keys present, raw.
func (e *env) keys() map[string]string {
	e.t.Helper()
	return e.readMeta(readKeys)
}

// readMeta runs a kandev_meta reader on the raw handle.
func (e *env) readMeta(read func(context.Context, queryer, engine) (map[string]string, error)) map[string]string {
	e.t.Helper()
	k, err := read(e.ctx, e.raw, e.eng())
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// one returns the single row of a session.
func one(t *testing.T, s *Store, session string) SubagentContext {
	t.Helper()
	rows, err := s.ListBySession(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("want 1 row for %s, got %d: %+v", session, len(rows), rows)
	}
	return rows[0]
}

var t0 = time.Date(2026, 8, 12, 10, 0, 0, 123456000, time.UTC)
