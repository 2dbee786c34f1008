package acp

// Flow control, context-bounded writes, answer-and-exit and frame errors:
// one test per defect seen under real traffic (each failed before the fix).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedAgent is a raw peer for burst tests: one goroutine writes its
// lines in order (so an answer queued behind a burst stays behind it), and
// the requests the connection sends arrive on requests.
type scriptedAgent struct {
	conn     *Connection
	out      chan string // lines to write, in order; "" closes the stream
	stop     chan struct{}
	requests chan map[string]json.RawMessage
}

func newScriptedAgent(t *testing.T, handler MethodHandler, opts ...ConnectionOption) *scriptedAgent {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &scriptedAgent{out: make(chan string), stop: make(chan struct{}), requests: make(chan map[string]json.RawMessage, 16)}
	a.conn = NewConnection(handler, outW, inR, opts...)
	a.conn.SetLogger(quietLogger())
	go func() {
		for {
			select {
			case line := <-a.out:
				if line == "" { // end of file after the lines before
					_ = inW.Close()
					return
				}
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					return
				}
			case <-a.stop:
				return
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["method"] != nil && m["id"] != nil {
				a.requests <- m
			}
		}
	}()
	t.Cleanup(func() {
		close(a.stop)
		_ = inW.Close()
		_ = a.conn.Close()
		_ = outR.Close()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		_ = a.conn.Wait(ctx)
	})
	return a
}

// send queues a line for the agent to write; false once the connection
// ended (it reads no more).
func (a *scriptedAgent) send(line string) bool {
	select {
	case a.out <- line:
		return true
	case <-a.conn.Done():
		return false
	}
}

// nextRequest returns the next request the connection sent.
func (a *scriptedAgent) nextRequest(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	return waitChan(t, a.requests, "a request from the connection")
}

// burstNote is notification i of a burst.
func burstNote(i int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","i":%d}}`, i)
}

// spin busy-waits about d: a handler that takes ~20 µs of CPU.
func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// orderedCounter checks that burst notifications arrive complete and in
// order.
type orderedCounter struct {
	mu   sync.Mutex
	next int
	bad  string
}

func (o *orderedCounter) see(params json.RawMessage) int {
	var p struct{ I int }
	_ = json.Unmarshal(params, &p)
	o.mu.Lock()
	defer o.mu.Unlock()
	if p.I != o.next && o.bad == "" {
		o.bad = fmt.Sprintf("got notification %d, want %d", p.I, o.next)
	}
	o.next++
	return p.I
}

// waitProgressing waits for ch like waitChan, but fails only when no
// notification was handled for a whole hang guard (a long burst on a loaded
// machine may take longer than one guard, and that is no hang).
func (o *orderedCounter) waitProgressing(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	last := -1
	for {
		select {
		case err := <-ch:
			return err
		case <-time.After(hangGuard):
			o.mu.Lock()
			n := o.next
			o.mu.Unlock()
			if n == last {
				t.Fatalf("timed out waiting for %s (%d notifications handled)", what, n)
			}
			last = n
		}
	}
}

func (o *orderedCounter) check(t *testing.T, want int) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bad != "" || o.next != want {
		t.Fatalf("delivered %d of %d notifications (%s)", o.next, want, o.bad)
	}
}

// burstDuringNewSession calls session/new on a's connection and, once the
// request is out, writes burst notifications 0..n-1 (fewer if the agent
// stops). It returns the session/new request and the channel its error
// arrives on.
func (a *scriptedAgent) burstDuringNewSession(t *testing.T, n int) (map[string]json.RawMessage, <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := SendRequest[NewSessionResponse](a.conn, context.Background(), "session/new", NewSessionRequest{Cwd: "/", McpServers: []McpServer{}})
		done <- err
	}()
	req := a.nextRequest(t)
	for i := 0; i < n && a.send(burstNote(i)); i++ {
	}
	return req, done
}

