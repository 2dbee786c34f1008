package acp

// The fast decoder behind the generated UnmarshalJSON methods.
//
// Each generated struct and union has a decodeFast method that parses its
// JSON in one pass with fastDecoder, writing fields directly, without
// reflection and without re-validating nested values. The fast path only
// ever succeeds when encoding/json would produce the same value: on anything
// unusual (a duplicated key, a key matching a field only case-insensitively,
// null where encoding/json has special rules, a number encoding/json would
// reject, malformed input, very deep nesting) it gives up with errFallback,
// and the caller decodes the whole value again through encoding/json, which
// then also produces encoding/json's exact error messages. The parser is
// strict, so it never accepts input encoding/json would reject.

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// fastDecodeOff turns the fast path off; the differential fuzz test uses it
// to decode the same input through encoding/json alone.
var fastDecodeOff atomic.Bool

// errFallback makes the caller decode with encoding/json instead.
var errFallback = errors.New("acp: fast decode fallback")

// maxFastDepth mirrors encoding/json's nesting limit.
const maxFastDepth = 10000

// fastDecoder reads JSON text from data.
type fastDecoder struct {
	data  []byte
	pos   int
	depth int
}

// fastDecodable is implemented by every generated type.
type fastDecodable interface {
	decodeFast(d *fastDecoder) error
}

// decodeParams decodes inbound method params into p, a pointer to a fresh
// generated value: the fast path first, encoding/json when it gives up.
func decodeParams[T any, PT interface {
	*T
	fastDecodable
}](params json.RawMessage, p PT) error {
	if !fastDecodeOff.Load() {
		d := fastDecoder{data: params}
		if err := p.decodeFast(&d); err == nil && d.atEnd() {
			return nil
		}
	}
	var zero T
	*p = zero
	return decodeExact(params, p)
}

func (d *fastDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\r', '\n':
			d.pos++
		default:
			return
		}
	}
}

// atEnd reports whether only whitespace is left.
func (d *fastDecoder) atEnd() bool {
	d.skipSpace()
	return d.pos == len(d.data)
}

// peek returns the next significant byte, or 0 at the end.
func (d *fastDecoder) peek() byte {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// null consumes a null literal if one is next.
func (d *fastDecoder) null() bool {
	if d.peek() == 'n' && len(d.data)-d.pos >= 4 && string(d.data[d.pos:d.pos+4]) == "null" {
		d.pos += 4
		return true
	}
	return false
}

// beginObject consumes '{'.
func (d *fastDecoder) beginObject() error {
	if d.peek() != '{' {
		return errFallback
	}
	d.pos++
	d.depth++
	if d.depth > maxFastDepth {
		return errFallback
	}
	return nil
}

// nextKey returns the next member's key (consuming it and the colon), or
// ok=false after consuming the closing '}'. first tells whether a member was
// read before, for comma handling.
func (d *fastDecoder) nextKey(first bool) (key []byte, ok bool, err error) {
	c := d.peek()
	if c == '}' {
		d.pos++
		d.depth--
		return nil, false, nil
	}
	if !first {
		if c != ',' {
			return nil, false, errFallback
		}
		d.pos++
		c = d.peek()
	}
	if c != '"' {
		return nil, false, errFallback
	}
	raw, escaped, err := d.rawString()
	if err != nil || escaped {
		// Escaped keys are rare enough to leave to encoding/json.
		return nil, false, errFallback
	}
	if d.peek() != ':' {
		return nil, false, errFallback
	}
	d.pos++
	return raw[1 : len(raw)-1], true, nil
}

// rawString consumes a string token and returns it with its quotes. It
// rejects what JSON forbids (control characters, bad escapes); escaped also
// reports invalid UTF-8, which encoding/json replaces.
func (d *fastDecoder) rawString() (raw []byte, escaped bool, err error) {
	start := d.pos
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return nil, false, errFallback
	}
	i := d.pos + 1
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return d.data[start:d.pos], escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(d.data) {
				return nil, false, errFallback
			}
			switch d.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d.data) {
					return nil, false, errFallback
				}
				for _, h := range d.data[i+2 : i+6] {
					if !isHexDigit(h) {
						return nil, false, errFallback
					}
				}
				i += 6
			default:
				return nil, false, errFallback
			}
		case c < 0x20:
			return nil, false, errFallback
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				escaped = true // invalid UTF-8: encoding/json substitutes U+FFFD
			}
			i += size
		}
	}
	return nil, false, errFallback
}

