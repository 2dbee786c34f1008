package session

import (
	"fmt"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// queuedCapture: prompt 3 is answered after prompt 4 was sent (queued),
// then a cancel follows the queued prompt; prompt 5 goes after both
// answers.
const queuedCapture = `{"from":"client","msg":{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"one"}]}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"/clear"}]}}}
{"from":"client","msg":{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":4,"result":{"stopReason":"cancelled"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"two"}]}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}}
`

// A prompt the client sent before the previous one was answered replays
// queued behind it, a cancel after it cancels there, and the next prompt
// after both answers is a span of its own.
func TestCapturedRequestsQueueWhatWasSentWhileOpen(t *testing.T) {
	c, err := capture.Read(strings.NewReader(queuedCapture))
	if err != nil {
		t.Fatal(err)
	}
	got := CapturedRequests(c)
	if len(got) != 3 || got[0].Method != acp.AgentMethodSessionNew {
		t.Fatalf("requests %+v, want new and two prompt spans", got)
	}
	one, two := got[1], got[2]
	if one.Text != "one" || one.Cancel || len(one.Queue) != 1 || one.Queue[0].Text != "/clear" || !one.Queue[0].Cancel || one.Queue[0].SessionID != "s" {
		t.Errorf("first span %+v, want one with /clear queued and cancelled after it", one)
	}
	if two.Text != "two" || len(two.Queue) != 0 || two.Cancel {
		t.Errorf("second span %+v, want two alone", two)
	}
}

// A capture of many prompts never answered queues at most MaxQueued
// behind one prompt; the next starts a span of its own.
func TestCapturedRequestsBoundTheQueue(t *testing.T) {
	var b strings.Builder
	const n = 3*MaxQueued + 5
	for i := range n {
		fmt.Fprintf(&b, `{"from":"client","msg":{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"p%d"}]}}}`+"\n", i+10, i)
	}
	c, err := capture.Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range CapturedRequests(c) {
		if r.Method != acp.AgentMethodSessionPrompt {
			continue
		}
		if len(r.Queue) > MaxQueued {
			t.Fatalf("%d queued behind %s", len(r.Queue), r.Text)
		}
		total += 1 + len(r.Queue)
	}
	if total != n {
		t.Fatalf("%d prompts replayed, want %d", total, n)
	}
}
