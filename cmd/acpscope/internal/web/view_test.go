package web

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

var t0 = time.Date(2026, 8, 12, 10, 0, 0, 0, time.UTC)

// ctxRow builds a stored card: observed at t0+start seconds, settled at
// t0+end seconds (end < 0: open).
func ctxRow(session, call, parent, child string, start, end int, status string) persistence.SubagentContext {
	c := persistence.SubagentContext{TaskSessionID: session, ToolCallID: call, AgentExecutionID: "acpscope-claude-1",
		ObservedAt: t0.Add(time.Duration(start) * time.Second), Source: persistence.SourceLive}
	c.UpdatedAt = c.ObservedAt
	if parent != "" {
		c.ParentToolCallID = &parent
	}
	if child != "" {
		c.ChildSessionID = &child
	}
	if status != "" {
		c.ToolStatus = &status
	}
	if end >= 0 {
		s := t0.Add(time.Duration(end) * time.Second)
		c.SettledAt, c.UpdatedAt = &s, s
	}
	return c
}

func parents(v SessionView) []int {
	var out []int
	for _, c := range v.Cards {
		out = append(out, c.Parent)
	}
	return out
}

func TestBuildViewTree(t *testing.T) {
	rows := []persistence.SubagentContext{
		ctxRow("root", "a", "", "", 0, 10, "completed"),       // 0: top
		ctxRow("root", "b", "a", "", 1, 3, "failed"),          // 1: under a
		ctxRow("root", "c", "b", "", 2, -1, "in_progress"),    // 2: under b, open
		ctxRow("root", "d", "missing", "", 3, 4, "cancelled"), // 3: parent not stored: top
		ctxRow("root", "e", "e", "", 4, 5, "completed"),       // 4: its own parent: top
		ctxRow("root", "f", "g", "", 5, 6, "completed"),       // 5: f ↔ g cycle
		ctxRow("root", "g", "f", "", 6, 7, "completed"),       // 6
		ctxRow("root", "s", "", "kid", 7, 9, "completed"),     // 7: launches session kid
		ctxRow("kid", "k1", "", "", 8, 9, "completed"),        // 8: under s
		ctxRow("kid", "k2", "k1", "root", 8, 9, "completed"),  // 9: under k1; its child link to root is ignored
	}
	v := BuildView(SessionRow{ID: "root"}, rows, nil)
	got := parents(v)
	// The f ↔ g cycle is cut at one of its cards; the other keeps its link.
	if !(got[5] == -1 && got[6] == 5) && !(got[5] == 6 && got[6] == -1) {
		t.Fatalf("cycle not cut: %v", got)
	}
	got[5], got[6] = 0, 0
	if want := []int{-1, 0, 1, -1, -1, 0, 0, -1, 7, 8}; !slices.Equal(got, want) {
		t.Fatalf("parents: got %v, want %v", got, want)
	}
	var depths []int
	for _, c := range v.Cards {
		depths = append(depths, c.Depth)
	}
	if depths[2] != 2 || depths[9] != 2 || depths[0] != 0 {
		t.Fatalf("depths: %v", depths)
	}
	if v.Span != 10_000 || v.Cards[2].End != 10_000 || v.Cards[2].Status != "open" ||
		v.Cards[1].Status != "error" || v.Cards[3].Status != "cancelled" || v.Cards[0].Status != "complete" {
		t.Fatalf("bars: span %d, open card %+v", v.Span, v.Cards[2])
	}
}

func TestAssignLanes(t *testing.T) {
	rows := []persistence.SubagentContext{
		ctxRow("s", "a", "", "", 0, 10, "completed"),
		ctxRow("s", "b", "", "", 1, 3, "completed"),
		ctxRow("s", "c", "", "", 2, 5, "completed"),
		ctxRow("s", "d", "", "", 4, 6, "completed"), // b's lane is free again at 4
		ctxRow("s", "e", "", "", 11, 12, "completed"),
	}
	v := BuildView(SessionRow{ID: "s"}, rows, nil)
	var lanes []int
	for _, c := range v.Cards {
		lanes = append(lanes, c.Lane)
	}
	if want := []int{0, 1, 2, 1, 0}; !slices.Equal(lanes, want) || v.Lanes != 3 {
		t.Fatalf("lanes: got %v (%d), want %v (3)", lanes, v.Lanes, want)
	}
	// No two bars of one lane overlap.
	for i, a := range v.Cards {
		for j, b := range v.Cards {
			if i < j && a.Lane == b.Lane && a.Start <= b.End && b.Start <= a.End {
				t.Fatalf("cards %d and %d overlap in lane %d", i, j, a.Lane)
			}
		}
	}
}

