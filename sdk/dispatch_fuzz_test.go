package acp

import (
	"context"
	"encoding/json"
	"testing"
)

// clientMethodNames are the wire names dispatchClientMethod knows.
var clientMethodNames = []string{
	ClientMethodFsReadTextFile, ClientMethodFsWriteTextFile, ClientMethodSessionRequestPermission,
	ClientMethodSessionUpdate, ClientMethodTerminalCreate, ClientMethodTerminalKill,
	ClientMethodTerminalOutput, ClientMethodTerminalRelease, ClientMethodTerminalWaitForExit,
	ClientMethodElicitationCreate, ClientMethodElicitationComplete, ClientMethodMcpConnect,
	ClientMethodMcpDisconnect,
}

// FuzzClientHandle feeds arbitrary methods and params to the client-side
// router: it must never panic, every known method gets a result or a JSON-RPC
// error, and every other method reaches the extension handler.
func FuzzClientHandle(f *testing.F) {
	f.Add("cursor/task", []byte(`{"toolCallId":"t"}`))
	f.Add("_x", []byte(`{}`))
	f.Add("fs/read_text_file", []byte(`{"sessionId":"s","path":"/p"}`))
	f.Add("session/update", []byte(`{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}`))
	f.Add("session/request_permission", []byte(`{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}`))
	f.Add("terminal/create", []byte(`null`))
	f.Add("elicitation/create", []byte(``))
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		tc := newTestClient()
		tc.seen = make(chan string, 1)
		calls := 0
		tc.extFn = func(m string, p json.RawMessage) (any, error) {
			calls++
			if m != method {
				t.Fatalf("handler got %q for %q", m, method)
			}
			return struct{}{}, nil
		}
		c := &ClientSideConnection{client: extClient{tc}}
		result, rerr := c.handle(context.Background(), method, params)
		known := false
		for _, m := range clientMethodNames {
			if m == method {
				known = true
			}
		}
		if known {
			if calls != 0 {
				t.Fatalf("%q reached the extension handler", method)
			}
		} else if calls != 1 || rerr != nil {
			t.Fatalf("%q: handler calls %d, err %v", method, calls, rerr)
		}
		if rerr == nil && result != nil {
			if _, err := json.Marshal(result); err != nil {
				t.Fatalf("%q: result does not encode: %v", method, err)
			}
		}
	})
}

// fuzzAgent implements Agent without blocking.
type fuzzAgent struct{ testAgent }

func (a *fuzzAgent) Prompt(ctx context.Context, p PromptRequest) (PromptResponse, error) {
	return PromptResponse{StopReason: StopReasonEndTurn}, nil
}
func (a *fuzzAgent) Cancel(ctx context.Context, p CancelNotification) error { return nil }
func (a *fuzzAgent) DeleteSession(ctx context.Context, p DeleteSessionRequest) (DeleteSessionResponse, error) {
	return DeleteSessionResponse{}, nil
}

// FuzzAgentHandle does the same for the agent-side router.
func FuzzAgentHandle(f *testing.F) {
	f.Add("session/prompt", []byte(`{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}`))
	f.Add("session/cancel", []byte(`{"sessionId":"s"}`))
	f.Add("session/new", []byte(`{"cwd":"/","mcpServers":[{"name":"a","command":"c","args":[],"env":[]}]}`))
	f.Add("session/set_config_option", []byte(`{"sessionId":"s","configId":"c","value":true,"type":"boolean"}`))
	f.Add("session/delete", []byte(`{"sessionId":"s"}`))
	f.Add("initialize", []byte(`{"protocolVersion":1}`))
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		a := &AgentSideConnection{agent: &fuzzAgent{}, prompts: map[SessionId]*runningPrompt{}}
		result, rerr := a.handle(context.Background(), method, params)
		if rerr == nil && result != nil {
			if _, err := json.Marshal(result); err != nil {
				t.Fatalf("%q: result does not encode: %v", method, err)
			}
		}
		if len(a.prompts) != 0 {
			t.Fatalf("%q left a prompt registered", method)
		}
	})
}
