package tap

import (
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// gapObserver is an observer whose Incomplete marks are collected.
func gapObserver(t *testing.T) (*Observer, map[string]int64, func(from capture.Direction, line string)) {
	t.Helper()
	marks := map[string]int64{}
	obs, err := NewObserver(ObserverConfig{View: view.NewTerminal(io.Discard, false),
		Incomplete: func(session string, n int64) { marks[session] = n }})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(from capture.Direction, line string) { obs.ObserveAt(from, []byte(line), time.Now()) }
	feed(capture.FromClient, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	feed(capture.FromAgent, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`)
	return obs, marks, feed
}

func toolCall(session, id string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + session + `","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","title":"ls","status":"pending"}}}`
}

// Once the connection lost lines, every session it observed is marked
// incomplete, those seen before the loss and those seen after it, each
// once with the count then, and again at the end when more were lost; a
// connection that lost nothing marks none.
func TestLostLinesMarkEverySessionIncomplete(t *testing.T) {
	obs, marks, feed := gapObserver(t)
	feed(capture.FromAgent, toolCall("A", "t1"))
	if len(marks) != 0 {
		t.Fatalf("marks before any loss: %v", marks)
	}
	obs.unobserved(2)
	if want := map[string]int64{"A": 2}; !maps.Equal(marks, want) {
		t.Errorf("marks after the loss %v, want %v", marks, want)
	}
	feed(capture.FromAgent, toolCall("B", "t2"))
	feed(capture.FromAgent, toolCall("A", "t3"))
	if want := map[string]int64{"A": 2, "B": 2}; !maps.Equal(marks, want) {
		t.Errorf("marks after a new session %v, want %v", marks, want)
	}
	obs.unobserved(3)
	obs.Finish()
	if want := map[string]int64{"A": 3, "B": 3}; !maps.Equal(marks, want) {
		t.Errorf("marks at the end %v, want %v", marks, want)
	}

	clean, none, feed := gapObserver(t)
	feed(capture.FromAgent, toolCall("A", "t1"))
	clean.Finish()
	if len(none) != 0 {
		t.Errorf("a connection that lost nothing marked %v", none)
	}
}

// The queue's drops and the pumps' lines over the limit reach the
// observer as lost lines.
func TestFollowReportsLostLines(t *testing.T) {
	obs, marks, _ := gapObserver(t)
	q := NewQueue(0, 0)
	p := &Pump{From: capture.FromAgent, Queue: q, MaxLineBytes: 10}
	p.scan([]byte("{\"a\":\"this line is over the limit\"}\n"))
	q.Dropped.Add(1)
	q.push([]Line{{From: capture.FromAgent, Bytes: []byte(toolCall("A", "t1")), At: time.Now()}})
	q.Close()
	observe(obs, q)
	if want := map[string]int64{"A": 2}; !maps.Equal(marks, want) {
		t.Errorf("marks %v, want %v", marks, want)
	}
}

// Through the tap: a line over the observer's limit marks the session the
// connection observed incomplete, with the connection's count.
func TestTapLostLineMarksTheSession(t *testing.T) {
	marks := map[string]int64{}
	obs, err := NewObserver(ObserverConfig{View: view.NewTerminal(io.Discard, false),
		Incomplete: func(session string, n int64) { marks[session] = n }})
	if err != nil {
		t.Fatal(err)
	}
	in := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	out := []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}` + "\n" + toolCall("A", "t1") + "\n" +
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"A","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` +
		strings.Repeat("x", 600) + `"}}}}` + "\n")
	_, _, st := passThrough(t, in, out, nil, Config{Observer: obs, MaxLineBytes: 400})
	if st.TooLong != 1 {
		t.Fatalf("TooLong %d, want 1", st.TooLong)
	}
	if want := map[string]int64{"A": 1}; !maps.Equal(marks, want) {
		t.Errorf("marks %v, want %v", marks, want)
	}
}
