package acp

// Interleaving property: whatever mix of notifications, requests both ways,
// responses, handler call-backs, slow handlers and a peer that stops reading
// for a while, every notification is handled exactly once, in order per
// sender, every call returns after the notifications sent before its
// response, and nothing deadlocks. Handler call-backs use the handler's
// context or an unrelated one (context.Background() with a timeout).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stallReader is a reader whose Read waits while the peer is "stuck".
type stallReader struct {
	r    io.Reader
	mu   sync.Mutex
	gate chan struct{} // non-nil while stalled; closed to resume
}

func (s *stallReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g != nil {
		<-g
	}
	return s.r.Read(p)
}

func (s *stallReader) stall() {
	s.mu.Lock()
	s.gate = make(chan struct{})
	s.mu.Unlock()
}

func (s *stallReader) resume() {
	s.mu.Lock()
	close(s.gate)
	s.gate = nil
	s.mu.Unlock()
}

// interleaveNote is the params of a notification in the scenario.
type interleaveNote struct {
	Src string `json:"src"`
	Seq int    `json:"seq"`
}

// interleaveRecord tracks what the client handled, per source.
type interleaveRecord struct {
	mu   sync.Mutex
	next map[string]int
	bad  string
}

func (r *interleaveRecord) see(n interleaveNote) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next[n.Src] != n.Seq && r.bad == "" {
		r.bad = fmt.Sprintf("source %s: got %d, want %d", n.Src, n.Seq, r.next[n.Src])
	}
	r.next[n.Src]++
}

func (r *interleaveRecord) count(src string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next[src]
}

// runInterleaving plays one scenario driven by ops (each byte one step).
func runInterleaving(t *testing.T, ops []byte) {
	t.Helper()
	if len(ops) == 0 {
		return
	}
	bound := 1 + int(ops[0]%4)
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	stall := &stallReader{r: toAgentR}

	rec := &interleaveRecord{next: map[string]int{}}
	var slow atomic.Bool
	// callBack is the next call-back's context: 0 none, 1 the handler's,
	// 2 an unrelated one.
	var callBack atomic.Int32
	var agent, client *Connection
	var failMu sync.Mutex
	var failure string
	fail := func(format string, args ...any) {
		failMu.Lock()
		if failure == "" {
			failure = fmt.Sprintf(format, args...)
		}
		failMu.Unlock()
	}

	client = NewConnection(func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
		switch method {
		case "note":
			var n interleaveNote
			_ = json.Unmarshal(params, &n)
			rec.see(n)
			if mode := callBack.Swap(0); mode != 0 {
				callCtx := ctx
				if mode == 2 {
					var cancel context.CancelFunc
					callCtx, cancel = context.WithTimeout(context.Background(), 3*hangGuard)
					defer cancel()
				}
				got, err := SendRequest[string](client, callCtx, "echo", "back")
				if err != nil || got != "back" {
					fail("call-back from a handler (context %d): %q, %v", mode, got, err)
				}
			}
			if slow.Load() {
				spin(20 * time.Microsecond)
			} else {
				runtime.Gosched()
			}
			return nil, nil
		case "ask":
			return "answer", nil
		}
		return nil, NewMethodNotFound(method)
	}, toAgentW, toClientR, WithMaxQueuedNotifications(bound))
	agent = NewConnection(func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
		switch method {
		case "echo":
			return params, nil
		case "work":
			var w struct {
				ID string
				K  int
			}
			_ = json.Unmarshal(params, &w)
			for i := 0; i < w.K; i++ {
				if err := agent.SendNotification(ctx, "note", interleaveNote{Src: w.ID, Seq: i}); err != nil {
					fail("work notification: %v", err)
				}
			}
			return w.K, nil
		}
		return nil, NewMethodNotFound(method)
	}, toClientW, stall)
	client.SetLogger(quietLogger())
	agent.SetLogger(quietLogger())
	defer func() {
		_ = client.Close()
		_ = agent.Close()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		_ = client.Wait(ctx)
		_ = agent.Wait(ctx)
	}()

	ctx := context.Background()
	var wg sync.WaitGroup
	stalled := false
	sent := 0
	for i, op := range ops[1:] {
		switch op % 8 {
		case 0, 1, 2:
			if err := agent.SendNotification(ctx, "note", interleaveNote{Src: "script", Seq: sent}); err != nil {
				t.Fatalf("notification: %v", err)
			}
			sent++
		case 3:
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, err := SendRequest[string](agent, ctx, "ask", nil); err != nil || got != "answer" {
					fail("ask: %q, %v", got, err)
				}
			}()
		case 4:
			wg.Add(1)
			id, k := fmt.Sprintf("w%d", i), int(op/8)%6
			go func() {
				defer wg.Done()
				got, err := SendRequest[int](client, ctx, "work", map[string]any{"ID": id, "K": k})
				if err != nil || got != k {
					fail("work %s: %d, %v", id, got, err)
				}
				if n := rec.count(id); n != k {
					fail("work %s returned after %d of its %d notifications", id, n, k)
				}
			}()
		case 5:
			slow.Store(!slow.Load())
		case 6:
			callBack.Store(1 + int32(op/8)%2)
		case 7:
			if stalled {
				stall.resume()
			} else {
				stall.stall()
			}
			stalled = !stalled
		}
	}
	if stalled {
		stall.resume()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitChan(t, done, "every call of the scenario")
	// A last round trip: its response follows every notification sent.
	if _, err := SendRequest[int](client, ctx, "work", map[string]any{"ID": "last", "K": 0}); err != nil {
		t.Fatalf("last call: %v", err)
	}
	if n := rec.count("script"); n != sent {
		t.Fatalf("handled %d of %d notifications", n, sent)
	}
	rec.mu.Lock()
	bad := rec.bad
	rec.mu.Unlock()
	failMu.Lock()
	bad += failure
	failMu.Unlock()
	if bad != "" {
		t.Fatal(bad)
	}
	if client.Err() != nil || agent.Err() != nil {
		t.Fatalf("connection ended: client %v, agent %v", client.Err(), agent.Err())
	}
}

func TestInterleavingProperty(t *testing.T) {
	scenarios, steps := 40, 300
	if testing.Short() {
		scenarios = 10
	}
	for s := 0; s < scenarios; s++ {
		rng := rand.New(rand.NewPCG(uint64(s), 14))
		ops := make([]byte, 1+rng.IntN(steps))
		for i := range ops {
			ops[i] = byte(rng.UintN(256))
		}
		t.Run(fmt.Sprint(s), func(t *testing.T) { runInterleaving(t, ops) })
	}
}

func FuzzInterleaving(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 6, 0, 0, 0, 0, 4, 0})
	f.Add([]byte{1, 7, 0, 0, 0, 6, 0, 3, 0, 7, 4, 0})
	f.Add([]byte{3, 5, 0, 1, 2, 6, 0, 44, 0, 0, 7, 6, 0, 0, 0, 7, 3})
	// Call-backs with an unrelated context (op 14: 6 + 8), during bursts
	// and while the peer stalls.
	f.Add([]byte{0, 14, 0, 0, 0, 0, 4, 14, 0, 0, 0, 3, 14, 0})
	f.Add([]byte{1, 7, 14, 0, 0, 0, 0, 0, 14, 0, 7, 4, 14, 0, 12, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 512 {
			ops = ops[:512]
		}
		runInterleaving(t, ops)
	})
}