// str decodes a string value.
func (d *fastDecoder) str() (string, error) {
	if d.peek() != '"' {
		return "", errFallback
	}
	raw, escaped, err := d.rawString()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errFallback
	}
	return s, nil
}

// numberToken consumes a number and returns its text, checking JSON's grammar.
func (d *fastDecoder) numberToken() ([]byte, error) {
	d.skipSpace()
	start := d.pos
	i := d.pos
	if i < len(d.data) && d.data[i] == '-' {
		i++
	}
	if i >= len(d.data) {
		return nil, errFallback
	}
	if d.data[i] == '0' {
		i++
	} else if d.data[i] >= '1' && d.data[i] <= '9' {
		for i < len(d.data) && isDigit(d.data[i]) {
			i++
		}
	} else {
		return nil, errFallback
	}
	if i < len(d.data) && d.data[i] == '.' {
		i++
		if i >= len(d.data) || !isDigit(d.data[i]) {
			return nil, errFallback
		}
		for i < len(d.data) && isDigit(d.data[i]) {
			i++
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if i >= len(d.data) || !isDigit(d.data[i]) {
			return nil, errFallback
		}
		for i < len(d.data) && isDigit(d.data[i]) {
			i++
		}
	}
	d.pos = i
	return d.data[start:i], nil
}

// integer decodes a number that encoding/json accepts for an int.
func (d *fastDecoder) integer() (int, error) {
	tok, err := d.numberToken()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(tok), 10, 0)
	if err != nil {
		return 0, errFallback // fractions, exponents, overflow: encoding/json's error
	}
	return int(n), nil
}

// float decodes a number into a float64.
func (d *fastDecoder) float() (float64, error) {
	tok, err := d.numberToken()
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 0, errFallback
	}
	return f, nil
}

// boolean decodes true or false.
func (d *fastDecoder) boolean() (bool, error) {
	d.skipSpace()
	rest := d.data[d.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.pos += 4
		return true, nil
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.pos += 5
		return false, nil
	}
	return false, errFallback
}

// anyValue decodes any JSON value the way encoding/json decodes into an
// interface{}, except that integers beyond 2^53 become json.Number.
func (d *fastDecoder) anyValue() (any, error) {
	switch c := d.peek(); c {
	case '{':
		return d.anyObject()
	case '[':
		if err := d.beginArray(); err != nil {
			return nil, err
		}
		out := []any{}
		for first := true; ; first = false {
			more, err := d.nextItem(first)
			if err != nil {
				return nil, err
			}
			if !more {
				return out, nil
			}
			v, err := d.anyValue()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	case '"':
		return d.str()
	case 't', 'f':
		return d.boolean()
	case 'n':
		if d.null() {
			return nil, nil
		}
		return nil, errFallback
	default:
		tok, err := d.numberToken()
		if err != nil {
			return nil, err
		}
		return numberValue(tok)
	}
}

// numberValue converts a number token: float64, or json.Number for an
// integer float64 cannot hold exactly.
func numberValue(tok []byte) (any, error) {
	if !hasLongDigitRun(tok) { // the same test decodeExact applies to the whole message
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			return nil, errFallback
		}
		return f, nil
	}
	switch v := exactNumber(json.Number(tok)).(type) {
	case float64:
		return v, nil
	case json.Number:
		// Keep it exact, but only if it is a number encoding/json would accept.
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return nil, errFallback
		}
		return v, nil
	}
	return nil, errFallback
}

