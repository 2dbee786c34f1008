package view

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// runningCards returns n events of running subagents with 1 KiB
// descriptions: the shape that made the board's memory bound quadratic.
func runningCards(n int) []adapter.Event {
	desc := strings.Repeat("d", 1<<10)
	evs := make([]adapter.Event, n)
	for i := range evs {
		evs[i] = sub(adapter.EventToolCall, fmt.Sprintf("call-%07d", i), "", adapter.ToolStatusInProgress,
			adapter.SubagentTask{Description: desc, SubagentType: "general-purpose"})
	}
	return evs
}

// Past its memory bound, with every card a running subagent, the board
// looks at one card per card it forgets: an update costs the same at any
// number of cards (the bound used to rescan every card for each new one).
func TestBoardForgetsInConstantWorkPerUpdate(t *testing.T) {
	b := NewBoard()
	b.budget = 256 << 10 // about 250 cards of 1 KiB
	evs := runningCards(5000)
	for _, ev := range evs {
		b.Apply(ev)
	}
	if b.bytes > b.budget {
		t.Fatalf("board holds %d bytes, budget %d", b.bytes, b.budget)
	}
	if b.Forgotten == 0 || b.visited > b.Forgotten {
		t.Fatalf("looked at %d cards to forget %d (%d updates)", b.visited, b.Forgotten, len(evs))
	}
	cards := b.Cards()
	if last := cards[len(cards)-1]; last.Event.ToolCallID != evs[len(evs)-1].ToolCallID {
		t.Fatalf("the latest card was forgotten: last kept %s", last.Event.ToolCallID)
	}
	if b.Running() != len(cards) {
		t.Fatalf("Running() = %d, want %d", b.Running(), len(cards))
	}
	// Finishing the oldest kept card makes it the first to go.
	oldest := cards[0].Event
	oldest.Status = adapter.ToolStatusComplete
	b.Apply(oldest)
	b.Apply(sub(adapter.EventToolCall, "one-more", "", adapter.ToolStatusInProgress,
		adapter.SubagentTask{Description: strings.Repeat("d", 1<<10)}))
	if _, kept := b.cards[cardKey{oldest.SessionID, oldest.ToolCallID}]; kept {
		t.Fatalf("the finished card was kept while running ones were forgotten")
	}
	if got := len(b.Cards()); b.Running() != got {
		t.Fatalf("Running() = %d after the update, want %d", b.Running(), got)
	}
}

// The running count follows every change of a card: it finishes, a child
// session stops being live, a tool call becomes a subagent.
func TestBoardRunningCountFollowsCards(t *testing.T) {
	b := NewBoard()
	b.Apply(adapter.Event{Kind: adapter.EventToolCall, SessionID: "s1", ToolCallID: "a", Status: adapter.ToolStatusInProgress})
	if b.Running() != 0 {
		t.Fatalf("a tool call counted as a running subagent")
	}
	b.Apply(sub(adapter.EventToolUpdate, "a", "", adapter.ToolStatusInProgress, adapter.SubagentTask{}))
	child := sub(adapter.EventToolCall, "c", "", adapter.ToolStatusInProgress, adapter.SubagentTask{})
	child.Child = &adapter.ChildSession{SessionID: "child", Live: true}
	b.Apply(child)
	if b.Running() != 2 {
		t.Fatalf("Running() = %d, want 2", b.Running())
	}
	child.Child = &adapter.ChildSession{SessionID: "child", Live: false, State: "unknown"}
	b.Apply(child)
	b.Apply(sub(adapter.EventToolUpdate, "a", "", adapter.ToolStatusComplete, adapter.SubagentTask{}))
	if b.Running() != 0 {
		t.Fatalf("Running() = %d, want 0", b.Running())
	}
}

// BenchmarkLiveViewRunningCards is the live view's and --json's time per
// card with every card a running subagent of 1 KiB: flat from 1,000 to
// 200,000 cards, past the board's memory bound (about 62,000 such cards),
// with the progress line (a terminal) and without (plain lines, --json).
func BenchmarkLiveViewRunningCards(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000, 200000} {
		evs := runningCards(n)
		for _, animate := range []bool{false, true} {
			b.Run(fmt.Sprintf("cards=%d/terminal=%v", n, animate), func(b *testing.B) {
				benchmarkLiveView(b, evs, animate)
			})
		}
	}
}

func benchmarkLiveView(b *testing.B, evs []adapter.Event, animate bool) {
	for b.Loop() {
		term := NewTerminal(io.Discard, animate)
		for _, ev := range evs {
			term.Event(ev)
		}
		if err := term.WriteJSON(io.Discard, "claude"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(evs)), "ns/card")
}