// An agent writes 50,000 session/update notifications at once while
// session/new waits; the handler takes ~20 µs each. Before: the connection
// closed after ~1024 and session/new failed. Now: all delivered in order.
func TestWhyBurstDeliveredWhileCallWaits(t *testing.T) {
	const n = 50000
	var seen orderedCounter
	a := newScriptedAgent(t, func(_ context.Context, _ string, params json.RawMessage) (any, *RequestError) {
		seen.see(params)
		spin(20 * time.Microsecond)
		return nil, nil
	})
	req, done := a.burstDuringNewSession(t, n)
	a.send(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":{"sessionId":"s"}}`)
	if err := seen.waitProgressing(t, done, "session/new"); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	seen.check(t, n)
	if err := a.conn.Err(); err != nil {
		t.Fatalf("connection ended: %v", err)
	}
}

// The same burst where the handler of notification 100 calls the agent and
// waits: the answer sits in the pipe behind the rest of the burst.
func TestWhyBurstHandlerCallsPeer(t *testing.T) {
	const n = 50000
	var seen orderedCounter
	var a *scriptedAgent
	callErr := make(chan error, 1)
	a = newScriptedAgent(t, func(ctx context.Context, _ string, params json.RawMessage) (any, *RequestError) {
		if seen.see(params) == 100 {
			_, err := SendRequest[ReadTextFileResponse](a.conn, ctx, "fs/read_text_file", ReadTextFileRequest{SessionId: "s", Path: "/x"})
			callErr <- err
		}
		spin(20 * time.Microsecond)
		return nil, nil
	})
	newReq, done := a.burstDuringNewSession(t, n)
	if a.conn.Err() != nil {
		t.Fatalf("connection ended during the burst: %v", a.conn.Err())
	}
	readReq := a.nextRequest(t) // sent by the handler of notification 100, answered after the burst
	a.out <- `{"jsonrpc":"2.0","id":` + string(readReq["id"]) + `,"result":{"content":"x"}}`
	a.out <- `{"jsonrpc":"2.0","id":` + string(newReq["id"]) + `,"result":{"sessionId":"s"}}`
	if err := seen.waitProgressing(t, callErr, "the handler's call"); err != nil {
		t.Fatalf("handler's call: %v", err)
	}
	if err := seen.waitProgressing(t, done, "session/new"); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	seen.check(t, n)
}

// Reading past the bound while a handler's call waits stops at the
// read-ahead cap with an error naming it, not a hang.
func TestReadAheadCapEndsWithError(t *testing.T) {
	var a *scriptedAgent
	callErr := make(chan error, 1)
	a = newScriptedAgent(t, func(ctx context.Context, _ string, params json.RawMessage) (any, *RequestError) {
		var p struct{ I int }
		_ = json.Unmarshal(params, &p)
		if p.I == 0 {
			_, err := SendRequest[any](a.conn, ctx, "never/answered", nil)
			callErr <- err
		}
		return nil, nil
	}, WithMaxQueuedNotifications(4), func(o *connectionOptions) { o.readAheadNotifications = 64 })
	go func() {
		for i := 0; i <= 64; i++ {
			select {
			case a.out <- burstNote(i):
			case <-a.stop:
				return
			}
		}
	}()
	err := waitChan(t, callErr, "the handler's call")
	if !errors.Is(err, ErrNotificationQueueOverflow) || !errors.Is(err, ErrPeerDisconnected) || !strings.Contains(err.Error(), "read-ahead cap") {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(a.conn.Err(), ErrNotificationQueueOverflow) {
		t.Fatalf("Err = %v", a.conn.Err())
	}
}

// blockingWriter is a peer input nobody reads (and that is no io.Closer).
type blockingWriter struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBlockingWriter() *blockingWriter {
	return &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	return len(p), nil
}

// An agent that stops reading its stdin: Cancel (session/cancel) with a
// deadline returns when the deadline passes. Before: the write blocked on
// the peer ignoring ctx.
func TestWhyStuckPeerCancelHonoursContext(t *testing.T) {
	w := newBlockingWriter()
	defer close(w.release)
	inR, inW := io.Pipe()
	defer inW.Close()
	conn := NewClientSideConnection(nil, w, inR)
	conn.SetLogger(quietLogger())
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- conn.Cancel(ctx, CancelNotification{SessionId: "s"}) }()
	waitChan(t, w.entered, "the write reaching the peer")
	cancel()
	if err := waitChan(t, done, "Cancel giving up on its ctx"); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err = %v", err)
	}
	// A request whose own write is the blocked one gives up on its ctx too.
	rctx, rcancel := context.WithCancel(context.Background())
	rdone := make(chan error, 1)
	go func() {
		_, err := conn.NewSession(rctx, NewSessionRequest{Cwd: "/", McpServers: []McpServer{}})
		rdone <- err
	}()
	rcancel()
	var re *RequestError
	if err := waitChan(t, rdone, "request giving up on its ctx"); !errors.As(err, &re) || re.Code != -32800 {
		t.Fatalf("err = %v", err)
	}
}

