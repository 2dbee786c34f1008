package tap

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
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
	p.letGo() // the pump's current block
	if q.inUse() != 0 {
		t.Errorf("the queue's lines take %d bytes once every line is done, want 0", q.inUse())
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
	if q.inUse() != 0 || p.reserved != 0 {
		t.Errorf("in use %d, reserved %d after the line, want 0", q.inUse(), p.reserved)
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

// freshBytes is the memory the runtime hands out while f runs.
func freshBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A backlog's memory is written again once the observer has taken it: the
// short lines of a later backlog as big as the first go into the blocks
// of the first, and a long line into the buffers of the one before, not
// into fresh memory (page faults and zeroing that slow the pump), and
// none is dropped for it.
func TestBacklogMemoryIsReused(t *testing.T) {
	q := NewQueue(0, 0)
	p := &Pump{From: capture.FromAgent, Queue: q}
	short := append(bytes.Repeat([]byte("s"), 1000), '\n')
	chunk := bytes.Repeat(short, 60) // ~60 KiB of short lines a read
	long := bytes.Repeat([]byte("l"), 1<<20)
	backlog := func() {
		for range 40 { // ~10 blocks of lines queued before the observer takes any
			p.scan(chunk)
		}
		for i := 0; i < len(long); i += readChunk { // a long line over many reads
			p.scan(long[i : i+readChunk])
		}
		p.scan([]byte("\n"))
	}
	drain := func() {
		for q.Len() > 0 {
			l, _ := q.Next()
			q.Done(l)
		}
	}
	// Warm-up: the observer's goroutine makes the memory the pumps asked
	// for, and the queue's two slices of lines (Next) grow to a backlog's
	// length, until a backlog drops nothing.
	for round := 0; ; round++ {
		dropped := q.Dropped.Load()
		backlog()
		drain()
		if q.Dropped.Load() == dropped {
			break
		}
		if round == 10 {
			t.Fatalf("a backlog still drops %d lines after %d rounds", q.Dropped.Load()-dropped, round)
		}
	}
	backlog()
	drain()
	dropped := q.Dropped.Load()
	if fresh := freshBytes(backlog); fresh > blockSize {
		t.Errorf("a later backlog took %d bytes of fresh memory, want at most %d", fresh, blockSize)
	}
	if d := q.Dropped.Load() - dropped; d != 0 {
		t.Errorf("%d lines of a later backlog dropped, want none", d)
	}
	drain()
	p.letGo()
	if q.inUse() != 0 {
		t.Errorf("the queue's lines take %d bytes once every line is done, want 0", q.inUse())
	}
}

// With a backlog past its share of the budget a pump writes no fresh
// memory: a line that finds no kept memory is not observed (counted), and
// the observer's goroutine makes the memory, so that the next line fits.
func TestBacklogNeverTakesFreshMemoryInThePump(t *testing.T) {
	q := NewQueue(0, 16*blockSize)
	p := &Pump{From: capture.FromAgent, Queue: q}
	full := append(bytes.Repeat([]byte("f"), blockSize/8), '\n')
	for q.inUse() < 16*blockSize/freshShare { // the backlog: lines not yet taken
		p.scan(full)
	}
	if q.Dropped.Load() != 0 {
		t.Fatalf("%d lines dropped within the fresh share", q.Dropped.Load())
	}
	var fresh uint64
	for range 16 { // past the current block
		fresh += freshBytes(func() { p.scan(full) })
	}
	if fresh > 4096 {
		t.Errorf("the pump took %d bytes of fresh memory with a backlog", fresh)
	}
	if q.Dropped.Load() == 0 {
		t.Fatalf("no line dropped for want of memory")
	}
	dropped := q.Dropped.Load()
	l, _ := q.Next() // the observer's goroutine makes the memory asked for
	q.Done(l)
	p.scan(full)
	if q.Dropped.Load() != dropped {
		t.Errorf("the line after the observer made memory was dropped")
	}
}

// The memory a queue keeps for later lines stays within its byte budget,
// and gives way to a line that needs the room.
func TestKeptMemoryGivesWay(t *testing.T) {
	q := NewQueue(0, 64<<10)
	p := &Pump{From: capture.FromAgent, Queue: q, MaxLineBytes: 64 << 10}
	p.scan(append(bytes.Repeat([]byte("a"), 3<<10), '\n')) // a line over three buffers
	l, _ := q.Next()
	q.Done(l)
	if q.held.Load() > 64<<10/keptShare {
		t.Errorf("the queue keeps %d bytes, more than its share %d", q.held.Load(), 64<<10/keptShare)
	}
	if !q.reserveRoom(60 << 10) {
		t.Errorf("the kept memory did not give way to a reservation that fits the budget")
	}
}

// A line carries the time its read came from the sender, and the events
// the observer makes of it carry that time, not the time the observer
// got to it.
func TestEventsCarryWireTime(t *testing.T) {
	q := NewQueue(0, 0)
	p := &Pump{From: capture.FromAgent, Queue: q}
	before := time.Now()
	if err := p.Copy(io.Discard, strings.NewReader("{}\n")); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	l, _ := q.Next()
	if l.At.Before(before) || l.At.After(after) {
		t.Errorf("the line's wire time %v is not the read's (between %v and %v)", l.At, before, after)
	}
	q.Done(l)

	wire := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	var events []sink.Event
	term := view.NewTerminal(io.Discard, false)
	obs, err := NewObserver(ObserverConfig{View: term, Sink: sink.Func(func(e sink.Event) { events = append(events, e) })})
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"ls","status":"pending"}}}`,
	} {
		from := capture.FromAgent
		if i == 0 {
			from = capture.FromClient
		}
		q.push([]Line{{From: from, Bytes: []byte(line), At: wire}})
	}
	q.Close()
	observe(obs, q)
	if len(events) == 0 {
		t.Fatal("no event")
	}
	// The card's opening is at the wire time; its ending unknown when the
	// connection ended (Finish) is at the ending's time.
	if e := events[0]; !e.At.Equal(wire) {
		t.Errorf("event %s/%s at %v, want the wire time %v", e.SessionID, e.ToolCallID, e.At, wire)
	}
	if e := events[len(events)-1]; e.Status != adapter.ToolStatusUnknown || !e.At.After(wire) {
		t.Errorf("the ending's event %s at %v, want unknown after %v", e.Status, e.At, wire)
	}
}

// While the observer keeps up it never rests; while it is behind and the
// pumps are reading, it rests yieldShare-1 slices for each slice of work; once
// the pumps are quiet it works on without rest.
func TestObserverRestsOnlyWhileBehindBusyPumps(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`)
	for _, tc := range []struct {
		name       string
		backlog    bool // more than yieldAt bytes wait
		pumpsBusy  bool // a pump read just now
		wantRested bool
	}{
		{"keeping up", false, true, false},
		{"behind busy pumps", true, true, true},
		{"behind quiet pumps", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQueue(0, 0)
			q.yieldAt = 1 << 40
			if tc.backlog {
				q.yieldAt = int64(len(line))
			}
			clock := time.Unix(1_000_000, 0)
			var rests []time.Duration
			p := pacing{
				now: func() time.Time {
					clock = clock.Add(100 * time.Microsecond) // each look at the clock: 0.1 ms of work
					if tc.pumpsBusy {
						q.lastRead.Store(clock.UnixNano())
					}
					return clock
				},
				rest: func(d time.Duration) { rests = append(rests, d) },
			}
			batch := make([]Line, 100)
			for i := range batch {
				batch[i] = Line{From: capture.FromAgent, Bytes: line, At: time.Now()}
			}
			q.push(batch)
			done := make(chan struct{})
			go func() {
				defer close(done)
				followPaced(newTestObserver(t, io.Discard), q, p, false)
			}()
			for q.Len() > 0 {
				time.Sleep(time.Millisecond)
			}
			q.Close()
			<-done
			if rested := len(rests) > 0; rested != tc.wantRested {
				t.Fatalf("rested %d times, want rest: %v", len(rests), tc.wantRested)
			}
			for _, d := range rests {
				if d < (yieldShare-1)*yieldSlice {
					t.Errorf("rested %v after a slice of work, want at least %v", d, (yieldShare-1)*yieldSlice)
				}
			}
		})
	}
}

