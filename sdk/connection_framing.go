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
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readBufferSize), max: max}
}

// next returns the next line without its "\n" or "\r\n", in a slice the
// caller owns. At the end of the stream it returns the final unterminated
// line (if any) together with io.EOF. A line longer than the limit gives
// ErrLineTooLong. Any other read error is returned as is, discarding a
// partial line.
//
// Memory: a line that fits the read buffer costs one allocation of its
// size. A longer one is kept as a list of buffer-sized pieces while it is
// read, then copied once into a slice of exactly its size, so reading a
// frame of n bytes allocates about 2n, of which n stays (growing one slice
// by appending would allocate about 5n along the way).
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
	pieces := [][]byte{bytes.Clone(first)}
	total := len(first)
	for {
		chunk, err := lr.br.ReadSlice('\n')
		// Allow two bytes beyond the limit for "\r\n".
		if total+len(chunk) > lr.max+2 {
			return nil, ErrLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			pieces = append(pieces, bytes.Clone(chunk))
			total += len(chunk)
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		line := make([]byte, 0, total+len(chunk))
		for i, p := range pieces {
			line = append(line, p...)
			pieces[i] = nil // let the piece go as soon as it is copied
		}
		return append(line, chunk...), err
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
