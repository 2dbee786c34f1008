package acpbench

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Wire payloads of the two session notifications agents send most.
const (
	messageChunkJSON = `{"sessionId":"sess-0001","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Here is the next piece of the answer, streamed token by token."}}}`

	toolCallUpdateJSON = `{"sessionId":"sess-0001","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_42","status":"completed","content":[{"type":"content","content":{"type":"text","text":"total 12\ndrwxr-xr-x 2 dev dev 4096 Nov 30 00:00 cmd\n-rw-r--r-- 1 dev dev  512 Nov 30 00:00 go.mod"}}],"rawOutput":{"exitCode":0,"stdout":"total 12\ndrwxr-xr-x 2 dev dev 4096 Nov 30 00:00 cmd","stderr":"","durationMs":12}}}`
)

func messageChunk() acp.SessionNotification {
	return acp.SessionNotification{
		SessionId: "sess-0001",
		Update:    acp.UpdateAgentMessageText("Here is the next piece of the answer, streamed token by token."),
	}
}

func toolCallUpdate() acp.SessionNotification {
	return acp.SessionNotification{
		SessionId: "sess-0001",
		Update: acp.UpdateToolCall("call_42",
			acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("total 12\ndrwxr-xr-x 2 dev dev 4096 Nov 30 00:00 cmd"))}),
			acp.WithUpdateRawOutput(map[string]any{"exitCode": 0, "stdout": "total 12", "stderr": "", "durationMs": 12}),
		),
	}
}

