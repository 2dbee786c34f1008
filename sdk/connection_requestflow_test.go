package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// floodResult is what a pipelining peer saw of its requests' replies.
type floodResult struct {
	answered, refused, other int
	peakHeapMiB, peakLiveMiB float64
}

// heapPeak samples the heap every few milliseconds until stop is closed
// and returns the largest values seen, in MiB: HeapAlloc (garbage not yet
// collected included) and the live heap as of the last collection.
func heapPeak(stop <-chan struct{}) <-chan [2]float64 {
	out := make(chan [2]float64, 1)
	go func() {
		var peak, live uint64
		var ms runtime.MemStats
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			metrics.Read(sample)
			peak = max(peak, ms.HeapAlloc)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				live = max(live, sample[0].Value.Uint64())
			}
			select {
			case <-stop:
				out <- [2]float64{float64(peak) / (1 << 20), float64(live) / (1 << 20)}
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// flood writes n requests (request(i) gives line i) to a connection as fast
// as it reads them, while reading every reply, and classifies the replies:
// want(reply) for the expected answer, -32603 "too many concurrent
// requests" as refused.
func flood(t *testing.T, n int, handler MethodHandler, request func(i int) string, want func(reply string) bool, opts ...ConnectionOption) floodResult {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := NewConnection(handler, outW, inR, opts...)
	conn.SetLogger(quietLogger())
	defer func() {
		_ = inW.Close()
		_ = conn.Close()
		_ = outR.Close()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		_ = conn.Wait(ctx)
	}()
	stop := make(chan struct{})
	peak := heapPeak(stop)
	go func() {
		w := bufio.NewWriterSize(inW, 64<<10)
		for i := range n {
			if _, err := w.WriteString(request(i) + "\n"); err != nil {
				return
			}
		}
		_ = w.Flush()
	}()
	var res floodResult
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	// The guard is on progress, not on the whole flood: it fails only when
	// no reply came for hangGuard.
	progress := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for seen := 0; seen < n && sc.Scan(); seen++ {
			select {
			case progress <- struct{}{}:
			default:
			}
			line := sc.Text()
			switch {
			case want(line):
				res.answered++
			case strings.Contains(line, "too many concurrent requests"):
				res.refused++
			default:
				res.other++
				if res.other <= 3 {
					t.Errorf("unexpected reply: %s", line)
				}
			}
		}
	}()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-progress:
		case <-time.After(hangGuard):
			t.Fatal("flood: replies stopped")
		}
	}
	close(stop)
	p := <-peak
	res.peakHeapMiB, res.peakLiveMiB = p[0], p[1]
	return res
}

// TestWhyPipelinedRequestsNeverRefused is the probe of issue 22: a peer
// that pipelines 200,000 unknown-method requests while reading every reply
// used to get thousands of -32603 "too many concurrent requests"; beyond
// the concurrency bound the connection now stops reading instead, so every
// request is answered -32601.
func TestWhyPipelinedRequestsNeverRefused(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	res := flood(t, n, func(_ context.Context, method string, _ json.RawMessage) (any, *RequestError) {
		return nil, NewMethodNotFound(method)
	}, func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"vendor/unknown","params":{"i":%d}}`, i, i)
	}, func(reply string) bool {
		return strings.Contains(reply, `"code":-32601`)
	})
	t.Logf("%d pipelined unknown-method requests: %d answered -32601, %d refused, %d other; peak heap %.1f MiB (live %.1f MiB)",
		n, res.answered, res.refused, res.other, res.peakHeapMiB, res.peakLiveMiB)
	if res.answered != n || res.refused != 0 {
		t.Fatalf("%d of %d answered, %d refused", res.answered, n, res.refused)
	}
}

// TestWhyCursorTaskFloodAlwaysAnswered: 100,000 pipelined cursor/task
// requests (which the Cursor spec says must never get a JSON-RPC error) are
// each answered {} by a client whose extension handler returns struct{}{}.
func TestWhyCursorTaskFloodAlwaysAnswered(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	cs := &ClientSideConnection{client: cursorTaskClient{newTestClient()}}
	res := flood(t, n, cs.handle, func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"cursor/task","params":{"toolCallId":"tc%d","subagentType":"explore","prompt":"look"}}`, i, i)
	}, func(reply string) bool {
		return strings.HasSuffix(reply, `"result":{}}`)
	})
	t.Logf("%d pipelined cursor/task requests: %d answered {}, %d refused, %d other; peak heap %.1f MiB (live %.1f MiB)",
		n, res.answered, res.refused, res.other, res.peakHeapMiB, res.peakLiveMiB)
	if res.answered != n || res.refused != 0 {
		t.Fatalf("%d of %d answered {}, %d refused", res.answered, n, res.refused)
	}
}

