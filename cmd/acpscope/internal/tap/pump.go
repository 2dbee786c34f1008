// Package tap is the pass-through of `acpscope tap`: it stands between an
// editor and its ACP agent, copies every byte both ways unchanged, and
// hands a copy of each complete line to an observer that never slows the
// copy down.
//
// Each direction is a pump (Pump): it reads what one side wrote, finds the
// complete lines in it, offers a copy of each to a bounded Queue, and then
// writes the bytes it read, exactly as read, to the other side. Offering
// never blocks: a line that does not fit in the queue, or that is longer
// than the observer takes, is counted and forwarded all the same. The
// line is offered before its last byte is forwarded, so the observer sees
// a request before the peer can have answered it.
//
// One goroutine drains the queue into an Observer (observer.go), which
// feeds the adapter's Replayer, the record file and the store sink in
// wire order. Run (lifecycle.go) wires the two pumps, the observer and the
// agent process together and ends them all.
package tap

import (
	"bytes"
	"io"
	"sync/atomic"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// DefaultMaxLineBytes is the longest line the observer takes: the capture
// format's line limit. A longer line is forwarded whole and counted.
const DefaultMaxLineBytes = capture.MaxLineBytes

// readChunk is how much a pump reads at once.
const readChunk = 64 << 10

// Pump copies one direction of the connection.
type Pump struct {
	// From is who wrote what the pump reads (capture.FromClient for the
	// editor's side, capture.FromAgent for the agent's).
	From capture.Direction
	// Queue receives a copy of every complete line; nil observes nothing.
	Queue *Queue
	// MaxLineBytes bounds a line handed to the queue (default
	// DefaultMaxLineBytes); a longer one is counted in TooLong.
	MaxLineBytes int

	// Bytes counts the bytes forwarded.
	Bytes atomic.Int64
	// Lines counts the complete lines seen (offered or not).
	Lines atomic.Int64
	// TooLong counts lines longer than MaxLineBytes, not observed.
	TooLong atomic.Int64

	pending    []byte    // the start of a line whose newline has not come yet
	reserved   int64     // bytes of the queue's budget taken by pending: its capacity
	skipping   bool      // the rest of a line not observed is going by
	skippedLen int64     // the length of that line so far
	block      *block    // where short lines are copied (copyLine)
	blockAsked bool      // the queue had no memory for a block: asked for
	batch      []Line    // the lines completed by the current read
	at         time.Time // when the current read came: its lines' wire time
}

// Copy forwards everything src yields to dst until src ends (nil on
// io.EOF) or a read or write fails (that error; a *WriteError for a
// write). A final line without a newline is offered when src ends. A write
// error stops the copy at once: the other side is gone.
func (p *Pump) Copy(dst io.Writer, src io.Reader) error {
	buf := make([]byte, readChunk)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if p.Queue != nil {
				p.at = time.Now()
				p.Queue.lastRead.Store(p.at.UnixNano())
			}
			p.scan(buf[:n])
			w, werr := dst.Write(buf[:n])
			p.Bytes.Add(int64(w))
			if werr == nil && w < n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				p.letGo()
				return &WriteError{Err: werr}
			}
		}
		if rerr == io.EOF {
			p.end()
			return nil
		}
		if rerr != nil {
			p.end()
			return rerr
		}
	}
}

// scan offers every line completed by chunk and keeps the start of the
// next one.
func (p *Pump) scan(chunk []byte) {
	limit := p.limit()
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			p.hold(chunk, limit)
			break
		}
		p.Lines.Add(1)
		p.complete(chunk[:i], limit)
		chunk = chunk[i+1:]
	}
	p.push()
}

// push queues the lines completed by one read, at once and before the read
// is forwarded.
func (p *Pump) push() {
	if len(p.batch) > 0 {
		p.Queue.push(p.batch)
		clear(p.batch)
		p.batch = p.batch[:0]
	}
}

func (p *Pump) limit() int {
	if p.MaxLineBytes <= 0 {
		return DefaultMaxLineBytes
	}
	return p.MaxLineBytes
}

// complete offers the line that part ends. A line that does not fit is
// never copied: it is counted (TooLong past the limit, else Dropped) and
// only its bytes are forwarded.
func (p *Pump) complete(part []byte, limit int) {
	if p.skipping {
		p.skipped(len(part), limit)
		return
	}
	n := len(p.pending) + len(part)
	switch {
	case n > limit:
		p.tooLong()
		p.release()
	case p.Queue == nil:
		p.release()
	case len(p.pending) == 0:
		// The whole line came in one read: copied when the queue has
		// room and memory for it.
		if l, ok := p.copyLine(part); ok {
			p.batch = append(p.batch, l)
		} else {
			p.Queue.Dropped.Add(1)
		}
	case !p.grow(n):
		p.Queue.Dropped.Add(1)
		p.release()
	default:
		// The pending buffer, its bytes already reserved in the queue,
		// becomes the line: no copy, and its memory leaves the pump until
		// the line is Done, when the queue keeps it for another line.
		p.batch = append(p.batch, Line{From: p.From, Bytes: append(p.pending, part...), At: p.at, held: p.reserved, kept: true})
		p.pending, p.reserved = nil, 0
	}
}

// tooLong counts a line over the limit, in the queue too (as lost).
func (p *Pump) tooLong() {
	p.TooLong.Add(1)
	if p.Queue != nil {
		p.Queue.tooLong.Add(1)
	}
}

// skipped counts a skipped line of which the last n bytes came now.
func (p *Pump) skipped(n, limit int) {
	total := p.skippedLen + int64(n)
	p.skipping, p.skippedLen = false, 0
	switch {
	case total > int64(limit):
		p.tooLong()
	case p.Queue != nil:
		p.Queue.Dropped.Add(1)
	}
}