func benchDecode(b *testing.B, payload string) {
	data := []byte(payload)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		var n acp.SessionNotification
		if err := json.Unmarshal(data, &n); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEncode(b *testing.B, n acp.SessionNotification) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := json.Marshal(n); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeMessageChunk decodes an agent_message_chunk notification.
func BenchmarkDecodeMessageChunk(b *testing.B) { benchDecode(b, messageChunkJSON) }

// BenchmarkDecodeToolCallUpdate decodes a tool_call_update with content and
// rawOutput.
func BenchmarkDecodeToolCallUpdate(b *testing.B) { benchDecode(b, toolCallUpdateJSON) }

// BenchmarkEncodeMessageChunk encodes an agent_message_chunk notification.
func BenchmarkEncodeMessageChunk(b *testing.B) { benchEncode(b, messageChunk()) }

// BenchmarkEncodeToolCallUpdate encodes a tool_call_update.
func BenchmarkEncodeToolCallUpdate(b *testing.B) { benchEncode(b, toolCallUpdate()) }

// benchClient counts session updates.
type benchClient struct {
	mu      sync.Mutex
	cond    sync.Cond
	updates int64
}

func newBenchClient() *benchClient {
	c := &benchClient{}
	c.cond.L = &c.mu
	return c
}

func (c *benchClient) SessionUpdate(context.Context, acp.SessionNotification) error {
	c.mu.Lock()
	c.updates++
	c.cond.Broadcast()
	c.mu.Unlock()
	return nil
}

// waitUpdates blocks until at least n updates arrived.
func (c *benchClient) waitUpdates(n int64) {
	c.mu.Lock()
	for c.updates < n {
		c.cond.Wait()
	}
	c.mu.Unlock()
}
func (c *benchClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{Content: "x"}, nil
}
func (c *benchClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, nil
}
func (c *benchClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{}, nil
}
func (c *benchClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, nil
}
func (c *benchClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, nil
}
func (c *benchClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, nil
}
func (c *benchClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, nil
}
func (c *benchClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, nil
}

// benchAgent answers session/new.
type benchAgent struct{}

func (benchAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}
func (benchAgent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber}, nil
}
func (benchAgent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}
func (benchAgent) Cancel(context.Context, acp.CancelNotification) error { return nil }
func (benchAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}
func (benchAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}
func (benchAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: "sess-0001"}, nil
}
func (benchAgent) Prompt(context.Context, acp.PromptRequest) (acp.PromptResponse, error) {
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
func (benchAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, nil
}
func (benchAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}
func (benchAgent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

// connectedPair wires an agent-side and a client-side connection over two
// OS pipes, as an agent subprocess's stdio would, and returns a function
// that closes both directions.
func connectedPair(client acp.Client, agent acp.Agent) (*acp.AgentSideConnection, *acp.ClientSideConnection, func()) {
	agentReads, clientWrites := mustPipe()
	clientReads, agentWrites := mustPipe()
	ac := acp.NewAgentSideConnection(agent, agentWrites, agentReads)
	cc := acp.NewClientSideConnection(client, clientWrites, clientReads)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ac.SetLogger(quiet)
	cc.SetLogger(quiet)
	return ac, cc, func() {
		_ = clientWrites.Close()
		_ = agentWrites.Close()
		<-ac.Done()
		<-cc.Done()
		_ = agentReads.Close()
		_ = clientReads.Close()
	}
}

func mustPipe() (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	return r, w
}

// TestMain silences the SDKs' default logger, which would interleave with
// benchmark output.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

// BenchmarkNotificationEndToEnd sends session/update from the agent side
// and counts it arriving at Client.SessionUpdate on the other side of a
// pipe: encode, write, read, decode and ordered dispatch, both sides.
func BenchmarkNotificationEndToEnd(b *testing.B) {
	client := newBenchClient()
	ac, _, closePair := connectedPair(client, benchAgent{})
	defer closePair()
	n := messageChunk()
	ctx := context.Background()
	// Upstream closes the connection when more than 1024 notifications wait
	// for the client's handler (sdk/ applies flow control), so the sender
	// keeps at most 512 in flight.
	const window = 512
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := ac.SessionUpdate(ctx, n); err != nil {
			b.Fatal(err)
		}
		if i%window == window-1 {
			client.waitUpdates(int64(i + 1 - window/2))
		}
	}
	client.waitUpdates(int64(b.N))
}

// mixedStreamJSON is one agent turn's worth of session/update payloads in
// the proportions a coding agent sends them: mostly message and thought
// chunks, tool calls with their updates (one carrying output), and a plan.
var mixedStreamJSON = []string{
	`{"sessionId":"sess-0001","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"The failing test is in the store package; read the writer first."}}}`,
	messageChunkJSON,
	messageChunkJSON,
	`{"sessionId":"sess-0001","update":{"sessionUpdate":"plan","entries":[{"content":"Read the writer","priority":"high","status":"completed"},{"content":"Fix the retry","priority":"high","status":"in_progress"},{"content":"Run the tests","priority":"medium","status":"pending"}]}}`,
	`{"sessionId":"sess-0001","update":{"sessionUpdate":"tool_call","toolCallId":"call_42","title":"Read persistence/writer.go","kind":"read","status":"pending","locations":[{"path":"/work/project/persistence/writer.go","line":120}],"rawInput":{"path":"persistence/writer.go","offset":120,"limit":80}}}`,
	`{"sessionId":"sess-0001","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_42","status":"in_progress"}}`,
	toolCallUpdateJSON,
	messageChunkJSON,
	`{"sessionId":"sess-0001","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"The retry loop never resets its backoff after a success."}}}`,
	messageChunkJSON,
}

// mixedStream decodes mixedStreamJSON with the SDK under test and returns
// the notifications and their total wire size.
func mixedStream(b *testing.B) ([]acp.SessionNotification, int64) {
	out := make([]acp.SessionNotification, len(mixedStreamJSON))
	var size int64
	for i, s := range mixedStreamJSON {
		if err := json.Unmarshal([]byte(s), &out[i]); err != nil {
			b.Fatalf("payload %d: %v", i, err)
		}
		size += int64(len(s))
	}
	return out, size
}

// BenchmarkMixedStream is BenchmarkNotificationEndToEnd over a mixed turn
// (chunks, thoughts, a plan, tool calls and updates): one op is the whole
// turn of ten notifications, sent and handled end to end.
func BenchmarkMixedStream(b *testing.B) {
	client := newBenchClient()
	ac, _, closePair := connectedPair(client, benchAgent{})
	defer closePair()
	stream, size := mixedStream(b)
	ctx := context.Background()
	const window = 512 // see BenchmarkNotificationEndToEnd
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	var sent int64
	for i := 0; i < b.N; i++ {
		for _, n := range stream {
			if err := ac.SessionUpdate(ctx, n); err != nil {
				b.Fatal(err)
			}
			sent++
			if sent%window == 0 {
				client.waitUpdates(sent - window/2)
			}
		}
	}
	client.waitUpdates(sent)
}

// BenchmarkRequestRoundTrip sends session/new from the client side and
// waits for the agent's response.
func BenchmarkRequestRoundTrip(b *testing.B) {
	_, cc, closePair := connectedPair(newBenchClient(), benchAgent{})
	defer closePair()
	ctx := context.Background()
	req := acp.NewSessionRequest{Cwd: "/work/project", McpServers: []acp.McpServer{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := cc.NewSession(ctx, req)
		if err != nil || resp.SessionId != "sess-0001" {
			b.Fatal(resp, err)
		}
	}
}

// BenchmarkIdleConnection measures what an open, idle client-side
// connection holds: heap plus goroutine stacks, per connection (metric
// idle-B/conn), averaged over 128 connections at a time.
func BenchmarkIdleConnection(b *testing.B) {
	const conns = 128
	var total float64
	for i := 0; i < b.N; i++ {
		before := liveBytes()
		closers := make([]func(), conns)
		held := make([]*acp.ClientSideConnection, conns)
		for j := range closers {
			r, peerW := io.Pipe()
			_, w := io.Pipe()
			held[j] = acp.NewClientSideConnection(newBenchClient(), w, r)
			closers[j] = func() { _ = peerW.Close() }
		}
		// Let every connection's goroutines start and settle.
		time.Sleep(20 * time.Millisecond)
		after := liveBytes()
		total += float64(after-before) / conns
		for j, c := range closers {
			c()
			<-held[j].Done()
		}
		runtime.KeepAlive(held)
	}
	b.ReportMetric(total/float64(b.N), "idle-B/conn")
}

// liveBytes returns heap in use plus goroutine stacks after a collection.
func liveBytes() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc + m.StackInuse)
}