// TestRequestsBeyondBoundWait: with one request slot, a second request
// waits for the first to finish instead of being refused, and the reader
// reads nothing after it meanwhile.
func TestRequestsBeyondBoundWait(t *testing.T) {
	gate := make(chan struct{})
	var started atomic.Int32
	var notes atomic.Int32
	p := newRawPeer(t, func(_ context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method == "note" {
			notes.Add(1)
			return nil, nil
		}
		if started.Add(1) == 1 {
			<-gate
		}
		return params, nil
	}, WithMaxInflightRequests(1))
	p.send(`{"id":1,"method":"slow","params":1}`)
	p.send(`{"id":2,"method":"slow","params":2}`)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_, _ = io.WriteString(p.in, `{"method":"note"}`+"\n")
	}()
	select {
	case <-sent:
		t.Fatal("the reader read past a request waiting for a slot")
	case <-time.After(50 * time.Millisecond):
	}
	if n := started.Load(); n != 1 {
		t.Fatalf("%d handlers started with one slot", n)
	}
	close(gate)
	// The slot passes to request 2 before request 1's reply is written, so
	// the replies may come in either order.
	got := map[string]bool{p.recv(): true, p.recv(): true}
	if !got[`{"jsonrpc":"2.0","id":1,"result":1}`] || !got[`{"jsonrpc":"2.0","id":2,"result":2}`] {
		t.Fatalf("replies %v", got)
	}
	waitChan(t, sent, "the reader to resume")
}

// TestRequestHandlersCallingPeerAtBound: every request slot is taken by a
// handler that calls the peer (with its own ctx and with an unrelated one),
// and the peer sends more requests before it answers those calls. The
// reader must read past the bound to find the answers instead of
// deadlocking.
func TestRequestHandlersCallingPeerAtBound(t *testing.T) {
	var conn *Connection
	a := newScriptedAgent(t, func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
		if method != "work" {
			return params, nil
		}
		callCtx := ctx
		if string(params) == "2" {
			var cancel context.CancelFunc
			callCtx, cancel = context.WithTimeout(context.Background(), 3*hangGuard)
			defer cancel()
		}
		got, err := SendRequest[string](conn, callCtx, "peer/ask", nil)
		if err != nil {
			return nil, toRequestError(err)
		}
		return got, nil
	}, WithMaxInflightRequests(2))
	conn = a.conn
	a.send(`{"jsonrpc":"2.0","id":"w1","method":"work","params":1}`)
	a.send(`{"jsonrpc":"2.0","id":"w2","method":"work","params":2}`)
	// Both slots are now held by handlers waiting for their calls; only
	// after more requests does the peer answer those calls.
	ids := []json.RawMessage{a.nextRequest(t)["id"], a.nextRequest(t)["id"]}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range 5 {
			a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"e%d","method":"echo","params":%d}`, i, i))
		}
		for _, id := range ids {
			a.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":"answer"}`, id))
		}
	}()
	waitChan(t, sent, "the requests after the bound to be read")
}

// cursorTaskClient answers every extension request {} (as a Cursor-aware
// client answers cursor/task) and records nothing.
type cursorTaskClient struct{ *testClient }

func (cursorTaskClient) HandleExtensionMethod(context.Context, string, json.RawMessage) (any, error) {
	return struct{}{}, nil
}
