package tap

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Default bounds of a Queue: enough for the history of a long session
// that an agent replays on session/load faster than the observer takes
// it. Memory grows with what is queued, up to the bounds.
const (
	DefaultQueueLines = 1 << 18
	DefaultQueueBytes = 128 << 20
)

// Line is one complete line of the wire, without its newline, and who
// sent it. Its bytes are valid until Done: short lines share the memory of
// a block that its pump writes again once every line in it is Done, so the
// observer keeps no part of them.
type Line struct {
	From  capture.Direction
	Bytes []byte
	// At is when the read that completed the line came from its sender:
	// the line's wire time, which the events it causes carry.
	At time.Time

	held  int64  // the bytes of the queue's budget the line takes until Done
	block *block // the block the bytes are in, or nil
}

// Queue hands lines from the two pumps to the observer. It is bounded in
// lines and in bytes; its byte bound covers every line the tap holds: the
// lines queued, the one being observed (until Done) and the starts of the
// lines the pumps are still reading. Offer never waits: a line that does
// not fit is counted in Dropped and not observed. Lines leave in the order
// they were offered, both directions in one order.
//
// The pumps and the observer meet on the queue's lock once per read and
// once per batch the observer takes, not once per line: a lock handed back
// and forth per line lets the observer's goroutine take the pump's turn.
type Queue struct {
	mu     sync.Mutex
	lines  []Line // queued, not yet taken by the reader
	closed bool

	// The reader's batch, taken from lines at once (Next's goroutine only).
	out  []Line
	next int

	shut     atomic.Bool  // closed, for reserve, which takes no lock
	count    atomic.Int64 // lines queued or in the reader's batch
	held     atomic.Int64 // bytes of the budget taken (reserve, Offer) and not yet given back
	maxLines int64
	maxBytes int64
	ready    chan struct{} // signalled when lines are queued or the queue closes

	// Dropped counts lines not observed because the queue was full (or
	// closed).
	Dropped atomic.Int64
	// tooLong counts the lines its pumps did not offer because they were
	// over the line limit (each pump's TooLong).
	tooLong atomic.Int64
}

// lost is how many lines of the connection its observer missed so far:
// those dropped and those over the line limit.
func (q *Queue) lost() int64 { return q.Dropped.Load() + q.tooLong.Load() }

// NewQueue returns a queue of at most lines lines and bytes bytes (zero or
// less: the defaults).
func NewQueue(lines int, bytes int64) *Queue {
	if lines <= 0 {
		lines = DefaultQueueLines
	}
	if bytes <= 0 {
		bytes = DefaultQueueBytes
	}
	return &Queue{maxLines: int64(lines), maxBytes: bytes, ready: make(chan struct{}, 1)}
}

// reserve takes n bytes of the byte budget, for a line a pump is about to
// copy or is still reading, and reports whether they fit (never once the
// queue is closed). It takes no lock.
func (q *Queue) reserve(n int64) bool {
	for {
		h := q.held.Load()
		if h+n > q.maxBytes || q.shut.Load() {
			return false
		}
		if q.held.CompareAndSwap(h, h+n) {
			return true
		}
	}
}

// release gives back n reserved bytes.
func (q *Queue) release(n int64) { q.held.Add(-n) }

// Offer queues line (which the queue now owns) if it fits, and reports
// whether it did.
func (q *Queue) Offer(from capture.Direction, line []byte) bool {
	if !q.reserve(int64(len(line))) {
		q.Dropped.Add(1)
		return false
	}
	batch := []Line{{From: from, Bytes: line, At: time.Now(), held: int64(len(line))}}
	return q.push(batch) == 1
}

// push queues the lines of batch, their bytes reserved already, as far as
// the line bound and the queue being open allow; the rest are dropped and
// their bytes given back. It returns how many were queued; batch is the
// caller's again.
func (q *Queue) push(batch []Line) int {
	if len(batch) == 0 {
		return 0
	}
	q.mu.Lock()
	n := 0
	if !q.closed {
		n = int(min(int64(len(batch)), q.maxLines-q.count.Load()))
		n = max(n, 0)
		q.lines = append(q.lines, batch[:n]...)
		q.count.Add(int64(n))
	}
	q.mu.Unlock()
	for _, l := range batch[n:] {
		q.Done(l)
		q.Dropped.Add(1)
	}
	if n > 0 {
		q.signal()
	}
	return n
}

func (q *Queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Next waits for the next line; ok is false once the queue is closed and
// empty. Only one goroutine may call it.
func (q *Queue) Next() (l Line, ok bool) {
	for {
		if q.next < len(q.out) {
			l = q.out[q.next]
			q.out[q.next] = Line{}
			q.next++
			q.count.Add(-1)
			return l, true
		}
		q.mu.Lock()
		if len(q.lines) > 0 {
			q.out, q.lines, q.next = q.lines, q.out[:0], 0
			q.mu.Unlock()
			continue
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return Line{}, false
		}
		<-q.ready
	}
}

// Len is the number of lines queued.
func (q *Queue) Len() int { return int(q.count.Load()) }

// Done tells the queue that a line read with Next has been observed, so
// its bytes are free again.
func (q *Queue) Done(l Line) {
	q.release(l.held)
	if l.block != nil {
		l.block.unref()
	}
}

// Close ends the queue: later offers are dropped, and Next reports the
// end once the lines already queued are read. It is safe to call more
// than once.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.shut.Store(true)
	q.mu.Unlock()
	q.signal()
}
