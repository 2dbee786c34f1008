package safetext

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer sanitises a byte stream as Text does a string, except that line
// ends ('\n') pass unchanged. A rune split across two writes is held back
// until its end arrives (at most utf8.UTFMax-1 bytes); Close writes what is
// held. It is safe for concurrent use; each Write is passed on whole.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte
}

// NewWriter returns a Writer passing sanitised bytes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write sanitises p and writes it. It reports len(p) on success.
func (sw *Writer) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	buf := append(sw.held, p...)
	sw.held = nil
	// Hold back an incomplete rune at the end.
	cut := len(buf)
	for k := 1; k < utf8.UTFMax && k <= len(buf); k++ {
		if utf8.RuneStart(buf[len(buf)-k]) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	if cut < len(buf) {
		sw.held = append([]byte(nil), buf[cut:]...)
	}
	if err := sw.emit(buf[:cut]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// emit writes b sanitised, keeping its line ends.
func (sw *Writer) emit(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == '\n':
			out = append(out, '\n')
		case r == utf8.RuneError && n == 1:
			out = utf8.AppendRune(out, utf8.RuneError)
		default:
			out = utf8.AppendRune(out, textRune(r))
		}
		b = b[n:]
	}
	_, err := sw.w.Write(out)
	return err
}

// Close writes a rune still held back (as U+FFFD: it never completed). It
// does not close the underlying writer.
func (sw *Writer) Close() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	held := sw.held
	sw.held = nil
	return sw.emit(held)
}
