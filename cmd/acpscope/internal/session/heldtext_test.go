package session

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// shownText records the agent text a holder shows.
type shownText struct{ chunks []string }

func (s *shownText) AgentMessage(_, _, chunk string) { s.chunks = append(s.chunks, chunk) }
func (s *shownText) Permission(string, string)       {}

// copilotBackground returns a Copilot tracker whose session "s" runs a
// background child with agent id A1 (launch "L") not read yet.
func copilotBackground(t *testing.T) *adapter.Tracker {
	t.Helper()
	tr, err := adapter.NewTracker(adapter.Config{DialectName: adapter.DialectCopilot})
	if err != nil {
		t.Fatal(err)
	}
	feedUpdate(t, tr, `{"sessionUpdate":"tool_call","toolCallId":"L","title":"Inspect","kind":"other","status":"pending","rawInput":{"agent_type":"general-purpose","mode":"background","prompt":"p"}}`)
	feedUpdate(t, tr, `{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","rawOutput":{"content":"Agent started in background with agent_id: A1. You'll be notified."}}`)
	if !tr.HoldText("s") {
		t.Fatal("the tracker does not hold text while the child is unread")
	}
	return tr
}

func feedUpdate(t *testing.T, tr *adapter.Tracker, update string) {
	t.Helper()
	var n acp.SessionNotification
	if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+update+`}`), &n); err != nil {
		t.Fatal(err)
	}
	tr.SessionUpdate(n)
}

// Held text is released when the read answers it (the child's run left to
// its card, the rest shown in order), at the turn's end (all shown: the
// answer is not known), past the byte bound and past the age bound on the
// holder's clock; text of a session that holds nothing is shown at once.
func TestHeldTextRelease(t *testing.T) {
	t.Run("read", func(t *testing.T) {
		tr := copilotBackground(t)
		var out shownText
		h := newHeldText(tr, &out, func() time.Time { return time.Unix(0, 0) })
		h.agentText("s", "", "All done.")
		h.agentText("s", "", "ANSWER")
		h.agentText("other", "", "elsewhere")
		if !slices.Equal(out.chunks, []string{"elsewhere"}) {
			t.Fatalf("shown while held: %q", out.chunks)
		}
		feedUpdate(t, tr, `{"sessionUpdate":"tool_call","toolCallId":"r","title":"read_agent","kind":"read","status":"pending","rawInput":{"agent_id":"A1"}}`)
		h.updated("s")
		if len(out.chunks) != 1 {
			t.Fatalf("released before the answer was read: %q", out.chunks)
		}
		feedUpdate(t, tr, `{"sessionUpdate":"tool_call_update","toolCallId":"r","status":"completed","rawOutput":{"content":"Agent is idle. agent_id: A1, status: idle\n\n[Turn 0]\nANSWER"}}`)
		h.updated("s")
		h.agentText("s", "", "After.")
		if want := []string{"elsewhere", "All done.", "After."}; !slices.Equal(out.chunks, want) {
			t.Fatalf("shown %q, want %q", out.chunks, want)
		}
	})
	t.Run("turn end", func(t *testing.T) {
		var out shownText
		h := newHeldText(copilotBackground(t), &out, func() time.Time { return time.Unix(0, 0) })
		h.agentText("s", "", "one")
		h.agentText("s", "", "two")
		h.release("s")
		h.releaseAll()
		if want := []string{"one", "two"}; !slices.Equal(out.chunks, want) {
			t.Fatalf("shown %q, want %q", out.chunks, want)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		var out shownText
		h := newHeldText(copilotBackground(t), &out, func() time.Time { return time.Unix(0, 0) })
		h.agentText("s", "", "a")
		h.agentText("s", "", strings.Repeat("b", maxHeldTextBytes))
		if len(out.chunks) != 2 {
			t.Fatalf("over the byte bound, %d chunks shown", len(out.chunks))
		}
	})
	t.Run("chunks", func(t *testing.T) {
		var out shownText
		h := newHeldText(copilotBackground(t), &out, func() time.Time { return time.Unix(0, 0) })
		for range maxHeldChunks {
			h.agentText("s", "", "x")
		}
		if len(out.chunks) != 0 {
			t.Fatal("released at the chunk bound")
		}
		h.agentText("s", "", "x")
		if len(out.chunks) != maxHeldChunks+1 {
			t.Fatalf("over the chunk bound, %d chunks shown", len(out.chunks))
		}
	})
	t.Run("age", func(t *testing.T) {
		var out shownText
		now := time.Unix(0, 0)
		h := newHeldText(copilotBackground(t), &out, func() time.Time { return now })
		h.agentText("s", "", "a")
		now = now.Add(maxHeldTextAge)
		h.updated("s")
		if len(out.chunks) != 0 {
			t.Fatal("released at the age bound")
		}
		now = now.Add(time.Millisecond)
		h.updated("s")
		if !slices.Equal(out.chunks, []string{"a"}) {
			t.Fatalf("past the age bound, shown %q", out.chunks)
		}
	})
}

// discardText is a textSink that drops everything.
type discardText struct{}

func (discardText) AgentMessage(string, string, string) {}
func (discardText) Permission(string, string)           {}

// BenchmarkAgentTextChunk is the client's cost per agent_message_chunk on
// a Copilot connection with no background child (the common case): shown
// at once ("direct", the path before the holder) and through the holder,
// which asks the tracker whether to hold.
func BenchmarkAgentTextChunk(b *testing.B) {
	var n acp.SessionNotification
	if err := json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a line of the parent's answer\n"}}}`), &n); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"direct", "holder"} {
		b.Run(mode, func(b *testing.B) {
			tr, err := adapter.NewTracker(adapter.Config{DialectName: adapter.DialectCopilot})
			if err != nil {
				b.Fatal(err)
			}
			c := &scopeClient{tracker: tr, out: discardText{}}
			if mode == "holder" {
				c.held = newHeldText(tr, discardText{}, nil)
			}
			ctx := context.Background()
			for b.Loop() {
				_ = c.SessionUpdate(ctx, n)
			}
		})
	}
}
