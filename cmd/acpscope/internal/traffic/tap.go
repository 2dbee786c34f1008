package traffic

import (
	"bytes"
	"io"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Tap returns a writer that adds every complete line written to it to l
// as a message from from: put it on one side of a connection with
// io.TeeReader or io.MultiWriter (acpscope run does). It never fails.
// A line is held whole up to capture.MaxLineBytes, so that its routing
// facts are read (Add keeps at most MaxFrameBytes of it); a longer one is
// added cut, with its whole length. It is used by one goroutine.
func (l *Log) Tap(from capture.Direction) io.Writer {
	return &lineTap{log: l, from: from}
}

type lineTap struct {
	log     *Log
	from    capture.Direction
	pending []byte // the held start of the line under way
	size    int    // the whole length of that line so far
}

func (t *lineTap) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.keep(p)
			break
		}
		t.keep(p[:i])
		p = p[i+1:]
		t.line()
	}
	return n, nil
}

// keep holds the part of a line that fits, and counts it all.
func (t *lineTap) keep(part []byte) {
	t.size += len(part)
	if room := capture.MaxLineBytes - len(t.pending); room > 0 {
		t.pending = append(t.pending, part[:min(room, len(part))]...)
	}
}

// keptCap is the largest line buffer a tap keeps between lines.
const keptCap = 1 << 20

// line adds the completed line.
func (t *lineTap) line() {
	msg := bytes.TrimSpace(t.pending)
	if size := len(msg); size > 0 {
		if t.size > len(t.pending) {
			size = t.size // held cut: its whole length
		}
		t.log.addSized(t.from, msg, size, time.Now())
	}
	t.pending, t.size = t.pending[:0], 0
	if cap(t.pending) > keptCap {
		t.pending = nil
	}
}
