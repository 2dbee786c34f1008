package persistence

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// historyEnv has host tables, session S (task T), turn U1, and no store
// yet: messages seeded now are history the first pass backfills.
func historyEnv(e *env) {
	e.hostTables()
	e.session("S", "T")
	e.turn("U1", "S")
}

func (e *env) rerunBackfill(s *Store) MigrationReport {
	e.t.Helper()
	e.exec(`DELETE FROM kandev_meta WHERE key IN (?, ?)`, KeyCaptureSince, KeyBackfillThrough)
	return s.Migrate(e.ctx)
}

// S45 [.25, .30]
func TestBackfillSources(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		created, updated := t0, t0.Add(90*time.Second)
		md := mustJSON(map[string]any{
			"tool_call_id": "tc1", "parent_tool_call_id": "P", "status": "complete",
			"normalized": map[string]any{"kind": "subagent_task", "subagent_task": map[string]any{
				"description": "desc", "prompt": "p", "subagent_type": "general", "status": "async_launched",
				"agent_id": "a1", "child_session_id": "child", "model": "m", "is_async": true,
				"total_tokens": 275717, "tool_use_count": 11, "duration_ms": 12345,
			}},
		})
		e.message(message{ID: "m1", Session: "S", Task: "T", Turn: "U1", Metadata: md, Created: created, Updated: updated})
		s := e.open(hooks{})
		r := one(t, s, "S")
		want := SubagentContext{ID: "m1", TaskSessionID: "S", TaskID: "T", TurnID: ptr("U1"), ToolCallID: "tc1",
			AgentExecutionID: "unknown", ParentToolCallID: ptr("P"), SubagentType: ptr("general"), Description: ptr("desc"),
			AgentID: ptr("a1"), ChildSessionID: ptr("child"), Model: ptr("m"), AgentStatus: ptr("async_launched"),
			ToolStatus: ptr("complete"), IsAsync: true, TotalTokens: ptr(int64(275717)), ToolUseCount: ptr(int64(11)),
			DurationMs: ptr(int64(12345)), Source: SourceBackfill, ObservedAt: created, SettledAt: &updated, UpdatedAt: updated}
		if mustJSON(r) != mustJSON(want) {
			t.Fatalf("row\n%s\nwant\n%s", mustJSON(r), mustJSON(want))
		}
		if st, _ := s.Migrate(e.ctx).Step(StepBackfill); st.Name != "" {
			t.Fatal("backfill ran twice")
		}
	})
}

// S46 [.26]
func TestBackfillDedupe(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		e.message(message{ID: "m2", Session: "S", Task: "T", Metadata: subagentMeta("tc1", "", map[string]any{"model": "new"}), Created: t0.Add(time.Second)})
		e.message(message{ID: "m0", Session: "S", Task: "T", Metadata: subagentMeta("tc1", "", map[string]any{"model": "old"}), Created: t0})
		e.message(message{ID: "b", Session: "S", Task: "T", Metadata: subagentMeta("tc2", "", map[string]any{"model": "from-b"}), Created: t0})
		e.message(message{ID: "C", Session: "S", Task: "T", Metadata: subagentMeta("tc2", "", map[string]any{"model": "from-C"}), Created: t0})
		s := e.open(hooks{})
		rows, _ := s.ListBySession(e.ctx, "S")
		if len(rows) != 2 || *rows[1].Model != "new" || rows[1].ID != "m2" || *rows[0].Model != "from-b" {
			t.Fatalf("rows %s", mustJSON(rows))
		}
	})
}

