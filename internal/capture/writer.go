package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// Writer appends entries to a capture. It is safe for concurrent use, so the
// two directions of one connection can be recorded by two goroutines.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	now   func() time.Time
	err   error
}

// NewWriter starts a capture on w, writing the header line first when h is
// not nil (its Version is set to the package's Version).
func NewWriter(w io.Writer, h *Header) (*Writer, error) {
	cw := &Writer{w: w, start: time.Now(), now: time.Now}
	if h != nil {
		hdr := *h
		hdr.Version = Version
		line, err := json.Marshal(struct {
			Capture Header `json:"capture"`
		}{hdr})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return nil, err
		}
	}
	return cw, nil
}

// Write records one message sent by from. msg must be one JSON object; it is
// compacted before it is written. The first write error is kept and returned
// by every later call.
func (w *Writer) Write(from Direction, msg []byte) error {
	msg = bytes.TrimSpace(msg)
	if !json.Valid(msg) || len(msg) == 0 || msg[0] != '{' {
		return fmt.Errorf("capture: message from %s is not a JSON object", from)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if from != FromAgent && from != FromClient {
		return fmt.Errorf("capture: unknown direction %q", from)
	}
	// The entry is assembled by hand so the message keeps its exact bytes
	// (json.Marshal would re-escape <, > and & inside it).
	t := w.now().Sub(w.start).Milliseconds()
	line := make([]byte, 0, len(msg)+48)
	line = append(line, `{"from":"`...)
	line = append(line, from...)
	line = append(line, `","msg":`...)
	line = append(line, compact(msg)...)
	line = append(line, `,"t":`...)
	line = strconv.AppendInt(line, t, 10)
	line = append(line, "}\n"...)
	if _, err := w.w.Write(line); err != nil {
		w.err = err
	}
	return w.err
}

// Tap returns an io.Writer that records every complete newline-terminated
// line written to it as a message from the given direction. Put it on one
// side of a connection with io.TeeReader or io.MultiWriter. Lines that are
// not JSON objects (blank lines, garbage from a broken peer) are skipped: a
// capture only ever holds messages. Tap never fails its caller; recording
// errors are reported by Err.
func (w *Writer) Tap(from Direction) io.Writer {
	return &tap{w: w, from: from}
}

// Err returns the first error that stopped recording, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

type tap struct {
	w       *Writer
	from    Direction
	pending []byte
	// skipping is set while the rest of an over-long line goes by: none
	// of it is a message, not even a tail that looks like one.
	skipping bool
}

func (t *tap) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if t.skipping {
				return n, nil
			}
			if len(t.pending)+len(p) > MaxLineBytes {
				t.pending = nil // an over-long line is not a message
				t.skipping = true
				return n, nil
			}
			t.pending = append(t.pending, p...)
			return n, nil
		}
		line := p[:i]
		p = p[i+1:]
		if t.skipping {
			t.skipping = false
			continue
		}
		if len(t.pending) > 0 {
			if len(t.pending)+len(line) > MaxLineBytes {
				t.pending = nil
				continue
			}
			line = append(t.pending, line...)
			t.pending = t.pending[:0]
		}
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
			_ = t.w.Write(t.from, trimmed)
		}
	}
	return n, nil
}
