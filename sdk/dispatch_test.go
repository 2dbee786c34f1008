package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// dispatchHangGuard bounds every wait in these tests; it only fires when something hangs.
const dispatchHangGuard = 20 * time.Second

// linePeer is the far end of a connection, speaking raw JSON lines.
type linePeer struct {
	t     *testing.T
	w     io.WriteCloser // what the SDK side reads
	lines chan string    // what the SDK side wrote
}

func newLinePeer(t *testing.T, sdkReads io.WriteCloser, sdkWrites io.Reader) *linePeer {
	p := &linePeer{t: t, w: sdkReads, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(sdkWrites)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p
}

func (p *linePeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

func (p *linePeer) next() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatal("connection closed")
		}
		return l
	case <-time.After(dispatchHangGuard):
		p.t.Fatal("timed out waiting for a line")
	}
	return ""
}

// testClient implements Client; extension calls are recorded.
type testClient struct {
	mu      sync.Mutex
	ext     []string // method + " " + params
	updates []SessionNotification
	extFn   func(method string, params json.RawMessage) (any, error)
	seen    chan string
}

func newTestClient() *testClient { return &testClient{seen: make(chan string, 64)} }

func (c *testClient) ReadTextFile(ctx context.Context, p ReadTextFileRequest) (ReadTextFileResponse, error) {
	return ReadTextFileResponse{Content: "content of " + p.Path}, nil
}
func (c *testClient) WriteTextFile(ctx context.Context, p WriteTextFileRequest) (WriteTextFileResponse, error) {
	return WriteTextFileResponse{}, nil
}
func (c *testClient) RequestPermission(ctx context.Context, p RequestPermissionRequest) (RequestPermissionResponse, error) {
	return RequestPermissionResponse{Outcome: NewRequestPermissionOutcomeCancelled()}, nil
}
func (c *testClient) SessionUpdate(ctx context.Context, n SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	c.seen <- "session/update"
	return nil
}
func (c *testClient) CreateTerminal(ctx context.Context, p CreateTerminalRequest) (CreateTerminalResponse, error) {
	return CreateTerminalResponse{TerminalId: TerminalId("t1")}, nil
}
func (c *testClient) KillTerminal(ctx context.Context, p KillTerminalRequest) (KillTerminalResponse, error) {
	return KillTerminalResponse{}, nil
}
func (c *testClient) TerminalOutput(ctx context.Context, p TerminalOutputRequest) (TerminalOutputResponse, error) {
	return TerminalOutputResponse{}, nil
}
func (c *testClient) ReleaseTerminal(ctx context.Context, p ReleaseTerminalRequest) (ReleaseTerminalResponse, error) {
	return ReleaseTerminalResponse{}, nil
}
func (c *testClient) WaitForTerminalExit(ctx context.Context, p WaitForTerminalExitRequest) (WaitForTerminalExitResponse, error) {
	return WaitForTerminalExitResponse{}, nil
}

// extClient adds ExtensionMethodHandler to testClient.
type extClient struct{ *testClient }

func (c extClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	c.mu.Lock()
	c.ext = append(c.ext, method+" "+string(params))
	fn := c.extFn
	c.mu.Unlock()
	defer func() { c.seen <- method }()
	if fn != nil {
		return fn(method, params)
	}
	if method == "cursor/task" {
		return struct{}{}, nil
	}
	return nil, NewMethodNotFound(method)
}

// clientUnderTest starts a ClientSideConnection for client and a raw agent.
func clientUnderTest(t *testing.T, client Client) (*ClientSideConnection, *linePeer) {
	t.Helper()
	toSDK, fromPeer := io.Pipe()
	toPeer, fromSDK := io.Pipe()
	conn := NewClientSideConnection(client, fromSDK, toSDK)
	peer := newLinePeer(t, fromPeer, toPeer)
	t.Cleanup(func() {
		fromPeer.Close()
		fromSDK.Close()
		select {
		case <-conn.Done():
		case <-time.After(dispatchHangGuard):
			t.Error("connection did not end")
		}
	})
	return conn, peer
}

func waitSeen(t *testing.T, c *testClient, want string) {
	t.Helper()
	select {
	case got := <-c.seen:
		if got != want {
			t.Fatalf("handler saw %q, want %q", got, want)
		}
	case <-time.After(dispatchHangGuard):
		t.Fatalf("handler never saw %q", want)
	}
}

