package adapter

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"unicode/utf8"
)

// FieldReader reads the untyped values of a frame (`_meta`, rawInput,
// rawOutput) field by field; it is not an io.Reader. A field of the wrong
// JSON type is ignored alone and counted in Bad; a negative number is
// ignored and counted in Negative. The zero FieldReader is ready to use.
type FieldReader struct {
	// Bad counts present fields of the wrong JSON type.
	Bad int
	// Negative counts numbers ignored because they were negative.
	Negative int
}

// DecodeUntyped normalises an untyped value as the SDK may hand it over:
// raw JSON bytes are decoded (numbers as json.Number; invalid JSON gives
// nil), anything else is returned as is.
func DecodeUntyped(v any) any {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		return v
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil
	}
	return out
}

// AsMap returns v as an object, or nil when it is not one.
func AsMap(v any) map[string]any {
	m, _ := DecodeUntyped(v).(map[string]any)
	return m
}

// Map returns m[key] when it is an object. Absent and null give nil; any
// other type gives nil and counts as bad.
func (r *FieldReader) Map(m map[string]any, key string) map[string]any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	if sub := AsMap(v); sub != nil {
		return sub
	}
	r.Bad++
	return nil
}

// String returns m[key] when it is a string. Absent and null give ""; any
// other type gives "" and counts as bad.
func (r *FieldReader) String(m map[string]any, key string) string {
	v, ok := m[key]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	r.Bad++
	return ""
}

// Int returns m[key] as a non-negative integer when it is a JSON number:
// fractions truncate toward zero, numeric strings are not numbers. ok is
// false when the key is absent, null, of the wrong type (counted bad),
// negative (counted negative) or beyond int64.
func (r *FieldReader) Int(m map[string]any, key string) (n int64, ok bool) {
	v, present := m[key]
	if !present || v == nil {
		return 0, false
	}
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			r.Bad++
			return 0, false
		}
		f = g
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	default:
		r.Bad++
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		r.Bad++
		return 0, false
	}
	f = math.Trunc(f)
	if f < 0 {
		r.Negative++
		return 0, false
	}
	if f >= math.MaxInt64 {
		r.Bad++
		return 0, false
	}
	return int64(f), true
}

// True reports whether m[key] is the JSON boolean true. A non-boolean
// present value counts as bad.
func (r *FieldReader) True(m map[string]any, key string) bool {
	v, ok := m[key]
	if !ok || v == nil {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.Bad++
	}
	return b
}

// Slice returns m[key] when it is an array. Absent and null give nil; any
// other type gives nil and counts as bad.
func (r *FieldReader) Slice(m map[string]any, key string) []any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	if s, ok := DecodeUntyped(v).([]any); ok {
		return s
	}
	r.Bad++
	return nil
}

// Merge helpers shared by every dialect. Each reports whether it changed
// the destination.

// FillString sets *dst to v when *dst is empty and v is not
// (fill-if-empty).
func FillString(dst *string, v string) bool {
	if *dst != "" || v == "" {
		return false
	}
	*dst = v
	return true
}

// OverwriteString sets *dst to v when v is not empty
// (overwrite-if-present).
func OverwriteString(dst *string, v string) bool {
	if v == "" || *dst == v {
		return false
	}
	*dst = v
	return true
}

// OverwritePositive sets *dst to v when ok and v > 0
// (overwrite-if-positive).
func OverwritePositive(dst *int64, v int64, ok bool) bool {
	if !ok || v <= 0 || *dst == v {
		return false
	}
	*dst = v
	return true
}

// SetCount sets *dst to a fresh pointer to v when ok, 0 included
// (overwrite-if-reported). Values beyond int are ignored.
func SetCount(dst **int, v int64, ok bool) bool {
	if !ok || v > math.MaxInt {
		return false
	}
	if *dst != nil && int64(**dst) == v {
		return false
	}
	n := int(v)
	*dst = &n
	return true
}

// SetSticky sets *dst to true when v is true; it never clears it.
func SetSticky(dst *bool, v bool) bool {
	if !v || *dst {
		return false
	}
	*dst = true
	return true
}

// TruncateUTF8 returns the longest prefix of s of at most n bytes that ends
// on a rune boundary. A cut result is a copy, so the oversized original is
// not kept alive by it.
func TruncateUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}