// S47 [.27]
func TestBackfillIdentityFilter(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		e.session("", "T")
		valid := subagentMeta("tc1", "", nil)
		e.message(message{ID: "task-empty", Session: "S", Task: "", Metadata: valid, Created: t0})
		e.message(message{ID: "task-null", Session: "S", Task: nil, Metadata: valid, Created: t0})
		e.message(message{ID: "session-empty", Session: "", Task: "T", Metadata: valid, Created: t0})
		e.message(message{ID: "tc-missing", Session: "S", Task: "T", Metadata: `{"normalized":{"kind":"subagent_task"}}`, Created: t0})
		e.message(message{ID: "tc-empty", Session: "S", Task: "T", Metadata: subagentMeta("", "", nil), Created: t0})
		e.message(message{ID: "tc-number", Session: "S", Task: "T", Metadata: `{"tool_call_id":7,"normalized":{"kind":"subagent_task"}}`, Created: t0})
		e.message(message{ID: "not-subagent", Session: "S", Task: "T", Metadata: `{"tool_call_id":"tc9","normalized":{"kind":"tool"}}`, Created: t0})
		s := e.open(hooks{})
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 0 {
			t.Fatalf("%d rows from unqualified messages", n)
		}
		if st, _ := s.Migrate(e.ctx).Step(StepBackfillGuard); !st.Skipped {
			t.Fatal("backfill did not complete")
		}
		if e.keys()[KeyBackfillThrough] != "" {
			t.Fatal("unqualified message counted in the high-water mark")
		}
	})
}

// S48 [.28, .47]
func TestBackfillNeverOverwrites(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ExecutionID, f.Model = "", "live-model" }))
		s.Record(e.ctx, frame("tc3", func(f *Frame) { f.ExecutionID, f.Model = "E", "live-E" }))
		before := e.allRows()
		for i, tc := range []string{"tc1", "tc2", "tc3"} {
			e.message(message{ID: fmt.Sprint("m", i), Session: "S", Task: "T", Metadata: subagentMeta(tc, "", map[string]any{"model": "hist"}), Created: t0})
		}
		if rep := e.rerunBackfill(s); !rep.OK() {
			t.Fatalf("%+v", rep)
		}
		rows, _ := s.ListBySession(e.ctx, "S")
		got := map[string]string{}
		for _, r := range rows {
			got[r.ToolCallID+"/"+r.AgentExecutionID] = *r.Model + "/" + r.Source
		}
		want := map[string]string{"tc1/unknown": "live-model/live", "tc2/unknown": "hist/backfill",
			"tc3/E": "live-E/live", "tc3/unknown": "hist/backfill"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("rows %v", got)
		}
		after := e.allRows()
		for _, b := range before {
			if !strings.Contains(strings.Join(after, "\n"), b) {
				t.Fatalf("live row changed: %s", b)
			}
		}
	})
}

// S49 [.29], S50 [.30]: malformed values are NULL the same way on both
// engines.
func TestBackfillValueParity(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		raw := func(id, status, fields string) {
			e.message(message{ID: id, Session: "S", Task: "T", Created: t0,
				Metadata: `{"tool_call_id":"` + id + `"` + status + `,"normalized":{"kind":"subagent_task","subagent_task":{` + fields + `}}}`})
		}
		raw("base", `,"status":"started"`, `"model":"","duration_ms":1200,"tool_use_count":0,"description":"d"`)
		tokens := map[string]any{
			"t-zero": "0", "t-neg": "-5", "t-frac": "1.5", "t-text": `"abc"`, "t-huge": "1e20", "t-bool": "true",
			"t-numstr": `"5"`, "t-exp": "1e3", "t-onepoint": "1.0", "t-max": "9223372036854775807",
			"t-over": "9223372036854775808", "t-null": "null", "t-obj": "{}",
		}
		for id, v := range tokens {
			raw(id, "", `"total_tokens":`+v.(string))
		}
		asyncs := map[string]string{"a-true": "true", "a-one": "1", "a-str": `"true"`, "a-strone": `"1"`,
			"a-false": "false", "a-yes": `"yes"`, "a-onepoint": "1.0", "a-zero": "0"}
		for id, v := range asyncs {
			raw(id, "", `"is_async":`+v)
		}
		s := e.open(hooks{})
		rows, _ := s.ListBySession(e.ctx, "S")
		byID := map[string]SubagentContext{}
		for _, r := range rows {
			byID[r.ID] = r
		}
		b := byID["base"]
		if b.Model != nil || b.AgentID != nil || deref(b.DurationMs) != int64(1200) || deref(b.ToolUseCount) != int64(0) ||
			b.TotalTokens != nil || b.SettledAt != nil || deref(b.ToolStatus) != "started" || deref(b.Description) != "d" {
			t.Fatalf("base %s", mustJSON(b))
		}
		wantTokens := map[string]any{"t-exp": int64(1000), "t-onepoint": int64(1), "t-max": int64(9223372036854775807)}
		for id := range tokens {
			if got := deref(byID[id].TotalTokens); got != wantTokens[id] {
				t.Errorf("%s: tokens %v, want %v", id, got, wantTokens[id])
			}
		}
		for id := range asyncs {
			want := id == "a-true" || id == "a-one" || id == "a-str" || id == "a-strone"
			if byID[id].IsAsync != want {
				t.Errorf("%s: is_async %v", id, byID[id].IsAsync)
			}
		}
		if len(rows) != 1+len(tokens)+len(asyncs) {
			t.Fatalf("%d rows", len(rows))
		}
	})
}

