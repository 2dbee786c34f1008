package adapter_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// TestCopilotBackgroundTextIsHeld replays GitHub Copilot 1.0.102's
// background launch the way a consumer that shows agent text does: from
// the receipt on, the parent's text is held (the child's answer arrives as
// the parent's own chunk, after the parent's "All subagents reported."),
// and once read_agent read the answer the held run equal to it is the
// child's, the rest the parent's.
func TestCopilotBackgroundTextIsHeld(t *testing.T) {
	c, err := capture.ReadFile(filepath.Join("testdata", "real", "copilot", "background.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := adapter.NewTracker(adapter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := adapter.NewReplayer(tr)
	var held, shown []string
	session := ""
	release := func() {
		owners := tr.HeldChildText(session, held)
		for i, chunk := range held {
			switch owners[i] {
			case "":
				shown = append(shown, chunk)
			case "call_launch_alpha":
			default:
				t.Errorf("%q judged the text of %q", chunk, owners[i])
			}
		}
		held = nil
	}
	for _, e := range c.Entries {
		if m, err := capture.ParseMessage(e.Msg); err == nil && m.Method == acp.ClientMethodSessionUpdate {
			var n acp.SessionNotification
			if json.Unmarshal(m.Params, &n) == nil && n.Update.AgentMessageChunk != nil {
				session = string(n.SessionId)
				text := n.Update.AgentMessageChunk.Content.Text.Text
				if len(held) > 0 || tr.HoldText(session) {
					held = append(held, text)
				} else {
					shown = append(shown, text)
				}
			}
		}
		if err := r.Feed(string(e.From), e.Msg); err != nil {
			t.Fatal(err)
		}
		if len(held) > 0 && !tr.HoldText(session) {
			release()
		}
	}
	release()
	if want := []string{"All subagents reported.", "All subagents reported."}; !slices.Equal(shown, want) {
		t.Errorf("shown as the parent's: %q, want %q", shown, want)
	}
}

// A read_agent call gives the child's card every turn it has not seen:
// the last one its result, earlier ones its earlier results; a later read
// of the same turns changes nothing, a new turn moves the result on; the
// status word follows, the tool status never moves back; a read of an
// unknown agent, or one that failed, reads nothing.
func TestCopilotReadAgentTurns(t *testing.T) {
	var events []adapter.Event
	tr, err := adapter.NewTracker(adapter.Config{DialectName: adapter.DialectCopilot, OnEvent: func(e adapter.Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(update string) {
		t.Helper()
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+update+`}`), &n); err != nil {
			t.Fatal(err)
		}
		tr.SessionUpdate(n)
	}
	read := func(id, agent, content string) {
		feed(`{"sessionUpdate":"tool_call","toolCallId":"` + id + `","title":"read_agent","kind":"read","status":"pending","rawInput":{"agent_id":"` + agent + `","since_turn":0}}`)
		c, _ := json.Marshal(content)
		feed(`{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"completed","rawOutput":{"content":` + string(c) + `}}`)
	}
	last := func() *adapter.SubagentTask {
		t.Helper()
		for i := len(events) - 1; i >= 0; i-- {
			if events[i].ToolCallID == "L" && events[i].Payload != nil {
				return events[i].Payload.SubagentTask
			}
		}
		t.Fatal("no card event")
		return nil
	}
	feed(`{"sessionUpdate":"tool_call","toolCallId":"L","title":"Inspect","kind":"other","status":"pending","rawInput":{"agent_type":"general-purpose","description":"Inspect","mode":"background","prompt":"p"}}`)
	feed(`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","rawOutput":{"content":"Agent started in background with agent_id: A1. You'll be notified."}}`)
	if !tr.HoldText("s") {
		t.Fatal("text not held while the background child is unread")
	}
	read("r0", "A1", "Agent is running. agent_id: A1, agent_type: general-purpose, status: running, elapsed: 0s, total_turns: 0")
	if got := last(); got.Status != "running" || got.ResultText != "" || !tr.HoldText("s") {
		t.Fatalf("a read without turns: %+v, hold %t", got, tr.HoldText("s"))
	}
	read("r1", "A1", "Agent is idle (waiting for messages). agent_id: A1, agent_type: general-purpose, status: idle, description: Inspect, elapsed: 1s, total_turns: 2\n\n[Turn 0]\nFIRST\n\n[Turn 1]\nSECOND\nline two")
	got := last()
	if got.ResultText != "SECOND\nline two" || !slices.Equal(got.EarlierResults, []string{"FIRST"}) || got.Status != "idle" {
		t.Fatalf("after two turns: %+v", got)
	}
	if tr.HoldText("s") {
		t.Fatal("text still held once the answer was read")
	}
	n := len(events)
	read("r2", "A1", "Agent is idle (waiting for messages). agent_id: A1, status: idle\n\n[Turn 0]\nFIRST\n\n[Turn 1]\nSECOND\nline two")
	for _, e := range events[n:] {
		if e.ToolCallID == "L" {
			t.Fatalf("a read of turns already held changed the card: %+v", e.Payload.SubagentTask)
		}
	}
	read("r3", "A1", "Agent completed. agent_id: A1, status: completed\n\n[Turn 2]\nTHIRD")
	got = last()
	if got.ResultText != "THIRD" || !slices.Equal(got.EarlierResults, []string{"FIRST", "SECOND\nline two"}) || got.Status != "completed" {
		t.Fatalf("after a third turn: %+v", got)
	}
	read("r4", "B9", "Agent is idle. agent_id: B9, status: idle\n\n[Turn 0]\nOTHER")
	feed(`{"sessionUpdate":"tool_call","toolCallId":"r5","title":"read_agent","kind":"read","status":"pending","rawInput":{"agent_id":"A1"}}`)
	feed(`{"sessionUpdate":"tool_call_update","toolCallId":"r5","status":"failed","rawOutput":{"content":"Agent is idle. agent_id: A1, status: failed\n\n[Turn 3]\nNOPE"}}`)
	if got = last(); got.ResultText != "THIRD" || got.Status != "completed" {
		t.Fatalf("an unknown agent's or a failed read changed the card: %+v", got)
	}
	for _, e := range events {
		if e.ToolCallID == "L" && e.Status != "" && e.Status != adapter.ToolStatusPending && e.Status != adapter.ToolStatusComplete {
			t.Fatalf("the card's tool status moved to %q", e.Status)
		}
	}
	owners := tr.HeldChildText("s", []string{"Done. ", "TH", "IRD", "\n", "tail"})
	if want := []string{"", "L", "L", "", ""}; !slices.Equal(owners, want) {
		t.Errorf("held text judged %q, want %q", owners, want)
	}
}

// TestParseCopilotAgentRead pins the read_agent content reader.
func TestParseCopilotAgentRead(t *testing.T) {
	for _, tt := range []struct {
		text  string
		ok    bool
		want  adapter.CopilotAgentRead
		turns string
	}{
		{"Agent is idle (waiting for messages). agent_id: c0399ce9-60df, agent_type: general-purpose, status: idle, description: Inspect alpha, elapsed: 0s, total_turns: 1\n\n[Turn 0]\nANSWER-ALPHA", true,
			adapter.CopilotAgentRead{AgentID: "c0399ce9-60df", Status: "idle"}, "0=ANSWER-ALPHA"},
		{"agent_id: a\n[Turn 3]\n x \n[Turn 4]\n\n", true, adapter.CopilotAgentRead{AgentID: "a"}, "3=x|4="},
		{"Agent started in background with agent_id: a. You'll be notified", true, adapter.CopilotAgentRead{AgentID: "a"}, ""},
		{"no id here, status: idle\n[Turn 0]\nx", false, adapter.CopilotAgentRead{}, ""},
		{"", false, adapter.CopilotAgentRead{}, ""},
	} {
		got, ok := adapter.ParseCopilotAgentRead(tt.text)
		var turns []string
		for _, turn := range got.Turns {
			turns = append(turns, strings.Join([]string{itoa(turn.N), turn.Text}, "="))
		}
		if ok != tt.ok || got.AgentID != tt.want.AgentID || got.Status != tt.want.Status || strings.Join(turns, "|") != tt.turns {
			t.Errorf("%q: %+v %t", tt.text, got, ok)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
