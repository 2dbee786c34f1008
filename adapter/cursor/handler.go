package cursor

import (
	"context"
	"encoding/json"
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
}

// NewHandler returns the handler for the connection t follows.
func NewHandler(t *adapter.Tracker) *Handler {
	return &Handler{tracker: t}
}

// HandleExtensionMethod implements acp.ExtensionMethodHandler.
//
// For cursor/task on a Cursor connection it merges the params into the
// Tracker's state under the Tracker's lock, so the merge is ordered with
// every session update, and returns {} without waiting for the events the
// merge produced: the reply never blocks on the consumer (Tracker.DoAsync).
// Those events still reach the callback in order with every other event;
// call Tracker.Flush before reading results they feed. It never panics: a
// panic inside the merge is recovered by the Tracker and the request is
// still answered {}.
func (h *Handler) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if method != MethodTask || !h.Accepts(method) {
		if method == MethodTask {
			h.rejected.Add(1)
		}
		return nil, acp.NewMethodNotFound(method)
	}
	h.tracker.DoAsync(func(tx *adapter.Tx) {
		if d, ok := tx.Dialect().(*Dialect); ok {
			d.handleTask(tx, params)
		}
	})
	return struct{}{}, nil
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
