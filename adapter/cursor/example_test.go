package cursor_test

import (
	"context"
	"encoding/json"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
)

// myClient is a consumer's acp.Client (its other methods are omitted
// here). It forwards session updates to the Tracker and the methods the SDK
// does not know to the Cursor handler.
type myClient struct {
	tracker *adapter.Tracker
	cursor  *cursor.Handler
}

func (c *myClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.tracker.SessionUpdate(n)
	return nil
}

func (c *myClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return c.cursor.HandleExtensionMethod(ctx, method, params)
}

// A Cursor subagent card enriched by cursor/task. The SDK calls
// HandleExtensionMethod for cursor/task and SessionUpdate for the standard
// frames; here they are called directly, in the order Cursor often uses:
// the request first.
func Example() {
	tracker, _ := adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		b, _ := json.Marshal(e.Payload)
		fmt.Println(e.Kind, e.Status, string(b))
	}})
	client := &myClient{tracker: tracker, cursor: cursor.NewHandler(tracker)}
	ctx := context.Background()

	// After initialize and session/new (the agentInfo name selects the
	// Cursor dialect):
	tracker.Initialize(nil, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "cursor-agent"}})
	tracker.SessionStarted("s1")
	tracker.PromptStarted("s1")

	result, err := client.HandleExtensionMethod(ctx, "cursor/task", json.RawMessage(
		`{"toolCallId":"tool_1","description":"Summarize src JS files","prompt":"Read every .js file under src/",`+
			`"model":"composer-2.5-fast","agentId":"eaa12f70","subagentType":{"custom":{"unspecified":{}}}}`))
	reply, _ := json.Marshal(result)
	fmt.Println("reply", string(reply), err)

	for _, frame := range []string{
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"tool_1","title":"Task: Subagent task","kind":"other","rawInput":{"_toolName":"task"}}}`,
		`{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"tool_1","status":"completed","rawOutput":{"durationMs":41235,"isBackground":true}}}`,
	} {
		var n acp.SessionNotification
		_ = json.Unmarshal([]byte(frame), &n)
		_ = client.SessionUpdate(ctx, n)
	}
	tracker.PromptEnded("s1")

	// Output:
	// reply {} <nil>
	// tool_call in_progress {"kind":"subagent_task","subagent_task":{"description":"Summarize src JS files","prompt":"Read every .js file under src/","subagent_type":"","agent_id":"eaa12f70","model":"composer-2.5-fast"}}
	// tool_update complete {"kind":"subagent_task","subagent_task":{"description":"Summarize src JS files","prompt":"Read every .js file under src/","subagent_type":"","agent_id":"eaa12f70","model":"composer-2.5-fast","duration_ms":41235,"is_async":true}}
}

// Another agent's cursor/task gets exactly what a client without the
// adapter answers.
func ExampleHandler_HandleExtensionMethod_otherAgent() {
	tracker, _ := adapter.NewTracker(adapter.Config{})
	tracker.Initialize(nil, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "opencode"}})
	h := cursor.NewHandler(tracker)

	_, err := h.HandleExtensionMethod(context.Background(), "cursor/task", json.RawMessage(`{"toolCallId":"t"}`))
	b, _ := json.Marshal(err)
	fmt.Println(string(b))
	// Output:
	// {"code":-32601,"message":"Method not found","data":{"method":"cursor/task"}}
}
