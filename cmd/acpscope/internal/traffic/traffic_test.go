package traffic

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

var t0 = time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)

func add(l *Log, from capture.Direction, msg string) {
	l.Add(from, []byte(msg), t0)
}

func TestRoutingFacts(t *testing.T) {
	l := New(Options{})
	add(l, capture.FromClient, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/"}}`)
	add(l, capture.FromAgent, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}`)
	add(l, capture.FromClient, `{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	add(l, capture.FromAgent, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1"}}}`)
	add(l, capture.FromAgent, `{"jsonrpc":"2.0","id":"p","method":"session/request_permission","params":{"sessionId":"c1","toolCall":{"toolCallId":"t2"}}}`)
	add(l, capture.FromClient, `{"jsonrpc":"2.0","id":"p","error":{"code":1,"message":"no"}}`)
	add(l, capture.FromAgent, `{"jsonrpc":"2.0","id":"p","result":{"stopReason":"end_turn"}}`)
	add(l, capture.FromAgent, `not json`)
	p := l.Since(0, Filter{}, 100)
	want := []string{
		"client request session/new  ",
		"agent response session/new s1 ",
		"client request session/prompt s1 ",
		"agent notification session/update s1 t1",
		"agent request session/request_permission c1 t2",
		"client error session/request_permission c1 ",
		"agent response session/prompt s1 ",
		"agent invalid   ",
	}
	if len(p.Frames) != len(want) {
		t.Fatalf("%d frames, want %d", len(p.Frames), len(want))
	}
	for i, f := range p.Frames {
		if got := fmt.Sprintf("%s %s %s %s %s", f.From, f.Kind, f.Method, f.Session, f.Call); got != want[i] {
			t.Errorf("frame %d: %q, want %q", i, got, want[i])
		}
		if f.Seq != uint64(i+1) {
			t.Errorf("frame %d: seq %d", i, f.Seq)
		}
	}
	if got := l.Roots(); len(got) != 1 || got[0] != "s1" {
		t.Errorf("roots %q, want [s1]", got)
	}
	if got := strings.Join(p.Sessions, ","); got != "c1,s1" {
		t.Errorf("sessions %q", got)
	}
	if got := l.Since(0, Filter{Session: "s1", Method: "session/prompt"}, 100); len(got.Frames) != 2 {
		t.Errorf("filtered: %d frames, want 2", len(got.Frames))
	}
	if got := l.Since(4, Filter{}, 2); len(got.Frames) != 2 || got.Frames[0].Seq != 5 || !got.More {
		t.Errorf("after 4, limit 2: %+v", got)
	}
}

// The ring keeps at most MaxFrames messages and MaxBytes of them,
// dropping the oldest, and the kept sequence numbers stay consecutive.
func TestBounds(t *testing.T) {
	l := New(Options{MaxFrames: 10, MaxBytes: 4 * (frameOverhead + 100 + int64(len("m0"))), MaxFrameBytes: 100})
	for i := range 50 {
		add(l, capture.FromAgent, fmt.Sprintf(`{"jsonrpc":"2.0","method":"m%d","params":{"pad":"%s"}}`, i%3, strings.Repeat("x", 200)))
		p := l.Since(0, Filter{}, 1000)
		if p.Bytes > l.opts.MaxBytes || p.Kept > 10 || p.Kept != len(p.Frames) {
			t.Fatalf("after %d: %d kept, %d bytes", i, p.Kept, p.Bytes)
		}
	}
	p := l.Since(0, Filter{}, 1000)
	if p.Kept != 4 || p.Dropped != 46 || p.Frames[0].Seq != 47 || p.Frames[3].Seq != 50 {
		t.Errorf("kept %d, dropped %d, first %d", p.Kept, p.Dropped, p.Frames[0].Seq)
	}
	for _, f := range p.Frames {
		if !f.Truncated || len(f.Text) > 100 || f.Size <= 200 {
			t.Errorf("frame %d: truncated %v, %d bytes kept of %d", f.Seq, f.Truncated, len(f.Text), f.Size)
		}
	}
	if got := strings.Join(p.Methods, ","); got != "m0,m1,m2" {
		t.Errorf("methods %q", got)
	}
	if got := l.Since(48, Filter{}, 1000); len(got.Frames) != 2 || got.Frames[0].Seq != 49 {
		t.Errorf("after 48: %d frames", len(got.Frames))
	}
	if got := l.Since(2, Filter{}, 1000); len(got.Frames) != 4 {
		t.Errorf("after a dropped seq: %d frames, want 4", len(got.Frames))
	}
}

// A long line is cut at a rune boundary, keeps its whole size and its
// routing facts; invalid UTF-8 is replaced.
func TestCut(t *testing.T) {
	l := New(Options{MaxFrameBytes: 64})
	big := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"x","toolCallId":"t"},"pad":"` + strings.Repeat("é", 100) + `"}}`
	add(l, capture.FromAgent, big)
	add(l, capture.FromAgent, "{\"bad\":\"\xff\"}")
	p := l.Since(0, Filter{}, 10)
	f := p.Frames[0]
	if !f.Truncated || f.Size != len(big) || len(f.Text) > 64 || f.Session != "s" || f.Call != "t" || !strings.HasPrefix(big, f.Text) {
		t.Errorf("cut frame: %+v", f)
	}
	if p.Frames[1].Text != "{\"bad\":\"\ufffd\"}" {
		t.Errorf("invalid UTF-8 kept as %q", p.Frames[1].Text)
	}
}

// Pretty indents whole JSON and escapes every character that could
// reorder or hide what is shown, whole or cut.
func TestPretty(t *testing.T) {
	l := New(Options{MaxFrameBytes: 80})
	add(l, capture.FromAgent, `{"a":"</script>`+"\u202e\u2066\u0085"+`","b":[1]}`)
	add(l, capture.FromAgent, `{"a":"`+"\u202e"+strings.Repeat("x", 100)+`"}`)
	add(l, capture.FromAgent, "{\x01\u2028")
	p := l.Since(0, Filter{}, 10)
	if got, want := Pretty(&p.Frames[0]), "{\n  \"a\": \"</script>\\u202e\\u2066\\u0085\",\n  \"b\": [\n    1\n  ]\n}"; got != want {
		t.Errorf("pretty: %q, want %q", got, want)
	}
	if got := Pretty(&p.Frames[1]); !strings.HasPrefix(got, `{"a":"\u202exxx`) {
		t.Errorf("cut: %q", got)
	}
	if got := Pretty(&p.Frames[2]); got != `{\u0001\u2028` {
		t.Errorf("invalid: %q", got)
	}
}

