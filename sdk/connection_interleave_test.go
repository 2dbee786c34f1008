//go:build go1.25

package acp

// Interleaving property: whatever mix of notifications, requests both ways,
// responses, handler call-backs, slow handlers and a peer that stops reading
// for a while, every notification is handled exactly once, in order per
// sender, every call returns after the notifications sent before its
// response, and nothing deadlocks. Handler call-backs use the handler's
// context, inline or from a goroutine the handler waits for.
// TestModelInterleavings, below, explores the handler-call rule under
// testing/synctest.

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
	"testing/synctest"
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
	// callBack is the next call-back: 0 none, 1 with the handler's ctx,
	// 2 from a goroutine the handler starts and waits for, with a timeout
	// derived from the handler's ctx.
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
				call := func(callCtx context.Context) {
					got, err := SendRequest[string](client, callCtx, "echo", "back")
					if err != nil || got != "back" {
						fail("call-back from a handler (mode %d): %q, %v", mode, got, err)
					}
				}
				if mode == 1 {
					call(ctx)
				} else {
					callCtx, cancel := context.WithTimeout(ctx, 3*hangGuard)
					done := make(chan struct{})
					go func() { defer close(done); call(callCtx) }()
					<-done
					cancel()
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
	// Call-backs from a goroutine the handler waits for (op 14: 6 + 8),
	// during bursts and while the peer stalls.
	f.Add([]byte{0, 14, 0, 0, 0, 0, 4, 14, 0, 0, 0, 3, 14, 0})
	f.Add([]byte{1, 7, 14, 0, 0, 0, 0, 0, 14, 0, 7, 4, 14, 0, 12, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 512 {
			ops = ops[:512]
		}
		runInterleaving(t, ops)
	})
}

// Model of the handler-call rule (issue 34), explored under
// testing/synctest: every wait in the bubble is on channels, conds, pipes
// or fake time, so the scheduler's interleavings vary with the script while
// a hang shows as a call reaching its (fake) hour-long timeout. Each
// scenario checks
//   - ordering: notifications are handled in order per sender; a call not
//     made by a running handler returns only after every notification the
//     peer sent before its response was handled (contexts kept past their
//     handler included); under WithOrderedRequests a request starts after
//     the notifications sent before it, unless a notification handler
//     awaited a call of its own meanwhile;
//   - progress: every call and handler finishes, no call times out, the
//     connections stay up.
// Ingredients: notification handlers that call the peer inline, from a
// goroutine they wait for, or from one they leave behind with their ctx;
// request handlers that call the peer while holding a lock notification
// handlers need; nested peer requests (the peer's handler asks back before
// answering); slow handlers; a peer that stops reading; small queue bounds.

// modelNote is a notification of the model: its sender's sequence and what
// its handler does.
type modelNote struct {
	Src  string `json:"src"`
	Seq  int    `json:"seq"`
	Mode int    `json:"mode"`
}

// Notification handler modes.
const (
	noteQuiet    = iota // just record
	noteCall            // call the peer inline with the handler's ctx
	noteCallGo          // call from a goroutine the handler waits for
	noteCallKept        // leave a goroutine that calls after the handler returned
	noteLock            // take the lock request handlers hold while calling
	noteLockCall        // hold the lock and call the peer
	noteSlow            // sleep a millisecond (fake time)
	noteModes
)

// modelEcho asks the peer to answer, after nesting requests back first.
type modelEcho struct {
	Nest int `json:"nest"`
}

// modelAsk is the peer's request; Lock makes the handler hold the lock
// while it calls back. SentBefore, Calls and Active are the model's
// bookkeeping at the moment the peer sent it.
type modelAsk struct {
	Lock       bool  `json:"lock"`
	SentBefore int   `json:"sentBefore"`
	Calls      int64 `json:"calls"`
	Active     int64 `json:"active"`
}

