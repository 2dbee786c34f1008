package acp

// Newline-delimited framing of the inbound stream.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// readBufferSize is the size of a connection's read buffer. Lines longer
// than this are accumulated chunk by chunk up to maxLineBytes, so a large
// frame costs memory only while it is being read.
const readBufferSize = 32 << 10

// lineReader splits a stream into lines, enforcing the frame limit.
type lineReader struct {
	br *bufio.Reader
	// max is the longest line content accepted (newline excluded).
	max int
	// lastLong is the length of the last line that did not fit the read
	// buffer (0 before the first): the size a long line is expected to have.
	lastLong int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readBufferSize), max: max}
}

// next returns the next line without its "\n" or "\r\n", in a slice the
// caller owns and nothing else writes to. At the end of the stream it
// returns the final unterminated line (if any) together with io.EOF. A line
// longer than the limit gives ErrLineTooLong. Any other read error is
// returned as is, discarding a partial line.
//
// Memory: a line that fits the read buffer costs one allocation of its
// size. A longer one is read into a buffer sized from the previous long
// line (agents that send large frames tend to send them alike), so a stream
// of similar large frames costs one allocation of about each frame's size
// and no copy. A line that outgrows its buffer is kept as a list of
// buffer-sized pieces while it is read and then joined once, so it costs at
// most about twice its size while it is read and about its size after.
func (lr *lineReader) next() ([]byte, error) {
	chunk, err := lr.br.ReadSlice('\n')
	var line []byte
	if errors.Is(err, bufio.ErrBufferFull) {
		line, err = lr.long(chunk)
		if line == nil {
			return nil, err
		}
	} else {
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		line = bytes.Clone(chunk)
	}
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1] // also on a final unterminated line, as bufio.ScanLines
	}
	if len(line) > lr.max {
		return nil, ErrLineTooLong
	}
	return line, err
}

// long reads the rest of a line that did not fit the read buffer (first is
// its first buffer-full), returning it whole (with its newline, if any) and
// io.EOF when the stream ended; nil and the error on failure.
func (lr *lineReader) long(first []byte) ([]byte, error) {
	// The expected size, with room for a little growth and the newline,
	// never beyond the limit.
	size := min(max(lr.lastLong+lr.lastLong/16, 2*len(first)), lr.max+2)
	head := append(make([]byte, 0, size), first...)
	var pieces [][]byte // what did not fit head, buffer-sized
	total := len(first)
	for {
		chunk, err := lr.br.ReadSlice('\n')
		// Allow two bytes beyond the limit for "\r\n".
		if total+len(chunk) > lr.max+2 {
			return nil, ErrLineTooLong
		}
		full := errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !full && !errors.Is(err, io.EOF) {
			return nil, err
		}
		total += len(chunk)
		if pieces == nil && len(head)+len(chunk) <= cap(head) {
			head = append(head, chunk...)
		} else {
			pieces = append(pieces, bytes.Clone(chunk))
		}
		if full {
			continue
		}
		lr.lastLong = total
		if pieces == nil && len(head) >= cap(head)/2 {
			return head, err
		}
		line := append(make([]byte, 0, total), head...)
		head = nil
		for i, p := range pieces {
			line = append(line, p...)
			pieces[i] = nil // let the piece go as soon as it is copied
		}
		return line, err
	}
}

// isBlankLine reports whether a line holds only white space (Unicode white
// space, as upstream's bytes.TrimSpace check); such lines are skipped.
func isBlankLine(line []byte) bool {
	for _, c := range line {
		if c >= 0x80 || !(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
			return len(bytes.TrimSpace(line)) == 0
		}
	}
	return true
}
