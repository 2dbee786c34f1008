package persistence

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// frame is a fully identified frame for session S, task T, turn U1, exec E.
func frame(tc string, mods ...func(*Frame)) *Frame {
	f := &Frame{TaskSessionID: "S", TaskID: "T", ToolCallID: tc, ExecutionID: "E", TurnID: "U1", ObservedAt: t0}
	for _, m := range mods {
		m(f)
	}
	return f
}

// liveEnv is a migrated store with session S (task T) and turn U1.
func liveEnv(t *testing.T, e *env) *Store {
	if e.hostShape {
		e.hostTables()
	}
	s := e.store()
	e.session("S", "T")
	e.turn("U1", "S")
	return s
}

// S17 [.1]
func TestFirstFrame(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus = "pending" }))
		r := one(t, s, "S")
		if r.Source != SourceLive || r.AgentExecutionID != "E" || !r.ObservedAt.Equal(t0) || r.SettledAt != nil {
			t.Fatalf("row %+v", r)
		}
		if r.ID == "" || len(r.ID) != 36 {
			t.Fatalf("id %q is not a UUID", r.ID)
		}
	})
}

// S18 [.2]: observed_at is the first committed observation.
func TestObservedAtFirstCommit(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		t2 := t0.Add(time.Minute)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ObservedAt = t2 }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ObservedAt = t0 }))
		if r := one(t, s, "S"); !r.ObservedAt.Equal(t2) {
			t.Fatalf("observed_at %v, want %v", r.ObservedAt, t2)
		}
	})
}

// S19 [.3]
func TestIdentitySkip(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		for _, blank := range []func(*Frame){
			func(f *Frame) { f.TaskSessionID = "" },
			func(f *Frame) { f.TaskID = "" },
			func(f *Frame) { f.ToolCallID = "" },
		} {
			before := s.Counters()
			s.Record(e.ctx, frame("tc1", blank, func(f *Frame) { f.TotalTokens = -1; f.DurationMs = -2 }))
			after := s.Counters()
			if after.Attempted-before.Attempted != 1 || after.SkippedNoIdentity-before.SkippedNoIdentity != 1 ||
				after.AnomalousValue != before.AnomalousValue || after.Persisted != before.Persisted {
				t.Fatalf("counters %+v → %+v", before, after)
			}
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 0 {
			t.Fatalf("%d rows", n)
		}
		if err := s.Upsert(e.ctx, Frame{TaskSessionID: "S", TaskID: "T"}); err != ErrNoIdentity {
			t.Fatalf("Upsert without identity: %v", err)
		}
	})
}