func runModel(t *testing.T, ops []byte) {
	if len(ops) == 0 {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		bound := 1 + int(ops[0]%4)
		ordered := ops[0]&4 != 0
		toAgentR, toAgentW := io.Pipe()
		toClientR, toClientW := io.Pipe()
		stall := &stallReader{r: toAgentR}
		rec := &interleaveRecord{next: map[string]int{}}
		lock := make(chan struct{}, 1)
		// scriptSent counts the script's notifications written so far;
		// noteCalls and noteActive the notification handlers' calls
		// started so far and running now.
		var scriptSent atomic.Int64
		var noteCalls, noteActive atomic.Int64
		var kept sync.WaitGroup
		// flushed is closed by the handler of the last notification
		// ("flush"): notifications are handled in order, one at a time,
		// so by then every kept.Add of a script handler has happened.
		flushed := make(chan struct{})
		// started counts the notification handlers started: once it
		// passes a handler's own count, that handler has returned (they
		// run one at a time), and so has its marker.
		var startMu sync.Mutex
		startCond := sync.NewCond(&startMu)
		started := 0
		var failMu sync.Mutex
		var failure string
		fail := func(format string, args ...any) {
			failMu.Lock()
			if failure == "" {
				failure = fmt.Sprintf(format, args...)
			}
			failMu.Unlock()
		}
		var agent, client *Connection

		// echo calls the agent and checks the barrier unless byHandler.
		echo := func(ctx context.Context, nest int, byHandler bool, what string) {
			ctx, cancel := context.WithTimeout(ctx, longCall)
			defer cancel()
			sent, err := SendRequest[int](client, ctx, "echo", modelEcho{Nest: nest})
			if err != nil {
				fail("%s: %v", what, err)
				return
			}
			if n := rec.count("script"); !byHandler && n < sent {
				fail("%s returned after %d notifications, its response followed %d", what, n, sent)
			}
		}
		clientOpts := []ConnectionOption{WithMaxQueuedNotifications(bound)}
		if ordered {
			clientOpts = append(clientOpts, WithOrderedRequests())
		}
		client = NewConnection(func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
			switch method {
			case "note":
				var n modelNote
				_ = json.Unmarshal(params, &n)
				rec.see(interleaveNote{Src: n.Src, Seq: n.Seq})
				startMu.Lock()
				started++
				mine := started
				startCond.Broadcast()
				startMu.Unlock()
				if n.Src == "flush" {
					close(flushed)
				}
				nest := n.Seq % 2
				called := func(f func()) {
					noteActive.Add(1)
					noteCalls.Add(1)
					f()
					noteActive.Add(-1)
				}
				switch n.Mode {
				case noteCall:
					called(func() { echo(ctx, nest, true, "inline call-back") })
				case noteCallGo:
					called(func() {
						done := make(chan struct{})
						go func() { defer close(done); echo(ctx, nest, true, "call-back from a goroutine") }()
						<-done
					})
				case noteCallKept:
					kept.Add(1)
					go func() {
						defer kept.Done()
						startMu.Lock()
						for started <= mine {
							startCond.Wait()
						}
						startMu.Unlock()
						// The handler has returned: its marker ended, so
						// this is an ordinary call, held by the barrier.
						echo(ctx, nest, false, "call with a kept handler ctx")
					}()
				case noteLock:
					lock <- struct{}{}
					<-lock
				case noteLockCall:
					lock <- struct{}{}
					called(func() { echo(ctx, 0, true, "call-back holding the lock") })
					<-lock
				case noteSlow:
					time.Sleep(time.Millisecond)
				}
				return nil, nil
			case "ask":
				var a modelAsk
				_ = json.Unmarshal(params, &a)
				if ordered && rec.count("script") < a.SentBefore && a.Active == 0 && noteCalls.Load() == a.Calls {
					fail("ordered request started after %d notifications, %d were sent before it", rec.count("script"), a.SentBefore)
				}
				if a.Lock {
					lock <- struct{}{}
					defer func() { <-lock }()
					echo(ctx, 0, true, "request handler's call holding the lock")
				}
				return "answer", nil
			}
			return nil, NewMethodNotFound(method)
		}, toAgentW, toClientR, clientOpts...)
		agent = NewConnection(func(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
			switch method {
			case "echo":
				var e modelEcho
				_ = json.Unmarshal(params, &e)
				for range e.Nest {
					// A nested peer request: asked before the answer.
					askCtx, cancel := context.WithTimeout(ctx, longCall)
					_, err := SendRequest[string](agent, askCtx, "ask", modelAsk{SentBefore: int(scriptSent.Load()), Calls: noteCalls.Load(), Active: noteActive.Load()})
					cancel()
					if err != nil {
						fail("nested ask: %v", err)
					}
				}
				return int(scriptSent.Load()), nil
			case "work":
				var w struct {
					ID string
					K  int
				}
				_ = json.Unmarshal(params, &w)
				for i := range w.K {
					if err := agent.SendNotification(ctx, "note", modelNote{Src: w.ID, Seq: i}); err != nil {
						fail("work notification: %v", err)
					}
				}
				return w.K, nil
			}
			return nil, NewMethodNotFound(method)
		}, toClientW, stall)
		client.SetLogger(quietLogger())
		agent.SetLogger(quietLogger())

		ctx := context.Background()
		var wg sync.WaitGroup
		stalled := false
		for i, op := range ops[1:] {
			arg := int(op / 8)
			switch op % 8 {
			case 0, 1, 2:
				seq := int(scriptSent.Load())
				if err := agent.SendNotification(ctx, "note", modelNote{Src: "script", Seq: seq, Mode: arg % noteModes}); err != nil {
					t.Fatalf("notification: %v", err)
				}
				scriptSent.Add(1)
			case 3:
				wg.Add(1)
				a := modelAsk{Lock: arg%2 == 1, SentBefore: int(scriptSent.Load()), Calls: noteCalls.Load(), Active: noteActive.Load()}
				go func() {
					defer wg.Done()
					askCtx, cancel := context.WithTimeout(ctx, longCall)
					defer cancel()
					if got, err := SendRequest[string](agent, askCtx, "ask", a); err != nil || got != "answer" {
						fail("ask: %q, %v", got, err)
					}
				}()
			case 4:
				wg.Add(1)
				id, k := fmt.Sprintf("w%d", i), arg%6
				go func() {
					defer wg.Done()
					workCtx, cancel := context.WithTimeout(ctx, longCall)
					defer cancel()
					got, err := SendRequest[int](client, workCtx, "work", map[string]any{"ID": id, "K": k})
					if err != nil || got != k {
						fail("work %s: %d, %v", id, got, err)
					}
					if n := rec.count(id); n != k {
						fail("work %s returned after %d of its %d notifications", id, n, k)
					}
				}()
			case 5:
				wg.Add(1)
				go func() { defer wg.Done(); echo(ctx, arg%3, false, "echo") }()
			case 6:
				if stalled {
					stall.resume()
				} else {
					stall.stall()
				}
				stalled = !stalled
			case 7:
				time.Sleep(time.Duration(arg%3) * time.Millisecond)
			}
		}
		if stalled {
			stall.resume()
		}
		wg.Wait()
		// One more notification lets the goroutines kept by the last
		// handler go (see started). SendNotification returns once the
		// line is written, while script notifications may still be
		// queued: wait until the flush is handled before kept.Wait, so
		// no handler calls kept.Add while Wait runs with the counter at
		// zero (a WaitGroup misuse the race detector reports, and a
		// Wait that would miss goroutines kept later).
		if err := agent.SendNotification(ctx, "note", modelNote{Src: "flush"}); err != nil {
			t.Fatalf("notification: %v", err)
		}
		<-flushed
		kept.Wait()
		// A last round trip: its response follows every notification sent.
		echo(ctx, 0, false, "last echo")
		if n, want := rec.count("script"), int(scriptSent.Load()); n != want {
			t.Errorf("handled %d of %d notifications", n, want)
		}
		rec.mu.Lock()
		bad := rec.bad
		rec.mu.Unlock()
		failMu.Lock()
		bad += failure
		failMu.Unlock()
		if bad != "" {
			t.Error(bad)
		}
		if client.Err() != nil || agent.Err() != nil {
			t.Errorf("connection ended: client %v, agent %v", client.Err(), agent.Err())
		}
		_ = client.Close()
		_ = agent.Close()
		_ = client.Wait(ctx)
		_ = agent.Wait(ctx)
	})
}