func TestBuildViewEmptyAndLongChain(t *testing.T) {
	if v := BuildView(SessionRow{ID: "s"}, nil, nil); len(v.Cards) != 0 || v.Origin != nil {
		t.Fatalf("empty view: %+v", v)
	}
	// A 20,000-deep chain, listed child first: depths without recursion.
	const n = 20000
	rows := make([]persistence.SubagentContext, n)
	for i := range rows {
		parent := ""
		if i < n-1 {
			parent = "a" + strconv.Itoa(i+1)
		}
		rows[i] = ctxRow("s", "a"+strconv.Itoa(i), parent, "", i, i+1, "completed")
	}
	v := BuildView(SessionRow{ID: "s"}, rows, nil)
	if v.Cards[0].Depth != n-1 || v.Cards[n-1].Depth != 0 {
		t.Fatalf("depths %d, %d", v.Cards[0].Depth, v.Cards[n-1].Depth)
	}
}

// Each card carries the number of the turn it began in, numbered in the
// order the turns began, and the timeline marks where each turn began; a
// card without a stored turn has none.
func TestBuildViewTurns(t *testing.T) {
	turn := func(c persistence.SubagentContext, id string) persistence.SubagentContext {
		c.TurnID = &id
		return c
	}
	rows := []persistence.SubagentContext{
		turn(ctxRow("s", "late", "", "", 30, 40, "completed"), "turn-b"),
		turn(ctxRow("s", "first", "", "", 0, 10, "completed"), "turn-a"),
		turn(ctxRow("s", "second", "", "", 5, 50, "completed"), "turn-a"),
		ctxRow("s", "untracked", "", "", 20, 25, "completed"),
	}
	v := BuildView(SessionRow{ID: "s"}, rows, nil)
	var got []int
	for _, c := range v.Cards {
		got = append(got, c.Turn)
	}
	if !slices.Equal(got, []int{2, 1, 1, 0}) || v.TurnCount != 2 {
		t.Fatalf("turns %v, count %d; want [2 1 1 0], 2", got, v.TurnCount)
	}
	if len(v.Turns) != 2 || v.Turns[0] != (TurnMark{N: 1, ID: "turn-a", Start: 0}) ||
		v.Turns[1] != (TurnMark{N: 2, ID: "turn-b", Start: 30000}) {
		t.Fatalf("marks %+v", v.Turns)
	}
	many := make([]persistence.SubagentContext, MaxTurnMarks+5)
	for i := range many {
		many[i] = turn(ctxRow("s", strconv.Itoa(i), "", "", i, -1, ""), strconv.Itoa(i))
	}
	if v := BuildView(SessionRow{ID: "s"}, many, nil); len(v.Turns) != MaxTurnMarks || v.TurnCount != len(many) ||
		v.Cards[len(many)-1].Turn != len(many) {
		t.Fatalf("%d marks of %d turns, last card's turn %d", len(v.Turns), v.TurnCount, v.Cards[len(many)-1].Turn)
	}
}

