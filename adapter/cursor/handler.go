package cursor

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// MethodTask is Cursor's agent-to-client subagent metadata method. Its name
// has no "_" prefix; the SDK routes it to the client's
// acp.ExtensionMethodHandler like every other method it does not know.
const MethodTask = "cursor/task"

// Handler answers the agent-to-client methods the SDK does not know, for
// one connection. Plug it into your acp.Client:
//
//	func (c *myClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
//		return c.cursor.HandleExtensionMethod(ctx, method, params)
//	}
//
// In a connection whose dialect is Cursor, cursor/task always gets an empty
// result ({}), whatever its params, and its metadata goes to the Tracker.
// From any other agent, and for every other method, it returns
// acp.NewMethodNotFound(method): the bytes an SDK client without the
// adapter writes. Handler is safe for concurrent use.
type Handler struct {
	tracker  *adapter.Tracker
	rejected atomic.Uint64

	// inFlight counts deliveries still running; Wait sleeps on idle until
	// it is zero. (A sync.WaitGroup would forbid Wait concurrent with new
	// requests.)
	mu       sync.Mutex
	idle     *sync.Cond
	inFlight int
}

// NewHandler returns the handler for the connection t follows.
func NewHandler(t *adapter.Tracker) *Handler {
	h := &Handler{tracker: t}
	h.idle = sync.NewCond(&h.mu)
	return h
}

// HandleExtensionMethod implements acp.ExtensionMethodHandler.
//
// For cursor/task on a Cursor connection it merges the params into the
// Tracker's state under the Tracker's lock, so the merge is ordered with
// every session update, and returns {} as soon as the merge is done: the
// events it produced are handed to the consumer's callback on another
// goroutine, so a slow callback never delays Cursor's answer (use Wait to
// wait for them). It never panics: a panic inside the merge is recovered by
// the Tracker and the request is still answered {}.
func (h *Handler) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != MethodTask || !h.Accepts(method) {
		if method == MethodTask {
			h.rejected.Add(1)
		}
		return nil, acp.NewMethodNotFound(method)
	}
	merged := make(chan struct{})
	h.mu.Lock()
	h.inFlight++
	h.mu.Unlock()
	go func() {
		defer h.done()
		// Do runs the merge, then delivers the queued events on this
		// goroutine (unless another feeder is already delivering them).
		h.tracker.Do(func(tx *adapter.Tx) {
			defer close(merged)
			if d, ok := tx.Dialect().(*Dialect); ok {
				d.handleTask(tx, params)
			}
		})
	}()
	<-merged
	return struct{}{}, nil
}

// Wait blocks until the events of every cursor/task handled so far have
// been handed to the Tracker's callback. Tests and replays call it before
// reading what the callback collected; a live client need not.
// It is safe to call concurrently with HandleExtensionMethod; requests that
// start while it waits may or may not be waited for.
func (h *Handler) Wait() {
	h.mu.Lock()
	for h.inFlight > 0 {
		h.idle.Wait()
	}
	h.mu.Unlock()
}

func (h *Handler) done() {
	h.mu.Lock()
	h.inFlight--
	if h.inFlight == 0 {
		h.idle.Broadcast()
	}
	h.mu.Unlock()
}

// Accepts reports whether HandleExtensionMethod answers method with a
// result on this connection (true only for cursor/task once the
// connection's dialect is Cursor). A consumer with extension methods of its
// own can check it before falling back to its own -32601.
func (h *Handler) Accepts(method string) bool {
	// The dialect is fixed once chosen, so reading its name outside the
	// Tracker's lock is enough; before initialize it is "" and the request
	// is treated as coming from an unknown agent.
	return method == MethodTask && h.tracker.Dialect() == adapter.DialectCursor
}

// Rejected counts cursor/task requests answered -32601 because the
// connection's agent is not Cursor. Nothing else records them: with the
// adapter installed a non-Cursor connection's state does not change.
func (h *Handler) Rejected() uint64 { return h.rejected.Load() }