// Close ends a write blocked on a peer that does not read, even when the
// stream is no io.Closer and the sender has no deadline.
func TestCloseEndsBlockedWrite(t *testing.T) {
	w := newBlockingWriter()
	defer close(w.release)
	inR, inW := io.Pipe()
	defer inW.Close()
	conn := NewConnection(nil, w, inR)
	conn.SetLogger(quietLogger())
	note := make(chan error, 1)
	go func() { note <- conn.SendNotification(context.Background(), "session/cancel", nil) }()
	waitChan(t, w.entered, "the write reaching the peer")
	call := make(chan error, 1)
	go func() { call <- conn.SendRequestNoResult(context.Background(), "session/prompt", nil) }()
	// The request is pending (registered, then waiting for the write the
	// notification holds) before Close: a call Close finds queued behind a
	// blocked write is a pending call like any other.
	for deadline := time.Now().Add(hangGuard); ; time.Sleep(time.Millisecond) {
		conn.mu.Lock()
		pending := len(conn.state.pending)
		conn.mu.Unlock()
		if pending == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request never became pending")
		}
	}
	_ = conn.Close()
	if err := waitChan(t, note, "blocked notification"); err == nil || !strings.Contains(err.Error(), "connection closed") {
		t.Fatalf("notification: %v", err)
	}
	if err := waitChan(t, call, "queued request"); !errors.Is(err, ErrPeerDisconnected) {
		t.Fatalf("request: %v", err)
	}
}

