package acp

// The one JSON scanner under every hand-written reader of peer input: the
// envelope decoder (connection_envelope.go), the request-id normaliser
// (connection_ids.go), the one-pass decoders (fastdecode.go and the
// generated decodeFast methods) and the union helpers (codec.go).
//
// It walks JSON text without building values: whitespace, literals, string
// and number tokens, objects and arrays, and skipping a whole value. It
// accepts exactly the text encoding/json accepts (the same grammar, the same
// nesting limit, invalid UTF-8 inside strings allowed) and reports the rest as
// a *syntaxError with a byte offset. unquote decodes a string token the way
// encoding/json does. Every method is bounded by the input and never panics.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxNestingDepth matches encoding/json's limit on nested arrays/objects.
const maxNestingDepth = 10000

// syntaxError reports malformed JSON at a byte offset.
type syntaxError struct {
	msg    string
	offset int
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.offset, e.msg)
}

const msgUnexpectedEnd = "unexpected end of JSON input"

// jsonScanner walks a byte slice holding JSON text. depth counts the objects
// and arrays open at pos.
type jsonScanner struct {
	data  []byte
	pos   int
	depth int
	// searched counts the bytes scanString has searched, so that a test
	// can hold it to linear work.
	searched int
}

func (s *jsonScanner) fail(msg string) error {
	return &syntaxError{msg: msg, offset: s.pos}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) && isJSONSpace(s.data[s.pos]) {
		s.pos++
	}
}

// peek returns the next significant byte, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// atEnd reports whether only whitespace is left.
func (s *jsonScanner) atEnd() bool {
	s.skipSpace()
	return s.pos == len(s.data)
}

// consume moves past word if it comes next (no leading space) and reports
// whether it did.
func (s *jsonScanner) consume(word string) bool {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return false
	}
	s.pos += len(word)
	return true
}

// literal consumes word (true, false or null), which must come next.
func (s *jsonScanner) literal(word string) error {
	if !s.consume(word) {
		return s.fail("invalid literal")
	}
	return nil
}

// null consumes a null literal if one is next.
func (s *jsonScanner) null() bool {
	return s.peek() == 'n' && s.consume("null")
}

// skip consumes one value of any kind, validating it.
func (s *jsonScanner) skip() error {
	switch c := s.peek(); {
	case c == '"':
		_, err := s.scanString()
		return err
	case c == '{':
		if err := s.open(); err != nil {
			return err
		}
		for first := true; ; first = false {
			_, _, more, err := s.nextMember(first)
			if err != nil || !more {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '[':
		if err := s.open(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := s.nextItem(first)
			if err != nil || !more {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '-' || isDigit(c):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case s.pos >= len(s.data):
		return s.fail(msgUnexpectedEnd)
	default:
		return s.fail(fmt.Sprintf("invalid character %q looking for beginning of value", c))
	}
}

// raw consumes one value and returns its bytes (without surrounding space).
func (s *jsonScanner) raw() ([]byte, error) {
	s.skipSpace()
	start := s.pos
	if err := s.skip(); err != nil {
		return nil, err
	}
	return s.data[start:s.pos], nil
}

// scanString consumes the string token at pos and reports whether it holds
// escapes; its content is data[start+1 : pos-1]. Longer plain runs are skipped with
// bytes.IndexByte and a word-at-a-time control-character check: string
// content is most of the bytes of a typical message.
func (s *jsonScanner) scanString() (escaped bool, err error) {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return false, s.fail("expected a string")
	}
	s.pos++ // opening quote
	// Short strings (most keys and tags) end sooner byte by byte.
	for end := min(s.pos+16, len(s.data)); s.pos < end; s.pos++ {
		if c := s.data[s.pos]; c == '"' {
			s.pos++
			return false, nil
		} else if c == '\\' || c < 0x20 {
			break
		}
	}
	// quote is where the string may end: the next '"' at or after pos,
	// searched for again only once an escape has moved past it (an
	// escaped quote), so that every byte is searched once however many
	// escapes the string holds.
	quote := -1
	for {
		if quote < s.pos {
			q := bytes.IndexByte(s.data[s.pos:], '"')
			if q < 0 {
				s.searched += len(s.data) - s.pos
				s.pos = len(s.data)
				return escaped, s.fail(msgUnexpectedEnd)
			}
			s.searched += q + 1
			quote = s.pos + q
		}
		seg := s.data[s.pos:quote]
		b := bytes.IndexByte(seg, '\\')
		if b < 0 {
			s.searched += len(seg)
			if i := indexControl(seg); i >= 0 {
				s.pos += i
				return escaped, s.fail("invalid control character in string literal")
			}
			s.pos = quote + 1
			return escaped, nil
		}
		if i := indexControl(seg[:b]); i >= 0 {
			s.pos += i
			return escaped, s.fail("invalid control character in string literal")
		}
		s.searched += b + 1
		escaped = true
		s.pos += b + 1 // past the backslash
		if s.pos >= len(s.data) {
			return escaped, s.fail(msgUnexpectedEnd)
		}
		switch s.data[s.pos] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.pos++
		case 'u':
			s.pos++
			for i := 0; i < 4; i++ {
				if s.pos >= len(s.data) {
					return escaped, s.fail(msgUnexpectedEnd)
				}
				if !isHexDigit(s.data[s.pos]) {
					return escaped, s.fail("invalid character in \\u hexadecimal character escape")
				}
				s.pos++
			}
		default:
			return escaped, s.fail("invalid character in string escape code")
		}
	}
}

// indexControl returns the index of the first byte below 0x20 in b, or -1.
func indexControl(b []byte) int {
	const highs, below = 0x8080808080808080, 0x20 * 0x0101010101010101
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if (x-below)&^x&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] < 0x20 {
			return i
		}
	}
	return -1
}

