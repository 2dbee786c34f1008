package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// maxReadFileBytes bounds the file ReadTextFile serves: an agent must not
// make acpscope read without end.
const maxReadFileBytes = 16 << 20

// maxReadAnswerBytes bounds the JSON-encoded size of the text served: the
// answer has to fit in one JSON-RPC frame, and a file of control bytes
// (16 MiB of NUL is 96 MiB of \u0000 escapes) must not cost a multiple of
// its size to send.
const maxReadAnswerBytes = 24 << 20

// maxConcurrentReads bounds the fs/read_text_file requests served at once
// (each holds at most maxReadFileBytes); more wait for a slot.
const maxConcurrentReads = 4

// readSlots is the semaphore behind maxConcurrentReads.
var readSlots = make(chan struct{}, maxConcurrentReads)

// errTooLarge is returned for a file (or a window of it) over the limits.
var errTooLarge = errors.New("too large")

// readText reads the regular file f (of stat size size) and returns the
// lines selected by line (1-based first line; nil or ≤ 1 = from the start)
// and limit (nil or negative = to the end), reading no further than the
// selection needs. Memory is about the selected text: the whole file is
// never held when a window is asked for.
func readText(f *os.File, size int64, line, limit *int) (string, error) {
	r := io.LimitReader(f, maxReadFileBytes+1) // the file may grow after stat
	var b strings.Builder
	if line == nil && limit == nil {
		b.Grow(int(min(size, maxReadFileBytes)) + 1)
		buf := make([]byte, 32<<10)
		if _, err := io.CopyBuffer(&b, r, buf); err != nil {
			return "", err
		}
		if b.Len() > maxReadFileBytes {
			return "", errTooLarge
		}
		return checkEncoded(b.String())
	}
	first := 1
	if line != nil && *line > 1 {
		first = *line
	}
	want := -1
	if limit != nil && *limit >= 0 {
		want = *limit
	}
	br := bufio.NewReaderSize(r, 64<<10)
	read := 0
	for n := 1; want != 0; n++ {
		inWindow := n >= first
		done, err := eachChunk(br, func(chunk []byte) {
			read += len(chunk)
			if inWindow {
				b.Write(chunk)
			}
		})
		if read > maxReadFileBytes {
			return "", errTooLarge
		}
		if err != nil {
			return "", err
		}
		if done {
			break
		}
		if inWindow && want > 0 {
			want--
		}
	}
	return checkEncoded(b.String())
}

// eachChunk hands the next line of br (with its '\n') to fn in pieces of
// at most the reader's size. done reports the end of input.
func eachChunk(br *bufio.Reader, fn func([]byte)) (done bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		fn(chunk)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return true, nil
		default:
			return false, err
		}
	}
}

// checkEncoded refuses text whose JSON encoding would pass
// maxReadAnswerBytes.
func checkEncoded(s string) (string, error) {
	if encodedLen(s) > maxReadAnswerBytes {
		return "", fmt.Errorf("%w: its JSON encoding passes %d bytes", errTooLarge, maxReadAnswerBytes)
	}
	return s, nil
}

// encodedLen is an upper bound of the length of s as a JSON string body:
// escapes cost 2 or 6 bytes (controls, quotes, HTML-sensitive characters,
// invalid UTF-8, the line separators).
func encodedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r == 0x2028 || r == 0x2029 {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// acquireRead waits for a read slot (see maxConcurrentReads) or ctx's end.
func acquireRead(ctx context.Context) (release func(), err error) {
	select {
	case readSlots <- struct{}{}:
		return func() { <-readSlots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