// S51 [.31]
func TestBackfillMalformedMetadata(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		for i, md := range []any{nil, "", "null", "{", "abc", "[1]", `"str"`, "{\"tool_call_id\":",
			`{"tool_call_id":"tcz","normalized":{"kind":"subagent_task","subagent_task":{"model":"a\u0000b"}}}`} {
			e.message(message{ID: fmt.Sprint("bad", i), Session: "S", Task: "T", Metadata: md, Created: t0})
		}
		e.message(message{ID: "good", Session: "S", Task: "T", Metadata: subagentMeta("tc1", "", nil), Created: t0})
		s := e.open(hooks{})
		r := one(t, s, "S")
		if r.ID != "good" {
			t.Fatalf("row %+v", r)
		}
		h, err := s.Health(e.ctx)
		if err != nil || !h.Compared {
			t.Fatalf("health %+v %v", h, err)
		}
	})
}

// S52 [.30]: 10,000 qualifying messages in one statement.
func TestBackfillUnbounded(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		const n = 10_000
		tx, err := e.raw.Begin()
		if err != nil {
			t.Fatal(err)
		}
		stmt, err := tx.Prepare(e.eng().rebind(`INSERT INTO task_session_messages (id, task_session_id, task_id, metadata, created_at, updated_at) VALUES (?, 'S', 'T', ?, ?, ?)`))
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			at := e.ts(t0.Add(time.Duration(i) * time.Millisecond))
			if _, err := stmt.Exec(fmt.Sprint("m", i), subagentMeta(fmt.Sprint("tc", i), "completed", nil), at, at); err != nil {
				t.Fatal(err)
			}
		}
		stmt.Close()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		s := e.open(hooks{})
		if got := e.count(`SELECT COUNT(*) FROM task_session_subagents`); got != n {
			t.Fatalf("%d rows", got)
		}
		_ = s
	})
}

// S53 [.33, .36, .24]: failure at each point of the backfill leaves no
// rows and no keys; the next pass completes it.
func TestBackfillAtomicFailure(t *testing.T) {
	for _, kind := range []Engine{SQLite, Postgres} {
		for _, point := range []string{"backfill.max", "backfill.insert", "backfill.capture_since", "backfill.backfill_through"} {
			t.Run(string(kind)+"/"+point, func(t *testing.T) {
				e := newEnv(t, kind)
				t.Parallel()
				historyEnv(e)
				e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc1", "", nil), Created: t0})
				fail := true
				s := e.open(hooks{fail: func(p string) error {
					if fail && p == point {
						return errors.New("injected")
					}
					return nil
				}})
				if !strings.Contains(e.logs.String(), "name="+StepBackfill+" ") {
					t.Fatalf("no WARN naming the backfill:\n%s", e.logs)
				}
				k := e.keys()
				_, c := k[KeyCaptureSince]
				_, b := k[KeyBackfillThrough]
				if c || b || e.count(`SELECT COUNT(*) FROM task_session_subagents`) != 0 {
					t.Fatalf("partial backfill: keys %v", k)
				}
				fail = false
				s.Migrate(e.ctx)
				k = e.keys()
				if _, ok := k[KeyCaptureSince]; !ok || k[KeyBackfillThrough] == "" || e.count(`SELECT COUNT(*) FROM task_session_subagents`) != 1 {
					t.Fatalf("retry did not complete: %v", k)
				}
			})
		}
	}
}

