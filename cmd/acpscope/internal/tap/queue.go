package tap

import (
	"sync"
	"sync/atomic"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Default bounds of a Queue.
const (
	DefaultQueueLines = 8192
	DefaultQueueBytes = 128 << 20
)

// Line is one complete line of the wire, without its newline, and who
// sent it.
type Line struct {
	From  capture.Direction
	Bytes []byte
}

// Queue hands lines from the two pumps to the observer. It is bounded in
// lines and in bytes; Offer never waits: a line that does not fit is
// counted in Dropped and not observed. Lines leave in the order they were
// offered, both directions in one order.
type Queue struct {
	ch       chan Line
	maxBytes int64
	held     atomic.Int64 // bytes of the lines in ch

	mu     sync.RWMutex // Offer holds it shared; Close exclusively
	closed bool

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
	return &Queue{ch: make(chan Line, lines), maxBytes: bytes}
}

// Offer queues line (which the queue now owns) if it fits, and reports
// whether it did.
func (q *Queue) Offer(from capture.Direction, line []byte) bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	n := int64(len(line))
	if q.closed || q.held.Add(n) > q.maxBytes {
		if !q.closed {
			q.held.Add(-n)
		}
		q.Dropped.Add(1)
		return false
	}
	select {
	case q.ch <- Line{From: from, Bytes: line}:
		return true
	default:
		q.held.Add(-n)
		q.Dropped.Add(1)
		return false
	}
}

// room reports whether a line of n bytes would fit now, so that a pump
// need not copy a line the queue would drop. Offer decides for good.
func (q *Queue) room(n int) bool {
	return len(q.ch) < cap(q.ch) && q.held.Load()+int64(n) <= q.maxBytes
}

// Lines yields the queued lines until the queue is closed and empty. Only
// one goroutine may read it.
func (q *Queue) Lines() <-chan Line { return q.ch }

// Done tells the queue that a line read from Lines has been observed, so
// its bytes are free again.
func (q *Queue) Done(l Line) { q.held.Add(-int64(len(l.Bytes))) }

// Close ends the queue: later offers are dropped, and Lines ends once the
// lines already queued are read. It is safe to call more than once.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
}