// anyObject decodes an object into map[string]any.
func (d *fastDecoder) anyObject() (map[string]any, error) {
	if err := d.beginObject(); err != nil {
		return nil, err
	}
	m := map[string]any{}
	for first := true; ; first = false {
		c := d.peek()
		if c == '}' {
			d.pos++
			d.depth--
			return m, nil
		}
		if !first {
			if c != ',' {
				return nil, errFallback
			}
			d.pos++
		}
		if d.peek() != '"' {
			return nil, errFallback
		}
		key, err := d.str()
		if err != nil {
			return nil, err
		}
		if d.peek() != ':' {
			return nil, errFallback
		}
		d.pos++
		v, err := d.anyValue()
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
}

// mapAny decodes an object (or null) into a map[string]any field.
func (d *fastDecoder) mapAny() (map[string]any, error) {
	if d.null() {
		return nil, nil
	}
	if d.peek() != '{' {
		return nil, errFallback
	}
	return d.anyObject()
}

// beginArray consumes '['.
func (d *fastDecoder) beginArray() error {
	if d.peek() != '[' {
		return errFallback
	}
	d.pos++
	d.depth++
	if d.depth > maxFastDepth {
		return errFallback
	}
	return nil
}

// nextItem reports whether another array element follows (consuming the
// comma), or consumes the closing ']'.
func (d *fastDecoder) nextItem(first bool) (bool, error) {
	c := d.peek()
	if c == ']' {
		d.pos++
		d.depth--
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, errFallback
		}
		d.pos++
	}
	if c := d.peek(); c == 0 || c == ']' || c == ',' {
		return false, errFallback
	}
	return true, nil
}

// skip consumes one value of any kind, validating it.
func (d *fastDecoder) skip() error {
	switch c := d.peek(); c {
	case '{':
		if err := d.beginObject(); err != nil {
			return err
		}
		for first := true; ; first = false {
			c := d.peek()
			if c == '}' {
				d.pos++
				d.depth--
				return nil
			}
			if !first {
				if c != ',' {
					return errFallback
				}
				d.pos++
			}
			if d.peek() != '"' {
				return errFallback
			}
			if _, _, err := d.rawString(); err != nil {
				return err
			}
			if d.peek() != ':' {
				return errFallback
			}
			d.pos++
			if err := d.skip(); err != nil {
				return err
			}
		}
	case '[':
		if err := d.beginArray(); err != nil {
			return err
		}
		for first := true; ; first = false {
			more, err := d.nextItem(first)
			if err != nil {
				return err
			}
			if !more {
				return nil
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, _, err := d.rawString()
		return err
	case 't', 'f':
		_, err := d.boolean()
		return err
	case 'n':
		if d.null() {
			return nil
		}
		return errFallback
	default:
		_, err := d.numberToken()
		return err
	}
}

// raw consumes one value and returns its bytes.
func (d *fastDecoder) raw() ([]byte, error) {
	d.skipSpace()
	start := d.pos
	if err := d.skip(); err != nil {
		return nil, err
	}
	return d.data[start:d.pos], nil
}

// rest returns the unread input from the next value on, for tag peeking.
func (d *fastDecoder) rest() []byte {
	d.skipSpace()
	return d.data[d.pos:]
}

// peekTag returns the string value of key in the object at the start of
// data; ok is false when it is missing, not a plain string, or data is not
// well-formed enough to tell (the caller then takes the general path). It
// does not allocate for unescaped tags and skips values without decoding.
func peekTag(data []byte, key string) (tag []byte, ok bool) {
	s := scanner{data: data}
	s.skipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		return nil, false
	}
	s.pos++
	var raw []byte
	for first := true; ; first = false {
		s.skipSpace()
		if s.pos >= len(s.data) {
			return nil, false
		}
		if s.data[s.pos] == '}' {
			break
		}
		if !first {
			if s.data[s.pos] != ',' {
				return nil, false
			}
			s.pos++
			s.skipSpace()
		}
		k, escaped, err := s.readString()
		if err != nil || escaped {
			return nil, false
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return nil, false
		}
		s.pos++
		s.skipSpace()
		start := s.pos
		if err := s.skipValue(); err != nil {
			return nil, false
		}
		if string(k) == key {
			raw = s.data[start:s.pos]
		}
	}
	if len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			var v string
			if json.Unmarshal(raw, &v) != nil {
				return nil, false
			}
			return []byte(v), true
		}
	}
	return inner, true
}

// foldsTo reports whether an unknown key matches one of names only
// case-insensitively, which encoding/json would accept for that field.
func foldsTo(key []byte, names ...string) bool {
	k := string(key)
	for _, n := range names {
		if strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}
