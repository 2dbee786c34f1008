package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

const (
	benchMessageChunkJSON   = `{"sessionId":"sess-0001","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Here is the next piece of the answer, streamed token by token."}}}`
	benchToolCallUpdateJSON = `{"sessionId":"sess-0001","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_42","status":"completed","content":[{"type":"content","content":{"type":"text","text":"total 12\ndrwxr-xr-x 2 dev dev 4096 Nov 30 00:00 cmd\n-rw-r--r-- 1 dev dev  512 Nov 30 00:00 go.mod"}}],"rawOutput":{"exitCode":0,"stdout":"total 12\ndrwxr-xr-x 2 dev dev 4096 Nov 30 00:00 cmd","stderr":"","durationMs":12}}}`
)

func benchNotification(kind string) SessionNotification {
	if kind == "chunk" {
		return SessionNotification{SessionId: "sess-0001", Update: UpdateAgentMessageText("Here is the next piece of the answer, streamed token by token.")}
	}
	return SessionNotification{SessionId: "sess-0001", Update: UpdateToolCall("call_42",
		WithUpdateStatus(ToolCallStatusCompleted),
		WithUpdateContent([]ToolCallContent{ToolContent(TextBlock("total 12\ndrwxr-xr-x 2 dev dev 4096 Nov 30 00:00 cmd"))}),
		WithUpdateRawOutput(map[string]any{"exitCode": 0, "stdout": "total 12", "stderr": "", "durationMs": 12}),
	)}
}

func benchmarkDecodeNotification(b *testing.B, payload string) {
	data := []byte(payload)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		var n SessionNotification
		if err := json.Unmarshal(data, &n); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeMessageChunk(b *testing.B) { benchmarkDecodeNotification(b, benchMessageChunkJSON) }
func BenchmarkDecodeToolCallUpdate(b *testing.B) {
	benchmarkDecodeNotification(b, benchToolCallUpdateJSON)
}

func benchmarkEncodeNotification(b *testing.B, n SessionNotification) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := json.Marshal(n); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeMessageChunk(b *testing.B) {
	benchmarkEncodeNotification(b, benchNotification("chunk"))
}
func BenchmarkEncodeToolCallUpdate(b *testing.B) {
	benchmarkEncodeNotification(b, benchNotification("tool"))
}

// BenchmarkDecodeEnvelope is the connection's own per-line cost: the
// single-pass envelope decode of a session/update line.
func BenchmarkDecodeEnvelope(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":` + benchToolCallUpdateJSON + `}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	var env envelope
	for i := 0; i < b.N; i++ {
		if err := decodeEnvelope(line, &env); err != nil {
			b.Fatal(err)
		}
	}
}

// countingHandler counts notifications and lets a waiter block until n.
type countingHandler struct {
	mu   sync.Mutex
	cond sync.Cond
	n    int
}

func newCountingHandler() *countingHandler {
	h := &countingHandler{}
	h.cond.L = &h.mu
	return h
}

func (h *countingHandler) add() {
	h.mu.Lock()
	h.n++
	h.cond.Broadcast()
	h.mu.Unlock()
}

func (h *countingHandler) wait(n int) {
	h.mu.Lock()
	for h.n < n {
		h.cond.Wait()
	}
	h.mu.Unlock()
}

// benchPipes returns two OS pipes wired as a connection pair's streams.
func benchPipes(b *testing.B) (aR, aW, bR, bW *os.File) {
	var err error
	aR, bW, err = os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	bR, aW, err = os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, f := range []*os.File{aR, aW, bR, bW} {
			_ = f.Close()
		}
	})
	return aR, aW, bR, bW
}

// BenchmarkNotificationEndToEnd: AgentSideConnection.SessionUpdate → OS
// pipe → Client.SessionUpdate, both sides in this process.
func BenchmarkNotificationEndToEnd(b *testing.B) {
	aR, aW, cR, cW := benchPipes(b)
	h := newCountingHandler()
	client := &benchClient{onUpdate: h.add}
	ac := NewAgentSideConnection(benchAgent{}, aW, aR)
	cc := NewClientSideConnection(client, cW, cR)
	ac.SetLogger(quietLogger())
	cc.SetLogger(quietLogger())
	n := benchNotification("chunk")
	ctx := context.Background()
	const window = 512
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ac.SessionUpdate(ctx, n); err != nil {
			b.Fatal(err)
		}
		if i%window == window-1 {
			h.wait(i + 1 - window/2)
		}
	}
	h.wait(b.N)
}

// BenchmarkConnectionNotification is the transport alone: raw params,
// handler that only counts.
func BenchmarkConnectionNotification(b *testing.B) {
	aR, aW, cR, cW := benchPipes(b)
	h := newCountingHandler()
	sender := NewConnection(nil, aW, aR)
	receiver := NewConnection(func(context.Context, string, json.RawMessage) (any, *RequestError) {
		h.add()
		return nil, nil
	}, cW, cR)
	sender.SetLogger(quietLogger())
	receiver.SetLogger(quietLogger())
	params := json.RawMessage(benchMessageChunkJSON)
	ctx := context.Background()
	const window = 512
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := sender.SendNotification(ctx, "session/update", params); err != nil {
			b.Fatal(err)
		}
		if i%window == window-1 {
			h.wait(i + 1 - window/2)
		}
	}
	h.wait(b.N)
}

