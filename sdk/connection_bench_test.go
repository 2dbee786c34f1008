package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
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

// BenchmarkLargeFrames streams twelve 64 MiB session/update frames (the
// frame limit; each an agent message chunk of ~64 MiB of text) over an OS
// pipe into a client connection, whose Client receives each as a decoded
// SessionNotification. The writer streams each frame from a 1 MiB buffer,
// so the heap measured is the connection's. Metrics: peak-heap/frame, the
// largest HeapAlloc (sampled every millisecond, garbage not yet collected
// included) over the frame size, and peak-live-heap/frame, the largest heap
// the collector found reachable at the end of a cycle
// (/gc/heap/live:bytes) over the frame size, and stream-live-heap/frame,
// the same once two frames have been delivered: the first frame is read
// without knowing its size (see lineReader.next), the later ones into one
// buffer of about their size.
func BenchmarkLargeFrames(b *testing.B) {
	const frames = 12
	const size = maxLineBytes
	prefix := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`)
	suffix := []byte(`"}}}}` + "\n")
	fill := bytes.Repeat([]byte("a"), 1<<20)
	var peak, peakLive, streamLive uint64
	for i := 0; i < b.N; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan struct{}, frames)
		conn := NewClientSideConnection(&benchClient{onUpdate: func() { got <- struct{}{} }}, io.Discard, r)
		conn.SetLogger(quietLogger())
		var sampled, sampledLive, sinceCycle atomic.Uint64
		stop := make(chan struct{})
		sampler := make(chan struct{})
		go func() {
			defer close(sampler)
			var m runtime.MemStats
			live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > sampled.Load() {
					sampled.Store(m.HeapAlloc)
				}
				metrics.Read(live)
				// A cycle that ended before the reset measured older frames.
				if v := live[0].Value.Uint64(); live[1].Value.Uint64() > sinceCycle.Load() && v > sampledLive.Load() {
					sampledLive.Store(v)
				}
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
		go func() {
			for j := 0; j < frames; j++ {
				_, _ = w.Write(prefix)
				for left := size + 1 - len(prefix) - len(suffix); left > 0; left -= len(fill) {
					_, _ = w.Write(fill[:min(left, len(fill))])
				}
				_, _ = w.Write(suffix)
			}
		}()
		for j := 0; j < frames; j++ {
			<-got
			if j == 1 {
				cycles := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
				metrics.Read(cycles)
				sinceCycle.Store(cycles[0].Value.Uint64())
				peakLive = max(peakLive, sampledLive.Swap(0))
			}
		}
		close(stop)
		<-sampler
		peak = max(peak, sampled.Load())
		streamLive = max(streamLive, sampledLive.Load())
		peakLive = max(peakLive, streamLive)
		_ = w.Close()
		_ = conn.Close()
	}
	b.SetBytes(frames * size)
	b.ReportMetric(float64(peak)/float64(size), "peak-heap/frame")
	b.ReportMetric(float64(peakLive)/float64(size), "peak-live-heap/frame")
	b.ReportMetric(float64(streamLive)/float64(size), "stream-live-heap/frame")
}
