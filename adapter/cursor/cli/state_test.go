package cli

import (
	"io"
	"runtime"
	"strings"
	"testing"
)

// newTurnRun is a runner state machine without a process, for unit tests.
func newTurnRun(lim Limits, events *[]Event) *turnRun {
	return &turnRun{
		r:     &Runner{},
		t:     Turn{OnEvent: func(e Event) { *events = append(*events, e) }},
		lim:   lim.withDefaults(),
		to:    DefaultTimeouts,
		calls: map[string]*callState{},
		log:   discardLogger(),
	}
}

func started(id string) []byte {
	return []byte(`{"type":"tool_call","subtype":"started","call_id":"` + id + `","tool_call":{"readToolCall":{"args":{"path":"f"}}}}`)
}

func completed(id string) []byte {
	return []byte(`{"type":"tool_call","subtype":"completed","call_id":"` + id + `","tool_call":{"readToolCall":{"result":{"success":{}}}}}`)
}

// Tracked call ids are bounded: the oldest completed is evicted, and a turn
// with the cap of calls all open is a schema error.
func TestCallIDCap(t *testing.T) {
	var evs []Event
	tr := newTurnRun(Limits{MaxCallIDs: 3}, &evs)
	tr.handleLine([]byte(lineInit))
	for _, id := range []string{"a", "b", "c"} {
		if tr.handleLine(started(id)) != actContinue {
			t.Fatal("kill while under the cap")
		}
	}
	tr.handleLine(completed("a"))
	if tr.handleLine(started("d")) != actContinue || tr.calls["a"] != nil || len(tr.calls) != 3 {
		t.Fatalf("oldest completed not evicted: %v", tr.calls)
	}
	if tr.handleLine(started("e")) != actKill || tr.failure != ClassSchemaError {
		t.Fatalf("all-open cap not a schema error: %q", tr.failure)
	}
}

// A resumed turn whose init reports another id stores the new one.
func TestResumedInitWithNewID(t *testing.T) {
	var evs []Event
	tr := newTurnRun(Limits{}, &evs)
	tr.t.Plan.ResumeID = "old-id"
	tr.handleLine([]byte(lineInit))
	if tr.res.SessionID != sid || !tr.res.SessionIDChanged {
		t.Fatalf("res = %+v", tr.res)
	}
	st := SessionState{CursorSessionID: "old-id"}
	if !st.RecordSessionID(sid) || st.CursorSessionID != sid {
		t.Fatalf("state = %+v", st)
	}
}

// Segments and the final text are bounded with a marker.
func TestSegmentAndFinalBounds(t *testing.T) {
	var evs []Event
	tr := newTurnRun(Limits{MaxSegmentBytes: 64, MaxFinalBytes: 32}, &evs)
	tr.handleLine([]byte(lineInit))
	long := strings.Repeat("é", 100)
	tr.handleLine([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"` + long + `"}]}}`))
	if len(evs) != 2 || len(evs[1].Text) > 64+40 || !strings.Contains(evs[1].Text, "truncated") {
		t.Fatalf("events = %+v", evs)
	}
	tr.handleLine([]byte(`{"type":"result","subtype":"success","is_error":false,"result":"` + long + `"}`))
	tr.res.ExitCode = 0
	tr.classify()
	if !tr.res.Success() || !strings.Contains(tr.res.FinalText, "truncated") || !strings.HasPrefix(long, strings.Split(tr.res.FinalText, "\n")[0]) {
		t.Fatalf("final = %q", tr.res.FinalText)
	}
}

// repeatReader yields n bytes of 'x' and then one newline, allocating
// nothing itself.
type repeatReader struct{ n int }

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n < 0 {
		return 0, io.EOF
	}
	if r.n == 0 {
		p[0] = '\n'
		r.n = -1
		return 1, nil
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

// docs/cursor-cli.md#scenario-23 (memory): a 20 MiB line against a 1 MiB cap allocates about
// the cap, not the line.
func TestReadLinesBoundsMemory(t *testing.T) {
	lines := make(chan lineMsg, 4)
	quit := make(chan struct{})
	done := make(chan struct{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go readLines(&repeatReader{n: 20 << 20}, 1<<20, lines, quit, done)
	m := <-lines
	<-done
	runtime.ReadMemStats(&after)
	if m.kind != lineTooLong {
		t.Fatalf("kind = %v", m.kind)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 6<<20 {
		t.Fatalf("reading a 20 MiB line allocated %d bytes", grew)
	}
}
