//go:build go1.25

package acp

// RequestTrace.ResponseInOrder: the response's place in wire order, each
// case in a testing/synctest bubble (a hang shows as a call running to its
// fake-time timeout).

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// wireLog is what happened, in order, as handlers and hooks saw it.
type wireLog struct {
	mu sync.Mutex
	at []string
}

func (l *wireLog) add(s string) {
	l.mu.Lock()
	l.at = append(l.at, s)
	l.mu.Unlock()
}

func (l *wireLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at)
}

// noteLogger is a handler that logs each notification's method and
// answers requests; a method starting with "b" pauses first, so that the
// reader runs ahead of it.
func noteLogger(l *wireLog) func(*scriptPeer) MethodHandler {
	return func(*scriptPeer) MethodHandler {
		return func(_ context.Context, method string, _ json.RawMessage) (any, *RequestError) {
			if strings.HasPrefix(method, "b") {
				time.Sleep(time.Millisecond)
			}
			l.add(method)
			return nil, nil
		}
	}
}

// inOrderCall sends "q" with a ResponseInOrder hook that logs "response"
// (and its error), and returns once the peer's request line is read; the
// call's outcome comes on the channel, with whether the hook had run when
// the call returned.
type inOrderOutcome struct {
	err       error
	hookFirst bool
}

func inOrderCall(p *scriptPeer, ctx context.Context, l *wireLog) (id string, outcome <-chan inOrderOutcome) {
	var ran atomic.Bool
	trace := &RequestTrace{ResponseInOrder: func(err error) {
		if err != nil {
			l.add("response " + err.Error())
		} else {
			l.add("response")
		}
		ran.Store(true)
	}}
	ch := make(chan inOrderOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(WithRequestTrace(ctx, trace), longCall)
		defer cancel()
		_, err := SendRequest[json.RawMessage](p.conn, ctx, "q", nil)
		ch <- inOrderOutcome{err, ran.Load()}
	}()
	id, method := p.next()
	if method != "q" {
		p.t.Fatalf("connection sent %q, want q", method)
	}
	return id, ch
}

// TestResponseInOrderTakesTheResponsesPlace: the hook runs after the
// notifications sent before the response were handled and before any sent
// after it is, whether the response waited for earlier notifications or
// was released at once, and the call returns after it. The handlers of
// the later notifications race the caller's wake-up, so each case runs a
// few times (code after the call, instead of the hook, lost most runs).
func TestResponseInOrderTakesTheResponsesPlace(t *testing.T) {
	for name, tc := range map[string]struct {
		before, after []string
	}{
		"held behind notifications": {before: []string{"b1", "b2", "b3"}, after: []string{"a1", "a2"}},
		"released at once":          {after: []string{"a1", "a2"}},
	} {
		t.Run(name, func(t *testing.T) {
			for range 20 {
				synctest.Test(t, func(t *testing.T) {
					var l wireLog
					p := newScriptPeer(t, noteLogger(&l))
					id, outcome := inOrderCall(p, context.Background(), &l)
					var lines []string
					for _, m := range tc.before {
						lines = append(lines, `{"jsonrpc":"2.0","method":"`+m+`"}`)
					}
					lines = append(lines, `{"jsonrpc":"2.0","id":`+id+`,"result":"ok"}`)
					for _, m := range tc.after {
						lines = append(lines, `{"jsonrpc":"2.0","method":"`+m+`"}`)
					}
					p.send(lines...)
					o := <-outcome
					if o.err != nil || !o.hookFirst {
						t.Fatalf("call: err %v, hook run before it returned %v; want nil, true", o.err, o.hookFirst)
					}
					synctest.Wait()
					time.Sleep(time.Second) // the later handlers finish
					want := append(append(slices.Clone(tc.before), "response"), tc.after...)
					if got := l.get(); !slices.Equal(got, want) {
						t.Fatalf("order %q, want %q", got, want)
					}
				})
			}
		})
	}
}

// TestResponseInOrderOfAHandlersCall: a handler's call waits for no
// earlier notification, so its hook runs as its response arrives, while
// the handler that made it still runs, and still before the notifications
// sent after the response.
func TestResponseInOrderOfAHandlersCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l wireLog
		calling := make(chan *scriptPeer, 1)
		p := newScriptPeer(t, func(p *scriptPeer) MethodHandler {
			return func(ctx context.Context, method string, _ json.RawMessage) (any, *RequestError) {
				if method != "start" {
					l.add(method)
					return nil, nil
				}
				calling <- p
				_, outcome := inOrderCall(p, ctx, &l)
				if o := <-outcome; o.err != nil || !o.hookFirst {
					t.Errorf("handler's call: err %v, hook run before it returned %v", o.err, o.hookFirst)
				}
				l.add("start returns")
				return nil, nil
			}
		})
		p.send(`{"jsonrpc":"2.0","method":"start"}`)
		<-calling
		// inOrderCall, in the handler, reads the request line; its id is
		// the connection's first.
		synctest.Wait()
		p.send(`{"jsonrpc":"2.0","method":"n1"}`, `{"jsonrpc":"2.0","id":1,"result":"ok"}`, `{"jsonrpc":"2.0","method":"n2"}`)
		synctest.Wait()
		time.Sleep(time.Second)
		if got, want := l.get(), []string{"response", "start returns", "n1", "n2"}; !slices.Equal(got, want) {
			t.Fatalf("order %q, want %q", got, want)
		}
	})
}

