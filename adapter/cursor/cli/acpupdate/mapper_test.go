package acpupdate

import (
	"encoding/json"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli"
)

func encode(t *testing.T, ns []acp.SessionNotification) []string {
	t.Helper()
	var out []string
	for _, n := range ns {
		b, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func TestMapTurn(t *testing.T) {
	m := New("sess-1")
	var got []string
	for _, ev := range []cli.Event{
		{Kind: cli.EventSessionStarted, SessionID: "c"},
		{Kind: cli.EventThinkingDelta, Text: "hmm"},
		{Kind: cli.EventToolStarted, Tool: &cli.ToolEvent{CallID: "call-1", Name: "read", Key: "readToolCall", Status: cli.ToolRunning, Path: "main.go", Args: json.RawMessage(`{"path":"main.go"}`)}},
		{Kind: cli.EventToolCompleted, Tool: &cli.ToolEvent{CallID: "call-1", Name: "read", Status: cli.ToolSucceeded, Outcome: "success", Output: json.RawMessage(`{"totalLines":40}`)}},
		{Kind: cli.EventToolCompleted, Tool: &cli.ToolEvent{CallID: "call-2", Name: "shell", Status: cli.ToolDeclined, Outcome: "rejected", Command: "go test ./..."}},
		{Kind: cli.EventAssistantText, Text: "done"},
		{Kind: cli.EventIdleWarning},
	} {
		got = append(got, encode(t, m.Map(ev))...)
	}
	want := []string{
		`{"sessionId":"sess-1","update":{"content":{"text":"hmm","type":"text"},"sessionUpdate":"agent_thought_chunk"}}`,
		`{"sessionId":"sess-1","update":{"kind":"read","locations":[{"path":"main.go"}],"rawInput":{"path":"main.go"},"sessionUpdate":"tool_call","status":"in_progress","title":"Read main.go","toolCallId":"call-1"}}`,
		`{"sessionId":"sess-1","update":{"rawOutput":{"outcome":"success","result":{"totalLines":40}},"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"call-1"}}`,
		`{"sessionId":"sess-1","update":{"content":[{"content":{"text":"Declined by Cursor's permission policy.","type":"text"},"type":"content"}],"kind":"execute","rawOutput":{"outcome":"rejected"},"sessionUpdate":"tool_call","status":"failed","title":"Run go test ./...","toolCallId":"call-2"}}`,
		`{"sessionId":"sess-1","update":{"content":{"text":"done","type":"text"},"sessionUpdate":"agent_message_chunk"}}`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d notifications:\n%s", len(got), strings.Join(got, "\n"))
	}
	for i := range want {
		if !jsonEqual(t, got[i], want[i]) {
			t.Errorf("notification %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		t.Fatalf("invalid JSON %s / %s", a, b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func TestFinishClosesOpenCallsOnFailure(t *testing.T) {
	m := New("s")
	m.Map(cli.Event{Kind: cli.EventToolStarted, Tool: &cli.ToolEvent{CallID: "a", Name: "shell", Status: cli.ToolRunning}})
	m.Map(cli.Event{Kind: cli.EventToolStarted, Tool: &cli.ToolEvent{CallID: "b", Name: "read", Status: cli.ToolRunning}})
	m.Map(cli.Event{Kind: cli.EventToolCompleted, Tool: &cli.ToolEvent{CallID: "b", Name: "read", Status: cli.ToolSucceeded}})
	got := encode(t, m.Finish(cli.Result{Class: cli.ClassStopped, IsError: true}))
	if len(got) != 1 || !strings.Contains(got[0], `"toolCallId":"a"`) || !strings.Contains(got[0], `"status":"failed"`) {
		t.Fatalf("finish = %v", got)
	}
	if len(m.Finish(cli.Result{Class: cli.ClassStopped, IsError: true})) != 0 {
		t.Fatal("finish not idempotent")
	}
}

func TestKinds(t *testing.T) {
	for name, want := range map[string]acp.ToolKind{
		"read": acp.ToolKindRead, "edit": acp.ToolKindEdit, "write": acp.ToolKindEdit, "delete": acp.ToolKindDelete,
		"shell": acp.ToolKindExecute, "grep": acp.ToolKindSearch, "glob": acp.ToolKindSearch, "ls": acp.ToolKindSearch,
		"semanticSearch": acp.ToolKindSearch, "webFetch": acp.ToolKindFetch, "mcp": acp.ToolKindOther,
	} {
		if got := Kind(name); got != want {
			t.Errorf("Kind(%q) = %q, want %q", name, got, want)
		}
	}
}
