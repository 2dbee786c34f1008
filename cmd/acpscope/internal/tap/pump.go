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

	pending  []byte // the start of a line whose newline has not come yet
	skipping bool   // the rest of an over-long line is going by
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
			p.scan(buf[:n])
			w, werr := dst.Write(buf[:n])
			p.Bytes.Add(int64(w))
			if werr == nil && w < n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return &WriteError{Err: werr}
			}
		}
		if rerr == io.EOF {
			p.flush()
			return nil
		}
		if rerr != nil {
			p.flush()
			return rerr
		}
	}
}

// scan offers every line completed by chunk and keeps the start of the
// next one.
func (p *Pump) scan(chunk []byte) {
	limit := p.MaxLineBytes
	if limit <= 0 {
		limit = DefaultMaxLineBytes
	}
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			p.hold(chunk, limit)
			return
		}
		part := chunk[:i]
		chunk = chunk[i+1:]
		p.Lines.Add(1)
		if p.skipping || len(p.pending)+len(part) > limit {
			p.TooLong.Add(1)
			p.skipping = false
			p.reset()
			continue
		}
		if p.Queue == nil || !p.Queue.room(len(p.pending)+len(part)) {
			// No copy for a line that would not be queued.
			if p.Queue != nil {
				p.Queue.Dropped.Add(1)
			}
			p.reset()
			continue
		}
		line := make([]byte, len(p.pending)+len(part))
		copy(line, p.pending)
		copy(line[len(p.pending):], part)
		p.reset()
		p.offer(line)
	}
}

// hold keeps the start of a line; past limit the line is only skipped.
func (p *Pump) hold(part []byte, limit int) {
	if p.skipping {
		return
	}
	if len(p.pending)+len(part) > limit {
		p.pending = nil // release the memory of an over-long line at once
		p.skipping = true
		return
	}
	p.pending = append(p.pending, part...)
}

// flush offers a last line that ended without a newline.
func (p *Pump) flush() {
	if p.skipping {
		p.Lines.Add(1)
		p.TooLong.Add(1)
		p.skipping = false
		return
	}
	if len(p.pending) == 0 {
		return
	}
	p.Lines.Add(1)
	p.offer(append([]byte(nil), p.pending...))
	p.reset()
}

// keepPending is the largest line buffer a pump keeps for the next line;
// a bigger one (left by a huge frame) is released.
const keepPending = 1 << 20

// reset empties the pending line.
func (p *Pump) reset() {
	if cap(p.pending) > keepPending {
		p.pending = nil
		return
	}
	p.pending = p.pending[:0]
}

// WriteError is a pump's failed write: the receiving side is gone.
type WriteError struct{ Err error }

// Error says that the write failed, and why.
func (e *WriteError) Error() string { return "write: " + e.Err.Error() }

// Unwrap returns the write's error.
func (e *WriteError) Unwrap() error { return e.Err }

func (p *Pump) offer(line []byte) {
	if p.Queue != nil {
		p.Queue.Offer(p.From, line)
	}
}
