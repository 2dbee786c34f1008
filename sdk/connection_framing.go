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
func (lr *lineReader) next() ([]byte, error) {
	var acc []byte
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Allow one byte beyond the limit for a '\r' before the '\n'.
			if len(acc)+len(chunk) > lr.max+1 {
				return nil, ErrLineTooLong
			}
			acc = append(acc, chunk...)
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		var line []byte
		if acc != nil {
			if len(acc)+len(chunk) > lr.max+2 {
				return nil, ErrLineTooLong
			}
			line = append(acc, chunk...)
		} else {
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