// number consumes a number token at pos, checking JSON's grammar.
func (s *jsonScanner) number() error {
	d := s.data
	if s.pos < len(d) && d[s.pos] == '-' {
		s.pos++
	}
	if s.pos >= len(d) {
		return s.fail(msgUnexpectedEnd)
	}
	switch {
	case d[s.pos] == '0':
		s.pos++
	case d[s.pos] >= '1' && d[s.pos] <= '9':
		for s.pos < len(d) && isDigit(d[s.pos]) {
			s.pos++
		}
	default:
		return s.fail("invalid character in numeric literal")
	}
	if s.pos < len(d) && d[s.pos] == '.' {
		s.pos++
		start := s.pos
		for s.pos < len(d) && isDigit(d[s.pos]) {
			s.pos++
		}
		if s.pos == start {
			return s.fail("invalid character after decimal point in numeric literal")
		}
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		start := s.pos
		for s.pos < len(d) && isDigit(d[s.pos]) {
			s.pos++
		}
		if s.pos == start {
			return s.fail("invalid character in exponent of numeric literal")
		}
	}
	return nil
}

// numberToken consumes a number and returns its text.
func (s *jsonScanner) numberToken() ([]byte, error) {
	s.skipSpace()
	start := s.pos
	if err := s.number(); err != nil {
		return nil, err
	}
	return s.data[start:s.pos], nil
}

// open consumes the '{' or '[' at pos, one level deeper.
func (s *jsonScanner) open() error {
	if s.depth++; s.depth > maxNestingDepth {
		return s.fail("exceeded max depth")
	}
	s.pos++
	return nil
}

// beginObject consumes the '{' that must come next.
func (s *jsonScanner) beginObject() error {
	if s.peek() != '{' {
		return s.fail("expected an object")
	}
	return s.open()
}

