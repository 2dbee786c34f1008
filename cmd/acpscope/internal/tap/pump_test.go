package tap

import (
	"bytes"
	"io"
	"runtime"
	"testing"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// A line still being read takes its memory from the queue's byte budget:
// one the queue has no room for is skipped (counted Dropped, not copied),
// and its reservation is given back.
func TestPendingLineTakesQueueBudget(t *testing.T) {
	q := NewQueue(0, 2000)
	p := &Pump{From: capture.FromAgent, Queue: q, MaxLineBytes: 8000}
	for range 5 {
		p.scan(bytes.Repeat([]byte("a"), 600))
	}
	if p.pending != nil || !p.skipping {
		t.Fatalf("a 3000-byte line is held in a 2000-byte queue (pending %d bytes)", cap(p.pending))
	}
	p.scan([]byte("\n{}\n"))
	if d, tl := q.Dropped.Load(), p.TooLong.Load(); d != 1 || tl != 0 {
		t.Errorf("Dropped %d, TooLong %d, want 1 and 0", d, tl)
	}
	l, ok := q.Next()
	if !ok || string(l.Bytes) != "{}" {
		t.Fatalf("next line %q, want {}", l.Bytes)
	}
	q.Done(l)
	if q.held.Load() != 0 {
		t.Errorf("the queue holds %d bytes once every line is done, want 0", q.held.Load())
	}
}

// The pending buffer of a long line never grows past the line limit, and
// the line is handed over without a copy.
func TestPendingNeverPastLimit(t *testing.T) {
	const limit = 5000
	q := NewQueue(0, 0)
	p := &Pump{From: capture.FromAgent, Queue: q, MaxLineBytes: limit}
	for range 49 {
		p.scan(bytes.Repeat([]byte("b"), 100))
		if cap(p.pending) > limit {
			t.Fatalf("pending buffer of %d bytes for a limit of %d", cap(p.pending), limit)
		}
	}
	pending := p.pending
	p.scan([]byte("b\n"))
	l, _ := q.Next()
	if len(l.Bytes) != 4901 || &l.Bytes[0] != &pending[0] {
		t.Errorf("line of %d bytes, copied: %v", len(l.Bytes), &l.Bytes[0] != &pending[0])
	}
	q.Done(l)
	if q.held.Load() != 0 || p.reserved != 0 {
		t.Errorf("held %d, reserved %d after the line, want 0", q.held.Load(), p.reserved)
	}
}

// Short lines are copied into the pump's block, and each is its own
// slice: appending to one never overwrites the next.
func TestShortLinesShareABlock(t *testing.T) {
	q := NewQueue(0, 0)
	p := &Pump{From: capture.FromAgent, Queue: q}
	p.scan([]byte("{\"a\":1}\n{\"b\":2}\n"))
	a, _ := q.Next()
	b, _ := q.Next()
	_ = append(a.Bytes, 'X')
	if string(a.Bytes) != `{"a":1}` || string(b.Bytes) != `{"b":2}` {
		t.Errorf("lines %q %q", a.Bytes, b.Bytes)
	}
	if allocs := testing.AllocsPerRun(100, func() { p.scan([]byte("{}\n")); l, _ := q.Next(); q.Done(l) }); allocs > 0.1 {
		t.Errorf("%.2f allocations per short line, want none", allocs)
	}
}

// The observer runs on a thread of its own at the lowest priority: when
// the CPU is short, the pumps, the editor and the agent get it first.
func TestObserverThreadYieldsTheCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread priorities are Linux's")
	}
	obs := newTestObserver(t, io.Discard)
	passThrough(t, []byte("{}\n"), []byte("{}\n"), nil, Config{Observer: obs})
	if obs.nice != observerNice {
		t.Errorf("the observer's thread ran at nice %d, want %d", obs.nice, observerNice)
	}
}
