package persistence

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Turns, tool calls and events written through a Writer read back on both
// engines, merged as documented: the first turn and observation of a tool
// call kept, its settlement kept, reported values replacing stored ones.
func TestTraceFactsRoundTrip(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithTraceFacts())
		if st, ok := s.Migrate(e.ctx).Step(StepTraceFacts); !ok || st.Err != nil {
			t.Fatalf("step: %+v %v", st, ok)
		}
		w := NewWriter(s, WriterOptions{})
		t0 := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
		cached := int64(7)
		w.RecordTurn(TurnFact{SessionID: "S", TurnID: "turn-a", Index: 1, AgentName: "claude", AgentVersion: "1.2", Dialect: "claude", Traceparent: "00-tp", StartedAt: t0})
		w.RecordToolCall(ToolCallFact{SessionID: "S", ToolCallID: "tc1", TurnID: "turn-a", Title: "Read", Kind: "read", Status: "pending", SeenAt: t0.Add(time.Second)})
		w.RecordToolEvent(ToolEventFact{SessionID: "S", EventID: "e1", ToolCallID: "tc1", TurnID: "turn-a", Name: "acp.permission.request", Title: "Read", Detail: "Allow, Reject", At: t0.Add(2 * time.Second)})
		if err := w.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		w.RecordToolCall(ToolCallFact{SessionID: "S", ToolCallID: "tc1", TurnID: "turn-b", Status: "completed", SeenAt: t0.Add(3 * time.Second), Settled: true})
		w.RecordToolCall(ToolCallFact{SessionID: "S", ToolCallID: "tc1", Status: "failed", SeenAt: t0.Add(9 * time.Second), Settled: true})
		w.RecordToolCall(ToolCallFact{SessionID: "C", ToolCallID: "ctc", ParentSessionID: "S", Title: "grep", SeenAt: t0.Add(4 * time.Second)})
		w.RecordToolEvent(ToolEventFact{SessionID: "S", EventID: "e1", ToolCallID: "tc1", Name: "acp.permission.request", Detail: "twice", At: t0})
		w.RecordTurn(TurnFact{SessionID: "S", TurnID: "turn-a", StopReason: "end_turn", Usage: &TurnUsage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30, CachedReadTokens: &cached}, EndedAt: t0.Add(5 * time.Second)})
		acc := w.Close(e.ctx)
		if acc.Stats.TraceFacts != 8 || acc.Stats.TraceFactsNotStored != 0 {
			t.Errorf("stats: %+v", acc.Stats)
		}

		family, err := s.TraceFamily(e.ctx, "S")
		if err != nil || strings.Join(family, ",") != "S,C" {
			t.Fatalf("family: %v %v", family, err)
		}
		got, err := e.store().ListTraceFacts(e.ctx, family...)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Turns) != 1 {
			t.Fatalf("turns: %+v", got.Turns)
		}
		tn := got.Turns[0]
		if tn.Index != 1 || tn.AgentName != "claude" || tn.AgentVersion != "1.2" || tn.Traceparent != "00-tp" || tn.StopReason != "end_turn" || tn.Usage == nil ||
			tn.Usage.TotalTokens != 30 || tn.Usage.CachedReadTokens == nil || *tn.Usage.CachedReadTokens != 7 ||
			!tn.StartedAt.Equal(t0) || !tn.EndedAt.Equal(t0.Add(5*time.Second)) {
			t.Errorf("turn: %+v", tn)
		}
		if len(got.ToolCalls) != 2 {
			t.Fatalf("tool calls: %+v", got.ToolCalls)
		}
		c := got.ToolCalls[0]
		if c.ToolCallID != "tc1" || c.TurnID != "turn-a" || c.Title != "Read" || c.Kind != "read" || c.Status != "failed" ||
			!c.FirstSeenAt.Equal(t0.Add(time.Second)) || c.SettledAt == nil || !c.SettledAt.Equal(t0.Add(3*time.Second)) {
			t.Errorf("tool call: %+v", c)
		}
		if cc := got.ToolCalls[1]; cc.SessionID != "C" || cc.ParentSessionID != "S" || cc.SettledAt != nil {
			t.Errorf("child tool call: %+v", cc)
		}
		if len(got.Events) != 1 || got.Events[0].Detail != "Allow, Reject" || !got.Events[0].At.Equal(t0.Add(2*time.Second)) {
			t.Errorf("events: %+v", got.Events)
		}
	})
}

