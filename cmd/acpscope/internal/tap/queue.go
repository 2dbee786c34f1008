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
	// DefaultYieldAt is the observer's backlog, in bytes, past which it
	// is behind the pass-through and rests while the pumps are reading
	// (followPaced): some milliseconds of a busy agent's output.
	DefaultYieldAt = 1 << 20
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
	kept  bool   // Bytes is a buffer of held bytes that the queue keeps once Done
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
	head   *lineSegment // lines queued, not yet taken by the reader, oldest first
	tail   *lineSegment // the segment the pumps append to
	spare  *lineSegment // emptied segments, for the pumps' next lines
	spares int          // how many segments spare holds
	closed bool

	// The reader's batch, taken from head at once (Next's goroutine only):
	// the segment being read, the next line's index in it, and the
	// segments already read, given back to spare with the next batch.
	out  *lineSegment
	next int
	read *lineSegment

	shut  atomic.Bool  // closed, for reserve, which takes no lock
	count atomic.Int64 // lines queued or in the reader's batch
	// queuedBytes counts the bytes of those lines: the observer's
	// backlog, which behind compares with yieldAt.
	queuedBytes atomic.Int64
	// lastRead is when a pump last read (Unix nanoseconds): the pumps
	// are busy while it is recent (follow).
	lastRead atomic.Int64
	// yieldAt is the backlog past which the observer is behind the pumps
	// and yields them the CPU (follow): DefaultYieldAt, or an eighth of a
	// smaller budget.
	yieldAt  int64
	held     atomic.Int64 // bytes of the budget taken (reserve, Offer) and not yet given back
	maxLines int64
	maxBytes int64
	// blockBytes is the size of its pumps' blocks (blockSize, or a
	// sixteenth of a smaller budget).
	blockBytes int
	ready      chan struct{} // signalled when lines are queued or the queue closes

	// Dropped counts lines not observed because the queue was full (or
	// closed).
	Dropped atomic.Int64
	// tooLong counts the lines its pumps did not offer because they were
	// over the line limit (each pump's TooLong).
	tooLong atomic.Int64

	// The memory of lines that are Done, kept for the pumps' next lines
	// (takeBuffer, keep): by capacity, and how many bytes in all. Its
	// bytes stay reserved in the budget while kept, at most a keptShare
	// of it; a reservation for a line of its own that finds no room takes
	// them back first (reserveRoom).
	keptMu    sync.Mutex
	kept      map[int][][]byte
	keptBytes atomic.Int64 // written under keptMu
	// wanted counts, by size, the buffers a pump found neither kept nor
	// allowed to make while the observer had a backlog; the observer's
	// goroutine makes them (Next, stock). wanting says there are some.
	wanted  map[int]int
	wanting atomic.Bool
}

// segmentLines is how many lines a segment of the queue's list holds. The
// list is a chain of segments, so that a backlog of many lines never
// moves the lines already queued, and the segments a backlog emptied are
// written again.
const segmentLines = 256

// lineSegment is one segment of the queue's list of lines.
type lineSegment struct {
	lines [segmentLines]Line
	n     int
	next  *lineSegment
}

// keptShare is the part of the byte budget (one in keptShare) that a queue
// keeps of its lines' memory once they are Done: enough for the blocks and
// the buffers of a backlog's turnover, without holding the whole budget
// after a burst.
const keptShare = 4

// minBuffer is the smallest buffer a line still being read is held in.
const minBuffer = 1 << 10

