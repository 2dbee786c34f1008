package persistence

import (
	"context"
	"strconv"
	"testing"
)

// The session read benchmarks: the listing and one session's summary, as
// `acpscope sessions` and the web view read them.
//
//	go test -run '^$' -bench 'ListSessions|SessionSummary' -benchtime 5x ./persistence/

// seedCards writes n rows into task_session_subagents (and their sessions
// into task_sessions) in one statement per table, as a store holds them:
// row i belongs to session prefix+(i mod sessions); its k-th row (k = i div
// sessions) is tool call "tc"+k written by execution "E0", except in the
// sessions whose number is a multiple of multiEvery (0: none), which two
// executions wrote: there execution "E"+(k mod 2) stores tool call
// "tc"+(k div 2), so every card has a row of each (a resumed session's
// replay). Statuses cycle per ten rows: seven completed, one failed, one
// cancelled, one in progress; a turn per fifty rows; observed_at one
// millisecond apart, settled and updated a second later.
func seedCards(b testing.TB, e *env, prefix string, n, sessions, multiEvery int) {
	b.Helper()
	multi := "FALSE"
	if multiEvery > 0 {
		multi = "(i % " + strconv.Itoa(sessions) + ") % " + strconv.Itoa(multiEvery) + " = 0"
	}
	k := "(i / " + strconv.Itoa(sessions) + ")"
	at := func(seconds int) string {
		if e.kind == SQLite {
			return `strftime('%Y-%m-%d %H:%M:%S', ` + strconv.Itoa(1785771140+seconds) + ` + i / 1000, 'unixepoch') || '.' || printf('%06d', (i % 1000) * 1000) || '+00:00'`
		}
		return `TIMESTAMPTZ '2026-08-03 15:32:20+00' + INTERVAL '` + strconv.Itoa(seconds) + ` second' + i * INTERVAL '1 millisecond'`
	}
	status := `CASE WHEN ` + k + ` % 10 < 7 THEN 'completed' WHEN ` + k + ` % 10 = 7 THEN 'failed'
	WHEN ` + k + ` % 10 = 8 THEN 'cancelled' ELSE 'in_progress' END`
	rows := `SELECT '` + prefix + `r' || i, '` + prefix + `' || (i % ` + strconv.Itoa(sessions) + `), '` + prefix + `' || (i % ` + strconv.Itoa(sessions) + `),
	'u' || (` + k + ` / 50),
	CASE WHEN ` + multi + ` THEN 'tc' || (` + k + ` / 2) ELSE 'tc' || ` + k + ` END,
	CASE WHEN ` + multi + ` THEN 'E' || (` + k + ` % 2) ELSE 'E0' END,
	'Investigate flaky test ' || i, ` + status + `, 'completed',
	` + at(0) + `, CASE WHEN ` + k + ` % 10 < 9 THEN ` + at(1) + ` END, ` + at(1)
	insert := `INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id,
	description, tool_status, agent_status, observed_at, settled_at, updated_at) `
	sessionRows := `SELECT '` + prefix + `' || i, '` + prefix + `' || i`
	switch e.kind {
	case SQLite:
		series := func(count int) string {
			return `WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ` + strconv.Itoa(count) + ` - 1) `
		}
		e.exec(series(sessions) + `INSERT INTO task_sessions (id, task_id) ` + sessionRows + ` FROM c`)
		e.exec(series(n) + insert + rows + ` FROM c`)
	case Postgres:
		series := func(count int) string { return ` FROM generate_series(0, ` + strconv.Itoa(count) + ` - 1) AS i` }
		e.exec(`INSERT INTO task_sessions (id, task_id) ` + sessionRows + series(sessions))
		e.exec(insert + rows + series(n))
		e.exec(`VACUUM ANALYZE task_session_subagents`)
		e.exec(`VACUUM ANALYZE task_sessions`)
	}
}

// BenchmarkListSessions: the default listing (the 100 most recent) of a
// store of 20,000 rows in 1,000 sessions, every tenth of them written by
// two executions.
func BenchmarkListSessions(b *testing.B) {
	const rows, sessions = 20_000, benchSessions
	benchEngines(b, func(b *testing.B, e *env) {
		s := e.store()
		seedCards(b, e, "s", rows, sessions, 10)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			sums, err := s.ListSessions(ctx, SessionFilter{})
			if err != nil || len(sums) != DefaultSessionLimit {
				b.Fatalf("%d sessions, %v", len(sums), err)
			}
		}
		b.ReportMetric(rows, "rows")
	})
}

// BenchmarkSessionSummary: the summary of one session of 100,000 rows
// (Store.Session, the web view's header), written by one execution, and by
// two (every card a row of each).
func BenchmarkSessionSummary(b *testing.B) {
	const rows = 100_000
	for _, c := range []struct {
		name       string
		multiEvery int
		cards      int
	}{{"one-execution", 0, rows}, {"two-executions", 1, rows / 2}} {
		b.Run(c.name, func(b *testing.B) {
			benchEngines(b, func(b *testing.B, e *env) {
				s := e.store()
				seedCards(b, e, "big", rows, 1, c.multiEvery)
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					sum, ok, err := s.Session(ctx, "big0")
					if err != nil || !ok || sum.Cards != c.cards {
						b.Fatalf("%+v %v %v", sum, ok, err)
					}
				}
				b.ReportMetric(rows, "rows")
			})
		})
	}
}
