package view

import (
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// manyCards is a board of n subagent cards, each with one nested tool call.
func manyCards(n int) *Board {
	b := NewBoard()
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		b.Apply(sub(adapter.EventToolCall, id, "", adapter.ToolStatusComplete, adapter.SubagentTask{Description: "d", SubagentType: "t"}))
		b.Apply(adapter.Event{Kind: adapter.EventToolCall, SessionID: "s1", ToolCallID: id + "_read", ParentToolCallID: id, Title: "Read", Status: adapter.ToolStatusComplete})
	}
	return b
}

// The plain summary is linear in cards: its memory per card does not grow
// with the number of cards (a per-card scan of the board made 8,000 cards
// cost gigabytes of allocation and seconds of time).
func TestSummaryIsLinearInCards(t *testing.T) {
	perCard := func(n int) float64 {
		b := manyCards(n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		WriteCards(io.Discard, b)
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
	}
	small, large := perCard(500), perCard(8000)
	if large > 3*small+1024 {
		t.Fatalf("summary memory per card grows with the cards: %.0f B/card at 500, %.0f B/card at 8,000", small, large)
	}
}

// BenchmarkSummary8000 writes the summary of 8,000 subagent cards, plain
// and as --json lines; the two should be within a small factor.
func BenchmarkSummary8000(b *testing.B) {
	board := manyCards(8000)
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			WriteCards(io.Discard, board)
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := WriteJSON(io.Discard, board, "claude"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