// Turns that began in the same millisecond are numbered by their first
// cards' full observed times, and at the same instant in the store's
// order, never by their random turn ids (a fast agent's two turns were
// numbered either way before).
func TestBuildViewTurnsWithinAMillisecond(t *testing.T) {
	turn := func(c persistence.SubagentContext, id string, ns int) persistence.SubagentContext {
		c.TurnID = &id
		c.ObservedAt = c.ObservedAt.Add(time.Duration(ns))
		return c
	}
	for _, ids := range [][2]string{{"turn-z", "turn-a"}, {"turn-a", "turn-z"}} {
		rows := []persistence.SubagentContext{
			turn(ctxRow("s", "T1", "", "", 0, 1, "completed"), ids[0], 100),
			turn(ctxRow("s", "T2", "", "", 0, 1, "completed"), ids[1], 200),
			turn(ctxRow("s", "T3", "", "", 0, 1, "completed"), ids[0]+"-same", 300),
			turn(ctxRow("s", "T4", "", "", 0, 1, "completed"), ids[1]+"-same", 300),
		}
		v := BuildView(SessionRow{ID: "s"}, rows, nil)
		var got []int
		for _, c := range v.Cards {
			got = append(got, c.Turn)
		}
		if !slices.Equal(got, []int{1, 2, 3, 4}) {
			t.Errorf("turn ids %v: turns %v, want [1 2 3 4]", ids, got)
		}
	}
}

// Facts reach the cards by key: a card in a child session hangs under the
// card its parent session fact names (tool call id = the child session),
// even when that card records no child session; the unknown status is its
// own class; a summary of no card is ignored.
func TestBuildViewFacts(t *testing.T) {
	rows := []persistence.SubagentContext{
		ctxRow("root", "kid", "", "", 0, -1, "unknown"), // 0: no child_session_id recorded
		ctxRow("kid", "k1", "", "", 1, 2, "failed"),     // 1: under kid by its fact
		ctxRow("root", "x", "", "", 3, 9, "completed"),  // 2
	}
	exec := rows[0].AgentExecutionID
	v := BuildView(SessionRow{ID: "root"}, rows, []persistence.CardFactsSummary{
		{SessionID: "kid", ExecutionID: exec, ToolCallID: "k1", ParentSessionID: "root", ErrorMessage: "boom\u202e"},
		{SessionID: "root", ExecutionID: "other-execution", ToolCallID: "x", ErrorMessage: "not this card's"},
	})
	if got := parents(v); !slices.Equal(got, []int{-1, 0, -1}) {
		t.Fatalf("parents %v", got)
	}
	if c := v.Cards[1]; c.ErrorMessage != "boom\ufffd" || c.ParentSessionID != "root" || c.Status != "error" {
		t.Errorf("k1: %+v", c)
	}
	if c := v.Cards[0]; c.Status != "unknown" || c.End != 0 {
		t.Errorf("kid: status %q ends %d", c.Status, c.End)
	}
	if c := v.Cards[2]; c.ErrorMessage != "" {
		t.Errorf("x took another execution's facts: %q", c.ErrorMessage)
	}
}

// TestBuildViewAIRGenerations: an AIR child run three times is one card
// keyed by its task id (a1), whose child_session_id is the latest
// generation; the nested tool calls of every generation, the middle one
// too, go under it.
func TestBuildViewAIRGenerations(t *testing.T) {
	rows := []persistence.SubagentContext{
		ctxRow("root", "a1", "", "a1:generation:3", 0, 9, "completed"), // 0: the child's card
		ctxRow("a1", "t1", "", "", 1, 2, "completed"),                  // 1: generation 1
		ctxRow("a1:generation:2", "t2", "", "", 3, 4, "completed"),     // 2: the middle generation
		ctxRow("a1:generation:3", "t3", "", "", 5, 6, "completed"),     // 3: the latest
		ctxRow("b:generation:2", "t4", "", "", 5, 6, "completed"),      // 4: a task no card holds: top
	}
	exec := rows[0].AgentExecutionID
	var facts []persistence.CardFactsSummary
	for _, r := range rows[1:] {
		facts = append(facts, persistence.CardFactsSummary{SessionID: r.TaskSessionID, ExecutionID: exec, ToolCallID: r.ToolCallID, ParentSessionID: "root"})
	}
	v := BuildView(SessionRow{ID: "root"}, rows, facts)
	if got, want := parents(v), []int{-1, 0, 0, 0, -1}; !slices.Equal(got, want) {
		t.Fatalf("parents: got %v, want %v", got, want)
	}
}
