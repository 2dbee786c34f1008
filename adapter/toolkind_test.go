package adapter_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// An event carries the tool call's ACP kind (the latest one reported; an
// update without a kind keeps it), for sinks that name tool calls by kind
// (the trace export); the event's JSON form stays as it was.
func TestEventCarriesToolKind(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{})
	tr.SessionUpdate(notif(t, `{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"r1","title":"Read a.go","kind":"read"}}`))
	tr.SessionUpdate(toolUpdate(t, "s", "r1", "completed"))
	tr.SessionUpdate(notif(t, `{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"r1","kind":"search"}}`))
	tr.Flush()
	evs := c.all()
	if len(evs) != 3 {
		t.Fatalf("got %d events, want 3", len(evs))
	}
	for i, want := range []string{"read", "read", "search"} {
		if evs[i].ToolKind != want {
			t.Errorf("event %d: ToolKind %q, want %q", i, evs[i].ToolKind, want)
		}
	}
	b, err := json.Marshal(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "read\"") && strings.Contains(string(b), "kind\":\"read") {
		t.Errorf("the event's JSON form gained the tool kind: %s", b)
	}
}
