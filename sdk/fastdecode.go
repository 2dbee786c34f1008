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
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
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
	// shareLarge lets str return a large string that shares the input's
	// memory instead of copying it (see sharedString); set only for input
	// nothing writes to afterwards.
	shareLarge bool
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
	if d := takeFastDecoder(params); d != nil {
		d.shareLarge = true
		if d.finish(p.decodeFast(d)) {
			return nil
		}
	}
	var zero T
	*p = zero
	return decodeExact(params, p)
}

// decoders recycles fastDecoders: decodeFast hands its decoder to the
// generic list and pointer helpers, so a decoder never stays on its
// caller's stack, and a fresh one per message would be an allocation.
var decoders = sync.Pool{New: func() any { return new(fastDecoder) }}

// takeFastDecoder returns a decoder over data, or nil when the fast path
// is off. Hand it back with finish.
func takeFastDecoder(data []byte) *fastDecoder {
	if fastDecodeOff.Load() {
		return nil
	}
	d := decoders.Get().(*fastDecoder)
	d.jsonScanner = jsonScanner{data: data}
	return d
}

// finish reports whether decoding succeeded (err is nil and only
// whitespace is left) and returns d to the pool, holding no input.
func (d *fastDecoder) finish(err error) bool {
	ok := err == nil && d.atEnd()
	*d = fastDecoder{}
	decoders.Put(d)
	return ok
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
	content := d.data[start+1 : d.pos-1]
	if d.shareLarge && !escaped {
		if s, ok := sharedString(content, len(d.data)); ok {
			return s, nil
		}
	}
	return unquote(content, escaped), nil
}

// minSharedString is the shortest string value sharedString shares.
const minSharedString = 1 << 20

// sharedString returns content (unescaped) as a string sharing its memory,
// when content is at least minSharedString bytes of valid UTF-8 and at least
// half of the inputLen bytes being decoded. A large text (a 64 MiB message
// chunk) then costs no second copy, and keeping the string alive keeps at
// most twice its size reachable. The caller guarantees that nothing writes
// to the input afterwards: the connection's inbound lines are allocated per
// line and only ever read.
func sharedString(content []byte, inputLen int) (string, bool) {
	if len(content) < minSharedString || 2*len(content) < inputLen || !utf8.Valid(content) {
		return "", false
	}
	return unsafe.String(&content[0], len(content)), true
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

// The helpers below are what the generated decodeFast methods are made of
// (fastdecode_gen.go): each struct member is one call, and a member's
// bookkeeping (a repeated key, a key unknown to the struct) one call after
// the switch on its key. A "field" helper follows encoding/json's rules for
// null in a struct field (a scalar keeps its value; a pointer, slice or map
// becomes nil); an "elem" helper decodes a list item or a pointer's target,
// where null is left to the general path (every reader rejects it).

// memberDone records the member just decoded (bit; 0 for a key the struct
// does not have). An error from its decoding, or a key seen twice (where
// encoding/json keeps the last value and may merge), ends the fast path.
func memberDone(seen, bit uint64, err error) (uint64, error) {
	if err != nil {
		return seen, err
	}
	if seen&bit != 0 {
		return seen, errFallback
	}
	return seen | bit, nil
}

// otherMember skips the value of a key the struct does not have, unless
// the key matches one of its fields case-insensitively, which encoding/json
// would decode into that field.
func (d *fastDecoder) otherMember(key []byte, fields ...string) error {
	if foldsTo(key, fields...) {
		return errFallback
	}
	return d.skip()
}

// notNull ends the fast path on null where encoding/json's null rules for
// a struct value are not the decoder's to apply.
func (d *fastDecoder) notNull() error {
	if d.peek() == 'n' {
		return errFallback
	}
	return nil
}

func elemString[T ~string](d *fastDecoder, p *T) error {
	s, err := d.str()
	if err == nil {
		*p = T(s)
	}
	return err
}

func elemInt[T ~int](d *fastDecoder, p *T) error {
	n, err := d.integer()
	if err == nil {
		*p = T(n)
	}
	return err
}

func elemFloat[T ~float64](d *fastDecoder, p *T) error {
	f, err := d.float()
	if err == nil {
		*p = T(f)
	}
	return err
}

func elemBool[T ~bool](d *fastDecoder, p *T) error {
	b, err := d.boolean()
	if err == nil {
		*p = T(b)
	}
	return err
}

// fieldString, fieldInt, fieldFloat and fieldBool decode a scalar field;
// null leaves it unchanged.
func fieldString[T ~string](d *fastDecoder, p *T) error {
	if d.null() {
		return nil
	}
	return elemString(d, p)
}

func fieldInt[T ~int](d *fastDecoder, p *T) error {
	if d.null() {
		return nil
	}
	return elemInt(d, p)
}

func fieldFloat[T ~float64](d *fastDecoder, p *T) error {
	if d.null() {
		return nil
	}
	return elemFloat(d, p)
}

func fieldBool[T ~bool](d *fastDecoder, p *T) error {
	if d.null() {
		return nil
	}
	return elemBool(d, p)
}

// decodeAny decodes any value into an interface (null gives nil).
func decodeAny(d *fastDecoder, p *any) error {
	v, err := d.anyValue()
	if err == nil {
		*p = v
	}
	return err
}

// decodeMapAny decodes an object or null into a map[string]any.
func decodeMapAny(d *fastDecoder, p *map[string]any) error {
	m, err := d.mapAny()
	if err == nil {
		*p = m
	}
	return err
}

// fieldPtr decodes a pointer: null gives nil, anything else a new value
// decoded by elem.
func fieldPtr[T any](d *fastDecoder, p **T, elem func(*fastDecoder, *T) error) error {
	if d.null() {
		*p = nil
		return nil
	}
	x := new(T)
	if err := elem(d, x); err != nil {
		return err
	}
	*p = x
	return nil
}

// fieldSlice decodes a list: null gives nil, an array a non-nil slice of
// items decoded by elem (in place, so an item never lives outside it).
func fieldSlice[T any](d *fastDecoder, p *[]T, elem func(*fastDecoder, *T) error) error {
	if d.null() {
		*p = nil
		return nil
	}
	if err := d.beginArray(); err != nil {
		return err
	}
	s := []T{}
	for first := true; ; first = false {
		more, err := d.nextItem(first)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		var zero T
		s = append(s, zero)
		if err := elem(d, &s[len(s)-1]); err != nil {
			return err
		}
	}
	*p = s
	return nil
}

// elemFast decodes a generated struct, or a union where null is a variant.
func elemFast[T any, PT interface {
	*T
	fastDecodable
}](d *fastDecoder, p *T) error {
	if err := d.notNull(); err != nil {
		return err
	}
	return PT(p).decodeFast(d)
}

// elemUnion decodes a union that takes null as a no-op itself.
func elemUnion[T any, PT interface {
	*T
	fastDecodable
}](d *fastDecoder, p *T) error {
	return PT(p).decodeFast(d)
}

// elemRaw hands one value to encoding/json (Nullable, maps of other types).
func elemRaw[T any](d *fastDecoder, p *T) error {
	raw, err := d.raw()
	if err != nil {
		return err
	}
	if decodeExact(raw, p) != nil {
		return errFallback
	}
	return nil
}