// S54 [.32, .37]
func TestBackfillKeyValues(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		tMax := t0.Add(time.Hour + 123*time.Microsecond)
		e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc1", "", nil), Created: t0})
		e.message(message{ID: "m2", Session: "S", Task: "T", Metadata: subagentMeta("tc2", "", nil), Created: tMax})
		var afterInsert, beforeCommit time.Time
		s := e.open(hooks{fail: func(p string) error {
			switch p {
			case "backfill.insert":
				afterInsert = time.Now().Truncate(time.Microsecond)
			case "backfill.backfill_through":
				beforeCommit = time.Now()
			}
			return nil
		}})
		k := e.keys()
		through, ok1 := parseKey(k[KeyBackfillThrough])
		capture, ok2 := parseKey(k[KeyCaptureSince])
		if !ok1 || !through.Equal(tMax) || !ok2 || capture.Before(afterInsert) || capture.After(beforeCommit) {
			t.Fatalf("keys %v (insert %v commit %v)", k, afterInsert, beforeCommit)
		}
		for _, v := range k {
			if !strings.HasSuffix(v, "Z") {
				t.Fatalf("key %q not UTC", v)
			}
		}
		s.Migrate(e.ctx)
		if fmt.Sprint(e.keys()) != fmt.Sprint(k) {
			t.Fatal("replay changed keys")
		}
	})
}

// S55 [.38]
func TestBackfillSentinel(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		s := e.open(hooks{})
		if v, ok := e.keys()[KeyBackfillThrough]; !ok || v != "" {
			t.Fatalf("backfill_through %q %v", v, ok)
		}
		h, _ := s.Health(e.ctx)
		if !h.NoPreCaptureCoverage || h.BackfillThrough != nil {
			t.Fatalf("health %+v", h)
		}
		e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc1", "", nil), Created: t0})
		s.Migrate(e.ctx)
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 0 {
			t.Fatal("a later message was backfilled")
		}
	})
}

// S56 [.36]
func TestBackfillPartialPair(t *testing.T) {
	for _, present := range []string{KeyCaptureSince, KeyBackfillThrough} {
		t.Run(present, func(t *testing.T) {
			engines(t, func(t *testing.T, e *env) {
				historyEnv(e)
				const x = "2026-08-01T00:00:00.5Z"
				e.exec(`INSERT INTO kandev_meta (key, value) VALUES (?, ?)`, present, x)
				e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc1", "", nil), Created: t0})
				e.open(hooks{})
				k := e.keys()
				if k[present] != x {
					t.Fatalf("existing key changed: %v", k)
				}
				if present == KeyCaptureSince && k[KeyBackfillThrough] != keyText(t0) {
					t.Fatalf("backfill_through %q", k[KeyBackfillThrough])
				}
				if _, ok := parseKey(k[KeyCaptureSince]); !ok {
					t.Fatalf("keys %v", k)
				}
				if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 1 {
					t.Fatalf("%d rows", n)
				}
			})
		})
	}
}

