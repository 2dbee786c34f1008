package persistence

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// optionEngines runs f on a fresh database of each engine: a SQLite file
// and a PostgreSQL schema of its own (skipped, or failed under CI=true,
// when the server is unreachable).
func optionEngines(t *testing.T, f func(t *testing.T, driver, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "sqlite3", filepath.Join(t.TempDir(), "opt.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, "pgx", postgresDSN(t)) })
}

// WithHostTables(false) keeps Open from creating the host's tables: only
// the layer's own objects appear.
func TestOptionWithHostTablesFalse(t *testing.T) {
	ctx := context.Background()
	optionEngines(t, func(t *testing.T, driver, dsn string) {
		s, err := Open(ctx, dsn, WithHostTables(false))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		raw, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`
		if driver == "pgx" {
			q = `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1`
		}
		for _, table := range []string{"task_sessions", "task_session_turns", "task_session_messages"} {
			var n int
			if err := raw.QueryRowContext(ctx, q, table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s was created under WithHostTables(false)", table)
			}
		}
	})
}

// WithWriteTimeout bounds each Record write: a bound no write can meet
// makes Record count a failure instead of storing the row.
func TestOptionWithWriteTimeout(t *testing.T) {
	ctx := context.Background()
	optionEngines(t, func(t *testing.T, driver, dsn string) {
		s, err := Open(ctx, dsn, WithWriteTimeout(time.Nanosecond))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Record(ctx, &Frame{TaskSessionID: "S", TaskID: "T", ToolCallID: "tc"})
		if got := s.Counters().Failed; got != 1 {
			t.Fatalf("failed = %d, want 1 (counters %+v)", got, s.Counters())
		}
	})
}