// An agent that sends 200 updates, answers end_turn and exits at once: every
// update is handled, then the answer is returned. Before: "peer disconnected
// while waiting for pre-response notifications".
func TestWhyAnswerAndExit(t *testing.T) {
	const n = 200
	var seen orderedCounter
	var a *scriptedAgent
	a = newScriptedAgent(t, func(_ context.Context, _ string, params json.RawMessage) (any, *RequestError) {
		if seen.see(params) == 0 {
			<-a.conn.Done() // the agent has exited before the updates are handled
		}
		return nil, nil
	})
	done := make(chan error, 1)
	var resp PromptResponse
	go func() {
		var err error
		resp, err = SendRequest[PromptResponse](a.conn, context.Background(), "session/prompt", PromptRequest{SessionId: "s", Prompt: []ContentBlock{}})
		done <- err
	}()
	req := a.nextRequest(t)
	for i := 0; i < n && a.send(burstNote(i)); i++ {
	}
	a.send(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":{"stopReason":"end_turn"}}`)
	a.send("")
	if err := waitChan(t, done, "session/prompt"); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	if resp.StopReason != StopReasonEndTurn {
		t.Fatalf("stop reason %q", resp.StopReason)
	}
	seen.check(t, n)
}

// A frame over the limit fails the pending calls with an error naming the
// limit (ErrLineTooLong), not a bare "peer disconnected before response".
func TestFrameTooLargeNamesLimit(t *testing.T) {
	small := func(o *connectionOptions) { o.maxLineBytes = 1024 }
	a := newScriptedAgent(t, nil, small)
	done := make(chan error, 1)
	go func() { done <- a.conn.SendRequestNoResult(context.Background(), "session/prompt", nil) }()
	a.nextRequest(t)
	a.out <- `{"jsonrpc":"2.0","method":"n","params":"` + strings.Repeat("x", 2048) + `"}`
	err := waitChan(t, done, "the pending call")
	if !errors.Is(err, ErrLineTooLong) || !errors.Is(err, ErrPeerDisconnected) ||
		!strings.Contains(err.Error(), "peer disconnected before response: json-rpc message line exceeds 67108864 bytes") {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(a.conn.Err(), ErrLineTooLong) {
		t.Fatalf("Err = %v", a.conn.Err())
	}
}

// Reading a long frame allocates about twice its size (pieces, then the
// frame), not the ~5x of growing one slice by appending; a second frame of
// about the same size is read into one buffer of its size, without pieces.
func TestLongFrameAllocatesAboutItsSize(t *testing.T) {
	const size = 16 << 20
	frame := append(bytes.Repeat([]byte("x"), size), '\n')
	lr := newLineReader(bytes.NewReader(append(frame, frame...)), maxLineBytes)
	for i, limit := range []float64{2.5, 1.15} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		line, err := lr.next()
		runtime.ReadMemStats(&after)
		if err != nil || len(line) != size {
			t.Fatalf("frame %d: line %d bytes, err %v", i, len(line), err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; float64(got) > limit*size {
			t.Fatalf("reading frame %d (%d bytes) allocated %d bytes (%.2fx, limit %.2fx)", i, size, got, float64(got)/size, limit)
		}
	}
}

// A long line after a much longer one is read into a buffer sized for the
// longer one; it must not keep that buffer: its capacity stays within twice
// its length. Lines longer, equal and shorter than the expected size, with
// and without "\r\n" and at the end of the stream, come back whole.
func TestLongLineAfterLongerLine(t *testing.T) {
	sizes := []int{4 * readBufferSize, readBufferSize + 1, 3 * readBufferSize, 3 * readBufferSize, 5*readBufferSize + 7, 2 * readBufferSize}
	var input bytes.Buffer
	for i, n := range sizes {
		input.Write(bytes.Repeat([]byte{byte('a' + i)}, n))
		switch {
		case i == len(sizes)-1: // unterminated final line
		case i%2 == 0:
			input.WriteString("\r\n")
		default:
			input.WriteString("\n")
		}
	}
	lr := newLineReader(&input, maxLineBytes)
	for i, n := range sizes {
		line, err := lr.next()
		if err != nil && !(i == len(sizes)-1 && errors.Is(err, io.EOF)) {
			t.Fatalf("line %d: %v", i, err)
		}
		if !bytes.Equal(line, bytes.Repeat([]byte{byte('a' + i)}, n)) {
			t.Fatalf("line %d: %d bytes, want %d of %q", i, len(line), n, 'a'+i)
		}
		if cap(line) > 2*len(line)+2 {
			t.Fatalf("line %d: capacity %d for %d bytes", i, cap(line), len(line))
		}
	}
}

// The reader must not keep a handled large frame reachable while it reads
// the next one: a stream of large frames then holds one frame at a time.
// Here frame 2 is half written when the heap is measured; before the fix
// the reader's envelope still held frame 1 (about 2 frames live, not 1).
func TestLargeFrameReleasedBeforeNextIsRead(t *testing.T) {
	if testing.Short() {
		t.Skip("large frames")
	}
	const size = 16 << 20
	prefix := `{"jsonrpc":"2.0","method":"big","params":"`
	frame := bytes.Repeat([]byte("a"), size)
	copy(frame, prefix)
	copy(frame[size-3:], "\"}\n")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan struct{}, 2)
	conn := NewConnection(func(context.Context, string, json.RawMessage) (any, *RequestError) {
		handled <- struct{}{}
		return nil, nil
	}, io.Discard, r)
	conn.SetLogger(quietLogger())
	t.Cleanup(func() { _ = conn.Close(); _ = w.Close() })
	if _, err := w.Write(frame); err != nil {
		t.Fatal(err)
	}
	waitChan(t, handled, "frame 1")
	// A pipe holds at most a few hundred KiB, so once this returns the
	// reader has taken in nearly half of frame 2.
	if _, err := w.Write(frame[:size/2]); err != nil {
		t.Fatal(err)
	}
	frame = nil
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	// Live now: frame 2's buffer (its expected size, about one frame).
	if m.HeapAlloc > size*3/2 {
		t.Fatalf("%d MiB live while frame 2 is read (frame %d MiB): frame 1 is still reachable", m.HeapAlloc>>20, size>>20)
	}
}

// largeFrameClient is a Client whose SessionUpdate calls onUpdate.
type largeFrameClient struct {
	benchClient
	onUpdate func(SessionNotification)
}

func (c *largeFrameClient) SessionUpdate(_ context.Context, n SessionNotification) error {
	c.onUpdate(n)
	return nil
}

// Twelve 60 MB notifications in one turn: the turn succeeds, every frame
// arrives whole, the turn allocates about one frame's size per frame, and
// while each is handled the heap holds about that one frame. Before: each
// frame was read in pieces, joined, and its text copied again (3 frames
// allocated per frame, 1.4 GB of RSS), and before flow control the turn
// failed.
func TestWhyTwelveLargeFramesInOneTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("large frames")
	}
	const frames, size = 12, 60_000_000
	toClientR, toClientW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	toAgentR, toAgentW := io.Pipe()
	var count int
	var peak uint64
	c := NewClientSideConnection(&largeFrameClient{onUpdate: func(n SessionNotification) {
		if u := n.Update.AgentMessageChunk; u == nil || u.Content.Text == nil || len(u.Content.Text.Text) != size {
			t.Errorf("frame %d arrived damaged", count)
		}
		count++
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapAlloc)
	}}, toAgentW, toClientR)
	c.SetLogger(quietLogger())
	t.Cleanup(func() { _ = c.Close(); _ = toClientW.Close(); _ = toAgentR.Close() })
	go func() { // the agent: answer the prompt after twelve large chunks
		sc := bufio.NewScanner(toAgentR)
		if !sc.Scan() {
			return
		}
		var req struct{ ID json.RawMessage }
		_ = json.Unmarshal(sc.Bytes(), &req)
		fill := bytes.Repeat([]byte("a"), 1<<20)
		for i := 0; i < frames; i++ {
			_, _ = io.WriteString(toClientW, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"`)
			for left := size; left > 0; left -= len(fill) {
				_, _ = toClientW.Write(fill[:min(left, len(fill))])
			}
			_, _ = io.WriteString(toClientW, `"}}}}`+"\n")
		}
		_, _ = io.WriteString(toClientW, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"stopReason":"end_turn"}}`+"\n")
		for sc.Scan() {
		}
	}()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := c.Prompt(context.Background(), PromptRequest{SessionId: "s", Prompt: []ContentBlock{TextBlock("go")}})
	runtime.ReadMemStats(&after)
	if err != nil || resp.StopReason != StopReasonEndTurn {
		t.Fatalf("prompt: %v, %q", err, resp.StopReason)
	}
	if count != frames {
		t.Fatalf("%d of %d frames handled", count, frames)
	}
	perFrame := float64(after.TotalAlloc-before.TotalAlloc) / frames / size
	if limit := uint64(size) * 3 / 2; peak > limit || perFrame > 1.5 {
		t.Fatalf("heap held %.2f frames while one was handled, %.2f frames allocated per frame (limits 1.5, 1.5)", float64(peak)/size, perFrame)
	}
	t.Logf("heap while a frame was handled: at most %.2f frames; allocated per frame: %.2f frames", float64(peak)/size, perFrame)
}