// bufferSize is the size of the buffer that holds n bytes: the next power
// of two from minBuffer, so that buffers come in few sizes and one kept
// fits the next line of its size.
func bufferSize(n int) int {
	size := minBuffer
	for size < n {
		size <<= 1
	}
	return size
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
	return &Queue{maxLines: int64(lines), maxBytes: bytes, ready: make(chan struct{}, 1),
		blockBytes: min(blockSize, bufferSize(int(bytes/16))), yieldAt: min(DefaultYieldAt, bytes/8)}
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

// reserveRoom is reserve, which first gives back the memory kept for
// later lines when the budget has no room without it.
func (q *Queue) reserveRoom(n int64) bool {
	if q.reserve(n) {
		return true
	}
	q.keptMu.Lock()
	freed := q.keptBytes.Load()
	clear(q.kept)
	q.keptBytes.Store(0)
	q.keptMu.Unlock()
	if freed == 0 {
		return false
	}
	q.release(freed)
	return q.reserve(n)
}

// keep takes back the memory of buf, whose capacity is reserved in the
// budget, for a later line: it stays reserved while kept. What does not
// fit in the kept share, or comes once the queue is closed, is given back
// to the collector.
func (q *Queue) keep(buf []byte) {
	size := cap(buf)
	q.keptMu.Lock()
	if q.shut.Load() || q.keptBytes.Load()+int64(size) > q.maxBytes/keptShare {
		q.keptMu.Unlock()
		q.release(int64(size))
		return
	}
	if q.kept == nil {
		q.kept = map[int][][]byte{}
	}
	q.kept[size] = append(q.kept[size], buf[:0])
	q.keptBytes.Add(int64(size))
	q.keptMu.Unlock()
}

// buffer returns an empty buffer of capacity size for a pump, its bytes
// reserved in the budget, or nil when there is no room or no memory for
// it (see kept).
func (q *Queue) buffer(size int) []byte {
	buf, fresh := q.keptOrFresh(size)
	if !fresh {
		return buf
	}
	if !q.reserveRoom(int64(size)) {
		return nil
	}
	return make([]byte, 0, size)
}

// keptOrFresh returns an empty kept buffer of capacity size, its
// reservation now the caller's; or fresh, when the caller may make new
// memory; or neither. A pump makes new memory only while the lines held
// take less than a freshShare of the budget: past it, a backlog's memory
// is what the queue kept and what the observer's goroutine makes between
// two lines when a pump asks (stock), for the kernel's page faults and the
// runtime's zeroing on the pumps' goroutines would make the observer set
// the pace; the line it was asked for is not observed.
func (q *Queue) keptOrFresh(size int) (buf []byte, fresh bool) {
	if buf := q.takeBuffer(size); buf != nil {
		return buf, false
	}
	if q.held.Load()-q.keptBytes.Load() < q.maxBytes/freshShare {
		return nil, true
	}
	q.keptMu.Lock()
	if q.wanted == nil {
		q.wanted = map[int]int{}
	}
	if q.wanted[size] < wantedMax {
		q.wanted[size]++
	}
	q.keptMu.Unlock()
	q.wanting.Store(true)
	q.signal()
	return nil, false
}

// freshShare is the part of the byte budget (one in freshShare) that the
// lines a pump holds may take in memory it makes itself (keptOrFresh):
// the start of a connection, a short burst.
const freshShare = 8

// wantedMax bounds the buffers of one size asked for at once (4 MiB of
// blocks).
const wantedMax = 16

// stock makes the buffers the pumps asked for (buffer), as far as the
// budget has room, writes them so that their pages are the process's
// before a pump writes a line into them, and keeps them. It runs on the
// observer's goroutine (Next), and holds the lock only to take the
// requests and to keep the buffers.
func (q *Queue) stock() {
	q.keptMu.Lock()
	wanted := q.wanted
	q.wanted = nil
	q.wanting.Store(false)
	q.keptMu.Unlock()
	var made [][]byte
	makeOne := func(size int) bool {
		if !q.reserve(int64(size)) {
			return false
		}
		buf := make([]byte, size)
		for i := 0; i < size; i += 4096 {
			buf[i] = 1 // fault the page in here, not in the pump
		}
		made = append(made, buf[:0])
		return true
	}
	for size, n := range wanted {
		for range n {
			if !makeOne(size) {
				break
			}
		}
		// A line still being read grows through the sizes below: one
		// of each not kept, so that the next such line is not dropped
		// at each of them in turn.
		for smaller := bufferSize(size) / 2; smaller >= minBuffer; smaller /= 2 {
			q.keptMu.Lock()
			kept := len(q.kept[smaller])
			q.keptMu.Unlock()
			if kept == 0 && !makeOne(smaller) {
				break
			}
		}
	}
	if len(made) == 0 {
		return
	}
	q.keptMu.Lock()
	if q.shut.Load() {
		q.keptMu.Unlock()
		for _, buf := range made {
			q.release(int64(cap(buf)))
		}
		return
	}
	if q.kept == nil {
		q.kept = map[int][][]byte{}
	}
	for _, buf := range made {
		q.kept[cap(buf)] = append(q.kept[cap(buf)], buf)
		q.keptBytes.Add(int64(cap(buf)))
	}
	q.keptMu.Unlock()
}

// takeBuffer returns an empty kept buffer of capacity size, its
// reservation now the caller's, or nil when none is kept.
func (q *Queue) takeBuffer(size int) []byte {
	q.keptMu.Lock()
	defer q.keptMu.Unlock()
	free := q.kept[size]
	if len(free) == 0 {
		return nil
	}
	buf := free[len(free)-1]
	free[len(free)-1] = nil
	q.kept[size] = free[:len(free)-1]
	q.keptBytes.Add(-int64(size))
	return buf
}

// inUse is the budget's bytes taken by lines (queued, being observed, or
// still being read), not counting the memory kept for later lines.
func (q *Queue) inUse() int64 {
	q.keptMu.Lock()
	defer q.keptMu.Unlock()
	return q.held.Load() - q.keptBytes.Load()
}

// Offer queues line (which the queue now owns) if it fits, and reports
// whether it did.
func (q *Queue) Offer(from capture.Direction, line []byte) bool {
	if !q.reserveRoom(int64(len(line))) {
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
		var queued int64
		for _, l := range batch[:n] {
			q.append(l)
			queued += int64(len(l.Bytes))
		}
		q.count.Add(int64(n))
		q.queuedBytes.Add(queued)
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

// append adds l at the end of the list; mu is held.
func (q *Queue) append(l Line) {
	if q.tail == nil || q.tail.n == segmentLines {
		seg := q.spare
		if seg != nil {
			q.spare, seg.next = seg.next, nil
			q.spares--
		} else {
			seg = new(lineSegment)
		}
		if q.tail == nil {
			q.head = seg
		} else {
			q.tail.next = seg
		}
		q.tail = seg
	}
	q.tail.lines[q.tail.n] = l
	q.tail.n++
}

// maxSpares bounds the emptied segments a queue keeps: a sixteenth of the
// segments its line bound can fill.
func (q *Queue) maxSpares() int { return int(q.maxLines/segmentLines/16) + 1 }

func (q *Queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Next waits for the next line; ok is false once the queue is closed and
// empty. Only one goroutine at a time may call it.
func (q *Queue) Next() (l Line, ok bool) {
	for {
		if q.wanting.Load() {
			q.stock()
		}
		for q.out != nil {
			if q.next < q.out.n {
				l = q.out.lines[q.next]
				q.out.lines[q.next] = Line{}
				q.next++
				q.count.Add(-1)
				q.queuedBytes.Add(-int64(len(l.Bytes)))
				return l, true
			}
			done := q.out
			q.out, q.next = done.next, 0
			done.n, done.next = 0, q.read
			q.read = done
		}
		q.mu.Lock()
		q.giveBackSegments()
		if q.head != nil {
			q.out, q.next = q.head, 0
			q.head, q.tail = nil, nil
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

// giveBackSegments moves the segments the reader emptied to spare, as far
// as maxSpares allows; mu is held.
func (q *Queue) giveBackSegments() {
	for q.read != nil {
		seg := q.read
		q.read = seg.next
		if q.spares >= q.maxSpares() {
			seg.next = nil
			continue
		}
		seg.next = q.spare
		q.spare = seg
		q.spares++
	}
}

// behind reports, at now, whether the observer is behind busy pumps: more
// than yieldAt bytes of lines wait, a pump read within the last
// yieldSlice, and the queue is open.
func (q *Queue) behind(now time.Time) bool {
	return q.queuedBytes.Load() > q.yieldAt && now.UnixNano()-q.lastRead.Load() < int64(yieldSlice) && !q.shut.Load()
}

// Len is the number of lines queued.
func (q *Queue) Len() int { return int(q.count.Load()) }

// Done tells the queue that a line read with Next has been observed, so
// its bytes are free again.
func (q *Queue) Done(l Line) {
	if l.kept {
		q.keep(l.Bytes)
		return
	}
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
	q.keptMu.Lock()
	freed := q.keptBytes.Load()
	q.kept = nil
	q.keptBytes.Store(0)
	q.keptMu.Unlock()
	q.release(freed)
	q.signal()
}
