package adapter_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// A prompt cut at MaxFieldBytes carries its full length (PromptBytes);
// the length lapses when another, whole text replaces the cut one, and a
// repeat of the long text is cut and marked again.
func TestCutTextKeepsItsLength(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{})
	big := strings.Repeat("x", adapter.MaxFieldBytes+500)
	raw, _ := json.Marshal(map[string]any{"prompt": big})
	tr.SessionUpdate(notif(t, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"task","rawInput":`+string(raw)+`}}`))
	last := func() *adapter.SubagentTask {
		ev := c.all()
		return ev[len(ev)-1].Payload.SubagentTask
	}
	if got := last(); len(got.Prompt) != adapter.MaxFieldBytes || got.PromptBytes != int64(len(big)) || got.ResultBytes != 0 {
		t.Fatalf("cut prompt: %d bytes kept, PromptBytes %d, ResultBytes %d", len(got.Prompt), got.PromptBytes, got.ResultBytes)
	}
	tr.Do(func(tx *adapter.Tx) {
		card, _ := tx.Card("s1", "t1")
		card.Task().Prompt = "whole"
		tx.Emit(adapter.EventToolUpdate, card)
	})
	if got := last(); got.Prompt != "whole" || got.PromptBytes != 0 {
		t.Fatalf("replaced prompt %q, PromptBytes %d", got.Prompt, got.PromptBytes)
	}
	tr.Do(func(tx *adapter.Tx) {
		card, _ := tx.Card("s1", "t1")
		card.Task().Prompt = big
		tx.Emit(adapter.EventToolUpdate, card)
	})
	if got := last(); len(got.Prompt) != adapter.MaxFieldBytes || got.PromptBytes != int64(len(big)) {
		t.Fatalf("long again: %d bytes kept, PromptBytes %d", len(got.Prompt), got.PromptBytes)
	}
}
