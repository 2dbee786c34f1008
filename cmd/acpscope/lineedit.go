package main

import (
	"bufio"
	"errors"
	"io"
	"unicode/utf8"
)

// The interactive loop reads prompt lines from the terminal in
// non-canonical mode, with this editor, because the terminal's canonical
// mode keeps at most 4,095 bytes of a line and drops the rest without a
// word. Signals stay with the terminal (ISIG): Ctrl-C still arrives as
// SIGINT, so it cancels the running turn or ends the session as before.

// errLineTooLong is a line longer than the editor's limit: it was read to
// its end and dropped.
var errLineTooLong = errors.New("the line is too long")

// Bracketed paste (xterm's mode 2004): the terminal wraps pasted text in
// these, so a pasted newline is part of the prompt rather than its end.
const (
	pasteOn     = "\x1b[?2004h"
	pasteOff    = "\x1b[?2004l"
	pasteStart  = "200~"
	pasteFinish = "201~"
)

// lineEditor reads lines typed on a terminal in non-canonical mode, with
// the editing the canonical mode gave: Backspace deletes a character,
// Ctrl-W a word, Ctrl-U the line; Enter ends the line, Ctrl-D on an empty
// line ends the input. Editing happens at the end of the line only: the
// cursor keys and other escape sequences are read and ignored. Text
// pasted between bracketed-paste marks is taken whole, its newlines
// included.
type lineEditor struct {
	in   *bufio.Reader
	echo io.Writer // the terminal, for what is typed (nil: no echo)
	max  int       // the longest line kept, in bytes
	mark string    // the prompt mark, shown again after Ctrl-U

	line    []byte
	out     []byte // echo not yet written
	pasting bool
	tooLong bool
}

// readLine reads one line, without its end. A line longer than ed.max is
// read to its end and gives errLineTooLong. At the end of the input (a
// Ctrl-D on an empty line, or the terminal gone) the error is io.EOF, with
// what was typed before it.
func (ed *lineEditor) readLine() (string, error) {
	if cap(ed.line) > 64<<10 {
		ed.line = nil // a long line's buffer is not kept between lines
	}
	ed.line, ed.tooLong, ed.pasting = ed.line[:0], false, false
	defer ed.flush()
	for {
		if ed.in.Buffered() == 0 {
			ed.flush() // show what was typed before waiting for more
		}
		b, err := ed.in.ReadByte()
		if err != nil {
			return string(ed.line), io.EOF
		}
		switch {
		case b == 0x1b:
			ed.escape()
		case ed.pasting:
			if b == '\r' {
				b = '\n'
			}
			if b == '\n' || b == '\t' || b >= 0x20 {
				ed.add(b)
			}
		case b == '\r' || b == '\n':
			ed.show("\r\n")
			if ed.tooLong {
				return "", errLineTooLong
			}
			return string(ed.line), nil
		case b == 0x04: // Ctrl-D
			if len(ed.line) == 0 && !ed.tooLong {
				return "", io.EOF
			}
		case b == 0x7f || b == 0x08: // Backspace
			ed.erase(1)
		case b == 0x17: // Ctrl-W
			ed.eraseWord()
		case b == 0x15: // Ctrl-U
			ed.line, ed.tooLong = ed.line[:0], false
			ed.show("^U\r\n" + ed.mark)
		case b == '\t' || b >= 0x20:
			ed.add(b)
		}
	}
}

// add appends one byte of text and echoes it, unless the line is over
// the limit already.
func (ed *lineEditor) add(b byte) {
	if ed.tooLong {
		return
	}
	if len(ed.line) >= ed.max {
		ed.tooLong = true
		ed.line = ed.line[:0]
		ed.show(" …")
		return
	}
	ed.line = append(ed.line, b)
	if b == '\n' {
		ed.show("\r\n")
	} else {
		ed.out = append(ed.out, b)
	}
}

// erase deletes the last n characters (runes) of the line.
func (ed *lineEditor) erase(n int) {
	for ; n > 0 && len(ed.line) > 0; n-- {
		_, size := utf8.DecodeLastRune(ed.line)
		if ed.line[len(ed.line)-size] != '\n' {
			ed.show("\b \b")
		}
		ed.line = ed.line[:len(ed.line)-size]
	}
}

// eraseWord deletes the spaces at the end of the line and the word
// before them.
func (ed *lineEditor) eraseWord() {
	for len(ed.line) > 0 && isSpace(ed.line[len(ed.line)-1]) {
		ed.erase(1)
	}
	for len(ed.line) > 0 && !isSpace(ed.line[len(ed.line)-1]) {
		ed.erase(1)
	}
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' }

// escape reads the rest of an escape sequence: a bracketed-paste mark
// switches pasting, anything else (cursor keys, function keys, Alt with
// a key) is ignored.
func (ed *lineEditor) escape() {
	b, err := ed.in.ReadByte()
	if err != nil {
		return
	}
	switch b {
	case '[': // CSI: parameters, intermediates, one final byte
		var seq []byte
		for len(seq) < 32 {
			c, err := ed.in.ReadByte()
			if err != nil {
				return
			}
			seq = append(seq, c)
			if c >= 0x40 && c <= 0x7e {
				break
			}
		}
		switch string(seq) {
		case pasteStart:
			ed.pasting = true
		case pasteFinish:
			ed.pasting = false
		}
	case 'O': // SS3: one more byte
		_, _ = ed.in.ReadByte()
	}
}

// show queues echo for the terminal.
func (ed *lineEditor) show(s string) { ed.out = append(ed.out, s...) }

// flush writes the queued echo.
func (ed *lineEditor) flush() {
	if len(ed.out) > 0 && ed.echo != nil {
		_, _ = ed.echo.Write(ed.out)
	}
	ed.out = ed.out[:0]
}
