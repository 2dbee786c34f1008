package traffic

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// A child session's activity: its latest message (chunks joined, a new
// message after another update), its tool calls as the updates left
// them, the permission requests not answered, and a cancel sent.
func TestActivity(t *testing.T) {
	l := New(Options{})
	a := capture.FromAgent
	add(l, a, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"old"}}}}`)
	add(l, a, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read <b>x</b>","status":"in_progress"}}}`)
	add(l, a, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Looking "}}}}`)
	add(l, a, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"at it\u202e"}}}}`)
	add(l, a, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}}}`)
	add(l, a, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"tool_call","toolCallId":"t2","title":"Write"}}}`)
	add(l, a, `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"c","toolCall":{"toolCallId":"t2","title":"Write notes"}}}`)
	add(l, a, `{"jsonrpc":"2.0","id":8,"method":"session/request_permission","params":{"sessionId":"c","toolCall":{"toolCallId":"t3","title":"Delete all"}}}`)
	add(l, capture.FromClient, `{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"cancelled"}}}`)
	add(l, capture.FromClient, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"c"}}`)
	add(l, a, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"other","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"not c"}}}}`)
	got := l.Activity("c")
	if !got.Seen || got.Message != "Looking at it\ufffd" || got.Cancelled.IsZero() {
		t.Errorf("activity %+v", got)
	}
	if len(got.Calls) != 2 || got.Calls[0] != (ActivityCall{ID: "t1", Title: "Read <b>x</b>", Status: "completed"}) ||
		got.Calls[1] != (ActivityCall{ID: "t2", Title: "Write"}) {
		t.Errorf("calls %+v", got.Calls)
	}
	if len(got.Permissions) != 1 || got.Permissions[0] != (ActivityPermission{ID: "8", Title: "Delete all"}) {
		t.Errorf("permissions %+v", got.Permissions)
	}
	if none := l.Activity("nobody"); none.Seen || len(none.Calls) != 0 {
		t.Errorf("unknown session: %+v", none)
	}
}

// FuzzActivity feeds a session any messages: its activity stays within
// its bounds and carries no character that could reorder or hide text.
func FuzzActivity(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"c","toolCall":{"toolCallId":"t","title":"\u202ex"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"session_message","messageId":"m","content":[{"type":"text","text":"a\u0000"}]}}}`),
		[]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":5}}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		l := New(Options{MaxFrames: 64})
		for i := 0; i < 25; i++ {
			l.Add(capture.FromAgent, a, t0)
			l.Add(capture.FromClient, b, t0)
			l.Add(capture.FromAgent, b, t0)
		}
		for _, s := range append(l.Since(0, Filter{}, 10).Sessions, "c") {
			act := l.Activity(s)
			if len(act.Message) > MaxActivityText*3 || len(act.Calls) > MaxActivityCalls || len(act.Permissions) > MaxActivityPermissions {
				t.Fatalf("bounds: %+v", act)
			}
			texts := []string{act.Message}
			for _, c := range act.Calls {
				texts = append(texts, c.ID, c.Title, c.Status)
			}
			for _, p := range act.Permissions {
				texts = append(texts, p.Title)
			}
			for _, s := range texts {
				if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && safetext.Forbidden(r) }) {
					t.Fatalf("text %q", s)
				}
			}
		}
	})
}

// BenchmarkActivity reads one running child's activity from a full log
// (10,000 messages of 20 sessions, each a tool call update or a message
// chunk): what /api/live does per running child and poll.
func BenchmarkActivity(b *testing.B) {
	l := New(Options{})
	for i := range DefaultMaxFrames {
		s := "c" + string(rune('a'+i%20))
		msg := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + s + `","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"some words of the answer "}}}}`
		if i%3 == 0 {
			msg = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + s + `","update":{"sessionUpdate":"tool_call_update","toolCallId":"t` + string(rune('0'+i%10)) + `","status":"in_progress","title":"Read main.go"}}}`
		}
		l.Add(capture.FromAgent, []byte(msg), t0)
	}
	b.ReportAllocs()
	for b.Loop() {
		if a := l.Activity("ca"); !a.Seen {
			b.Fatal("no activity")
		}
	}
}
