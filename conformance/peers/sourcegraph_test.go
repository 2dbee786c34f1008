package peers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/conformance/internal/peeragent"
)

// hangGuard bounds every wait; it never decides a result.
const hangGuard = 60 * time.Second

// pipeEnd joins the two pipe halves one side of a connection uses.
type pipeEnd struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p *pipeEnd) Close() error {
	for _, c := range p.closers {
		_ = c.Close()
	}
	return nil
}

// wire returns the sourcegraph side as a ReadWriteCloser and the SDK
// side's writer and reader.
func wire(t *testing.T) (peer *pipeEnd, sdkW io.WriteCloser, sdkR io.Reader) {
	t.Helper()
	sdkIn, peerOut := io.Pipe()
	peerIn, sdkOut := io.Pipe()
	peer = &pipeEnd{Reader: peerIn, Writer: peerOut, closers: []io.Closer{peerIn, peerOut}}
	t.Cleanup(func() {
		_ = peer.Close()
		_ = sdkOut.Close()
		_ = sdkIn.Close()
	})
	return peer, sdkOut, sdkIn
}

// cursorAwareClient is a Go ACP client as a consumer builds one with our
// SDK and adapters: session updates feed an adapter.Tracker, and unknown
// agent methods go to the Cursor adapter's handler, except
// cursor/update_todos, which the client itself accepts.
type cursorAwareClient struct {
	stubClient
	tracker *adapter.Tracker
	cursor  *cursor.Handler

	mu      sync.Mutex
	updates []acp.SessionNotification
	other   []string
}

func (c *cursorAwareClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	c.mu.Lock()
	c.other = append(c.other, method)
	c.mu.Unlock()
	if method == "cursor/update_todos" {
		return struct{}{}, nil
	}
	return c.cursor.HandleExtensionMethod(ctx, method, params)
}

func (c *cursorAwareClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	c.tracker.SessionUpdate(n)
	return nil
}

func (stubClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}

func (stubClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}

