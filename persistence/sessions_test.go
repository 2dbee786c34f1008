package persistence

import (
	"slices"
	"testing"
	"time"
)

// seedSessions stores three sessions:
//   - "s-a" (execution "x-cursor-1"): two turns, a complete card "a1"
//     launching the child session "s-c", an open card "a2" described
//     "100%_done";
//   - "s-b" (execution "x-claude-1"): one failed card, one cancelled;
//   - "s-c", the child: one complete card whose child_session_id points
//     back at "s-a" (a cycle a hostile agent could report).
func seedSessions(t *testing.T, e *env, s *Store) {
	t.Helper()
	up := func(f Frame) {
		t.Helper()
		if f.TaskID == "" {
			f.TaskID = f.TaskSessionID
		}
		if err := s.EnsureSession(e.ctx, f.TaskSessionID, f.TaskID); err != nil {
			t.Fatal(err)
		}
		if err := s.Upsert(e.ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	up(Frame{TaskSessionID: "s-a", ToolCallID: "a1", ExecutionID: "x-cursor-1", TurnID: "t1",
		ToolStatus: "completed", Description: "Scan the repo", ChildSessionID: "s-c", ObservedAt: t0})
	up(Frame{TaskSessionID: "s-a", ToolCallID: "a2", ExecutionID: "x-cursor-1", TurnID: "t2",
		ToolStatus: "in_progress", Description: "100%_done", Model: "Composer", ObservedAt: t0.Add(time.Second)})
	up(Frame{TaskSessionID: "s-b", ToolCallID: "b1", ExecutionID: "x-claude-1", TurnID: "t3",
		ToolStatus: "failed", SubagentType: "Explore", ObservedAt: t0.Add(2 * time.Second)})
	up(Frame{TaskSessionID: "s-b", ToolCallID: "b2", ExecutionID: "x-claude-1", TurnID: "t3",
		ToolStatus: "cancelled", ObservedAt: t0.Add(3 * time.Second)})
	up(Frame{TaskSessionID: "s-c", ToolCallID: "c1", ExecutionID: "x-cursor-1", TurnID: "t1",
		ToolStatus: "completed", ChildSessionID: "s-a", ObservedAt: t0.Add(500 * time.Millisecond)})
}

func sessionIDs(sums []SessionSummary) []string {
	var ids []string
	for _, m := range sums {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestListSessions(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		seedSessions(t, e, s)
		e.session("s-empty", "task-e") // a host session without cards
		e.exec(`UPDATE task_sessions SET started_at = ? WHERE id = ?`, e.ts(t0.Add(time.Hour)), "s-empty")

		all, err := s.ListSessions(e.ctx, SessionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sessionIDs(all), []string{"s-empty", "s-b", "s-c", "s-a"}; !slices.Equal(got, want) {
			t.Fatalf("order: got %v, want %v", got, want)
		}
		byID := map[string]SessionSummary{}
		for _, m := range all {
			byID[m.ID] = m
		}
		a := byID["s-a"]
		if a.Cards != 2 || a.Turns != 2 || a.Open != 1 || a.Status != SessionOpen ||
			!a.StartedAt.Equal(t0) || !a.LastUpdate.Equal(t0.Add(time.Second)) ||
			!slices.Equal(a.Executions, []string{"x-cursor-1"}) || !slices.Equal(a.ChildSessions, []string{"s-c"}) {
			t.Errorf("s-a: %+v", a)
		}
		if b := byID["s-b"]; b.Cards != 2 || b.Turns != 1 || b.Failed != 1 || b.Cancelled != 1 || b.Status != SessionError {
			t.Errorf("s-b: %+v", b)
		}
		if c := byID["s-c"]; c.Status != SessionComplete || c.Cards != 1 {
			t.Errorf("s-c: %+v", c)
		}
		if m := byID["s-empty"]; m.Status != SessionEmpty || m.Cards != 0 || m.TaskID != "task-e" ||
			!m.StartedAt.Equal(t0.Add(time.Hour)) || m.Executions != nil {
			t.Errorf("s-empty: %+v", m)
		}

		for _, tc := range []struct {
			name string
			f    SessionFilter
			want []string
		}{
			{"execution prefix", SessionFilter{ExecutionPrefix: "x-claude-"}, []string{"s-b"}},
			{"execution prefix is not a pattern", SessionFilter{ExecutionPrefix: "x-%"}, nil},
			{"text in session id", SessionFilter{Text: "S-E"}, []string{"s-empty"}},
			{"text in description", SessionFilter{Text: "scan THE"}, []string{"s-a"}},
			{"text in type", SessionFilter{Text: "explore"}, []string{"s-b"}},
			{"text in model", SessionFilter{Text: "composer"}, []string{"s-a"}},
			{"percent is literal", SessionFilter{Text: "0%_d"}, []string{"s-a"}},
			{"underscore is literal", SessionFilter{Text: "s_a"}, nil},
			{"both", SessionFilter{ExecutionPrefix: "x-cursor-", Text: "c1"}, []string{"s-c"}},
			{"limit", SessionFilter{Limit: 2}, []string{"s-empty", "s-b"}},
		} {
			got, err := s.ListSessions(e.ctx, tc.f)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !slices.Equal(sessionIDs(got), tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, sessionIDs(got), tc.want)
			}
		}

		one, ok, err := s.Session(e.ctx, "s-b")
		if err != nil || !ok || one.Cards != 2 || one.Status != SessionError {
			t.Errorf("Session(s-b) = %+v, %v, %v", one, ok, err)
		}
		if _, ok, err := s.Session(e.ctx, "nope"); ok || err != nil {
			t.Errorf("Session(nope) = %v, %v", ok, err)
		}
	})
}

func TestSessionFamily(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		seedSessions(t, e, s)
		fam, err := s.SessionFamily(e.ctx, "s-a")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fam, []string{"s-a", "s-c"}) { // the cycle back to s-a stops
			t.Fatalf("family: %v", fam)
		}
		fam, cards, err := s.ListFamily(e.ctx, "s-a")
		if err != nil || !slices.Equal(fam, []string{"s-a", "s-c"}) {
			t.Fatal(fam, err)
		}
		var got []string
		for _, c := range cards {
			got = append(got, c.TaskSessionID+"/"+c.ToolCallID)
		}
		if want := []string{"s-a/a1", "s-a/a2", "s-c/c1"}; !slices.Equal(got, want) {
			t.Fatalf("cards: got %v, want %v", got, want)
		}
		if fam, err := s.SessionFamily(e.ctx, "unknown"); err != nil || !slices.Equal(fam, []string{"unknown"}) {
			t.Fatalf("unknown: %v %v", fam, err)
		}
	})
}

