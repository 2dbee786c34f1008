package persistence

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Issue 3: timestamps bound as timestamps (timestamptz on PostgreSQL),
// correct in any session time zone.

// The same history, frames and capture_since give identical rows, lists,
// health and backfill mark whatever the session TimeZone, with the
// standalone messages table (timestamptz) and with a host's (timestamp
// without time zone, read as UTC).
func TestSessionTimeZone(t *testing.T) {
	layouts(t, func(t *testing.T, e0 *env) {
		var want string
		for i, tz := range []string{"UTC", "Pacific/Kiritimati", "America/St_Johns"} {
			e := e0
			if i > 0 {
				e = newEnv(t, e0.kind)
				e.hostShape = e0.hostShape
			}
			if e.kind == Postgres {
				e.dsn += "&timezone=" + url.QueryEscape(tz)
			}
			historyEnv(e)
			for j, at := range []time.Duration{-time.Hour, 10 * time.Second, 50 * time.Second, 2 * time.Hour} {
				e.message(message{ID: fmt.Sprint("m", j), Session: "S", Task: "T", Turn: "U1",
					Metadata: subagentMeta(fmt.Sprint("h", j), "completed", nil), Created: t0.Add(at), Updated: t0.Add(at + time.Second)})
			}
			s := e.open(hooks{}) // backfills
			if e.kind == Postgres {
				var got string
				if err := s.reader.QueryRow(`SHOW TimeZone`).Scan(&got); err != nil || got != tz {
					t.Fatalf("session TimeZone %q %v", got, err)
				}
			}
			e.exec(`UPDATE kandev_meta SET value = ? WHERE key = ?`, keyText(t0.Add(30*time.Second)), KeyCaptureSince)
			for _, f := range []*Frame{
				frame("live", func(f *Frame) { f.ObservedAt, f.ToolStatus = t0.Add(40*time.Second), "completed" }),
				frame("live", func(f *Frame) { f.ObservedAt = t0.Add(45 * time.Second) }),
				frame("early", func(f *Frame) { f.ObservedAt = t0.Add(20 * time.Second) }),
				frame("orphan", func(f *Frame) { f.ObservedAt = t0.Add(time.Minute) }),
			} {
				if err := s.Upsert(e.ctx, *f); err != nil {
					t.Fatal(err)
				}
			}
			e.msg("m-live", "live", t0.Add(40*time.Second))
			e.msg("m-missing", "missing", t0.Add(45*time.Second))
			bySession, err1 := s.ListBySession(e.ctx, "S")
			byTurn, err2 := s.ListByTurn(e.ctx, "U1")
			h, err3 := s.Health(e.ctx)
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatal(err)
			}
			if i == 0 && (h.Shortfall != 1 || h.Excess != 1 || len(bySession) != 7 || !h.MaxObserved.Equal(t0.Add(2*time.Hour))) {
				t.Fatalf("UTC: %d rows, %+v", len(bySession), h)
			}
			for _, rows := range [][]SubagentContext{bySession, byTurn} {
				for j := range rows {
					if rows[j].Source == SourceLive {
						rows[j].ID = "" // a fresh UUID per run
					}
				}
			}
			h.ExecutionSince = nil // sampled from the clock at each open
			got := mustJSON([]any{bySession, byTurn, h, e.keys()[KeyBackfillThrough]})
			if i == 0 {
				want = got
			} else if got != want {
				t.Fatalf("TimeZone %s differs from UTC:\n%s\n%s", tz, got, want)
			}
		}
	})
}

// A table created with timestamp without time zone (older builds, the
// existing implementation) moves to timestamptz once, reading each stored
// wall clock as UTC whatever the session TimeZone; a failed move leaves
// the old types, writes still work, and the next pass completes it.
func TestTimestamptzMigration(t *testing.T) {
	e := newEnv(t, Postgres)
	t.Parallel()
	e.dsn += "&timezone=America/St_Johns"
	e.hostTables()
	e.session("S", "T")
	e.exec(strings.ReplaceAll(subagentsTableDDL(e.eng(), "task_session_subagents"), "TIMESTAMPTZ", "TIMESTAMP"))
	for _, q := range indexDDL {
		e.exec(q)
	}
	e.exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, tool_call_id, tool_status, observed_at, settled_at, updated_at)
VALUES ('r1', 'S', 'T', 'tc1', 'completed', ?, ?, ?)`, e.ts(t0), e.ts(t0.Add(time.Minute)), e.ts(t0.Add(time.Minute)))
	naive := []string{"timestamp without time zone", "timestamp without time zone", "timestamp without time zone"}
	if got := timeTypes(e); !slices.Equal(got, naive) {
		t.Fatalf("fixture %v", got)
	}
	before := e.allRows()
	s := e.open(hooks{fail: func(p string) error {
		if p == "timestamptz.alter" {
			return errors.New("injected")
		}
		return nil
	}})
	if got := timeTypes(e); !slices.Equal(got, naive) || !strings.Contains(e.logs.String(), "name="+StepTimestamptz) {
		t.Fatalf("failed step left %v; logs:\n%s", got, e.logs.String())
	}
	if err := s.Upsert(e.ctx, *frame("tc2", func(f *Frame) { f.ObservedAt = t0.Add(time.Hour); f.TurnID = "" })); err != nil {
		t.Fatal(err)
	}
	s.hooks.fail = nil
	if st, _ := s.Migrate(e.ctx).Step(StepTimestamptz); st.Skipped || st.Err != nil {
		t.Fatalf("second pass: %+v", st)
	}
	if got := timeTypes(e); !slices.Equal(got, []string{"timestamp with time zone", "timestamp with time zone", "timestamp with time zone"}) {
		t.Fatalf("types %v", got)
	}
	if after := e.allRows(); !slices.Contains(after, before[0]) || len(after) != 2 {
		t.Fatalf("values moved:\n%v\n%v", before, after)
	}
	rows, err := s.ListBySession(e.ctx, "S")
	if err != nil || len(rows) != 2 || !rows[0].ObservedAt.Equal(t0) || !rows[0].SettledAt.Equal(t0.Add(time.Minute)) ||
		!rows[1].ObservedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("rows %s %v", mustJSON(rows), err)
	}
	if st, _ := s.Migrate(e.ctx).Step(StepTimestamptz); !st.Skipped || st.Err != nil {
		t.Fatalf("converged pass: %+v", st)
	}
}
