package persistence

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// collapseSummariesSQL is the reference the summaries are checked against:
// every row of the store collapsed into cards (cardsSQL over the whole
// table), joined to the sessions cond keeps, aggregated and ordered as
// ListSessions orders, at most the last placeholder's count. It is the
// form summaries had before they were restricted to the page's sessions.
func collapseSummariesSQL(e engine, cond string) string {
	return `SELECT s.id, s.task_id, ` + e.canon("s.started_at") + `,
	MIN(` + e.canon("c.observed_at") + `), MAX(` + e.canon("c.updated_at") + `),
	COUNT(c.id), COUNT(DISTINCT c.turn_id),
	COALESCE(SUM(CASE WHEN c.id IS NOT NULL AND c.settled_at IS NULL AND COALESCE(c.tool_status, '') <> 'unknown' THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN c.tool_status IN ('error', 'failed') THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN c.tool_status = 'cancelled' THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN c.tool_status = 'unknown' AND c.settled_at IS NULL THEN 1 ELSE 0 END), 0)
FROM task_sessions s LEFT JOIN (` + cardsSQL(e, "1 = 1") + `) c ON c.task_session_id = s.id
` + cond + `
GROUP BY s.id, s.task_id, s.started_at
ORDER BY COALESCE(` + e.canon("s.started_at") + `, MIN(` + e.canon("c.observed_at") + `)) DESC, ` + e.binary("s.id") + `
LIMIT ?`
}