func (stubClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

func (stubClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}

func (stubClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}

func (stubClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}

func (stubClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}

func (stubClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}

// stubClient refuses the file and terminal methods and cancels every
// permission request; the test clients embed it.
type stubClient struct{}

// vendorReply is what the sourcegraph agent got back for one request.
type vendorReply struct {
	result json.RawMessage
	err    *jsonrpc2.Error
	other  error
}

// TestSourcegraphCursorAgentAgainstGoClient plays a Cursor-like agent on
// sourcegraph/jsonrpc2: during the prompt it announces a Task tool call,
// sends cursor/task and other vendor requests to our Go client and checks
// every reply on its own side of the wire.
func TestSourcegraphCursorAgentAgainstGoClient(t *testing.T) {
	peerRWC, sdkW, sdkR := wire(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	taskParams := json.RawMessage(`{"agentId":"a-1","description":"Summarize src","durationMs":812,"model":"composer-2.5-fast","prompt":"Read src and summarize","subagentType":{"custom":{"unspecified":{}}},"toolCallId":"tool_sg-1"}`)
	replies := map[string]vendorReply{}
	var repliesMu sync.Mutex
	record := func(name string, r vendorReply) {
		repliesMu.Lock()
		replies[name] = r
		repliesMu.Unlock()
	}
	call := func(conn *jsonrpc2.Conn, name, method string, params any) {
		var res json.RawMessage
		err := conn.Call(ctx, method, params, &res)
		var je *jsonrpc2.Error
		if errors.As(err, &je) {
			record(name, vendorReply{err: je})
			return
		}
		record(name, vendorReply{result: res, other: err})
	}

	agentHandler := jsonrpc2.HandlerWithError(func(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		switch req.Method {
		case "initialize":
			return json.RawMessage(`{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"cursor-agent","version":"2026.11"},"authMethods":[]}`), nil
		case "session/new":
			return json.RawMessage(`{"sessionId":"sg-s1"}`), nil
		case "session/prompt":
			notify := func(update string) {
				if err := conn.Notify(ctx, "session/update", json.RawMessage(`{"sessionId":"sg-s1","update":`+update+`}`)); err != nil {
					t.Errorf("notify: %v", err)
				}
			}
			notify(`{"sessionUpdate":"tool_call","toolCallId":"tool_sg-1","title":"Task: Subagent task","kind":"other","rawInput":{"_toolName":"task"},"status":"in_progress"}`)
			call(conn, "cursor/task", "cursor/task", taskParams)
			if err := conn.Notify(ctx, "cursor/update_todos", map[string]any{"todos": []any{}}); err != nil {
				t.Errorf("notify update_todos: %v", err)
			}
			call(conn, "cursor/update_todos", "cursor/update_todos", map[string]any{"todos": []any{map[string]any{"content": "x", "status": "pending"}}})
			call(conn, "cursor/ask_question", "cursor/ask_question", map[string]any{"question": "Proceed?"})
			call(conn, "_cursor/private", "_cursor/private", map[string]any{})
			notify(`{"sessionUpdate":"tool_call_update","toolCallId":"tool_sg-1","status":"completed","rawOutput":{"durationMs":41235,"isBackground":false}}`)
			return json.RawMessage(`{"stopReason":"end_turn"}`), nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "Method not found"}
	})
	peer := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(peerRWC), jsonrpc2.AsyncHandler(agentHandler))
	defer peer.Close()

	var events []adapter.Event
	var eventsMu sync.Mutex
	tracker, err := adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		eventsMu.Lock()
		events = append(events, e)
		eventsMu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	client := &cursorAwareClient{tracker: tracker, cursor: cursor.NewHandler(tracker)}
	conn := acp.NewClientSideConnection(client, sdkW, sdkR)

	initReq := acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}
	initResp, err := conn.Initialize(ctx, initReq)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	tracker.Initialize(&initReq, &initResp)
	if got := tracker.Dialect(); got != adapter.DialectCursor {
		t.Fatalf("dialect = %q, want cursor", got)
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	tracker.SessionStarted(string(sess.SessionId))
	tracker.PromptStarted(string(sess.SessionId))
	resp, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.ContentBlock{Text: &acp.ContentBlockText{Text: "go"}}}})
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	tracker.PromptEnded(string(sess.SessionId))
	if resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("stopReason = %q", resp.StopReason)
	}

	// The peer's view of the replies.
	repliesMu.Lock()
	defer repliesMu.Unlock()
	if r := replies["cursor/task"]; r.err != nil || r.other != nil || string(r.result) != `{}` {
		t.Errorf("cursor/task reply = %s / %v / %v, want result {}", r.result, r.err, r.other)
	}
	if r := replies["cursor/update_todos"]; r.err != nil || string(r.result) != `{}` {
		t.Errorf("cursor/update_todos reply = %s / %v, want result {}", r.result, r.err)
	}
	for _, m := range []string{"cursor/ask_question", "_cursor/private"} {
		r := replies[m]
		if r.err == nil || r.err.Code != jsonrpc2.CodeMethodNotFound || r.err.Data == nil || string(*r.err.Data) != `{"method":"`+m+`"}` {
			t.Errorf("%s reply = %+v, want -32601 with data {\"method\":%q}", m, r, m)
		}
	}

	// The client's view: the notification form of update_todos reached the
	// handler too, and the subagent card carries the cursor/task metadata.
	client.mu.Lock()
	other := append([]string(nil), client.other...)
	nUpdates := len(client.updates)
	client.mu.Unlock()
	want := []string{"cursor/task", "cursor/update_todos", "cursor/update_todos", "cursor/ask_question", "_cursor/private"}
	if len(other) != len(want) {
		t.Errorf("extension handler saw %v, want %v (order of the two update_todos forms aside)", other, want)
	}
	if nUpdates != 2 {
		t.Errorf("client saw %d session updates, want 2", nUpdates)
	}
	eventsMu.Lock()
	defer eventsMu.Unlock()
	if len(events) == 0 {
		t.Fatal("tracker produced no events")
	}
	last := events[len(events)-1]
	if last.Payload == nil || last.Payload.SubagentTask == nil {
		t.Fatalf("last event has no subagent payload: %+v", last)
	}
	task := last.Payload.SubagentTask
	if task.Description != "Summarize src" || task.Prompt != "Read src and summarize" || task.Model != "composer-2.5-fast" || task.AgentID != "a-1" {
		t.Errorf("subagent task = %+v, want the cursor/task metadata", task)
	}
	if last.Status != adapter.ToolStatusComplete {
		t.Errorf("final status = %q, want complete", last.Status)
	}
}

