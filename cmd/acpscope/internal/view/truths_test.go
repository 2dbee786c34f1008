package view

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// jsonLines decodes the --json lines of b by tool call id.
func jsonLines(t *testing.T, b *Board) map[string]map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, b, "claude"); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		out[m["tool_call_id"].(string)] = m
	}
	return out
}

// Every --json card names its parent card: a nested tool call its
// launching call, a card inside a child session that session's own card
// (in the parent session); top-level cards name none.
func TestJSONNamesEveryParentCard(t *testing.T) {
	b := NewBoard()
	child := sub(adapter.EventToolCall, "c1", "", adapter.ToolStatusInProgress, adapter.SubagentTask{Description: "Child", ChildSessionID: "c1"})
	child.Child = &adapter.ChildSession{SessionID: "c1", ParentSessionID: "s1", Live: true}
	b.Apply(child)
	grand := sub(adapter.EventToolCall, "c2", "", adapter.ToolStatusInProgress, adapter.SubagentTask{Description: "Grandchild", ChildSessionID: "c2"})
	grand.SessionID, grand.ParentSessionID = "c1", "s1"
	grand.Child = &adapter.ChildSession{SessionID: "c2", ParentSessionID: "c1", Live: true}
	b.Apply(grand)
	b.Apply(sub(adapter.EventToolCall, "toolu_N", "toolu_P", adapter.ToolStatusComplete, adapter.SubagentTask{Description: "Nested"}))
	lines := jsonLines(t, b)
	if l := lines["c1"]; l["parent_tool_call_id"] != "" || l["parent_session_id"] != nil {
		t.Errorf("top level: %v", l)
	}
	if l := lines["c2"]; l["parent_tool_call_id"] != "c1" || l["parent_session_id"] != "s1" || l["session_id"] != "c1" {
		t.Errorf("card in a child session: %v", l)
	}
	if l := lines["toolu_N"]; l["parent_tool_call_id"] != "toolu_P" || l["parent_session_id"] != nil {
		t.Errorf("nested tool call: %v", l)
	}
}

// A `session` tool-call content (TaskStop, SendMessage) is carried to the
// card of the child it names, as referenced_by.
func TestJSONCarriesSessionReferences(t *testing.T) {
	b := NewBoard()
	child := sub(adapter.EventToolCall, "c1", "", adapter.ToolStatusInProgress, adapter.SubagentTask{Description: "Child", ChildSessionID: "c1"})
	child.Child = &adapter.ChildSession{SessionID: "c1", ParentSessionID: "s1", Live: true}
	b.Apply(child)
	b.Apply(adapter.Event{Kind: adapter.EventToolCall, SessionID: "s1", ToolCallID: "t_stop", Title: "TaskStop", Status: adapter.ToolStatusComplete,
		SessionRefs: []adapter.SessionRef{{SessionID: "c1", Known: true}, {SessionID: "ghost"}}})
	refs, _ := jsonLines(t, b)["c1"]["referenced_by"].([]any)
	if len(refs) != 1 || refs[0] != "t_stop" {
		t.Errorf("referenced_by %v", refs)
	}
}

// unknown is its own tool status in --json and on the card, never shown
// as running; a failure shows its reason in the payload; a finished child
// running again shows live.
func TestUnknownFailureAndRunningAgainAreShown(t *testing.T) {
	b := NewBoard()
	unknown := sub(adapter.EventToolCall, "c1", "", adapter.ToolStatusUnknown, adapter.SubagentTask{Description: "Lost", Status: "unknown"})
	unknown.Child = &adapter.ChildSession{SessionID: "c1", ParentSessionID: "s1", State: "unknown"}
	b.Apply(unknown)
	failed := sub(adapter.EventToolCall, "c2", "", adapter.ToolStatusError, adapter.SubagentTask{Description: "Fetch", ErrorMessage: "API error: 400"})
	b.Apply(failed)
	again := sub(adapter.EventToolCall, "c3", "", adapter.ToolStatusComplete, adapter.SubagentTask{Description: "Again", Live: true,
		ResultText: "second", EarlierResults: []string{"first"}})
	again.Child = &adapter.ChildSession{SessionID: "c3", ParentSessionID: "s1", State: "running", Live: true}
	b.Apply(again)
	lines := jsonLines(t, b)
	if got := lines["c1"]["tool_status"]; got != "unknown" {
		t.Errorf("unknown card's tool_status %v", got)
	}
	task := func(id string) map[string]any {
		return lines[id]["normalized"].(map[string]any)["subagent_task"].(map[string]any)
	}
	if got := task("c2")["error_message"]; got != "API error: 400" {
		t.Errorf("error_message %v", got)
	}
	if got := task("c3"); got["live"] != true || got["result_text"] != "second" || len(got["earlier_results"].([]any)) != 1 {
		t.Errorf("running again: %v", got)
	}
	if cardStatus(b.cards[cardKey{"s1", "c1"}]) != "unknown" || cardStatus(b.cards[cardKey{"s1", "c3"}]) != "running again" {
		t.Errorf("card words: %q %q", cardStatus(b.cards[cardKey{"s1", "c1"}]), cardStatus(b.cards[cardKey{"s1", "c3"}]))
	}
	if n := b.Running(); n != 1 {
		t.Errorf("running %d, want 1 (the child run again; not the unknown one)", n)
	}
}

// Two agent messages with different message ids are two lines, never run
// together; chunks of one message still join.
func TestTwoAgentMessagesAreTwoLines(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf, false)
	term.AgentMessage("s1", "m1", "Let me ")
	term.AgentMessage("s1", "m1", "look.")
	term.AgentMessage("s1", "m2", "All subagents reported.")
	term.Flush()
	if out := buf.String(); out != "agent: Let me look.\nagent: All subagents reported.\n" {
		t.Errorf("output:\n%s", out)
	}
}

// A card in an AIR child's earlier generation session
// (`a1:generation:2`, while the card's child session is generation 3)
// names the task's one card, keyed a1, as its parent; a session of a task
// no card holds keeps its own id.
func TestJSONNamesTheAIRGenerationsCard(t *testing.T) {
	b := NewBoard()
	child := sub(adapter.EventToolCall, "a1", "", adapter.ToolStatusInProgress, adapter.SubagentTask{Description: "Explore", ChildSessionID: "a1:generation:3"})
	child.Child = &adapter.ChildSession{SessionID: "a1:generation:3", ParentSessionID: "s1", Live: true}
	b.Apply(child)
	for _, s := range []string{"a1", "a1:generation:2", "a1:generation:3", "b:generation:2"} {
		nested := sub(adapter.EventToolCall, "n-"+s, "", adapter.ToolStatusInProgress, adapter.SubagentTask{Description: "Nested"})
		nested.SessionID, nested.ParentSessionID = s, "s1"
		b.Apply(nested)
	}
	lines := jsonLines(t, b)
	for s, want := range map[string]string{"a1": "a1", "a1:generation:2": "a1", "a1:generation:3": "a1", "b:generation:2": "b:generation:2"} {
		if got := lines["n-"+s]["parent_tool_call_id"]; got != want || lines["n-"+s]["parent_session_id"] != "s1" {
			t.Errorf("a card in %s: parent %v in %v, want %s in s1", s, got, lines["n-"+s]["parent_session_id"], want)
		}
	}
}
