package adapter_test

import (
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude" // registers the "claude" dialect
)

// A client feeds the Tracker its initialize exchange, the session lifecycle
// and every session/update notification; the Tracker calls back with one
// snapshot event per change.
func ExampleTracker() {
	tr, err := adapter.NewTracker(adapter.Config{
		OnEvent: func(e adapter.Event) {
			payload, _ := json.Marshal(e.Payload)
			fmt.Println(e.Kind, e.ToolCallID, e.Status, string(payload))
		},
	})
	if err != nil {
		panic(err)
	}
	tr.Initialize(&acp.InitializeRequest{}, &acp.InitializeResponse{
		AgentInfo: &acp.Implementation{Name: "@agentclientprotocol/claude-agent-acp"},
	})
	tr.SessionStarted("s1")
	tr.PromptStarted("s1")

	for _, frame := range []string{
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_A","title":"Task","status":"pending",
		  "_meta":{"claudeCode":{"toolName":"Agent"}},"rawInput":{"description":"Investigate","prompt":"Find it"}}}`,
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_A","status":"completed",
		  "_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"agentId":"a1","totalToolUseCount":0}}}}}`,
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(frame), &n); err != nil {
			panic(err)
		}
		tr.SessionUpdate(n)
	}
	tr.PromptEnded("s1")
	fmt.Println("dialect:", tr.Dialect())
	// Output:
	// tool_call toolu_A pending {"kind":"subagent_task","subagent_task":{"description":"Investigate","prompt":"Find it","subagent_type":""},"background_work":{"kind":"subagent","work_id":""}}
	// tool_update toolu_A complete {"kind":"subagent_task","subagent_task":{"description":"Investigate","prompt":"Find it","subagent_type":"","agent_id":"a1","tool_use_count":0},"background_work":{"kind":"subagent","work_id":"a1","ended":true}}
	// dialect: claude
}

// ReplayCapture runs a recorded capture through a fresh Tracker, the way the
// golden tests and acpscope's replay do.
func ExampleReplayCapture() {
	res, err := adapter.ReplayCapture("testdata/opencode_task.jsonl", adapter.Config{}, nil)
	if err != nil {
		panic(err)
	}
	e := res.Events[len(res.Events)-1]
	fmt.Println(res.Dialect, e.ToolCallID, e.Status, e.Payload.SubagentTask.Model, e.Payload.SubagentTask.ChildSessionID)
	// Output:
	// opencode call_1 complete opencode/big-pickle ses_child
}
