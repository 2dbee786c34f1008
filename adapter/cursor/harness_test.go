package cursor_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
)

// run is what one replay of a capture produced.
type run struct {
	res *adapter.ReplayResult
	// replies are the JSON-RPC messages the client writes back for the
	// agent's extension requests, in order (notifications get none).
	replies []string
	// rejected is the handler's count of non-Cursor cursor/task requests.
	rejected uint64
}

// replayFile replays testdata/<name>.jsonl. With installed, agent requests
// the SDK does not know go to a cursor.Handler; without, they get what a
// client without the adapter answers: -32601 for every method.
func replayFile(t *testing.T, path string, installed bool) run {
	t.Helper()
	return replayWith(t, path, installed, adapter.Config{})
}

// replayWith is replayFile with a Tracker configuration.
func replayWith(t *testing.T, path string, installed bool, cfg adapter.Config) run {
	t.Helper()
	var out run
	var h *cursor.Handler
	ext := func(tr *adapter.Tracker, method string, id, params json.RawMessage) {
		var result any
		var err error
		if installed {
			if h == nil {
				h = cursor.NewHandler(tr)
			}
			result, err = h.HandleExtensionMethod(context.Background(), method, params)
		} else {
			err = acp.NewMethodNotFound(method)
		}
		if id == nil {
			return // a notification: the SDK writes nothing back
		}
		out.replies = append(out.replies, wireReply(t, id, result, err))
	}
	res, err := adapter.ReplayCapture(path, cfg, ext)
	if err != nil {
		t.Fatalf("replay %s: %v", path, err)
	}
	out.res = res
	if h != nil {
		out.rejected = h.Rejected()
	}
	return out
}

// wireReply renders the response a JSON-RPC connection writes for a
// handler's result or error.
func wireReply(t *testing.T, id json.RawMessage, result any, err error) string {
	t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if err != nil {
		var re *acp.RequestError
		if !errors.As(err, &re) {
			t.Fatalf("handler error is not a *acp.RequestError: %v", err)
		}
		msg["error"] = re
	} else {
		msg["result"] = result
	}
	b, merr := json.Marshal(msg)
	if merr != nil {
		t.Fatal(merr)
	}
	return string(b)
}

// replayGolden replays testdata/<name>.jsonl with the handler installed
// and compares events, replies and counters with testdata/<name>.golden.
func replayGolden(t *testing.T, name string) run {
	t.Helper()
	r := replayFile(t, filepath.Join("testdata", name+".jsonl"), true)
	goldentest.Compare(t, filepath.Join("testdata", name+".golden"), render(t, r))
	return r
}

// render renders a replay with its JSON-RPC replies ("reply …" lines).
func render(t *testing.T, r run) []byte {
	t.Helper()
	replies := make([]string, len(r.replies))
	for i, reply := range r.replies {
		replies[i] = "reply " + reply
	}
	return goldentest.Render(t, r.res, replies...)
}

// eventsFor returns the events of one tool call, in order.
func eventsFor(r run, toolCallID string) []adapter.Event {
	var out []adapter.Event
	for _, e := range r.res.Events {
		if e.ToolCallID == toolCallID {
			out = append(out, e)
		}
	}
	return out
}

// lastEvent returns the last event of toolCallID.
func lastEvent(t *testing.T, r run, toolCallID string) adapter.Event {
	t.Helper()
	evs := eventsFor(r, toolCallID)
	if len(evs) == 0 {
		t.Fatalf("no event for %s", toolCallID)
	}
	return evs[len(evs)-1]
}

// payloadJSON renders an event's payload as the persistence layer stores it.
func payloadJSON(t *testing.T, e adapter.Event) string {
	t.Helper()
	b, err := json.Marshal(e.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// counter reads a Tracker counter (0 when absent).
func counter(r run, name string) int64 { return r.res.Counters[name] }

// pendingLeft is how many pending entries the connection still holds,
// derived from the counters.
func pendingLeft(r run) int64 {
	return counter(r, "cursor_pending_stored") - counter(r, "cursor_pending_matched") -
		counter(r, "cursor_pending_evicted_count") - counter(r, "cursor_pending_evicted_bytes") -
		counter(r, "cursor_pending_evicted_age") - counter(r, "cursor_pending_evicted_session") -
		counter(r, "cursor_pending_swept")
}

// assertMonotonic fails when a tool call's emitted status moves backwards.
func assertMonotonic(t *testing.T, events []adapter.Event) {
	t.Helper()
	rank := map[adapter.ToolStatus]int{adapter.ToolStatusPending: 1, adapter.ToolStatusInProgress: 2,
		adapter.ToolStatusComplete: 3, adapter.ToolStatusError: 3, adapter.ToolStatusCancelled: 3}
	best := map[string]adapter.ToolStatus{}
	for _, e := range events {
		if e.Status == adapter.ToolStatusUnchanged {
			continue
		}
		prev := best[e.ToolCallID]
		if rank[e.Status] < rank[prev] || (prev.Terminal() && e.Status != prev) {
			t.Fatalf("%s: status moved from %s to %s", e.ToolCallID, prev, e.Status)
		}
		best[e.ToolCallID] = e.Status
	}
}