// nextMember reads the next member's key and the colon after it, or
// consumes the closing '}' (more is false). first tells whether this is the
// object's first call, for comma handling. key is the raw content between
// the quotes; escaped tells whether it holds escapes (see unquote).
func (s *jsonScanner) nextMember(first bool) (key []byte, escaped, more bool, err error) {
	c := s.peek()
	if c == '}' {
		s.pos++
		s.depth--
		return nil, false, false, nil
	}
	if !first {
		if c != ',' {
			return nil, false, false, s.failAt("invalid character after object key:value pair")
		}
		s.pos++
		c = s.peek()
	}
	if c != '"' {
		return nil, false, false, s.failAt("invalid character looking for beginning of object key string")
	}
	start := s.pos
	if escaped, err = s.scanString(); err != nil {
		return nil, false, false, err
	}
	key = s.data[start+1 : s.pos-1]
	if s.peek() != ':' {
		return nil, false, false, s.failAt("invalid character after object key")
	}
	s.pos++
	return key, escaped, true, nil
}

// beginArray consumes the '[' that must come next.
func (s *jsonScanner) beginArray() error {
	if s.peek() != '[' {
		return s.fail("expected an array")
	}
	return s.open()
}

// nextItem reports whether another array element follows (consuming the
// comma before it), or consumes the closing ']'.
func (s *jsonScanner) nextItem(first bool) (bool, error) {
	c := s.peek()
	if c == ']' {
		s.pos++
		s.depth--
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, s.failAt("invalid character after array element")
		}
		s.pos++
	}
	return true, nil
}

// failAt fails with msg, or with the end-of-input error at the end.
func (s *jsonScanner) failAt(msg string) error {
	if s.pos >= len(s.data) {
		return s.fail(msgUnexpectedEnd)
	}
	return s.fail(msg)
}

// memberFunc receives one object member: the raw key (see nextMember) and
// the raw value.
type memberFunc func(key []byte, keyEscaped bool, value []byte) error

// members reads the object that comes next, handing each member to fn.
func (s *jsonScanner) members(fn memberFunc) error {
	if err := s.beginObject(); err != nil {
		return err
	}
	for first := true; ; first = false {
		key, escaped, more, err := s.nextMember(first)
		if err != nil || !more {
			return err
		}
		value, err := s.raw()
		if err != nil {
			return err
		}
		if err := fn(key, escaped, value); err != nil {
			return err
		}
	}
}

// objectText reads data as one JSON text that must be an object (its
// members go to fn) or null (nothing happens); any other valid value gives
// notObject.
func objectText(data []byte, fn memberFunc, notObject error) error {
	s := jsonScanner{data: data}
	switch s.peek() {
	case '{':
		if err := s.members(fn); err != nil {
			return err
		}
	case 'n':
		if err := s.literal("null"); err != nil {
			return err
		}
	default:
		if err := s.skip(); err != nil {
			return err
		}
		if s.atEnd() {
			return notObject
		}
	}
	if !s.atEnd() {
		return s.fail("invalid character after top-level value")
	}
	return nil
}

// unquote decodes the content of a string token that scanString accepted
// (escaped as it reported) as encoding/json does: escapes resolved, a
// surrogate pair joined, and invalid UTF-8 or a lone surrogate replaced by
// U+FFFD.
func unquote(content []byte, escaped bool) string {
	if !escaped && utf8.Valid(content) {
		return string(content)
	}
	var b strings.Builder
	b.Grow(len(content))
	for i := 0; i < len(content); {
		j := i
		for j < len(content) && content[j] != '\\' && content[j] < utf8.RuneSelf {
			j++
		}
		b.Write(content[i:j])
		if i = j; i >= len(content) {
			break
		}
		if content[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(content[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.Write(content[i : i+size])
			}
			i += size
			continue
		}
		if i+1 >= len(content) { // unreachable for scanned content
			break
		}
		switch e := content[i+1]; e {
		case 'u':
			r := hex4(content[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+1 < len(content) && content[i] == '\\' && content[i+1] == 'u' {
					r2 = hex4(content[i+2:])
				}
				if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
					r = pair
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			if r < 0 {
				r = utf8.RuneError
			}
			b.WriteRune(r)
			continue
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		default: // '"', '\\', '/'
			b.WriteByte(e)
		}
		i += 2
	}
	return b.String()
}

// hex4 decodes the four hex digits at the start of b, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