func TestClientDispatchUnknownRequests(t *testing.T) {
	tc := newTestClient()
	_, peer := clientUnderTest(t, extClient{tc})

	// cursor/task: a request without "_" goes to the extension handler and
	// struct{}{} comes back as {}.
	peer.send(`{"jsonrpc":"2.0","id":7,"method":"cursor/task","params":{"toolCallId":"tc1","description":"d"}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":7,"result":{}}`; got != want {
		t.Fatalf("cursor/task reply\n got %s\nwant %s", got, want)
	}
	tc.mu.Lock()
	if len(tc.ext) != 1 || tc.ext[0] != `cursor/task {"toolCallId":"tc1","description":"d"}` {
		t.Fatalf("handler saw %q", tc.ext)
	}
	tc.mu.Unlock()

	// foo/bar: the handler answers method-not-found.
	peer.send(`{"jsonrpc":"2.0","id":"x","method":"foo/bar","params":{}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found","data":{"method":"foo/bar"}}}`; got != want {
		t.Fatalf("foo/bar reply\n got %s\nwant %s", got, want)
	}
}

func TestClientDispatchWithoutHandler(t *testing.T) {
	_, peer := clientUnderTest(t, newTestClient())
	for _, m := range []string{"cursor/task", "_x/y", "mcp/message"} {
		peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{}}`, m))
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found","data":{"method":%q}}}`, m)
		if got := peer.next(); got != want {
			t.Fatalf("%s\n got %s\nwant %s", m, got, want)
		}
	}
}

