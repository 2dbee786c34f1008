package web

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// The figures of a session many executions wrote (issue 36, point 6): run
// under ACPSCOPE_WEB_WIDE=1 (make web-bench). ACPSCOPE_WEB_EXECUTIONS
// (default 2,000) executions each replay the same ACPSCOPE_WEB_CALLS
// (default 200) tool calls, as every `run --resume` replays the session's
// history: 400,000 rows, 200 cards. ACPSCOPE_WEB_DSN seeds and reads
// another store (a PostgreSQL DSN; its tables are dropped first) instead
// of a new SQLite file, vacuumed and analysed once seeded. The fixture is
// built once per benchmark process.

var (
	wideOnce sync.Once
	wideDSN  string
	wideErr  error
)

// wideStore seeds the session "wide" once per process and opens the store
// read-only, as acpscope web does.
func wideStore(b *testing.B) *persistence.Store {
	b.Helper()
	if os.Getenv("ACPSCOPE_WEB_WIDE") != "1" {
		b.Skip("ACPSCOPE_WEB_WIDE=1 runs the many-execution figures (make web-bench)")
	}
	wideOnce.Do(func() {
		start := time.Now()
		wideDSN, wideErr = seedWide()
		b.Logf("seeded in %v", time.Since(start))
	})
	if wideErr != nil {
		b.Fatal(wideErr)
	}
	s, err := persistence.OpenReadOnly(context.Background(), wideDSN, persistence.WithSubagentText(), persistence.WithCardFacts())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func seedWide() (string, error) {
	executions, calls := envInt("ACPSCOPE_WEB_EXECUTIONS", 2000), envInt("ACPSCOPE_WEB_CALLS", 200)
	dsn := os.Getenv("ACPSCOPE_WEB_DSN")
	ctx := context.Background()
	if dsn == "" {
		dir, err := os.MkdirTemp("", "acpscope-web-wide")
		if err != nil {
			return "", err
		}
		dsn = "sqlite://" + filepath.Join(dir, "wide.db")
	} else if err := dropAll(ctx, dsn); err != nil {
		return "", err
	}
	s, err := persistence.Open(ctx, dsn, persistence.WithSubagentText(), persistence.WithCardFacts())
	if err != nil {
		return "", err
	}
	defer s.Close()
	w := persistence.NewWriter(s, persistence.WriterOptions{EnsureSessions: true})
	start := time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)
	for e := range executions {
		exec := ExecutionID("claude", fmt.Sprintf("r%04d", e))
		at := start.Add(time.Duration(e) * time.Minute)
		for i := range calls {
			f := persistence.Frame{TaskSessionID: "wide", TaskID: "wide", ToolCallID: fmt.Sprintf("call-%05d", i),
				ExecutionID: exec, TurnID: fmt.Sprintf("turn-%d", i/20), Description: fmt.Sprintf("subagent %d", i),
				SubagentType: "general-purpose", TotalTokens: int64(100 + i), DurationMs: int64(1000 + i*10),
				ObservedAt: at.Add(time.Duration(i) * 50 * time.Millisecond)}
			if i%97 != 3 || e == executions-1 && i%2 == 0 {
				f.ToolStatus = []string{"completed", "completed", "completed", "failed", "cancelled"}[i%5]
			}
			w.Record(&f)
		}
		// Each execution's frames stored before the next's are recorded,
		// as a resumed run's are: the queue never sheds on a busy machine.
		if err := w.Flush(ctx); err != nil {
			return "", err
		}
	}
	if acc := w.Close(ctx); acc.NotStored() > 0 {
		return "", fmt.Errorf("seeding the wide session: %d cards not stored: %v", acc.NotStored(), acc.Cause)
	}
	if os.Getenv("ACPSCOPE_WEB_DSN") != "" {
		// A store at rest, as autovacuum leaves it soon after a bulk
		// write: statistics taken, the visibility map set (an index-only
		// scan reads no table page).
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return "", err
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `VACUUM ANALYZE task_session_subagents`); err != nil {
			return "", err
		}
	}
	return dsn, nil
}

// dropAll empties a PostgreSQL test database of the tables the store
// makes, so the fixture starts from nothing.
func dropAll(ctx context.Context, dsn string) error {
	db, err := sql.Open("pgx", dsn) // registered by persistence
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `DROP TABLE IF EXISTS task_session_subagent_texts, task_session_subagent_facts,
	task_session_subagents, task_session_messages, task_session_turns, task_sessions, kandev_meta CASCADE`)
	return err
}

// BenchmarkWideChanges is one change check of the wide session, as a
// poll past the cache asks it (FamilyToken: the family, then the mark).
func BenchmarkWideChanges(b *testing.B) {
	s := wideStore(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := FamilyToken(ctx, s, "wide"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWideFirstPage is the wide session's first page on a server
// that has not read it yet.
func BenchmarkWideFirstPage(b *testing.B) {
	s := wideStore(b)
	for b.Loop() {
		h := Handler(s, Options{})
		req := httptest.NewRequest(http.MethodGet, "/session?id=wide", nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkWideSessions is the sessions list (acpscope sessions, the
// list page) of a store holding the wide session.
func BenchmarkWideSessions(b *testing.B) {
	s := wideStore(b)
	ctx := context.Background()
	for b.Loop() {
		rows, err := ListSessions(ctx, s, Query{Limit: persistence.DefaultSessionLimit})
		if err != nil || len(rows) == 0 || rows[0].Cards == 0 {
			b.Fatal(rows, err)
		}
	}
}
