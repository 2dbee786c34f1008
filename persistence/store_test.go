package persistence

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestParseDSN(t *testing.T) {
	for dsn, want := range map[string]struct {
		kind   Engine
		target string
	}{
		"sqlite:///abs/acp.db":               {SQLite, "/abs/acp.db"},
		"sqlite://rel/acp.db":                {SQLite, "rel/acp.db"},
		"sqlite:acp.db":                      {SQLite, "acp.db"},
		"file:acp.db?mode=rwc":               {SQLite, "file:acp.db?mode=rwc"},
		"/var/lib/acp.db":                    {SQLite, "/var/lib/acp.db"},
		"postgres://u@h/db?sslmode=disable":  {Postgres, "postgres://u@h/db?sslmode=disable"},
		"postgresql://u@h/db?search_path=s1": {Postgres, "postgresql://u@h/db?search_path=s1"},
	} {
		kind, target, err := parseDSN(dsn)
		if err != nil || kind != want.kind || target != want.target {
			t.Errorf("%s: %s %s %v", dsn, kind, target, err)
		}
	}
	if _, _, err := parseDSN(""); err == nil {
		t.Error("empty DSN accepted")
	}
	if _, err := Open(context.Background(), "postgres://nobody@127.0.0.1:1/x?connect_timeout=1"); err == nil {
		t.Error("unreachable server opened")
	}
}

// An in-memory SQLite store keeps one connection for writes and reads.
func TestMemoryStore(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.EnsureSession(ctx, "S", "T"); err != nil {
		t.Fatal(err)
	}
	s.Record(ctx, frame("tc1"))
	if rows, err := s.ListBySession(ctx, "S"); err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if h, err := s.Health(ctx); err != nil || h.State != StateFullyActivated {
		t.Fatalf("%+v %v", h, err)
	}
}

// Hosted mode: the host's handles, no host table created, handles left open.
func TestHostedMode(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s, err := OpenDB(e.ctx, e.kind, e.raw, nil, WithLogger(slog.New(slog.NewTextHandler(e.logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		q := `SELECT COUNT(*) FROM sqlite_master WHERE name = 'task_sessions'`
		if e.kind == Postgres {
			q = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'task_sessions'`
		}
		if err := e.raw.QueryRow(q).Scan(&n); err != nil || n != 0 {
			t.Fatalf("hosted mode created a host table (%d, %v)", n, err)
		}
		s.Close()
		// With the host's tables (its shape: timestamp, no derived column)
		// in place, a pass converges and alters none of them.
		e.hostShape = true
		e.hostTables()
		e.session("S", "T")
		s, err = OpenDB(e.ctx, e.kind, e.raw, e.raw)
		if err != nil {
			t.Fatal(err)
		}
		if rep := s.Migrate(e.ctx); !rep.OK() {
			t.Fatalf("%+v", rep)
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TurnID = "" }))
		s.Close()
		if err := e.raw.Ping(); err != nil {
			t.Fatal("Close closed the host's handle")
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 1 {
			t.Fatalf("%d rows", n)
		}
		if has, err := e.eng().hasColumn(e.ctx, e.raw, "task_session_messages", messagePairColumn); has || err != nil {
			t.Fatalf("hosted mode altered the messages table (%v, %v)", has, err)
		}
	})
}

// A DSN with another database's scheme is refused by name, not taken as a
// SQLite file name.
func TestParseDSNForeignScheme(t *testing.T) {
	for _, dsn := range []string{"mysql://u@h/db", "sqlserver://h", "redis://h:6379"} {
		if _, _, err := parseDSN(dsn); err == nil || !strings.Contains(err.Error(), "unsupported") {
			t.Errorf("%s: %v", dsn, err)
		}
	}
	for _, dsn := range []string{"C:/data/acp.db", "./a://b.db"} {
		if _, _, err := parseDSN(dsn); err != nil {
			t.Errorf("%s: %v", dsn, err)
		}
	}
}
