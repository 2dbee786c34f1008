// Package safetext is acpscope's one sanitiser: every string it prints that
// came from an agent, a capture, a database or another program passes
// through it, so that such text can neither drive the terminal (escape
// sequences, clipboard writes, window titles, screen clears) nor disguise
// itself (bidirectional overrides and isolates that reorder what is shown).
//
// Forbidden runes are the C0 controls, DEL, the C1 controls, the Unicode
// line and paragraph separators, and the bidirectional formatting
// characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069). Text
// replaces each with U+FFFD (a tab with a space); JSON escapes them, which
// keeps the JSON value unchanged; Writer does the same as Text for a stream
// and keeps its line ends.
package safetext

import (
	"strings"
	"unicode/utf8"
)

// Forbidden reports whether r may not reach the terminal as it is.
func Forbidden(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0: // C0, DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // arabic letter mark, LRM, RLM
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	case r >= 0x202a && r <= 0x202e: // embeddings and overrides
		return true
	case r >= 0x2066 && r <= 0x2069: // isolates
		return true
	}
	return false
}

// Text returns s with every forbidden rune replaced by U+FFFD, a tab by a
// space, and every invalid UTF-8 byte by U+FFFD. Text without any is
// returned as it is, without copying.
func Text(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, Forbidden) {
		return s
	}
	return strings.Map(textRune, strings.ToValidUTF8(s, string(utf8.RuneError)))
}

// Lines returns s sanitised as Text does, except that line ends ('\n')
// are kept: for multi-line text shown where a line break is only a line
// break (a page's text block), as Writer does for a stream.
func Lines(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r != '\n' && Forbidden(r) }) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		return textRune(r)
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}

// textRune is Text's replacement of one rune: a tab by a space, a
// forbidden rune by U+FFFD, any other unchanged.
func textRune(r rune) rune {
	switch {
	case r == '\t':
		return ' '
	case Forbidden(r):
		return utf8.RuneError
	}
	return r
}

// JSON escapes the forbidden runes in encoded JSON (as \uXXXX), so the
// value is unchanged for a JSON reader while a terminal sees no control or
// bidirectional character. Line ends are kept: encoding/json writes them
// only between values (it escapes those inside strings). enc must be the
// output of encoding/json, whose strings are valid UTF-8 and whose C0
// controls are already escaped; the other forbidden runes can only occur
// inside strings, where an escape means the same rune.
func JSON(enc []byte) []byte {
	i := indexForbidden(enc)
	if i < 0 {
		return enc
	}
	out := make([]byte, 0, len(enc)+16)
	for i >= 0 {
		out = append(out, enc[:i]...)
		r, n := utf8.DecodeRune(enc[i:])
		out = appendEscape(out, r)
		enc = enc[i+n:]
		i = indexForbidden(enc)
	}
	return append(out, enc...)
}

// indexForbidden returns the byte offset of the first forbidden rune in b
// other than a line end, or -1. An invalid byte counts as U+FFFD, which is
// allowed.
func indexForbidden(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != '\n' && Forbidden(r) {
			return i
		}
		i += n
	}
	return -1
}

func appendEscape(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
