package storesink

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/internal/pgtest"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// engines are the stores the tests run on: SQLite in a temp dir, and a
// schema of its own on the test PostgreSQL server (skipped without one).
var engines = []struct {
	name string
	dsn  func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "s.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.SchemaDSN(t, "storesink_test") }},
}

// card is a subagent card event of session (its parent session set for a
// card in a child session).
func card(session, parent, call string, status adapter.ToolStatus) sink.Event {
	return sink.Event{Dialect: "generic", At: time.Now(), Event: adapter.Event{
		Kind: adapter.EventToolUpdate, SessionID: session, ParentSessionID: parent, ToolCallID: call, Status: status,
		Payload: &adapter.Payload{Kind: adapter.PayloadKindSubagentTask, SubagentTask: &adapter.SubagentTask{Description: call}},
	}}
}

// turnIDs records events through a Sink on a fresh store and returns the
// stored turn id of each card by tool call id.
func turnIDs(t *testing.T, dsn string, steps func(s *Sink)) map[string]string {
	t.Helper()
	ctx := context.Background()
	st, err := persistence.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(st)
	steps(s)
	s.Close()
	if acc := s.Accounting(); acc.NotStored() != 0 {
		t.Fatalf("not stored: %+v", acc)
	}
	out := map[string]string{}
	for _, sid := range []string{"A", "B", "A-child"} {
		rows, err := st.ListBySession(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.TurnID != nil {
				out[r.ToolCallID] = *r.TurnID
			}
		}
	}
	return out
}

// Turn ids are per session: a prompt in session B starts B's turn and
// leaves A's alone, so one prompt of A is one turn (before, B's prompt
// reset every session's turn and A's next card was stored under a second
// turn). A child session's cards take the turn of the session that
// launched it, and A's next prompt is a new turn.
func TestTurnsArePerSession(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			turns := turnIDs(t, e.dsn(t), func(s *Sink) {
				s.BeginTurn("A")
				s.Record(card("A", "", "a1", adapter.ToolStatusInProgress))
				s.Record(withChild(card("A", "", "A-child", adapter.ToolStatusInProgress), "A-child"))
				s.BeginTurn("B")
				s.Record(card("B", "", "b1", adapter.ToolStatusInProgress))
				s.Record(card("A", "", "a2", adapter.ToolStatusComplete))
				s.Record(card("A-child", "A", "c1", adapter.ToolStatusComplete))
				s.BeginTurn("A")
				s.Record(card("A", "", "a3", adapter.ToolStatusComplete))
			})
			a := turns["a1"]
			if a == "" || turns["a2"] != a || turns["A-child"] != a || turns["c1"] != a {
				t.Errorf("A's first prompt is more than one turn: %v", turns)
			}
			if b := turns["b1"]; b == "" || b == a {
				t.Errorf("B's prompt shares A's turn: %v", turns)
			}
			if a3 := turns["a3"]; a3 == "" || a3 == a || a3 == turns["b1"] {
				t.Errorf("A's second prompt is not a turn of its own: %v", turns)
			}
		})
	}
}

// withChild makes ev the card of child session child.
func withChild(ev sink.Event, child string) sink.Event {
	ev.Child = &adapter.ChildSession{SessionID: child, ParentSessionID: ev.SessionID}
	ev.Payload.SubagentTask.ChildSessionID = child
	return ev
}

// The card's observation time is the event's wire time.
func TestObservedAtIsTheWireTime(t *testing.T) {
	ctx := context.Background()
	st, err := persistence.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(st)
	ev := card("A", "", "a1", adapter.ToolStatusComplete)
	ev.At = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Record(ev)
	s.Close()
	rows, err := st.ListBySession(ctx, "A")
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows %v: %v", rows, err)
	}
	if !rows[0].ObservedAt.Equal(ev.At) {
		t.Errorf("observed at %v, want the wire time %v", rows[0].ObservedAt, ev.At)
	}
}

// A nil Sink (--no-db) takes every call and stores nothing.
func TestNilSinkStoresNothing(t *testing.T) {
	var s *Sink
	s.BeginTurn("A")
	s.Record(card("A", "", "a1", adapter.ToolStatusComplete))
	s.FlushTurn(time.Second, 0, false)
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if acc := s.Accounting(); acc.Cards != 0 {
		t.Errorf("accounting %+v", acc)
	}
	s.Close()
}
