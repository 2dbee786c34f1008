package claude_test

import (
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/claude"
)

// A client that declares clientCapabilities.subagents gets child sessions:
// each announced child becomes a card in its parent session, and cancel is
// offered only while the child advertises it.
func ExampleCanCancel() {
	tr, _ := adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		if e.Child != nil {
			fmt.Println(e.Kind, e.ToolCallID, e.Status, e.Child.State, "live:", e.Child.Live, "cancel:", e.Child.CanCancel)
		}
	}})
	tr.Initialize(
		&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}},
		&acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "claude-agent-acp"}},
	)
	for _, frame := range []string{
		`{"sessionId":"parent","update":{"sessionUpdate":"subagent_update","sessionId":"child","title":"Review","capabilities":{"cancel":{}},"state":{"state":"running"}}}`,
		`{"sessionId":"parent","update":{"sessionUpdate":"subagent_update","sessionId":"child","state":{"state":"unknown"},"capabilities":null}}`,
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(frame), &n); err != nil {
			panic(err)
		}
		tr.SessionUpdate(n)
		fmt.Println("can cancel:", claude.CanCancel(tr, "child"))
	}
	// Output:
	// tool_call child in_progress running live: true cancel: true
	// can cancel: true
	// tool_update child unknown unknown live: false cancel: false
	// can cancel: false
}