// BenchmarkRequestRoundTrip: ClientSideConnection.NewSession answered by
// the agent side over io.Pipe.
func BenchmarkRequestRoundTrip(b *testing.B) {
	aR, cW := io.Pipe()
	cR, aW := io.Pipe()
	b.Cleanup(func() { _ = aW.Close(); _ = cW.Close() })
	ac := NewAgentSideConnection(benchAgent{}, aW, aR)
	cc := NewClientSideConnection(&benchClient{}, cW, cR)
	ac.SetLogger(quietLogger())
	cc.SetLogger(quietLogger())
	req := NewSessionRequest{Cwd: "/work/project", McpServers: []McpServer{}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := cc.NewSession(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// benchClient implements Client for benchmarks.
type benchClient struct{ onUpdate func() }

func (c *benchClient) SessionUpdate(context.Context, SessionNotification) error {
	if c.onUpdate != nil {
		c.onUpdate()
	}
	return nil
}
func (c *benchClient) ReadTextFile(context.Context, ReadTextFileRequest) (ReadTextFileResponse, error) {
	return ReadTextFileResponse{}, nil
}
func (c *benchClient) WriteTextFile(context.Context, WriteTextFileRequest) (WriteTextFileResponse, error) {
	return WriteTextFileResponse{}, nil
}
func (c *benchClient) RequestPermission(context.Context, RequestPermissionRequest) (RequestPermissionResponse, error) {
	return RequestPermissionResponse{}, nil
}
func (c *benchClient) CreateTerminal(context.Context, CreateTerminalRequest) (CreateTerminalResponse, error) {
	return CreateTerminalResponse{}, nil
}
func (c *benchClient) KillTerminal(context.Context, KillTerminalRequest) (KillTerminalResponse, error) {
	return KillTerminalResponse{}, nil
}
func (c *benchClient) TerminalOutput(context.Context, TerminalOutputRequest) (TerminalOutputResponse, error) {
	return TerminalOutputResponse{}, nil
}
func (c *benchClient) ReleaseTerminal(context.Context, ReleaseTerminalRequest) (ReleaseTerminalResponse, error) {
	return ReleaseTerminalResponse{}, nil
}
func (c *benchClient) WaitForTerminalExit(context.Context, WaitForTerminalExitRequest) (WaitForTerminalExitResponse, error) {
	return WaitForTerminalExitResponse{}, nil
}

// benchAgent implements Agent for benchmarks.
type benchAgent struct{}

func (benchAgent) Authenticate(context.Context, AuthenticateRequest) (AuthenticateResponse, error) {
	return AuthenticateResponse{}, nil
}
func (benchAgent) Initialize(context.Context, InitializeRequest) (InitializeResponse, error) {
	return InitializeResponse{ProtocolVersion: ProtocolVersionNumber}, nil
}
func (benchAgent) Logout(context.Context, LogoutRequest) (LogoutResponse, error) {
	return LogoutResponse{}, nil
}
func (benchAgent) Cancel(context.Context, CancelNotification) error { return nil }
func (benchAgent) CloseSession(context.Context, CloseSessionRequest) (CloseSessionResponse, error) {
	return CloseSessionResponse{}, nil
}
func (benchAgent) ListSessions(context.Context, ListSessionsRequest) (ListSessionsResponse, error) {
	return ListSessionsResponse{}, nil
}
func (benchAgent) NewSession(context.Context, NewSessionRequest) (NewSessionResponse, error) {
	return NewSessionResponse{SessionId: "sess-0001"}, nil
}
func (benchAgent) Prompt(context.Context, PromptRequest) (PromptResponse, error) {
	return PromptResponse{StopReason: StopReasonEndTurn}, nil
}
func (benchAgent) ResumeSession(context.Context, ResumeSessionRequest) (ResumeSessionResponse, error) {
	return ResumeSessionResponse{}, nil
}
func (benchAgent) SetSessionConfigOption(context.Context, SetSessionConfigOptionRequest) (SetSessionConfigOptionResponse, error) {
	return SetSessionConfigOptionResponse{}, nil
}
func (benchAgent) SetSessionMode(context.Context, SetSessionModeRequest) (SetSessionModeResponse, error) {
	return SetSessionModeResponse{}, nil
}

// BenchmarkLargeFrames streams 64 MiB session/update frames (the frame
// limit) through a client connection over an OS pipe, the handler decoding
// each into a SessionNotification. Metrics: peak-heap-MiB (largest
// HeapAlloc sampled every 2 ms) and peak-heap/frame (that peak over the
// frame size).
func BenchmarkLargeFrames(b *testing.B) {
	const frames = 6
	const size = maxLineBytes
	prefix := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`
	suffix := `"}}}}` + "\n"
	frame := bytes.Repeat([]byte("a"), size+1)
	copy(frame, prefix)
	copy(frame[size+1-len(suffix):], suffix)
	var peak uint64
	for i := 0; i < b.N; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan int, frames)
		conn := NewConnection(func(_ context.Context, _ string, params json.RawMessage) (any, *RequestError) {
			var n SessionNotification
			_ = json.Unmarshal(params, &n)
			got <- len(params)
			return nil, nil
		}, io.Discard, r)
		conn.SetLogger(quietLogger())
		stop := make(chan struct{})
		peaks := make(chan uint64, 1)
		go func() {
			var m runtime.MemStats
			var p uint64
			t := time.NewTicker(2 * time.Millisecond)
			defer t.Stop()
			for {
				runtime.ReadMemStats(&m)
				p = max(p, m.HeapAlloc)
				select {
				case <-stop:
					peaks <- p
					return
				case <-t.C:
				}
			}
		}()
		go func() {
			for j := 0; j < frames; j++ {
				if _, err := w.Write(frame); err != nil {
					return
				}
			}
		}()
		for j := 0; j < frames; j++ {
			<-got
		}
		close(stop)
		peak = max(peak, <-peaks)
		_ = w.Close()
		_ = conn.Close()
		runtime.KeepAlive(frame)
	}
	b.SetBytes(frames * size)
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peak)/float64(size), "peak-heap/frame")
}