// collapseSummaries runs collapseSummariesSQL: the summaries' counts and
// times (Executions and ChildSessions are left out: one query gives them
// on every path).
func collapseSummaries(t *testing.T, e *env, cond string, args ...any) []SessionSummary {
	t.Helper()
	rows, err := e.raw.QueryContext(e.ctx, e.eng().rebind(collapseSummariesSQL(e.eng(), cond)), args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []SessionSummary
	for rows.Next() {
		var m SessionSummary
		var started, first, last nullTime
		if err := rows.Scan(&m.ID, &m.TaskID, &started, &first, &last, &m.Cards, &m.Turns,
			&m.Open, &m.Failed, &m.Cancelled, &m.Unknown); err != nil {
			t.Fatal(err)
		}
		m.ID, m.TaskID = decodeID(m.ID), decodeID(m.TaskID)
		m.StartedAt, m.LastUpdate = first.Time, last.Time
		if started.Valid {
			m.StartedAt = started.Time
		}
		m.Status = sessionStatus(m)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// countsOnly drops what collapseSummaries does not compute.
func countsOnly(sums []SessionSummary) []SessionSummary {
	out := slices.Clone(sums)
	for i := range out {
		out[i].Executions, out[i].ChildSessions = nil, nil
	}
	return out
}

// The summaries count only the listed sessions' rows, and a session one
// execution wrote without the collapse's windows; both must give what the
// collapse of the whole store gives, session for session and in order.
// Random sessions of zero to three executions sharing tool calls (so
// cards have a row per execution), with ties of observed_at, host-set
// started_at, sessions without cards, and rows written as a host or an
// older build might have (timestamps in other text forms on SQLite, a
// settled_at that does not read as a time, a settlement without a
// terminal status), are read through ListSessions (the whole list, pages,
// filters) and Session, on both engines.
func TestSummaryPathsAreTheCollapse(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		for seed := range uint64(4) {
			t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
				s := e.store()
				prefix := fmt.Sprintf("r%d-", seed)
				ids := seedRandomSessions(t, e, s, rand.New(rand.NewPCG(seed, 7)), prefix)
				idCond := `WHERE substr(s.id, 1, ` + fmt.Sprint(len(prefix)) + `) = '` + prefix + `'`

				want := collapseSummaries(t, e, idCond, MaxSessionLimit)
				if len(want) != len(ids) {
					t.Fatalf("reference lists %d of %d sessions", len(want), len(ids))
				}
				got, err := s.ListSessions(e.ctx, SessionFilter{Text: prefix, Limit: MaxSessionLimit})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(countsOnly(got), want) {
					t.Fatalf("ListSessions:\n%s\nthe collapse:\n%s", mustJSON(countsOnly(got)), mustJSON(want))
				}
				multi := 0
				for _, m := range got {
					if len(m.Executions) > 1 {
						multi++
					}
					one, ok, err := s.Session(e.ctx, m.ID)
					if err != nil || !ok || !reflect.DeepEqual(one, m) {
						t.Fatalf("Session(%s) = %+v, %v, %v; listed %+v", m.ID, one, ok, err, m)
					}
				}
				if multi == 0 || multi == len(got) {
					t.Fatalf("%d of %d sessions several executions wrote: both paths must run", multi, len(got))
				}
				for _, limit := range []int{1, 3, len(ids) / 2} {
					page, err := s.ListSessions(e.ctx, SessionFilter{Text: prefix, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(countsOnly(page), want[:limit]) {
						t.Fatalf("page of %d:\n%s\nwant\n%s", limit, mustJSON(countsOnly(page)), mustJSON(want[:limit]))
					}
				}
				byExec, err := s.ListSessions(e.ctx, SessionFilter{ExecutionPrefix: prefix + "E2", Limit: MaxSessionLimit})
				if err != nil {
					t.Fatal(err)
				}
				wantExec := collapseSummaries(t, e, idCond+` AND s.id IN (SELECT task_session_id FROM task_session_subagents
	WHERE agent_execution_id = ?)`, encodeID(prefix+"E2"), MaxSessionLimit)
				if len(wantExec) == 0 || !reflect.DeepEqual(countsOnly(byExec), wantExec) {
					t.Fatalf("by execution:\n%s\nwant\n%s", mustJSON(countsOnly(byExec)), mustJSON(wantExec))
				}
			})
		}
	})
}

// seedRandomSessions stores 16 sessions named prefix+n through the write
// API and raw inserts (see TestSummaryPathsAreTheCollapse) and returns
// their ids.
func seedRandomSessions(t *testing.T, e *env, s *Store, r *rand.Rand, prefix string) []string {
	t.Helper()
	statuses := []string{"", "pending", "in_progress", "completed", "complete", "failed", "error", "cancelled", "unknown"}
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var ids []string
	raw := 0
	for n := range 16 {
		id := fmt.Sprintf("%s%02d", prefix, n)
		ids = append(ids, id)
		if err := s.EnsureSession(e.ctx, id, "task-"+id); err != nil {
			t.Fatal(err)
		}
		if n%5 == 1 { // the host set started_at
			e.exec(`UPDATE task_sessions SET started_at = ? WHERE id = ?`, e.ts(base.Add(time.Duration(r.IntN(40))*time.Second)), id)
		}
		executions := []int{0, 1, 1, 2, 3}[n%5]
		for x := range executions {
			exec := fmt.Sprintf("%sE%d", prefix, x+1)
			for range 1 + r.IntN(12) {
				f := Frame{TaskSessionID: id, TaskID: "task-" + id, ToolCallID: fmt.Sprint("tc", r.IntN(6)), ExecutionID: exec,
					ToolStatus:  statuses[r.IntN(len(statuses))],
					ObservedAt:  base.Add(time.Duration(r.IntN(30)) * time.Second), // ties on purpose
					Description: fmt.Sprint("d", r.IntN(3))}
				if r.IntN(3) > 0 {
					f.TurnID = fmt.Sprint("u", r.IntN(4))
				}
				if err := s.Upsert(e.ctx, f); err != nil {
					t.Fatal(err)
				}
			}
		}
		if executions == 0 && n%10 == 0 || executions > 0 && r.IntN(2) == 0 {
			continue
		}
		// Rows of a writer other than this build: an execution of their own
		// (so no key conflicts; the only one of sessions 5 and 15), forms of
		// time a host may write.
		for tc := range 2 + r.IntN(3) {
			raw++
			observed := base.Add(time.Duration(r.IntN(30)) * time.Second)
			var observedAt, settledAt, updatedAt any = e.ts(observed), nil, e.ts(observed.Add(time.Second))
			status := statuses[r.IntN(len(statuses))]
			switch {
			case e.kind == SQLite && raw%3 == 0:
				observedAt = observed.In(time.FixedZone("", 2*3600)).Format("2006-01-02 15:04:05.999999-07:00")
				updatedAt = observed.Format(time.RFC3339)
				settledAt = "not a time"
			case e.kind == SQLite && raw%3 == 1:
				observedAt = observed.Format("2006-01-02T15:04:05Z")
				settledAt = observed.Add(2 * time.Second).Format("2006-01-02 15:04:05")
			case IsTerminalToolStatus(status) || raw%2 == 0: // settled, whatever the status says
				settledAt = e.ts(observed.Add(2 * time.Second))
			}
			var turn any
			if r.IntN(2) == 0 {
				turn = fmt.Sprint("u", r.IntN(4))
			}
			e.exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, turn_id, tool_call_id, agent_execution_id,
	tool_status, observed_at, settled_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				fmt.Sprintf("%sraw%d", prefix, raw), encodeID(id), encodeID("task-"+id), turn, encodeID(fmt.Sprint("tc", tc)),
				encodeID(prefix+"R"), status, observedAt, settledAt, updatedAt)
		}
	}
	if !slices.IsSorted(ids) || strings.Contains(prefix, "%") {
		t.Fatal("ids must sort and contain no pattern")
	}
	return ids
}

