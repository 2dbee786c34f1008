package acpupdate_test

import (
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli/acpupdate"
)

// Runner events become ACP session notifications; pass Forward's result as
// cli.Turn.OnEvent and call Finish with the turn's result.
func ExampleMapper_Forward() {
	m := acpupdate.New("sess-1")
	onEvent := m.Forward(func(n acp.SessionNotification) {
		b, _ := json.Marshal(n.Update)
		fmt.Println(string(b))
	})
	onEvent(cli.Event{Kind: cli.EventToolStarted, Tool: &cli.ToolEvent{CallID: "c1", Name: "shell", Command: "go test ./...", Status: cli.ToolRunning}})
	onEvent(cli.Event{Kind: cli.EventAssistantText, Text: "All tests pass."})
	for _, n := range m.Finish(cli.Result{Class: cli.ClassStopped, IsError: true}) {
		b, _ := json.Marshal(n.Update)
		fmt.Println(string(b))
	}
	// Output:
	// {"kind":"execute","sessionUpdate":"tool_call","status":"in_progress","title":"Run go test ./...","toolCallId":"c1"}
	// {"content":{"text":"All tests pass.","type":"text"},"sessionUpdate":"agent_message_chunk"}
	// {"rawOutput":{"turn":"stopped"},"sessionUpdate":"tool_call_update","status":"failed","toolCallId":"c1"}
}
