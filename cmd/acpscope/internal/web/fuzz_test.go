package web

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// FuzzBuildView lays out cards whose links (parent tool call, child
// session, the parent session of their facts), statuses and times come
// from the input, as a hostile agent could store
// them: it never panics, every parent chain ends (no cycle), no two bars
// of a lane overlap, and turns are numbered in the order they began, a
// card's turn mark no later than the card.
func FuzzBuildView(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 5, 1, 1, 0, 1, 3, 2, 2, 1, 2, 9})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18})
	f.Fuzz(func(t *testing.T, data []byte) {
		id := func(b byte) string { return string(rune('a' + b%4)) }
		var rows []persistence.SubagentContext
		for i := 0; i+4 < len(data) && len(rows) < 200; i += 5 {
			b := data[i : i+5]
			c := persistence.SubagentContext{TaskSessionID: "s" + id(b[0]>>4), ToolCallID: id(b[0]),
				ObservedAt: t0.Add(time.Duration(b[3]) * time.Millisecond), AgentExecutionID: string(b[4:5])}
			c.UpdatedAt = c.ObservedAt
			if b[1]%3 != 0 {
				p := id(b[1])
				c.ParentToolCallID = &p
			}
			if b[2]%3 == 1 {
				ch := "s" + id(b[2])
				c.ChildSessionID = &ch
			}
			if b[3]%4 != 0 {
				turn := id(b[3] >> 2)
				c.TurnID = &turn
			}
			if b[4]%4 == 2 {
				unknown := "unknown"
				c.ToolStatus = &unknown
			}
			if b[4]%2 == 1 {
				s := c.ObservedAt.Add(time.Duration(b[4]) * time.Millisecond)
				c.SettledAt, c.UpdatedAt = &s, s
			}
			rows = append(rows, c)
		}
		// Facts name a parent session for every third row: any session,
		// the row's own included.
		var facts []persistence.CardFactsSummary
		for i, r := range rows {
			if i%3 == 0 {
				facts = append(facts, persistence.CardFactsSummary{SessionID: r.TaskSessionID, ExecutionID: r.AgentExecutionID,
					ToolCallID: r.ToolCallID, ParentSessionID: "s" + id(byte(i)), ErrorMessage: r.ToolCallID})
			}
		}
		v := BuildView(SessionRow{ID: "sa"}, rows, facts)
		for i, m := range v.Turns {
			if m.N != i+1 || (i > 0 && m.Start < v.Turns[i-1].Start) {
				t.Fatalf("turn marks out of order: %+v", v.Turns)
			}
		}
		for i, c := range v.Cards {
			if (c.Turn == 0) != (rows[i].TurnID == nil) || c.Turn > v.TurnCount ||
				(c.Turn > 0 && c.Turn <= len(v.Turns) && v.Turns[c.Turn-1].Start > c.Start) {
				t.Fatalf("card %d: turn %d of %d, marks %+v", i, c.Turn, v.TurnCount, v.Turns)
			}
		}
		for i, c := range v.Cards {
			steps, j := 0, i
			for j >= 0 {
				if steps > len(v.Cards) {
					t.Fatalf("card %d: parent chain does not end", i)
				}
				j = v.Cards[j].Parent
				steps++
			}
			if c.Depth != steps-1 || c.Parent == i || c.End < c.Start {
				t.Fatalf("card %d: depth %d over %d steps, parent %d, bar %d-%d", i, c.Depth, steps, c.Parent, c.Start, c.End)
			}
			for k, d := range v.Cards[:i] {
				if d.Lane == c.Lane && d.Start <= c.End && c.Start <= d.End {
					t.Fatalf("cards %d and %d overlap in lane %d", k, i, c.Lane)
				}
			}
		}
	})
}

// FuzzAgentOf reads an agent from any stored execution id without
// panicking, and reads back what ExecutionID wrote.
func FuzzAgentOf(f *testing.F) {
	f.Add("acpscope-claude-0123abcd", "cursor")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, execution, dialect string) {
		if a := AgentOf(execution); !strings.Contains(execution, a) {
			t.Fatalf("AgentOf(%q) = %q", execution, a)
		}
		run := hex.EncodeToString([]byte(execution))
		if got := AgentOf(ExecutionID(dialect, run)); run != "" && got != dialect {
			t.Fatalf("AgentOf(ExecutionID(%q, %q)) = %q", dialect, run, got)
		}
	})
}
