//go:build go1.25

package acp

// Calls from handlers (issue 34): the three measured cases that broke the
// documented guarantees, each run inside a testing/synctest bubble so that a
// hang shows as a call running to its (fake-time) timeout instead of as a
// stuck test, and the rule's other sides.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// scriptPeer is the far end of a connection inside a bubble: it writes raw
// lines and reads what the connection writes.
type scriptPeer struct {
	t    *testing.T
	conn *Connection
	in   *io.PipeWriter
	out  *bufio.Reader
}

// newScriptPeer starts a connection over io.Pipe; handler may refer to the
// connection through the returned peer's conn once it is set (the handler
// runs only after the first line is sent).
func newScriptPeer(t *testing.T, handler func(p *scriptPeer) MethodHandler, opts ...ConnectionOption) *scriptPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &scriptPeer{t: t, in: inW, out: bufio.NewReader(outR)}
	p.conn = NewConnection(handler(p), outW, inR, opts...)
	p.conn.SetLogger(quietLogger())
	t.Cleanup(func() {
		_ = inW.Close()
		_ = p.conn.Close()
		_ = outR.Close()
		_ = p.conn.Wait(context.Background())
	})
	return p
}

func (p *scriptPeer) send(lines ...string) {
	for _, l := range lines {
		if _, err := io.WriteString(p.in, l+"\n"); err != nil {
			p.t.Errorf("send: %v", err)
			return
		}
	}
}

// next reads the next line the connection wrote and decodes its id and
// method.
func (p *scriptPeer) next() (id, method string) {
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.t.Errorf("read: %v", err)
		return "", ""
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		p.t.Errorf("decode %q: %v", line, err)
	}
	return string(m.ID), m.Method
}

// longCall is the timeout calls in these tests get: in a bubble it passes
// in no real time, so a call that reaches it has hung.
const longCall = time.Hour

// TestWhyCallAfterNotificationHandlerReturnedWaitsForBarrier is case 1: a
// notification handler starts a goroutine (as the docs advise) that calls
// the peer with the handler's ctx after the handler has returned. Before
// the fix the call skipped the response barrier for ever (the marker never
// expired): it returned after 0 of the 50 notifications the peer sent
// before its response had been handled. Now the marker has ended with the
// handler, and the call waits for all 50, as with context.Background().
func TestWhyCallAfterNotificationHandlerReturnedWaitsForBarrier(t *testing.T) {
	for _, kept := range []bool{true, false} {
		t.Run(fmt.Sprintf("handler-ctx=%v", kept), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const notes = 50
				var handled atomic.Int32
				secondDone := make(chan struct{})
				result := make(chan string, 1)
				p := newScriptPeer(t, func(p *scriptPeer) MethodHandler {
					return func(ctx context.Context, method string, _ json.RawMessage) (any, *RequestError) {
						switch method {
						case "start":
							go func() {
								<-secondDone // "start" has returned: notifications run one at a time
								callCtx := ctx
								if !kept {
									callCtx = context.Background()
								}
								callCtx, cancel := context.WithTimeout(callCtx, longCall)
								defer cancel()
								if _, err := SendRequest[string](p.conn, callCtx, "q", nil); err != nil {
									result <- err.Error()
									return
								}
								result <- fmt.Sprintf("%d of %d", handled.Load(), notes)
							}()
						case "second":
							close(secondDone)
						case "n":
							time.Sleep(time.Millisecond)
							handled.Add(1)
						}
						return nil, nil
					}
				})
				p.send(`{"jsonrpc":"2.0","method":"start"}`, `{"jsonrpc":"2.0","method":"second"}`)
				id, method := p.next()
				if method != "q" {
					t.Fatalf("connection sent %q", method)
				}
				for range notes {
					p.send(`{"jsonrpc":"2.0","method":"n"}`)
				}
				p.send(`{"jsonrpc":"2.0","id":` + id + `,"result":"ok"}`)
				if got, want := <-result, fmt.Sprintf("%d of %d", notes, notes); got != want {
					t.Fatalf("the call returned after %s notifications had been handled, want %s", got, want)
				}
			})
		})
	}
}

