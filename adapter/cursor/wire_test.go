package cursor_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/internal/replay"
)

// plainClient is an acp.Client with no extension handler: what a consumer
// without the adapter has. It feeds the Tracker its session updates.
type plainClient struct {
	tracker *adapter.Tracker
}

func (c *plainClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.tracker.SessionUpdate(n)
	return nil
}

func (c *plainClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}

func (c *plainClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}

func (c *plainClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{}, acp.NewMethodNotFound("session/request_permission")
}

func (c *plainClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}

func (c *plainClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}

func (c *plainClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}

func (c *plainClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}

func (c *plainClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}

// cursorClient is plainClient with the Cursor handler plugged in.
type cursorClient struct {
	plainClient
	cursor *cursor.Handler
}

func (c *cursorClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return c.cursor.HandleExtensionMethod(ctx, method, params)
}

// recorder keeps every byte the client writes to the agent.
type recorder struct {
	w   io.Writer
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
	return r.w.Write(p)
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes())
}

// wireRun is the outcome of one live session against a scripted agent.
type wireRun struct {
	written []byte          // every byte the client wrote
	events  []adapter.Event // every event the Tracker delivered
}

// runWire plays testdata/<name>.jsonl as a scripted agent over pipes
// against a real acp.ClientSideConnection: initialize, session/new, then
// one session/prompt per recorded prompt.
func runWire(t *testing.T, name string, installed bool) wireRun {
	t.Helper()
	c, err := capture.ReadFile(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// A hang guard only; nothing here is timed.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var mu sync.Mutex
	var out wireRun
	tracker, err := adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		mu.Lock()
		out.events = append(out.events, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	var client acp.Client = &plainClient{tracker: tracker}
	handler := cursor.NewHandler(tracker)
	if installed {
		client = &cursorClient{plainClient: plainClient{tracker: tracker}, cursor: handler}
	}

	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	rec := &recorder{w: clientOut}
	conn := acp.NewClientSideConnection(client, rec, clientIn)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	served := make(chan error, 1)
	go func() {
		err := replay.NewAgent(c).Serve(ctx, agentIn, agentOut)
		_ = agentOut.Close()
		served <- err
	}()

	initReq := acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}
	initResp, err := conn.Initialize(ctx, initReq)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	tracker.Initialize(&initReq, &initResp)
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	sid := sess.SessionId
	tracker.SessionStarted(string(sid))
	for range countPrompts(c) {
		tracker.PromptStarted(string(sid))
		if _, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{{Text: &acp.ContentBlockText{Type: "text", Text: "go"}}}}); err != nil {
			t.Fatalf("session/prompt: %v", err)
		}
		// Prompt returns after every update sent before the reply was
		// handed to SessionUpdate: the turn's barrier.
		tracker.PromptEnded(string(sid))
	}
	_ = clientOut.Close()
	if err := <-served; err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("scripted agent: %v", err)
	}
	_ = conn.Close()
	out.written = rec.bytes()
	mu.Lock()
	defer mu.Unlock()
	return out
}

func countPrompts(c *capture.Capture) int {
	n := 0
	for _, e := range c.Entries {
		if m, err := capture.ParseMessage(e.Msg); e.From == capture.FromClient && err == nil && m.Method == acp.AgentMethodSessionPrompt {
			n++
		}
	}
	return n
}

// responses returns the responses the client wrote (lines without a method).
func responses(t *testing.T, written []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(written))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m, err := capture.ParseMessage(sc.Bytes())
		if err != nil {
			t.Fatalf("client wrote a bad line %q: %v", sc.Bytes(), err)
		}
		if m.Method == "" {
			out = append(out, sc.Text())
		}
	}
	return out
}

// finalPayloads maps each tool call id to its last event's payload JSON.
func finalPayloads(t *testing.T, events []adapter.Event) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range events {
		out[e.ToolCallID] = payloadJSON(t, e)
	}
	return out
}

// TestWireCursorTask runs Cursor captures over pipes with a scripted Cursor
// peer and a real ClientSideConnection: the SDK hands cursor/task to the
// handler, the reply bytes are exactly {"jsonrpc":"2.0","id":…,"result":{}}
// (number or string id), a notification gets no reply, and each card ends
// with the payload the offline replay gives (order between the request and
// the updates may differ on the wire; the result may not).
func TestWireCursorTask(t *testing.T) {
	cases := []struct {
		capture string
		replies []string
	}{
		{"s03_task_before_call", []string{`{"jsonrpc":"2.0","id":7,"result":{}}`}},
		{"s04_call_then_task", []string{`{"jsonrpc":"2.0","id":"a","result":{}}`}},
		{"s13_late_after_completion", []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":2,"result":{}}`}},
		{"s20_notification", nil},
		{"s51_bad_params", []string{
			`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":2,"result":{}}`,
			`{"jsonrpc":"2.0","id":3,"result":{}}`, `{"jsonrpc":"2.0","id":4,"result":{}}`,
			`{"jsonrpc":"2.0","id":5,"result":{}}`, `{"jsonrpc":"2.0","id":6,"result":{}}`,
			`{"jsonrpc":"2.0","id":7,"result":{}}`, `{"jsonrpc":"2.0","id":8,"result":{}}`,
			`{"jsonrpc":"2.0","id":20,"result":{}}`, `{"jsonrpc":"2.0","id":21,"result":{}}`,
			`{"jsonrpc":"2.0","id":30,"result":{}}`}},
		{"cursor_unknown_methods", []string{
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found","data":{"method":"foo/bar"}}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found","data":{"method":"_x"}}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found","data":{"method":"cursor/other"}}}`}},
	}
	for _, tc := range cases {
		t.Run(tc.capture, func(t *testing.T) {
			w := runWire(t, tc.capture, true)
			got := responses(t, w.written)
			if len(got) != len(tc.replies) {
				t.Fatalf("replies\n got %q\nwant %q", got, tc.replies)
			}
			for i := range got {
				if got[i] != tc.replies[i] {
					t.Errorf("reply %d\n got %s\nwant %s", i, got[i], tc.replies[i])
				}
			}
			assertMonotonic(t, w.events)
			offline := replayFile(t, filepath.Join("testdata", tc.capture+".jsonl"), true)
			want := finalPayloads(t, offline.res.Events)
			for id, p := range finalPayloads(t, w.events) {
				if want[id] != p {
					t.Errorf("%s final payload on the wire\n got %s\nwant %s", id, p, want[id])
				}
			}
		})
	}
}

// TestWireNonCursorByteIdentical runs a non-Cursor agent that sends
// cursor/task, vendor requests and notifications, and isBackground, once
// with a client without the adapter and once with the Cursor handler
// installed: the bytes written to the agent and the events are identical.
func TestWireNonCursorByteIdentical(t *testing.T) {
	without := runWire(t, "opencode_adversarial", false)
	with := runWire(t, "opencode_adversarial", true)
	if !bytes.Equal(without.written, with.written) {
		t.Errorf("bytes written to the agent differ\nwithout:\n%s\nwith:\n%s", without.written, with.written)
	}
	a, _ := json.Marshal(without.events)
	b, _ := json.Marshal(with.events)
	if !bytes.Equal(a, b) {
		t.Errorf("events differ\nwithout: %s\nwith:    %s", a, b)
	}
	if len(responses(t, with.written)) != 3 {
		t.Errorf("want three -32601 replies, got %q", responses(t, with.written))
	}
}