// S20 [.46, .47]
func TestExecutionID(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ExecutionID = "E-1 " }))
		if c := s.Counters(); c.UnknownExecution != 0 {
			t.Fatalf("unknown_execution %d", c.UnknownExecution)
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ExecutionID = "" }))
		if c := s.Counters(); c.UnknownExecution != 1 {
			t.Fatalf("unknown_execution %d", c.UnknownExecution)
		}
		rows, _ := s.ListBySession(e.ctx, "S")
		var execs []string
		for _, r := range rows {
			execs = append(execs, r.AgentExecutionID)
		}
		slices.Sort(execs)
		if !slices.Equal(execs, []string{"E-1 ", "unknown"}) {
			t.Fatalf("executions %q", execs)
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE agent_execution_id IS NULL OR agent_execution_id = ''`); n != 0 {
			t.Fatal("NULL or empty execution id stored")
		}
	})
}

// S21, S22 [.4]
func TestTurnKeptAndFilledForward(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		e.turn("U2", "S")
		s.Record(e.ctx, frame("tc1"))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TurnID = "U2" }))
		if r := one(t, s, "S"); *r.TurnID != "U1" {
			t.Fatalf("turn %v", *r.TurnID)
		}
		if rows, _ := s.ListByTurn(e.ctx, "U2"); len(rows) != 0 {
			t.Fatalf("re-attributed to U2: %+v", rows)
		}
		// Fill-forward from an empty turn.
		e.session("S2", "T")
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.TaskSessionID = "S2"; f.TurnID = "" }))
		if r := one(t, s, "S2"); r.TurnID != nil {
			t.Fatalf("turn %v", *r.TurnID)
		}
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.TaskSessionID = "S2"; f.TurnID = "U1" }))
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.TaskSessionID = "S2"; f.TurnID = "U2" }))
		if r := one(t, s, "S2"); r.TurnID == nil || *r.TurnID != "U1" {
			t.Fatalf("turn %v", deref(r.TurnID))
		}
	})
}

// S23 [.5]
func TestOneRowPerKey(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		for i := range 5 {
			s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TotalTokens = int64(i + 1) }))
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 1 {
			t.Fatalf("%d rows", n)
		}
	})
}

func fullFrame(tc string) *Frame {
	return frame(tc, func(f *Frame) {
		f.ParentToolCallID, f.SubagentType, f.Description = "P", "general", "d"
		f.AgentID, f.ChildSessionID, f.Model, f.Status = "a1", "child", "m", "completed"
		f.ToolStatus, f.TotalTokens, f.DurationMs, f.ToolUseCount, f.IsAsync = "in_progress", 500, 1200, ptr(7), true
	})
}

// S24 [.6]
func TestAbsentNeverBlanks(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, fullFrame("tc1"))
		before := e.allRows()
		s.Record(e.ctx, &Frame{TaskSessionID: "S", TaskID: "T", ToolCallID: "tc1", ExecutionID: "E", ObservedAt: t0})
		if after := e.allRows(); !slices.Equal(before, after) {
			t.Fatalf("changed:\n%v\n%v", before, after)
		}
	})
}

// S25 [.7]
func TestReplaceWhenPresent(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Model, f.TotalTokens, f.Status = "a", 100, "started" }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Model, f.TotalTokens, f.Status = "b", 250, "completed" }))
		r := one(t, s, "S")
		if *r.Model != "b" || *r.TotalTokens != 250 || *r.AgentStatus != "completed" {
			t.Fatalf("row %+v", r)
		}
	})
}

// S26 [.8], S27 [.9]
func TestNestedAndAsyncLaunch(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ParentToolCallID = "P" }))
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.Status, f.IsAsync, f.ToolStatus = "async_launched", true, "completed" }))
		rows, _ := s.ListBySession(e.ctx, "S")
		if len(rows) != 2 || deref(rows[0].ParentToolCallID) != "P" {
			t.Fatalf("rows %+v", rows)
		}
		r := rows[1]
		if !r.IsAsync || r.TotalTokens != nil || r.DurationMs != nil || r.ToolUseCount != nil {
			t.Fatalf("async row %+v", r)
		}
		// is_async is sticky.
		s.Record(e.ctx, frame("tc2"))
		if rows, _ := s.ListBySession(e.ctx, "S"); !rows[1].IsAsync {
			t.Fatal("is_async cleared")
		}
	})
}

// S28 [.10, .11]
func TestZeroSemantics(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TotalTokens, f.DurationMs, f.ToolUseCount = 0, 0, ptr(0) }))
		if n := e.count(`SELECT COUNT(total_tokens) + COUNT(duration_ms) FROM task_session_subagents`); n != 0 {
			t.Fatalf("zero stored as a measurement (%d)", n)
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE tool_use_count = 0`); n != 1 {
			t.Fatal("reported zero tool_use_count not stored as 0")
		}
		s.Record(e.ctx, frame("tc2"))
		if n := e.count(`SELECT COUNT(tool_use_count) FROM task_session_subagents`); n != 1 {
			t.Fatalf("nil tool_use_count stored (%d)", n)
		}
	})
}

