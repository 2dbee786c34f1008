package adapter_test

import (
	"errors"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// replayerFeed returns a Replayer's tracker and a func that feeds it one
// message, failing the test on an error.
func replayerFeed(t *testing.T) (*adapter.Tracker, func(from, msg string)) {
	t.Helper()
	tr, err := adapter.NewTracker(adapter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := adapter.NewReplayer(tr)
	return tr, func(from, msg string) {
		t.Helper()
		if err := r.Feed(from, []byte(msg)); err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
	}
}

// TestReplayerPairsResponsesByIDValue pins that a response pairs with its
// request by the id's value, not its spelling: a prompt answered with id
// 2.0 still ends the turn (sweeping the completed set), and a response to
// an id never asked changes nothing.
func TestReplayerPairsResponsesByIDValue(t *testing.T) {
	tr, feed := replayerFeed(t)
	feed(adapter.FromClient, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	feed(adapter.FromAgent, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"a","title":"task","status":"completed"}}}`)
	feed(adapter.FromAgent, `{"jsonrpc":"2.0","id":"2","result":{"stopReason":"end_turn"}}`)
	if got := tr.Counters()[adapter.CounterCompletedSwept]; got != 0 {
		t.Fatalf("a response with the string id \"2\" ended the turn of request 2 (swept %d)", got)
	}
	feed(adapter.FromAgent, `{"jsonrpc":"2.0","id":2.0,"result":{"stopReason":"end_turn"}}`)
	if got := tr.Counters()[adapter.CounterCompletedSwept]; got != 1 {
		t.Fatalf("the response with id 2.0 did not end the turn of request 2 (swept %d)", got)
	}
}

// TestReplayerRejectsNonMessages pins that input which is not a JSON-RPC
// message object is reported as ErrNotMessage (so a caller can tell it
// from other errors), and that the Replayer stays usable after it.
func TestReplayerRejectsNonMessages(t *testing.T) {
	tr, err := adapter.NewTracker(adapter.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := adapter.NewReplayer(tr)
	for _, msg := range []string{`not json`, `[1,2]`, `{"jsonrpc":"2.0"}`, `"x"`} {
		if err := r.Feed(adapter.FromAgent, []byte(msg)); !errors.Is(err, adapter.ErrNotMessage) {
			t.Errorf("%s: error %v, want ErrNotMessage", msg, err)
		}
	}
	if err := r.Feed(adapter.FromAgent, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"a","title":"task"}}}`)); err != nil {
		t.Fatalf("after bad input: %v", err)
	}
	if got := tr.Counters()[adapter.CounterFrames]; got != 1 {
		t.Errorf("frames %d, want 1", got)
	}
}

// TestQueuedPromptsEndTheTurnWithTheLast pins that prompts queued on one
// session (a second session/prompt sent before the first is answered)
// make one turn span for the tracker: the first answer sweeps nothing,
// since the agent may still be working on the queued prompt's tool calls;
// the last answer ends the span.
func TestQueuedPromptsEndTheTurnWithTheLast(t *testing.T) {
	tr, feed := replayerFeed(t)
	feed(adapter.FromClient, `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	feed(adapter.FromClient, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	feed(adapter.FromAgent, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"a","title":"task","status":"completed"}}}`)
	feed(adapter.FromAgent, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`)
	if got := tr.Counters()[adapter.CounterCompletedSwept]; got != 0 {
		t.Fatalf("the first of two open prompts ended the turn span (swept %d)", got)
	}
	feed(adapter.FromAgent, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`)
	if got := tr.Counters()[adapter.CounterCompletedSwept]; got != 1 {
		t.Fatalf("the last open prompt's answer did not end the turn span (swept %d)", got)
	}
	// A later turn on its own is a span of its own again.
	feed(adapter.FromClient, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	feed(adapter.FromAgent, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"b","title":"task","status":"completed"}}}`)
	feed(adapter.FromAgent, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	if got := tr.Counters()[adapter.CounterCompletedSwept]; got != 2 {
		t.Fatalf("a lone prompt after the queue did not end its turn (swept %d, want 2)", got)
	}
}
