package tap

import (
	"sync"
	"sync/atomic"

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
// sent it. Short lines share the memory of a block (never written again):
// a line's bytes are its own to read, never to append to.
type Line struct {
	From  capture.Direction
	Bytes []byte

	held int64 // the bytes of the queue's budget the line takes until Done
}

// Queue hands lines from the two pumps to the observer. It is bounded in
// lines and in bytes; its byte bound covers every line the tap holds: the
// lines queued, the one being observed (until Done) and the starts of the
// lines the pumps are still reading. Offer never waits: a line that does
// not fit is counted in Dropped and not observed. Lines leave in the order they were
// offered, both directions in one order.
type Queue struct {
	mu       sync.Mutex
	lines    []Line // lines[head:] are queued
	head     int
	held     int64 // bytes offered and not yet Done
	closed   bool
	maxLines int
	maxBytes int64
	ready    chan struct{} // signalled when a line is queued or the queue closes

	// Dropped counts lines not observed because the queue was full (or
	// closed).
	Dropped atomic.Int64
}

// NewQueue returns a queue of at most lines lines and bytes bytes (zero or
// less: the defaults).
func NewQueue(lines int, bytes int64) *Queue {
	if lines <= 0 {
		lines = DefaultQueueLines
	}
	if bytes <= 0 {
		bytes = DefaultQueueBytes
	}
	return &Queue{maxLines: lines, maxBytes: bytes, ready: make(chan struct{}, 1)}
}

// fits reports whether n more bytes fit; q.mu is held.
func (q *Queue) fits(n int) bool {
	return !q.closed && len(q.lines)-q.head < q.maxLines && q.held+int64(n) <= q.maxBytes
}

// room reports whether a line of n bytes would fit now, so that a pump
// need not copy a line the queue would drop. Offer decides for good.
func (q *Queue) room(n int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fits(n)
}

// Offer queues line (which the queue now owns) if it fits, and reports
// whether it did.
func (q *Queue) Offer(from capture.Direction, line []byte) bool {
	q.mu.Lock()
	if !q.fits(len(line)) {
		q.mu.Unlock()
		q.Dropped.Add(1)
		return false
	}
	q.lines = append(q.lines, Line{From: from, Bytes: line, held: int64(len(line))})
	q.held += int64(len(line))
	q.mu.Unlock()
	q.signal()
	return true
}

// reserve takes n bytes of the byte budget for a line a pump is still
// reading (its pending buffer), and reports whether they fit.
func (q *Queue) reserve(n int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.held+n > q.maxBytes {
		return false
	}
	q.held += n
	return true
}

// release gives back n reserved bytes.
func (q *Queue) release(n int64) {
	q.mu.Lock()
	q.held -= n
	q.mu.Unlock()
}

// offerHeld queues a line whose held bytes are reserved already; when it
// does not fit in the line bound (or the queue is closed) it is dropped
// and the reservation given back.
func (q *Queue) offerHeld(from capture.Direction, line []byte, held int64) bool {
	q.mu.Lock()
	if q.closed || len(q.lines)-q.head >= q.maxLines {
		q.held -= held
		q.mu.Unlock()
		q.Dropped.Add(1)
		return false
	}
	q.lines = append(q.lines, Line{From: from, Bytes: line, held: held})
	q.mu.Unlock()
	q.signal()
	return true
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
		q.mu.Lock()
		if q.head < len(q.lines) {
			l = q.lines[q.head]
			q.lines[q.head] = Line{}
			q.head++
			if q.head == len(q.lines) {
				q.lines, q.head = q.lines[:0], 0
			} else if q.head >= 4096 && 2*q.head >= len(q.lines) {
				n := copy(q.lines, q.lines[q.head:])
				clear(q.lines[n:])
				q.lines, q.head = q.lines[:n], 0
			}
			q.mu.Unlock()
			return l, true
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
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.lines) - q.head
}

// Done tells the queue that a line read with Next has been observed, so
// its bytes are free again.
func (q *Queue) Done(l Line) {
	q.mu.Lock()
	q.held -= l.held
	q.mu.Unlock()
}

// Close ends the queue: later offers are dropped, and Next reports the
// end once the lines already queued are read. It is safe to call more
// than once.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}