// S29, S30 [.10, .12]
func TestLaterZeroOrNegative(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TotalTokens, f.DurationMs = 500, 1200 }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TotalTokens, f.DurationMs = 0, 0 }))
		if c := s.Counters(); c.AnomalousValue != 0 {
			t.Fatal("zero counted anomalous")
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.TotalTokens, f.DurationMs = -1, -1 }))
		r := one(t, s, "S")
		if *r.TotalTokens != 500 || *r.DurationMs != 1200 || s.Counters().AnomalousValue != 1 {
			t.Fatalf("row %+v counters %+v", r, s.Counters())
		}
		// Negative first: only its own fields go NULL, counted once.
		e.session("S2", "T")
		s.Record(e.ctx, frame("tc2", func(f *Frame) {
			f.TaskSessionID, f.TotalTokens, f.DurationMs, f.ToolUseCount, f.Description = "S2", -5, 1200, ptr(-1), "d"
		}))
		r = one(t, s, "S2")
		if r.TotalTokens != nil || r.ToolUseCount != nil || *r.DurationMs != 1200 || *r.Description != "d" {
			t.Fatalf("row %+v", r)
		}
		if c := s.Counters(); c.AnomalousValue != 2 || c.Persisted != 4 {
			t.Fatalf("counters %+v", c)
		}
	})
}

// S31 [.13], S32 [.14]
func TestNeverTerminalAndUnknownStatus(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus = "pending" }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus = "in_progress" }))
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.ToolStatus, f.Status = "pending", "zzz-new" }))
		rows, _ := s.ListBySession(e.ctx, "S")
		if len(rows) != 2 || *rows[0].ToolStatus != "in_progress" || rows[0].SettledAt != nil {
			t.Fatalf("rows %+v", rows)
		}
		if *rows[1].AgentStatus != "zzz-new" || rows[1].SettledAt != nil {
			t.Fatalf("row %+v", rows[1])
		}
	})
}

// S33 [.15]
func TestTerminalSet(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		for i, st := range TerminalToolStatuses {
			at := t0.Add(time.Duration(i) * time.Second)
			s.Record(e.ctx, frame("term-"+st, func(f *Frame) { f.ToolStatus, f.ObservedAt = st, at }))
		}
		for _, st := range []string{"pending", "in_progress", "running", "started", "Completed", ""} {
			s.Record(e.ctx, frame("open-"+st, func(f *Frame) { f.ToolStatus = st }))
		}
		s.Record(e.ctx, frame("agent-completed", func(f *Frame) { f.ToolStatus, f.Status = "in_progress", "completed" }))
		rows, _ := s.ListBySession(e.ctx, "S")
		for _, r := range rows {
			terminal := strings.HasPrefix(r.ToolCallID, "term-")
			if terminal != (r.SettledAt != nil) {
				t.Fatalf("%s settled=%v", r.ToolCallID, r.SettledAt)
			}
			if terminal && !r.SettledAt.Equal(r.ObservedAt) {
				t.Fatalf("%s settled %v observed %v", r.ToolCallID, r.SettledAt, r.ObservedAt)
			}
		}
	})
}

// S34 [.15, .16]
func TestSettleOnceFreezeFill(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		t1, t2 := t0, t0.Add(time.Minute)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus, f.ObservedAt = "completed", t1 }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus, f.ObservedAt = "failed", t2 }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus, f.Model, f.ObservedAt = "running", "m", t2 }))
		r := one(t, s, "S")
		if !r.SettledAt.Equal(t1) || *r.ToolStatus != "completed" || *r.Model != "m" {
			t.Fatalf("row %+v", r)
		}
	})
}