// While the connection lasts the observer runs on a thread of its own at
// the lowest priority with a Go processor of its own (GOMAXPROCS one
// more), so that the pumps, the editor and the agent get the CPU first;
// once the queue is closed, the lines left are observed at the process's
// priority with the processors it had.
func TestObserverThreadWhileTheConnectionLasts(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	type seen struct{ nice, procs int }
	var mu sync.Mutex
	at := map[string]seen{}
	release := make(chan struct{})
	term := view.NewTerminal(io.Discard, false)
	obs, err := NewObserver(ObserverConfig{View: term, Sink: sink.Func(func(e sink.Event) {
		mu.Lock()
		_, ok := at[e.ToolCallID]
		if !ok { // the card's opening, not its ending in Finish
			at[e.ToolCallID] = seen{threadNice(), runtime.GOMAXPROCS(0)}
		}
		mu.Unlock()
		if !ok && e.ToolCallID == "open" {
			<-release // the observer is busy while the queue closes
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	toolCall := func(id string) Line {
		return Line{From: capture.FromAgent, At: time.Now(), Bytes: []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","title":"ls","status":"pending"}}}`)}
	}
	q := NewQueue(0, 0)
	q.push([]Line{toolCall("open")})
	done := make(chan struct{})
	go func() {
		defer close(done)
		observe(obs, q)
	}()
	for {
		mu.Lock()
		_, ok := at["open"]
		mu.Unlock()
		if ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	q.push([]Line{toolCall("closed")})
	q.Close()
	close(release)
	<-done
	wantNice := observerNice
	if runtime.GOOS != "linux" {
		wantNice = 0
	}
	if got, want := at["open"], (seen{wantNice, procs + 1}); got != want {
		t.Errorf("a line observed while the connection lasts: %+v, want %+v", got, want)
	}
	if got, want := at["closed"], (seen{0, procs}); got != want {
		t.Errorf("a line left when the queue closed: %+v, want %+v", got, want)
	}
	if obs.nice != wantNice {
		t.Errorf("the observer's thread ran at nice %d, want %d", obs.nice, wantNice)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after the observer, want %d again", got, procs)
	}
}