// A session keeps at most MaxToolEventsPerSession events: the first
// stored; the cap is the database's, so a second writer is held to it.
func TestTraceFactsCapPerSession(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithTraceFacts())
		s.Migrate(e.ctx)
		for round := range 2 {
			w := NewWriter(s, WriterOptions{})
			for i := range MaxToolEventsPerSession {
				w.RecordToolEvent(ToolEventFact{SessionID: "S", EventID: string(rune('a'+round)) + itoa(i), ToolCallID: "tc", Name: "n"})
			}
			w.Close(e.ctx)
		}
		if n := e.count(`SELECT COUNT(*) FROM ` + toolEventsTable); n != MaxToolEventsPerSession {
			t.Errorf("%d events stored, want the cap %d", n, MaxToolEventsPerSession)
		}
		// Past the cap a stored tool call is still updated.
		w := NewWriter(s, WriterOptions{})
		for i := range MaxToolCallsPerSession + 1 {
			w.RecordToolCall(ToolCallFact{SessionID: "S", ToolCallID: itoa(i)})
		}
		w.Flush(e.ctx)
		w.RecordToolCall(ToolCallFact{SessionID: "S", ToolCallID: "0", Title: "kept up to date"})
		w.Close(e.ctx)
		if n := e.count(`SELECT COUNT(*) FROM ` + toolCallsTable); n != MaxToolCallsPerSession {
			t.Errorf("%d tool calls stored, want the cap %d", n, MaxToolCallsPerSession)
		}
		if n := e.count(`SELECT COUNT(*) FROM ` + toolCallsTable + ` WHERE title = 'kept up to date'`); n != 1 {
			t.Errorf("the capped session's stored tool call was not updated")
		}
	})
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// Without the option the tables are neither created nor written, and a
// read says the database keeps no trace facts; a table of one of their
// names that this layer did not create is refused, and planned as such.
func TestTraceFactsOptionAndOwnership(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{})
		w := NewWriter(s, WriterOptions{})
		w.RecordTurn(TurnFact{SessionID: "S", TurnID: "t", Index: 1})
		w.Close(e.ctx)
		if has, err := e.eng().hasRelation(e.ctx, e.raw, turnsTable); err != nil || has {
			t.Fatalf("turns table without the option: %v %v", has, err)
		}
		if _, err := s.ListTraceFacts(e.ctx, "S"); !errors.Is(err, ErrNoTraceStore) {
			t.Errorf("read without the tables: %v, want ErrNoTraceStore", err)
		}
		e.exec(`CREATE TABLE ` + toolCallsTable + ` (note TEXT)`)
		s2 := e.open(hooks{}, WithTraceFacts())
		if st, ok := s2.Migrate(e.ctx).Step(StepTraceFacts); !ok || st.Err == nil {
			t.Fatalf("a foreign %s was not refused: %+v", toolCallsTable, st)
		}
		if has, _ := e.eng().hasRelation(e.ctx, e.raw, turnsTable); has {
			t.Errorf("the refused step created %s", turnsTable)
		}
	})
}

// migrate --dry-run plans the step's DDL, and once it ran the plan is
// empty (the step is idempotent).
func TestTraceFactsPlanAndIdempotence(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.open(hooks{}) // the host's schema first
		g, err := open(e.ctx, e.dsn, false, []Option{WithTraceFacts()})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		plan, err := g.Plan(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := traceDDL(g.eng)
		if len(plan.Statements) != len(want) {
			t.Fatalf("plan before the step:\n%s", plan)
		}
		for i, st := range plan.Statements {
			if st.Step != StepTraceFacts || st.SQL != want[i] {
				t.Errorf("planned %s: %s", st.Step, st.SQL)
			}
		}
		if rep := g.Migrate(e.ctx); !rep.OK() {
			t.Fatalf("%+v", rep)
		}
		if plan, err := g.Plan(e.ctx); err != nil || !plan.Empty() {
			t.Fatalf("converged plan %v:\n%s", err, plan)
		}
		if st, _ := g.Migrate(e.ctx).Step(StepTraceFacts); st.Err != nil || !st.Skipped {
			t.Errorf("second pass: %+v, want skipped", st)
		}
	})
}