func TestClientDispatchHandlerErrors(t *testing.T) {
	tc := newTestClient()
	tc.extFn = func(method string, params json.RawMessage) (any, error) {
		switch method {
		case "wrapped/err":
			return nil, fmt.Errorf("context: %w", &RequestError{Code: -32002, Message: "Resource not found"})
		case "plain/err":
			return nil, errors.New("boom")
		}
		return map[string]int{"n": 1}, nil
	}
	_, peer := clientUnderTest(t, extClient{tc})
	cases := []struct{ method, want string }{
		{"wrapped/err", `{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found"}}`},
		{"plain/err", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error","data":{"error":"boom"}}}`},
		{"_ok", `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`},
	}
	for _, c := range cases {
		peer.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q}`, c.method))
		if got := peer.next(); got != c.want {
			t.Fatalf("%s\n got %s\nwant %s", c.method, got, c.want)
		}
	}
}

func TestClientDispatchNotifications(t *testing.T) {
	tc := newTestClient()
	tc.extFn = func(method string, params json.RawMessage) (any, error) {
		return nil, errors.New("ignored: notifications get no reply")
	}
	_, peer := clientUnderTest(t, extClient{tc})

	peer.send(`{"jsonrpc":"2.0","method":"_x","params":{"a":1}}`)
	waitSeen(t, tc, "_x")
	// A non-"_" unknown notification reaches the handler too; its error is
	// only logged.
	peer.send(`{"jsonrpc":"2.0","method":"cursor/notice","params":{"b":2}}`)
	waitSeen(t, tc, "cursor/notice")
	// Nothing was written back: the next line is the reply to this request.
	peer.send(`{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/p"}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":3,"result":{"content":"content of /p"}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if want := []string{`_x {"a":1}`, `cursor/notice {"b":2}`}; fmt.Sprint(tc.ext) != fmt.Sprint(want) {
		t.Fatalf("handler saw %q, want %q", tc.ext, want)
	}
}

func TestClientDispatchInvalidParams(t *testing.T) {
	_, peer := clientUnderTest(t, newTestClient())
	peer.send(`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s"}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params","data":{"error":"path is required"}}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	peer.send(`{"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":{"sessionId":1,"path":"/p"}}`)
	if got := peer.next(); !strings.Contains(got, `"code":-32602`) || !strings.Contains(got, "cannot unmarshal number") {
		t.Fatalf("got %s", got)
	}
	// An unstable method the client does not implement: -32601.
	peer.send(`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"mode":"url","message":"m","elicitationId":"e","url":"https://x"}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found","data":{"method":"elicitation/create"}}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestClientSessionUpdateUnknownKindKeptRaw(t *testing.T) {
	tc := newTestClient()
	_, peer := clientUnderTest(t, tc)
	raw := `{"sessionUpdate":"weird_new_kind","n":9007199254740993,"x":[1,{"y":null}]}`
	peer.send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + raw + `}}`)
	waitSeen(t, tc, "session/update")
	tc.mu.Lock()
	n := tc.updates[0]
	tc.mu.Unlock()
	kind, got, ok := n.Update.Unknown()
	if !ok || kind != "weird_new_kind" || string(got) != raw {
		t.Fatalf("Unknown() = %q, %s, %v", kind, got, ok)
	}
	if n.Update.SessionInfoUpdate != nil {
		t.Fatal("unknown kind mis-decoded as session_info_update")
	}
	out, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"sessionId":"s","update":` + raw + `}`; string(out) != want {
		t.Fatalf("re-encoded\n got %s\nwant %s", out, want)
	}
}

// testAgent implements Agent (and DeleteSession, the stable-name form).
type testAgent struct {
	cancelled chan SessionId
	prompting chan struct{}
	deleted   chan string
}

func newTestAgent() *testAgent {
	return &testAgent{cancelled: make(chan SessionId, 4), prompting: make(chan struct{}, 4), deleted: make(chan string, 4)}
}

func (a *testAgent) Authenticate(ctx context.Context, p AuthenticateRequest) (AuthenticateResponse, error) {
	return AuthenticateResponse{}, nil
}
func (a *testAgent) Initialize(ctx context.Context, p InitializeRequest) (InitializeResponse, error) {
	return InitializeResponse{ProtocolVersion: ProtocolVersionNumber}, nil
}
func (a *testAgent) Logout(ctx context.Context, p LogoutRequest) (LogoutResponse, error) {
	return LogoutResponse{}, nil
}
func (a *testAgent) Cancel(ctx context.Context, p CancelNotification) error {
	a.cancelled <- p.SessionId
	return nil
}
func (a *testAgent) CloseSession(ctx context.Context, p CloseSessionRequest) (CloseSessionResponse, error) {
	return CloseSessionResponse{}, nil
}
func (a *testAgent) ListSessions(ctx context.Context, p ListSessionsRequest) (ListSessionsResponse, error) {
	return ListSessionsResponse{Sessions: []SessionInfo{}}, nil
}
func (a *testAgent) NewSession(ctx context.Context, p NewSessionRequest) (NewSessionResponse, error) {
	return NewSessionResponse{SessionId: "s1"}, nil
}
func (a *testAgent) Prompt(ctx context.Context, p PromptRequest) (PromptResponse, error) {
	a.prompting <- struct{}{}
	<-ctx.Done()
	return PromptResponse{StopReason: StopReasonCancelled}, nil
}
func (a *testAgent) ResumeSession(ctx context.Context, p ResumeSessionRequest) (ResumeSessionResponse, error) {
	return ResumeSessionResponse{}, nil
}
func (a *testAgent) SetSessionConfigOption(ctx context.Context, p SetSessionConfigOptionRequest) (SetSessionConfigOptionResponse, error) {
	return SetSessionConfigOptionResponse{}, nil
}
func (a *testAgent) SetSessionMode(ctx context.Context, p SetSessionModeRequest) (SetSessionModeResponse, error) {
	return SetSessionModeResponse{}, nil
}
func (a *testAgent) DeleteSession(ctx context.Context, p DeleteSessionRequest) (DeleteSessionResponse, error) {
	a.deleted <- string(p.SessionId)
	return DeleteSessionResponse{}, nil
}

func agentUnderTest(t *testing.T, agent Agent) (*AgentSideConnection, *linePeer) {
	t.Helper()
	toSDK, fromPeer := io.Pipe()
	toPeer, fromSDK := io.Pipe()
	conn := NewAgentSideConnection(agent, fromSDK, toSDK)
	peer := newLinePeer(t, fromPeer, toPeer)
	t.Cleanup(func() {
		fromPeer.Close()
		fromSDK.Close()
		select {
		case <-conn.Done():
		case <-time.After(dispatchHangGuard):
			t.Error("connection did not end")
		}
	})
	return conn, peer
}

func TestAgentDispatch(t *testing.T) {
	ag := newTestAgent()
	_, peer := agentUnderTest(t, ag)

	// Unknown non-"_" methods stay -32601 on the agent side.
	peer.send(`{"jsonrpc":"2.0","id":1,"method":"cursor/task","params":{}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found","data":{"method":"cursor/task"}}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	// session/load without AgentLoader: -32601.
	peer.send(`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s","cwd":"/","mcpServers":[]}}`)
	if got := peer.next(); !strings.Contains(got, `"code":-32601`) {
		t.Fatalf("got %s", got)
	}
	// session/delete reaches DeleteSession(ctx, DeleteSessionRequest).
	peer.send(`{"jsonrpc":"2.0","id":3,"method":"session/delete","params":{"sessionId":"gone"}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":3,"result":{}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if got := <-ag.deleted; got != "gone" {
		t.Fatalf("deleted %q", got)
	}
	// New session: mcpServers is required.
	peer.send(`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/"}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid params","data":{"error":"mcpServers is required"}}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

func TestAgentPromptCancelCoupling(t *testing.T) {
	ag := newTestAgent()
	_, peer := agentUnderTest(t, ag)
	peer.send(`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`)
	select {
	case <-ag.prompting:
	case <-time.After(dispatchHangGuard):
		t.Fatal("prompt never started")
	}
	peer.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`)
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":5,"result":{"stopReason":"cancelled"}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	select {
	case sid := <-ag.cancelled:
		if sid != "s1" {
			t.Fatalf("Cancel for %q", sid)
		}
	case <-time.After(dispatchHangGuard):
		t.Fatal("Agent.Cancel not called")
	}
}

func TestClientPromptCancelSendsSessionCancel(t *testing.T) {
	conn, peer := clientUnderTest(t, newTestClient())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Prompt(ctx, PromptRequest{SessionId: "s9", Prompt: []ContentBlock{{Text: &ContentBlockText{Text: "hi"}}}})
		errc <- err
	}()
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[{"text":"hi","type":"text"}],"sessionId":"s9"}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	cancel()
	sawCancel := false
	for i := 0; i < 2; i++ {
		l := peer.next()
		if l == `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s9"}}` {
			sawCancel = true
		}
	}
	if !sawCancel {
		t.Fatal("no session/cancel sent")
	}
	if err := <-errc; err == nil {
		t.Fatal("Prompt returned no error after cancel")
	}
}