func TestModelInterleavings(t *testing.T) {
	scenarios, steps := 200, 120
	if testing.Short() {
		scenarios = 40
	}
	for s := range scenarios {
		rng := rand.New(rand.NewPCG(uint64(s), 34))
		ops := make([]byte, 1+rng.IntN(steps))
		for i := range ops {
			ops[i] = byte(rng.UintN(256))
		}
		t.Run(fmt.Sprint(s), func(t *testing.T) { runModel(t, ops) })
	}
}

func FuzzModelInterleavings(f *testing.F) {
	// Ordered requests (4 in the first byte) with an inline call-back
	// (note mode 1: op 8) answered after a nested ask (seq 1 nests).
	f.Add([]byte{4, 0, 8, 5})
	// A request handler holding the lock calls back (op 11) while a
	// notification needs the lock (mode 4: op 32).
	f.Add([]byte{0, 11, 32, 32, 0, 5})
	// A kept handler ctx (mode 3: op 24) during a burst, peer stalled.
	f.Add([]byte{1, 24, 0, 0, 6, 0, 0, 6, 5})
	f.Add([]byte{5, 40, 11, 8, 16, 3, 12, 0, 13, 6, 21, 6, 5})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 {
			ops = ops[:256]
		}
		runModel(t, ops)
	})
}