// The tap splits lines across writes, keeps the facts of a line longer
// than a frame and cuts it.
func TestTap(t *testing.T) {
	l := New(Options{MaxFrameBytes: 32})
	w := l.Tap(capture.FromClient)
	msg := `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`
	for _, part := range []string{msg[:10], msg[10:] + "\r\n\n" + `{"id":7,` + "\n"} {
		if _, err := io.WriteString(w, part); err != nil {
			t.Fatal(err)
		}
	}
	p := l.Since(0, Filter{}, 10)
	if len(p.Frames) != 2 {
		t.Fatalf("%d frames, want 2", len(p.Frames))
	}
	if f := p.Frames[0]; f.Method != "session/prompt" || f.Session != "s" || f.Size != len(msg) || !f.Truncated || f.ID != "7" {
		t.Errorf("frame: %+v", f)
	}
}

func BenchmarkAdd(b *testing.B) {
	l := New(Options{})
	msg := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_0123456789","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + strings.Repeat("word ", 60) + `"}}}}`)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		l.Add(capture.FromAgent, msg, t0)
	}
}

// Long facts count against the byte budget too: a peer sending
// kilobyte ids and sessions cannot hold more than the budget.
func TestFactsCount(t *testing.T) {
	l := New(Options{MaxBytes: 64 << 10, MaxFrameBytes: 64})
	long := strings.Repeat("s", 5000)
	for i := range 200 {
		add(l, capture.FromClient, fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s%d","method":"%s","params":{"sessionId":"%s","update":{"sessionUpdate":"%s","toolCallId":"%s"}}}`, long, i, long, long, long, long))
	}
	p := l.Since(0, Filter{}, 1000)
	var held int64
	for _, f := range p.Frames {
		held += int64(len(f.Text) + len(f.Method) + len(f.ID) + len(f.Session) + len(f.Call) + len(f.Update))
		if len(f.ID) != maxFact || len(f.Session) != maxFact {
			t.Fatalf("facts kept at %d and %d bytes, want %d", len(f.ID), len(f.Session), maxFact)
		}
	}
	if held > 64<<10 || p.Bytes > 64<<10 || p.Kept == 0 {
		t.Errorf("%d messages hold %d bytes (counted %d), budget %d", p.Kept, held, p.Bytes, 64<<10)
	}
	if len(l.pending) > maxPending {
		t.Errorf("%d requests remembered", len(l.pending))
	}
}

func TestTailStart(t *testing.T) {
	l := New(Options{})
	for i := range 20 {
		add(l, capture.FromAgent, fmt.Sprintf(`{"jsonrpc":"2.0","method":"m%d","params":{}}`, i%2))
	}
	if got := l.TailStart(Filter{}, 5); got != 15 {
		t.Errorf("tail 5: after %d, want 15", got)
	}
	if got := l.TailStart(Filter{Method: "m1"}, 3); got != 14 {
		t.Errorf("tail 3 of m1: after %d, want 14", got)
	}
	if got := l.TailStart(Filter{}, 50); got != 0 {
		t.Errorf("tail 50: after %d, want 0", got)
	}
}
