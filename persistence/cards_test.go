package persistence

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// Two agent executions of one session (a session loaded by a new agent
// process) each keep their own row of a tool call; ListCards and the
// session summary show the call once, by the collapse rules of cards.go,
// while ListBySession keeps both rows.
func TestCardsCollapseExecutions(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		up := func(f Frame) {
			t.Helper()
			f.TaskID = f.TaskSessionID
			if err := s.EnsureSession(e.ctx, f.TaskSessionID, f.TaskID); err != nil {
				t.Fatal(err)
			}
			if err := s.Upsert(e.ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		cards := func() map[string]SubagentContext {
			t.Helper()
			rows, err := s.ListCards(e.ctx, "S")
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]SubagentContext{}
			for _, r := range rows {
				if _, dup := out[r.ToolCallID]; dup {
					t.Fatalf("%s listed twice: %+v", r.ToolCallID, rows)
				}
				out[r.ToolCallID] = r
			}
			return out
		}
		// Execution E1 (the first process): tc1 settled completed in turn
		// U1 with model m1 and 500 tokens; tc2 still open in U2.
		up(Frame{TaskSessionID: "S", ToolCallID: "tc1", ExecutionID: "E1", TurnID: "U1", ToolStatus: "in_progress",
			Description: "scan", Model: "m1", TotalTokens: 500, IsAsync: true, ObservedAt: t0})
		up(Frame{TaskSessionID: "S", ToolCallID: "tc1", ExecutionID: "E1", ToolStatus: "completed", ObservedAt: t0.Add(time.Second)})
		up(Frame{TaskSessionID: "S", ToolCallID: "tc2", ExecutionID: "E1", TurnID: "U2", ToolStatus: "in_progress", ObservedAt: t0.Add(2 * time.Second)})
		// Execution E2 (the second process) replays tc1: open again, no
		// model, its own turn U3; and a card of another session.
		up(Frame{TaskSessionID: "S", ToolCallID: "tc1", ExecutionID: "E2", TurnID: "U3", ToolStatus: "in_progress",
			Description: "scan (replayed)", ObservedAt: t0.Add(time.Minute)})
		up(Frame{TaskSessionID: "other", ToolCallID: "tc1", ExecutionID: "E2", TurnID: "U9", ToolStatus: "failed", ObservedAt: t0})

		c := cards()
		if len(c) != 2 {
			t.Fatalf("cards: %+v", c)
		}
		one := c["tc1"]
		// Settled beats open: the replay still under way does not reopen it.
		if deref(one.ToolStatus) != "completed" || one.AgentExecutionID != "E1" || one.SettledAt == nil ||
			!one.SettledAt.Equal(t0.Add(time.Second)) {
			t.Errorf("tc1 status: %v via %s, settled %v", deref(one.ToolStatus), one.AgentExecutionID, one.SettledAt)
		}
		// First seen and turn from the earliest; facts from the status row;
		// latest update; async if any.
		if !one.ObservedAt.Equal(t0) || deref(one.TurnID) != "U1" || deref(one.Description) != "scan" ||
			deref(one.Model) != "m1" || deref(one.TotalTokens) != int64(500) || !one.IsAsync ||
			!one.UpdatedAt.Equal(t0.Add(time.Minute)) || one.TaskSessionID != "S" || one.ToolCallID != "tc1" {
			t.Errorf("tc1: %+v", one)
		}
		sum, ok, err := s.Session(e.ctx, "S")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if sum.Cards != 2 || sum.Turns != 2 || sum.Open != 1 || sum.Status != SessionOpen ||
			!slices.Equal(sum.Executions, []string{"E1", "E2"}) || !sum.StartedAt.Equal(t0) {
			t.Errorf("summary: %+v", sum)
		}

		// E2 settles tc1 as cancelled and tc2 completes in E1: the newest
		// settlement gives the status and the facts, the first one the time;
		// what E2 never learned (tokens) stays E1's.
		up(Frame{TaskSessionID: "S", ToolCallID: "tc1", ExecutionID: "E2", ToolStatus: "cancelled", Model: "m2", ObservedAt: t0.Add(2 * time.Minute)})
		up(Frame{TaskSessionID: "S", ToolCallID: "tc2", ExecutionID: "E1", ToolStatus: "completed", ObservedAt: t0.Add(3 * time.Minute)})
		c = cards()
		one = c["tc1"]
		if deref(one.ToolStatus) != "cancelled" || one.AgentExecutionID != "E2" || !one.SettledAt.Equal(t0.Add(time.Second)) ||
			deref(one.Model) != "m2" || deref(one.Description) != "scan (replayed)" || deref(one.TotalTokens) != int64(500) ||
			!one.IsAsync || deref(one.TurnID) != "U1" || !one.ObservedAt.Equal(t0) {
			t.Errorf("tc1 after E2 settled: %+v", one)
		}
		// A late frame of E1 (settled already, frozen) moves neither row's
		// status; the card stays E2's.
		up(Frame{TaskSessionID: "S", ToolCallID: "tc1", ExecutionID: "E1", ToolStatus: "failed", ObservedAt: t0.Add(4 * time.Minute)})
		if one = cards()["tc1"]; deref(one.ToolStatus) != "cancelled" {
			t.Errorf("a late frame of E1 changed the card: %+v", one)
		}
		all, err := s.ListSessions(e.ctx, SessionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range all {
			if m.ID == "S" && (m.Cards != 2 || m.Open != 0 || m.Cancelled != 1 || m.Failed != 0 || m.Status != SessionCancelled) {
				t.Errorf("ListSessions S: %+v", m)
			}
		}
		fam, famCards, err := s.ListFamily(e.ctx, "S")
		if err != nil || len(fam) != 1 || len(famCards) != 2 || famCards[0].ToolCallID != "tc1" || famCards[1].ToolCallID != "tc2" {
			t.Errorf("ListFamily: %v %+v %v", fam, famCards, err)
		}
		raw, err := s.ListBySession(e.ctx, "S")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range raw {
			keys = append(keys, r.ToolCallID+"/"+r.AgentExecutionID)
		}
		if want := []string{"tc1/E1", "tc2/E1", "tc1/E2"}; !slices.Equal(keys, want) {
			t.Errorf("ListBySession: %v, want the raw rows %v", keys, want)
		}
	})
}

// A session one execution wrote is read without the collapse's windows
// (ListCards' fast path); the result must be the collapse's own, row for
// row and in order, so the two paths are one rule.
func TestCardsOneExecutionReadAsTheCollapse(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		if err := s.EnsureSession(e.ctx, "S", "S"); err != nil {
			t.Fatal(err)
		}
		base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		for i, tc := range []string{"b", "a", "c", "a"} {
			f := Frame{TaskSessionID: "S", TaskID: "S", ToolCallID: tc, ExecutionID: "E1", TurnID: "U1",
				Description: "d" + tc, ToolStatus: []string{"in_progress", "pending", "complete", "complete"}[i],
				ObservedAt: base.Add(time.Duration(i) * time.Second)}
			if err := s.Upsert(e.ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		fast, err := s.ListCards(e.ctx, "S")
		if err != nil {
			t.Fatal(err)
		}
		collapsed, err := s.query(e.ctx, s.eng.rebind(orderedCardsSQL(s.eng, "task_session_id = ?")), encodeID("S"))
		if err != nil {
			t.Fatal(err)
		}
		if len(fast) != 3 || !reflect.DeepEqual(fast, collapsed) {
			t.Fatalf("fast path:\n%+v\ncollapse:\n%+v", fast, collapsed)
		}
	})
}