// S57 [.36]: a message committed while the backfill runs never makes the
// key over-claim. On PostgreSQL the mark and the INSERT are one statement
// (one snapshot), so the message lands after both; the test pins that the
// combined form keeps the guarantee.
func TestBackfillNoOverClaim(t *testing.T) {
	e := newEnv(t, Postgres)
	t.Parallel()
	historyEnv(e)
	e.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc1", "", nil), Created: t0})
	e.open(hooks{fail: func(p string) error {
		if p == "backfill.max" {
			e.message(message{ID: "m2", Session: "S", Task: "T", Metadata: subagentMeta("tc2", "", nil), Created: t0.Add(time.Hour)})
		}
		return nil
	}})
	through, ok := parseKey(e.keys()[KeyBackfillThrough])
	var newest nullTime
	if err := e.raw.QueryRow(`SELECT MAX(observed_at) FROM task_session_subagents WHERE source = 'backfill'`).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	if !ok || through.After(newest.Time) {
		t.Fatalf("key %v over-claims newest covered %v", through, newest.Time)
	}
}

// S58 [.27, .33]: poison rows are skipped and never block activation.
func TestBackfillPoisonRows(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		e.exec(metaDDL)
		e.exec(subagentsTableDDL(e.eng(), "task_session_subagents"))
		e.exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, tool_call_id, source, observed_at, updated_at)
VALUES ('mX', 'S', 'T', 'tcA', 'backfill', ?, ?)`, e.ts(t0), e.ts(t0))
		e.message(message{ID: "mX", Session: "S", Task: "T", Metadata: subagentMeta("tcB", "", nil), Created: t0})
		e.message(message{ID: "ok", Session: "S", Task: "T", Metadata: subagentMeta("tcC", "", nil), Created: t0})
		if e.kind == SQLite {
			e.message(message{ID: "garbage", Session: "S", Task: "T", Metadata: subagentMeta("tcD", "", nil), Created: "garbage"})
		}
		s := e.open(hooks{})
		k := e.keys()
		if _, ok := k[KeyCaptureSince]; !ok || k[KeyBackfillThrough] != keyText(t0) {
			t.Fatalf("keys %v", k)
		}
		rows, _ := s.ListBySession(e.ctx, "S")
		var tcs []string
		for _, r := range rows {
			tcs = append(tcs, r.ToolCallID)
		}
		if fmt.Sprint(tcs) != "[tcA tcC]" {
			t.Fatalf("rows %v", tcs)
		}
	})
}

// A process killed in the middle of the backfill transaction leaves no
// rows and no keys; the next open completes the backfill. The child is
// this test binary, re-executed, that SIGKILLs itself after the INSERT.
func TestBackfillKilledMidTransaction(t *testing.T) {
	if dsn := os.Getenv("ACP_PERSISTENCE_KILL_DSN"); dsn != "" {
		e := &env{t: t, logs: &logBuffer{}, ctx: t.Context(), dsn: dsn}
		e.open(hooks{fail: func(p string) error {
			if p == "backfill.insert" {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Minute)
			}
			return nil
		}})
		t.Fatal("child survived")
		return
	}
	engines(t, func(t *testing.T, e *env) {
		historyEnv(e)
		for i := range 50 {
			e.message(message{ID: fmt.Sprint("m", i), Session: "S", Task: "T", Metadata: subagentMeta(fmt.Sprint("tc", i), "", nil), Created: t0})
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestBackfillKilledMidTransaction$", "-test.count=1")
		cmd.Env = append(os.Environ(), "ACP_PERSISTENCE_KILL_DSN="+e.dsn)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child was not killed: %v\n%s", err, out)
		}
		k := e.keys()
		_, c := k[KeyCaptureSince]
		_, b := k[KeyBackfillThrough]
		if c || b || e.count(`SELECT COUNT(*) FROM task_session_subagents`) != 0 {
			t.Fatalf("killed backfill left keys %v or rows", k)
		}
		e.open(hooks{})
		if e.count(`SELECT COUNT(*) FROM task_session_subagents`) != 50 || e.keys()[KeyBackfillThrough] != keyText(t0) {
			t.Fatalf("next open did not complete the backfill: %v", e.keys())
		}
	})
}