func TestChanges(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		empty, err := s.Changes(e.ctx)
		if err != nil || empty.Cards != 0 {
			t.Fatalf("empty store: %+v %v", empty, err)
		}
		seedSessions(t, e, s)
		mark := func(ids ...string) string {
			t.Helper()
			m, err := s.Changes(e.ctx, ids...)
			if err != nil {
				t.Fatal(err)
			}
			return m.Token()
		}
		all, a, b := mark(), mark("s-a"), mark("s-b")
		if all == empty.Token() || a == b {
			t.Fatalf("marks do not tell sessions apart: %s %s %s", all, a, b)
		}
		if mark() != all || mark("s-a") != a {
			t.Fatal("mark moved without a write")
		}
		// A later observation of an existing card moves its session's mark only.
		if err := s.Upsert(e.ctx, Frame{TaskSessionID: "s-a", TaskID: "s-a", ToolCallID: "a2", ExecutionID: "x-cursor-1",
			ToolStatus: "completed", ObservedAt: t0.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if mark("s-a") == a || mark() == all || mark("s-b") != b {
			t.Fatal("an update did not move exactly the marks it should")
		}
		// A new card moves the count.
		a = mark("s-a")
		if err := s.Upsert(e.ctx, Frame{TaskSessionID: "s-a", TaskID: "s-a", ToolCallID: "a3",
			ObservedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if mark("s-a") == a {
			t.Fatal("an insert did not move the mark")
		}
	})
}