// TestResponseInOrderGetsThePeersError: an error response takes its place
// too, and the hook gets the peer's *RequestError.
func TestResponseInOrderGetsThePeersError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l wireLog
		var got *RequestError
		p := newScriptPeer(t, noteLogger(&l))
		trace := &RequestTrace{ResponseInOrder: func(err error) {
			if !errors.As(err, &got) {
				t.Errorf("hook got %T %v, want a *RequestError", err, err)
			}
		}}
		done := make(chan error, 1)
		go func() {
			_, err := SendRequest[json.RawMessage](p.conn, WithRequestTrace(context.Background(), trace), "q", nil)
			done <- err
		}()
		id, _ := p.next()
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32000,"message":"nope"}}`)
		if err := <-done; err == nil {
			t.Fatal("call succeeded, want the peer's error")
		}
		if got == nil || got.Code != -32000 {
			t.Fatalf("hook got %v, want code -32000", got)
		}
	})
}

// TestResponseInOrderNotCalledWithoutResponse: a call whose ctx ends, or
// whose connection ends, before any response never calls the hook.
func TestResponseInOrderNotCalledWithoutResponse(t *testing.T) {
	for _, end := range []string{"ctx", "close"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l wireLog
				p := newScriptPeer(t, noteLogger(&l))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				id, outcome := inOrderCall(p, ctx, &l)
				if end == "ctx" {
					cancel()
				} else {
					_ = p.conn.Close()
				}
				if o := <-outcome; o.err == nil || o.hookFirst {
					t.Fatalf("call: err %v, hook run %v; want an error and no hook", o.err, o.hookFirst)
				}
				if end == "ctx" {
					// A late response is dropped, its call gone.
					p.send(`{"jsonrpc":"2.0","id":`+id+`,"result":"ok"}`, `{"jsonrpc":"2.0","method":"n1"}`)
				}
				synctest.Wait()
				time.Sleep(time.Second)
				if got := l.get(); slices.Contains(got, "response") {
					t.Fatalf("hook called: %q", got)
				}
			})
		})
	}
}

// TestResponseInOrderAfterTheCallersCtxEnded: the caller stopped waiting
// while its response, already received, waited for an earlier
// notification; the response still takes its place, and the hook is
// called there.
func TestResponseInOrderAfterTheCallersCtxEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l wireLog
		gate := make(chan struct{})
		p := newScriptPeer(t, func(*scriptPeer) MethodHandler {
			return func(_ context.Context, method string, _ json.RawMessage) (any, *RequestError) {
				if method == "slow" {
					<-gate
				}
				l.add(method)
				return nil, nil
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		id, outcome := inOrderCall(p, ctx, &l)
		p.send(`{"jsonrpc":"2.0","method":"slow"}`, `{"jsonrpc":"2.0","id":`+id+`,"result":"ok"}`, `{"jsonrpc":"2.0","method":"n1"}`)
		synctest.Wait()
		cancel()
		if o := <-outcome; o.err == nil || o.hookFirst {
			t.Fatalf("call: err %v, hook run %v; want the ctx's error, no hook yet", o.err, o.hookFirst)
		}
		close(gate)
		synctest.Wait()
		if got, want := l.get(), []string{"slow", "response", "n1"}; !slices.Equal(got, want) {
			t.Fatalf("order %q, want %q", got, want)
		}
	})
}

// TestResponseInOrderPanicIsRecovered: a hook that panics is logged; the
// call still gets its response and the connection lives on.
func TestResponseInOrderPanicIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l wireLog
		p := newScriptPeer(t, noteLogger(&l))
		logs := &logRecorder{}
		p.conn.SetLogger(slog.New(logs))
		trace := &RequestTrace{ResponseInOrder: func(error) { panic("hook") }}
		done := make(chan error, 1)
		go func() {
			_, err := SendRequest[json.RawMessage](p.conn, WithRequestTrace(context.Background(), trace), "q", nil)
			done <- err
		}()
		id, _ := p.next()
		p.send(`{"jsonrpc":"2.0","id":`+id+`,"result":"ok"}`, `{"jsonrpc":"2.0","method":"n1"}`)
		if err := <-done; err != nil {
			t.Fatalf("call: %v", err)
		}
		synctest.Wait()
		time.Sleep(time.Second)
		if got := l.get(); !slices.Equal(got, []string{"n1"}) {
			t.Fatalf("handled %q, want [n1]", got)
		}
		if !logs.contains("panic in RequestTrace.ResponseInOrder", "hook") {
			t.Fatalf("panic not logged: %s", strings.Join(logs.records, "\n"))
		}
	})
}