// TestWhyOrderedNotificationHandlerCallWithNestedPeerRequest is case 2:
// with WithOrderedRequests, a notification handler calls the peer, and the
// peer sends a request of its own before it answers (as an agent asking for
// permission does). Before the fix that request waited for the running
// notification, which waited for the answer, which waited for the request:
// the call ran to its timeout (without one it never ended). Now a request
// that arrives while a notification handler awaits a call runs at once.
func TestWhyOrderedNotificationHandlerCallWithNestedPeerRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		result := make(chan error, 1)
		p := newScriptPeer(t, func(p *scriptPeer) MethodHandler {
			return func(ctx context.Context, method string, _ json.RawMessage) (any, *RequestError) {
				switch method {
				case "note":
					callCtx, cancel := context.WithTimeout(ctx, longCall)
					defer cancel()
					_, err := SendRequest[string](p.conn, callCtx, "q", nil)
					result <- err
					return nil, nil
				case "ask":
					return "answer", nil
				}
				return nil, nil
			}
		}, WithOrderedRequests())
		p.send(`{"jsonrpc":"2.0","method":"note"}`)
		qid, method := p.next()
		if method != "q" {
			t.Fatalf("connection sent %q", method)
		}
		p.send(`{"jsonrpc":"2.0","method":"later"}`) // queued behind the running handler
		p.send(`{"jsonrpc":"2.0","id":"p1","method":"ask"}`)
		if id, _ := p.next(); id != `"p1"` {
			t.Fatalf("reply to id %s, want \"p1\"", id)
		}
		p.send(`{"jsonrpc":"2.0","id":` + qid + `,"result":"ok"}`)
		if err := <-result; err != nil {
			t.Fatalf("the handler's call: %v", err)
		}
	})
}

// TestWhyRequestHandlerHoldingLockCallsPeer is case 3: a request handler
// holds a lock a notification handler needs and calls the peer, which sends
// that notification before its answer. Before the fix the answer waited for
// the notification (the barrier), the notification for the lock, the lock
// for the answer: for ever. Now a call made with a running handler's ctx
// does not wait for notifications, so the answer is delivered, the request
// handler releases the lock and the notification runs.
func TestWhyRequestHandlerHoldingLockCallsPeer(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lock := make(chan struct{}, 1) // a channel, so that waiting on it is durable in the bubble
				noted := make(chan struct{})
				var opts []ConnectionOption
				if ordered {
					opts = append(opts, WithOrderedRequests())
				}
				p := newScriptPeer(t, func(p *scriptPeer) MethodHandler {
					return func(ctx context.Context, method string, _ json.RawMessage) (any, *RequestError) {
						switch method {
						case "r":
							lock <- struct{}{}
							defer func() { <-lock }()
							callCtx, cancel := context.WithTimeout(ctx, longCall)
							defer cancel()
							got, err := SendRequest[string](p.conn, callCtx, "q", nil)
							if err != nil {
								return nil, toRequestError(err)
							}
							return got, nil
						case "n":
							lock <- struct{}{}
							<-lock
							close(noted)
						}
						return nil, nil
					}
				}, opts...)
				p.send(`{"jsonrpc":"2.0","id":1,"method":"r"}`)
				qid, method := p.next()
				if method != "q" {
					t.Fatalf("connection sent %q", method)
				}
				p.send(`{"jsonrpc":"2.0","method":"n"}`, `{"jsonrpc":"2.0","id":`+qid+`,"result":"ok"}`)
				line, err := p.out.ReadString('\n')
				if err != nil || line != `{"jsonrpc":"2.0","id":1,"result":"ok"}`+"\n" {
					t.Fatalf("reply %q, %v", line, err)
				}
				<-noted
			})
		})
	}
}

// TestNotificationHandlerCallWithForeignContextIsHeldBehindItself pins the
// caller's side of the rule: a notification handler that waits for a call
// made with a context not derived from its own (context.Background() with a
// timeout) waits for itself, since that call waits for the notifications
// received before its answer, its own included. The SDK cannot tell such a
// call from one made elsewhere, so the call ends only with its context, and
// the error says why; the connection lives on.
func TestNotificationHandlerCallWithForeignContextIsHeldBehindItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		result := make(chan error, 1)
		p := newScriptPeer(t, func(p *scriptPeer) MethodHandler {
			return func(_ context.Context, method string, _ json.RawMessage) (any, *RequestError) {
				if method == "note" {
					callCtx, cancel := context.WithTimeout(context.Background(), longCall)
					defer cancel()
					_, err := SendRequest[string](p.conn, callCtx, "q", nil)
					result <- err
				}
				return "pong", nil
			}
		})
		p.send(`{"jsonrpc":"2.0","method":"note"}`)
		qid, _ := p.next()
		p.send(`{"jsonrpc":"2.0","id":` + qid + `,"result":"ok"}`)
		err := <-result
		var re *RequestError
		if !errors.As(err, &re) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "handler's ctx") {
			t.Fatalf("err = %v, want the deadline, naming the handler's ctx", err)
		}
		p.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
		if id, _ := p.next(); id != "7" {
			t.Fatalf("reply to id %s after the held call", id)
		}
	})
}