// The summaries' queries read task_session_subagents through indexes on
// both engines, never a scan of the table: the page's first observations
// through idx_subagents_session_observed (covering on SQLite, an
// index-only seek on PostgreSQL), its execution spans through the key's
// index, and the counts of the page's 100 sessions of 1,000 (one in ten
// written by two executions) through an index led by the session.
func TestSummaryPlansUseIndexes(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		seedCards(t, e, "s", 20_000, 1000, 10)
		eng := e.eng()
		var multi, single []any
		for i := range 100 {
			if i%10 == 0 {
				multi = append(multi, fmt.Sprint("s", i))
			} else {
				single = append(single, fmt.Sprint("s", i))
			}
		}
		plan := func(q string, args ...any) string { t.Helper(); return explain(t, e, s, q, args...) }
		fullScan := "SCAN task_session_subagents"
		if e.kind == Postgres {
			fullScan = "Seq Scan on task_session_subagents"
		}
		page := plan(summaryPageSQL(eng, ""), DefaultSessionLimit)
		if !strings.Contains(page, "idx_subagents_session_observed") || strings.Contains(page, fullScan) {
			t.Errorf("the page does not read the first observations through idx_subagents_session_observed:\n%s", page)
		}
		counts := plan(summaryCountsSQL(eng, len(multi), len(single)), append(multi, single...)...)
		// Either index led by task_session_id serves (idx_subagents_session_id
		// or _observed, as the planner likes), on both paths.
		if strings.Contains(counts, fullScan) || strings.Count(counts, "idx_subagents_session_") != 2 {
			t.Errorf("the counts do not read the page's sessions through a session index, both paths:\n%s", counts)
		}
	})
}

// explain is the plan of q on s (of e's engine): SQLite's EXPLAIN QUERY PLAN
// details or PostgreSQL's EXPLAIN lines, one a line.
func explain(t *testing.T, e *env, s *Store, q string, args ...any) string {
	t.Helper()
	explain := "EXPLAIN QUERY PLAN "
	if e.kind == Postgres {
		explain = "EXPLAIN "
	}
	rows, err := s.reader.QueryContext(e.ctx, explain+e.eng().rebind(q), args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprint(vals[len(vals)-1])) // SQLite: the detail column
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// The change check reads indexes only, on both engines: a session's mark
// (its row count and latest update, Changes) through
// idx_subagents_session_changed, never its rows, and its family's child sessions (SessionFamily)
// through idx_subagents_session_child, which holds only the rows that
// launched a child. Issue 36: a 400,000-row session's check read every
// row, 1.3 s a poll.
func TestChangesPlanUsesIndexes(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		seedCards(t, e, "s", 20_000, 10, 0)
		e.exec(`UPDATE task_session_subagents SET child_session_id = 'child' || id WHERE id IN ('sr1', 'sr2')`)
		if e.kind == Postgres {
			e.exec(`ANALYZE task_session_subagents`)
		}
		eng := e.eng()
		fullScan := "SCAN task_session_subagents"
		if e.kind == Postgres {
			fullScan = "Seq Scan on task_session_subagents"
		}
		for _, n := range []int{1, 3} {
			ids := []any{"s1", "s2", "s3"}[:n]
			mark := explain(t, e, s, changesSQL(eng, n), append(ids, ids...)...)
			if strings.Contains(mark, fullScan) || !strings.Contains(mark, changeIndex) {
				t.Errorf("the mark of %d sessions is not read through %s:\n%s", n, changeIndex, mark)
			}
			// Every read of the table in the plan is of an index only.
			if e.kind == SQLite && strings.Count(mark, "task_session_subagents USING COVERING INDEX") != strings.Count(mark, "task_session_subagents") {
				t.Errorf("the mark of %d sessions reads rows, not only the index:\n%s", n, mark)
			}
			family := explain(t, e, s, fmt.Sprintf(childSessionsSQL, placeholders(n)), ids...)
			if strings.Contains(family, fullScan) || !strings.Contains(family, childIndex) {
				t.Errorf("the children of %d sessions are not read through %s:\n%s", n, childIndex, family)
			}
		}
	})
}