// S35 [.1, .28]
func TestFrameOntoBackfillRow(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		e.exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, tool_call_id, agent_execution_id, source, observed_at, updated_at)
VALUES ('m1', 'S', 'T', 'tc1', 'unknown', 'backfill', ?, ?)`, e.ts(t0), e.ts(t0))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ExecutionID, f.Model, f.ObservedAt = "", "m", t0.Add(time.Hour) }))
		r := one(t, s, "S")
		if r.Source != SourceBackfill || !r.ObservedAt.Equal(t0) || *r.Model != "m" || r.ID != "m1" {
			t.Fatalf("row %+v", r)
		}
	})
}

// S36 [.6, .10]
func TestUpsertNormalises(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		if err := s.Upsert(e.ctx, *frame("tc1", func(f *Frame) { f.Model, f.TotalTokens = "m", 500 })); err != nil {
			t.Fatal(err)
		}
		before := e.allRows()
		in := *frame("tc1", func(f *Frame) { f.Model, f.TotalTokens = "", 0 })
		copyIn := in
		if err := s.Upsert(e.ctx, in); err != nil {
			t.Fatal(err)
		}
		if after := e.allRows(); !slices.Equal(before, after) {
			t.Fatalf("changed:\n%v\n%v", before, after)
		}
		if in != copyIn {
			t.Fatal("input mutated")
		}
		if s.Counters() != (Counters{}) {
			t.Fatal("Upsert moved counters")
		}
	})
}

// S37 [.2, .15]
func TestZeroObservedAt(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		before := time.Now().Add(-time.Second)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus, f.ObservedAt = "completed", time.Time{} }))
		r := one(t, s, "S")
		if r.SettledAt == nil || !r.SettledAt.Equal(r.ObservedAt) || r.ObservedAt.Before(before) || !r.UpdatedAt.Equal(r.ObservedAt) {
			t.Fatalf("row %+v", r)
		}
	})
}

// S38 [.5]
func TestMonotonicUpdatedAt(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ObservedAt = t0.Add(3 * time.Minute) }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ObservedAt = t0.Add(time.Second) }))
		if r := one(t, s, "S"); !r.UpdatedAt.Equal(t0.Add(3 * time.Minute)) {
			t.Fatalf("updated_at %v", r.UpdatedAt)
		}
		// A later frame moves it forward, through a non-UTC location and
		// with sub-microsecond noise that must be truncated.
		later := t0.Add(5*time.Minute + 999).In(time.FixedZone("x", -10*3600))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ObservedAt = later }))
		if r := one(t, s, "S"); !r.UpdatedAt.Equal(t0.Add(5 * time.Minute)) {
			t.Fatalf("updated_at %v", r.UpdatedAt)
		}
	})
}

// S39 [.15, .16]: 1,000 shuffled random frame sequences keep the invariant
// settled_at IS NOT NULL ⇔ tool_status ∈ terminal set.
func TestSettledInvariant(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		statuses := []string{"", "pending", "in_progress", "running", "started", "Completed", "complete", "completed", "success", "error", "failed", "cancelled"}
		rng := rand.New(rand.NewPCG(1, 2))
		var frames []*Frame
		for seq := range 1000 {
			tc := "tc" + string(rune('a'+seq%26)) + strings.Repeat("x", seq/26)
			for range 1 + rng.IntN(3) {
				st := statuses[rng.IntN(len(statuses))]
				at := t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
				frames = append(frames, frame(tc, func(f *Frame) { f.ToolStatus, f.ObservedAt = st, at }))
			}
		}
		rng.Shuffle(len(frames), func(i, j int) { frames[i], frames[j] = frames[j], frames[i] })
		ctx := context.Background()
		for _, f := range frames {
			s.Record(ctx, f)
		}
		if c := s.Counters(); c.Failed != 0 {
			t.Fatalf("counters %+v", c)
		}
		bad := e.count(`SELECT COUNT(*) FROM task_session_subagents
WHERE (settled_at IS NOT NULL) <> (tool_status IS NOT NULL AND tool_status IN ` + terminalList() + `)`)
		if bad != 0 {
			t.Fatalf("%d rows break the invariant", bad)
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 1000 {
			t.Fatalf("%d rows", n)
		}
	})
}

// Agent text that PostgreSQL cannot hold (NUL, invalid UTF-8) is stored
// the same way on both engines, and the frame is not lost; ids are kept
// exactly (TestOpaqueIDsRoundTrip).
func TestAgentTextCleaned(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc\x001", func(f *Frame) { f.Model, f.ExecutionID = "m\xff", "E\x00" }))
		r := one(t, s, "S")
		if r.ToolCallID != "tc\x001" || *r.Model != "m\uFFFD" || r.AgentExecutionID != "E\x00" || s.Counters().Failed != 0 {
			t.Fatalf("row %q %q %q counters %+v", r.ToolCallID, *r.Model, r.AgentExecutionID, s.Counters())
		}
	})
}