// TestSourcegraphClientDrivesGoAgent plays a client on sourcegraph/jsonrpc2
// that drives the conformance peer agent (our SDK's AgentSideConnection)
// through initialize, session/new and a whole prompt turn, answering the
// agent's permission and file requests, and checks what a foreign client
// sees on the wire.
func TestSourcegraphClientDrivesGoAgent(t *testing.T) {
	peerRWC, sdkW, sdkR := wire(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()

	agent := &peeragent.Agent{}
	agentConn := acp.NewAgentSideConnection(agent, sdkW, sdkR)
	agent.SetConn(agentConn)

	var (
		mu      sync.Mutex
		kinds   []string
		updates []json.RawMessage
		asked   []string
	)
	clientHandler := jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		switch req.Method {
		case "session/update":
			var n struct {
				SessionID string          `json:"sessionId"`
				Update    json.RawMessage `json:"update"`
			}
			if req.Params == nil || json.Unmarshal(*req.Params, &n) != nil {
				t.Errorf("bad session/update params")
				return nil, nil
			}
			var k struct {
				Kind string `json:"sessionUpdate"`
			}
			_ = json.Unmarshal(n.Update, &k)
			kinds = append(kinds, k.Kind)
			updates = append(updates, n.Update)
			return nil, nil
		case "session/request_permission":
			asked = append(asked, req.Method)
			return json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"allow"}}`), nil
		case "fs/read_text_file":
			asked = append(asked, req.Method)
			return json.RawMessage(`{"content":"# peer readme"}`), nil
		}
		return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "Method not found"}
	})
	peer := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(peerRWC), clientHandler)
	defer peer.Close()

	var initResp struct {
		ProtocolVersion int `json:"protocolVersion"`
		AgentInfo       struct {
			Name string `json:"name"`
		} `json:"agentInfo"`
	}
	if err := peer.Call(ctx, "initialize", json.RawMessage(`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":false},"terminal":false}}`), &initResp); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if initResp.ProtocolVersion != 1 || initResp.AgentInfo.Name != peeragent.Name {
		t.Fatalf("initialize result = %+v", initResp)
	}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := peer.Call(ctx, "session/new", json.RawMessage(`{"cwd":"/work","mcpServers":[]}`), &sess); err != nil || sess.SessionID != peeragent.SessionID {
		t.Fatalf("session/new = %+v, %v", sess, err)
	}
	var prompt struct {
		StopReason string `json:"stopReason"`
	}
	if err := peer.Call(ctx, "session/prompt", json.RawMessage(`{"sessionId":"`+sess.SessionID+`","prompt":[{"type":"text","text":"explore"}]}`), &prompt); err != nil {
		t.Fatalf("session/prompt: %v", err)
	}
	if prompt.StopReason != "end_turn" {
		t.Fatalf("stopReason = %q", prompt.StopReason)
	}

	// Agent-side routing stays upstream's: cursor/task is not an agent method.
	var res json.RawMessage
	err := peer.Call(ctx, "cursor/task", json.RawMessage(`{"toolCallId":"x"}`), &res)
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Code != jsonrpc2.CodeMethodNotFound {
		t.Errorf("cursor/task to the agent: %v, want -32601", err)
	}
	if err := peer.Notify(ctx, "session/cancel", json.RawMessage(`{"sessionId":"`+sess.SessionID+`"}`)); err != nil {
		t.Fatal(err)
	}
	// A request after the notification: the agent handles notifications in
	// order and this reply comes after session/cancel was queued.
	if err := peer.Call(ctx, "session/list", json.RawMessage(`{}`), &res); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	wantKinds := []string{"agent_message_chunk", "tool_call", "tool_call_update", "subagent_update", "subagent_update", "tool_call_update", "agent_message_chunk"}
	if len(kinds) != len(wantKinds) {
		t.Fatalf("update kinds = %v, want %v", kinds, wantKinds)
	}
	for i := range wantKinds {
		if kinds[i] != wantKinds[i] {
			t.Fatalf("update kinds = %v, want %v", kinds, wantKinds)
		}
	}
	if got, want := string(updates[3]), `{"sessionId":"peer-child-1","sessionUpdate":"subagent_update","state":{"state":"running"},"title":"Explore"}`; got != want {
		t.Errorf("subagent_update bytes\n got %s\nwant %s", got, want)
	}
	if got, want := string(updates[5]), `{"content":[{"content":{"text":"# peer readme","type":"text"},"type":"content"}],"rawOutput":{"bytes":13},"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"tool-1"}`; got != want {
		t.Errorf("tool_call_update bytes\n got %s\nwant %s", got, want)
	}
	if len(asked) != 2 || asked[0] != "session/request_permission" || asked[1] != "fs/read_text_file" {
		t.Errorf("agent asked %v", asked)
	}
}
