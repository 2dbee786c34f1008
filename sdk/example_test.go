package acp_test

// The examples of the package, written the way a program using the SDK
// would write them: their own small agent and client, nothing borrowed from
// the package's tests.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	acp "github.com/coder/acp-go-sdk"
)

// errUnsupported answers the methods the examples do not need.
var errUnsupported = errors.New("not supported by this example")

// echoAgent answers every prompt with one message chunk echoing it.
type echoAgent struct {
	conn *acp.AgentSideConnection
}

func (a *echoAgent) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber}, nil
}

func (a *echoAgent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: "session-1"}, nil
}

func (a *echoAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	text := ""
	if len(p.Prompt) > 0 && p.Prompt[0].Text != nil {
		text = p.Prompt[0].Text.Text
	}
	err := a.conn.SessionUpdate(ctx, acp.SessionNotification{
		SessionId: p.SessionId,
		Update:    acp.UpdateAgentMessageText("echo: " + text),
	})
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, err
}

func (a *echoAgent) Cancel(ctx context.Context, p acp.CancelNotification) error { return nil }

func (a *echoAgent) Authenticate(ctx context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, errUnsupported
}

func (a *echoAgent) Logout(ctx context.Context, p acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, errUnsupported
}

func (a *echoAgent) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, errUnsupported
}

func (a *echoAgent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, errUnsupported
}

func (a *echoAgent) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, errUnsupported
}

func (a *echoAgent) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, errUnsupported
}

func (a *echoAgent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, errUnsupported
}

// printingClient prints the agent's messages and answers Cursor's
// cursor/task; it offers no file system, terminal or permission support.
type printingClient struct{}

func (printingClient) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	if chunk := n.Update.AgentMessageChunk; chunk != nil && chunk.Content.Text != nil {
		fmt.Println("agent says:", chunk.Content.Text.Text)
	}
	return nil
}

// HandleExtensionMethod receives every inbound request that is not a
// client method, such as Cursor's "cursor/task" (ExtensionMethodHandler).
func (printingClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method == "cursor/task" {
		fmt.Printf("cursor/task params: %s\n", params)
		return struct{}{}, nil // sent as "result":{}
	}
	return nil, acp.NewMethodNotFound(method)
}

func (printingClient) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

func (printingClient) ReadTextFile(ctx context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errUnsupported
}

func (printingClient) WriteTextFile(ctx context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errUnsupported
}

func (printingClient) CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errUnsupported
}

func (printingClient) KillTerminal(ctx context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errUnsupported
}

func (printingClient) TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errUnsupported
}

func (printingClient) ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errUnsupported
}

func (printingClient) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errUnsupported
}

// A client and an agent complete a turn over in-memory pipes: the update
// sent during the prompt reaches the client before Prompt returns.
func ExampleNewClientSideConnection() {
	clientReads, agentWrites := io.Pipe()
	agentReads, clientWrites := io.Pipe()

	agent := &echoAgent{}
	agent.conn = acp.NewAgentSideConnection(agent, agentWrites, agentReads)
	client := acp.NewClientSideConnection(printingClient{}, clientWrites, clientReads)

	ctx := context.Background()
	if _, err := client.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		fmt.Println(err)
		return
	}
	sess, err := client.NewSession(ctx, acp.NewSessionRequest{Cwd: "/", McpServers: []acp.McpServer{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := client.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hello")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stop reason:", resp.StopReason)

	clientWrites.Close()
	agentWrites.Close()
	<-client.Done()
	<-agent.conn.Done()
	// Output:
	// agent says: echo: hello
	// stop reason: end_turn
}

// A client that implements ExtensionMethodHandler answers Cursor's
// cursor/task request instead of -32601.
func ExampleExtensionMethodHandler() {
	clientReads, agentWrites := io.Pipe()
	agentReads, clientWrites := io.Pipe()
	conn := acp.NewClientSideConnection(printingClient{}, clientWrites, clientReads)

	// The agent's side of the pipes, spoken by hand.
	go func() {
		_, _ = io.WriteString(agentWrites, `{"jsonrpc":"2.0","id":7,"method":"cursor/task","params":{"toolCallId":"t1"}}`+"\n")
	}()
	reply := make([]byte, 64)
	n, _ := agentReads.Read(reply)
	fmt.Printf("reply: %s", reply[:n])
	agentWrites.Close()
	<-conn.Done()
	// Output:
	// cursor/task params: {"toolCallId":"t1"}
	// reply: {"jsonrpc":"2.0","id":7,"result":{}}
}

// Patch fields tell an omitted property, an explicit null and a value apart.
func ExampleNullable() {
	var u acp.SubagentUpdate
	_ = json.Unmarshal([]byte(`{"sessionId":"child","title":null,"cwd":"/work"}`), &u)
	if u.Title.Null() {
		fmt.Println("title: cleared")
	}
	if cwd, ok := u.Cwd.Value(); ok {
		fmt.Println("cwd:", cwd)
	}
	if !u.Description.Set() {
		fmt.Println("description: unchanged")
	}
	// Output:
	// title: cleared
	// cwd: /work
	// description: unchanged
}

// A session-update kind this SDK does not know is kept as received.
func ExampleSessionUpdate_Unknown() {
	var n acp.SessionNotification
	_ = json.Unmarshal([]byte(`{"sessionId":"s","update":{"sessionUpdate":"future_kind","x":1}}`), &n)
	kind, raw, ok := n.Update.Unknown()
	fmt.Println(kind, string(raw), ok)
	out, _ := json.Marshal(n)
	fmt.Println(string(out))
	// Output:
	// future_kind {"sessionUpdate":"future_kind","x":1} true
	// {"sessionId":"s","update":{"sessionUpdate":"future_kind","x":1}}
}