// Outbound extension names must start with "_"; the refusals carry upstream
// v0.13.5's exact texts, since callers forward them as strings.
func TestOutboundExtensionNamesNeedUnderscore(t *testing.T) {
	conn, _ := clientUnderTest(t, newTestClient())
	const noPrefix = `extension method name must start with '_' (got "cursor/task")`
	const empty = "extension method name must be non-empty"
	if _, err := conn.CallExtension(context.Background(), "cursor/task", nil); err == nil || err.Error() != noPrefix {
		t.Fatalf("CallExtension(cursor/task) = %v, want %q", err, noPrefix)
	}
	if err := conn.NotifyExtension(context.Background(), "cursor/task", nil); err == nil || err.Error() != noPrefix {
		t.Fatalf("NotifyExtension(cursor/task) = %v, want %q", err, noPrefix)
	}
	if _, err := conn.CallExtension(context.Background(), "", nil); err == nil || err.Error() != empty {
		t.Fatalf("CallExtension(\"\") = %v, want %q", err, empty)
	}
	if err := conn.NotifyExtension(context.Background(), "", nil); err == nil || err.Error() != empty {
		t.Fatalf("NotifyExtension(\"\") = %v, want %q", err, empty)
	}
	agent, _ := agentUnderTest(t, newTestAgent())
	if _, err := agent.CallExtension(context.Background(), "cursor/task", nil); err == nil || err.Error() != noPrefix {
		t.Fatalf("agent CallExtension(cursor/task) = %v, want %q", err, noPrefix)
	}
	if err := agent.NotifyExtension(context.Background(), "", nil); err == nil || err.Error() != empty {
		t.Fatalf("agent NotifyExtension(\"\") = %v, want %q", err, empty)
	}
}

// The legacy session/set_model call: its -32601 reaches the caller as a
// *RequestError, which consumers use to detect "model selection unsupported".
func TestUnstableSetSessionModelWire(t *testing.T) {
	conn, peer := clientUnderTest(t, newTestClient())
	errc := make(chan error, 1)
	go func() {
		_, err := conn.UnstableSetSessionModel(context.Background(), UnstableSetSessionModelRequest{SessionId: "s", ModelId: "m"})
		errc <- err
	}()
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":1,"method":"session/set_model","params":{"modelId":"m","sessionId":"s"}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	peer.send(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found","data":{"method":"session/set_model"}}}`)
	var rerr *RequestError
	if err := <-errc; !errors.As(err, &rerr) || rerr.Code != -32601 {
		t.Fatalf("err = %v", err)
	}
}

func TestCallExtensionWire(t *testing.T) {
	conn, peer := clientUnderTest(t, newTestClient())
	type result struct {
		raw json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		raw, err := conn.CallExtension(context.Background(), "_vendor/ping", map[string]int{"n": 1})
		done <- result{raw, err}
	}()
	if got, want := peer.next(), `{"jsonrpc":"2.0","id":1,"method":"_vendor/ping","params":{"n":1}}`; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	peer.send(`{"jsonrpc":"2.0","id":1,"result":{"pong":true}}`)
	r := <-done
	if r.err != nil || string(r.raw) != `{"pong":true}` {
		t.Fatalf("%s %v", r.raw, r.err)
	}
	if err := conn.NotifyExtension(context.Background(), "_vendor/note", nil); err != nil {
		t.Fatal(err)
	}
	if got, want := peer.next(), `{"jsonrpc":"2.0","method":"_vendor/note"}`; got != want && got != `{"jsonrpc":"2.0","method":"_vendor/note","params":null}` {
		t.Fatalf("got %s", got)
	}
}
