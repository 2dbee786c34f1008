package acp

// The fast decoder behind the generated UnmarshalJSON methods.
//
// Each generated struct and union has a decodeFast method that parses its
// JSON in one pass with fastDecoder, writing fields directly, without
// reflection and without re-validating nested values. The fast path only
// ever succeeds when encoding/json would produce the same value: on anything
// unusual (a duplicated key, a key matching a field only case-insensitively,
// null where encoding/json has special rules, a number encoding/json would
// reject, malformed input, very deep nesting) it gives up with an error
// (errFallback, or the scanner's syntax error), and the caller decodes the
// whole value again through encoding/json, which then also produces
// encoding/json's exact error messages. The scanner (jsonscan.go) is strict,
// so the fast path never accepts input encoding/json would reject.

import (
	"bytes"
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

// fastDecoder reads JSON text from data: the scanner (jsonscan.go) for
// tokens, structure and skipping, plus the decoding of values into Go types.
// Any error it returns means "fall back": its text is never shown.
type fastDecoder struct {
	jsonScanner
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
		d := fastDecoder{jsonScanner: jsonScanner{data: params}}
		if err := p.decodeFast(&d); err == nil && d.atEnd() {
			return nil
		}
	}
	var zero T
	*p = zero
	return decodeExact(params, p)
}

// nextKey returns the next member's key (consuming it and the colon), or
// ok=false after consuming the closing '}'. first tells whether a member was
// read before, for comma handling.
func (d *fastDecoder) nextKey(first bool) (key []byte, ok bool, err error) {
	key, escaped, more, err := d.nextMember(first)
	if err != nil || !more {
		return nil, false, err
	}
	if escaped {
		// Escaped keys are rare enough to leave to encoding/json.
		return nil, false, errFallback
	}
	return key, true, nil
}

// str decodes a string value.
func (d *fastDecoder) str() (string, error) {
	if d.peek() != '"' {
		return "", errFallback
	}
	start := d.pos
	escaped, err := d.scanString()
	if err != nil {
		return "", err
	}
	return unquote(d.data[start+1:d.pos-1], escaped), nil
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
	switch d.peek() {
	case 't':
		if d.consume("true") {
			return true, nil
		}
	case 'f':
		if d.consume("false") {
			return false, nil
		}
	}
	return false, errFallback
}

// anyValue decodes any JSON value the way encoding/json decodes into an
// interface{}, except for the numbers numberValue keeps exact.
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
		key, escaped, more, err := d.nextMember(first)
		if err != nil {
			return nil, err
		}
		if !more {
			return m, nil
		}
		v, err := d.anyValue()
		if err != nil {
			return nil, err
		}
		m[unquote(key, escaped)] = v
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
	var raw []byte
	s := jsonScanner{data: data}
	err := s.members(func(k []byte, escaped bool, v []byte) error {
		if escaped {
			return errFallback
		}
		if string(k) == key {
			raw = v
		}
		return nil
	})
	if err != nil || len(raw) < 2 || raw[0] != '"' {
		return nil, false
	}
	content := raw[1 : len(raw)-1]
	if bytes.IndexByte(content, '\\') < 0 && utf8.Valid(content) {
		return content, true
	}
	return []byte(unquote(content, true)), true
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