// hold keeps the start of a line. A line past limit, or one the queue has
// no room for, is only skipped from then on: its start is released at
// once, and its length counted.
func (p *Pump) hold(part []byte, limit int) {
	if p.skipping {
		p.skippedLen += int64(len(part))
		return
	}
	n := len(p.pending) + len(part)
	if n > limit || p.Queue == nil || !p.grow(n) {
		p.skipping, p.skippedLen = true, int64(n)
		p.release()
		return
	}
	p.pending = append(p.pending, part...)
}

// grow makes room for n bytes in the pending buffer, and reports whether
// the queue had room for it. The buffer doubles, but never past the line
// limit, so that a line's buffer is at most twice the line and at most
// the limit; its sizes are the queue's buffer sizes (bufferSize), so that
// a buffer the queue kept is written again rather than memory taken
// fresh. While the line moves to the bigger buffer both are reserved: the
// smaller one goes back to the queue.
func (p *Pump) grow(n int) bool {
	if n <= cap(p.pending) {
		return true
	}
	size := min(bufferSize(max(2*cap(p.pending), n)), p.limit())
	b := p.Queue.buffer(size)
	if b == nil {
		return false
	}
	b = append(b, p.pending...)
	p.release()
	p.pending, p.reserved = b, int64(size)
	return true
}

// release drops the pending line; its buffer, with its reservation, goes
// back to the queue.
func (p *Pump) release() {
	if p.reserved > 0 {
		p.Queue.keep(p.pending)
	}
	p.pending, p.reserved = nil, 0
}

// end offers a last line that ended without a newline (flush) and lets
// go of the pump's memory: nothing more comes.
func (p *Pump) end() {
	p.flush()
	p.letGo()
}

// letGo gives the pump's memory (a line's start, its current block) back
// to its queue.
func (p *Pump) letGo() {
	if p.Queue != nil {
		p.release()
		p.dropBlock()
	}
}

// flush offers a last line that ended without a newline.
func (p *Pump) flush() {
	if !p.skipping && len(p.pending) == 0 {
		return
	}
	p.Lines.Add(1)
	p.complete(nil, p.limit())
	p.push()
}

// blockSize is the largest size of the blocks a pump copies short lines
// into, so that a line costs no allocation of its own; a queue's blocks
// are smaller when its budget is (Queue.blockBytes). A line over an
// eighth of a block gets a buffer of its own. A block takes its whole
// size from the queue's budget while it is in use, and goes back to its
// queue once every line in it is Done (Queue.keep), to be written again:
// fresh memory (the kernel's page faults, the runtime's zeroing) cost the
// pump more than the copy, and a line costs no reservation of its own.
const blockSize = 256 << 10

// block is memory that short lines are copied into. refs counts its lines
// not yet Done, plus one while it is its pump's current block.
type block struct {
	buf   []byte
	refs  atomic.Int32
	queue *Queue
}

// unref drops one reference; the last one gives the block's memory, with
// its reservation, back to its queue, which keeps it for another block if
// its kept share has room.
func (b *block) unref() {
	if b.refs.Add(-1) != 0 {
		return
	}
	b.queue.keep(b.buf[:0])
	b.buf = nil
}

// copyLine copies a complete line for the queue, and reports whether the
// queue had room and memory for it: a short line goes into the pump's
// block, a longer one into a buffer of its own.
func (p *Pump) copyLine(part []byte) (Line, bool) {
	n := len(part)
	size := p.Queue.blockBytes
	if n > size/8 {
		buf := p.Queue.buffer(bufferSize(n))
		if buf == nil {
			return Line{}, false
		}
		return Line{From: p.From, Bytes: append(buf, part...), At: p.at, held: int64(cap(buf)), kept: true}, true
	}
	if p.block == nil || cap(p.block.buf)-len(p.block.buf) < n {
		if p.block == nil && p.blockAsked && p.Queue.wanting.Load() {
			return Line{}, false // no memory until the observer's goroutine makes it
		}
		p.dropBlock()
		p.block = p.newBlock()
		if p.blockAsked = p.block == nil; p.blockAsked {
			return Line{}, false
		}
	}
	b := p.block
	start := len(b.buf)
	b.buf = append(b.buf, part...)
	b.refs.Add(1)
	return Line{From: p.From, Bytes: b.buf[start:len(b.buf):len(b.buf)], At: p.at, block: b}, true
}

// newBlock returns a new current block, its memory reserved in the
// queue's budget, or nil when the queue has no room or no memory for one
// (see Queue.keptOrFresh).
func (p *Pump) newBlock() *block {
	size := p.Queue.blockBytes
	buf, fresh := p.Queue.keptOrFresh(size)
	if fresh {
		if !p.Queue.reserveRoom(int64(size)) {
			return nil
		}
		buf = make([]byte, 0, size)
	}
	if buf == nil {
		return nil
	}
	b := &block{buf: buf, queue: p.Queue}
	b.refs.Store(1)
	return b
}

// dropBlock lets go of the pump's current block: it goes back to the
// queue once its lines are Done.
func (p *Pump) dropBlock() {
	if p.block != nil {
		p.block.unref()
		p.block = nil
	}
}

// WriteError is a pump's failed write: the receiving side is gone.
type WriteError struct{ Err error }

// Error says that the write failed, and why.
func (e *WriteError) Error() string { return "write: " + e.Err.Error() }

// Unwrap returns the write's error.
func (e *WriteError) Unwrap() error { return e.Err }