// burstSize is the notification count of BenchmarkBurst (ACP_BENCH_BURST
// overrides the default of 1,000,000).
func burstSize() int {
	if v, err := strconv.Atoi(os.Getenv("ACP_BENCH_BURST")); err == nil && v > 0 {
		return v
	}
	return 1_000_000
}

// slowClient handles each session/update in about 20 µs of CPU.
type slowClient struct {
	*benchClient
}

func (c slowClient) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
	}
	return c.benchClient.SessionUpdate(ctx, n)
}

// burstAgent answers session/prompt after sending burstSize() updates at
// once, as an agent replaying a long conversation does.
type burstAgent struct {
	benchAgent
	conn *acp.AgentSideConnection
	n    int
}

func (a *burstAgent) Prompt(ctx context.Context, _ acp.PromptRequest) (acp.PromptResponse, error) {
	n := messageChunk()
	for i := 0; i < a.n; i++ {
		if err := a.conn.SessionUpdate(ctx, n); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// BenchmarkBurst: during session/prompt the agent writes burstSize()
// session/update notifications as fast as it can; the client's handler takes
// ~20 µs each. Metrics: delivered/op (updates the client handled),
// closed/op (1 when the connection was lost), peak-heap-MiB (largest
// HeapAlloc sampled every 5 ms). One op is the whole burst.
func BenchmarkBurst(b *testing.B) {
	size := burstSize()
	var delivered, closed, peak float64
	for i := 0; i < b.N; i++ {
		client := slowClient{newBenchClient()}
		agent := &burstAgent{n: size}
		agentReads, clientWrites := mustPipe()
		clientReads, agentWrites := mustPipe()
		agent.conn = acp.NewAgentSideConnection(agent, agentWrites, agentReads)
		cc := acp.NewClientSideConnection(client, clientWrites, clientReads)
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		agent.conn.SetLogger(quiet)
		cc.SetLogger(quiet)
		stop := make(chan struct{})
		peakCh := make(chan uint64, 1)
		go samplePeakHeap(stop, peakCh)
		_, err := cc.Prompt(context.Background(), acp.PromptRequest{SessionId: "sess-0001", Prompt: []acp.ContentBlock{}})
		select {
		case <-cc.Done(): // lost the connection: unblock the agent's writes
			closed++
		default:
		}
		_ = clientReads.Close()
		_ = clientWrites.Close()
		<-agent.conn.Done()
		_ = agentWrites.Close()
		_ = agentReads.Close()
		close(stop)
		peak = max(peak, float64(<-peakCh)/(1<<20))
		client.mu.Lock()
		delivered += float64(client.updates)
		client.mu.Unlock()
		if err == nil && client.updates != int64(size) {
			b.Fatalf("prompt returned after %d of %d updates", client.updates, size)
		}
	}
	b.ReportMetric(delivered/float64(b.N), "delivered/op")
	b.ReportMetric(closed/float64(b.N), "closed/op")
	b.ReportMetric(peak, "peak-heap-MiB")
}

// samplePeakHeap reports the largest HeapAlloc seen until stop closes.
func samplePeakHeap(stop <-chan struct{}, out chan<- uint64) {
	var m runtime.MemStats
	var peak uint64
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapAlloc)
		select {
		case <-stop:
			out <- peak
			return
		case <-t.C:
		}
	}
}
