package acp

// JSON helpers the generated codecs use (types_gen.go).
//
// Numbers in dynamically typed fields (rawInput, rawOutput, _meta, any other
// any or map[string]any) decode as float64, exactly as with encoding/json,
// except numbers float64 would change: integers whose magnitude exceeds 2^53
// and decimals with more significant digits than float64 reproduces. Those
// decode as json.Number, which re-encodes byte for byte. Consumers that
// type-assert float64 keep working for every number float64 holds faithfully.
//
// Unions decode in one pass: a small scanner reads the discriminator (or the
// set of top-level keys) and the payload is decoded once into the variant.
// They encode in one pass too: the variant struct, whose fields are sorted by
// JSON name, is marshalled with its tag set, so keys come out alphabetically
// without the detour through map[string]any.

import (
	"bytes"
	"encoding/json"
	"math/big"
	"reflect"
	"strconv"
	"strings"
)

// maxExactInt is 2^53, the largest magnitude below which every integer is a float64.
const maxExactInt = 1 << 53

// unknownVariant keeps a union variant this SDK does not know.
type unknownVariant struct {
	tag string
	raw []byte
}

// decodeExact decodes data into v. Integers beyond 2^53 in interface-typed
// values stay exact as json.Number; every other number is a float64.
func decodeExact(data []byte, v any) error {
	if !hasLongDigitRun(data) {
		return json.Unmarshal(data, v)
	}
	if !json.Valid(data) {
		return json.Unmarshal(data, v) // the standard error
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	normalizeNumbers(reflect.ValueOf(v))
	return nil
}

// hasLongDigitRun reports whether data may hold a number float64 cannot
// carry exactly: one with 16 or more digits (a '.' does not break the count).
// Every integer up to 2^53 (9007199254740992) and every decimal with at most
// 15 significant digits survives float64. Digits inside strings give false
// positives, which only cost the slower path.
func hasLongDigitRun[T string | []byte](data T) bool {
	run := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c >= '0' && c <= '9':
			run++
			if run >= 16 {
				return true
			}
		case c == '.':
		default:
			run = 0
		}
	}
	return false
}

// exactNumber converts a json.Number to float64 unless that would lose
// information: an integer beyond 2^53, or a decimal with a run of 16 or more
// digits that float64 cannot reproduce (its shortest float64 form has a
// different value). Those stay json.Number and re-encode byte for byte. A
// short literal that over- or underflows (1E-0000010000000) is left to
// float64, as encoding/json does, so the one-pass and the general decoder
// agree on it.
func exactNumber(n json.Number) any {
	s := string(n)
	isInt := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			isInt = false
			break
		}
	}
	if isInt {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil || i > maxExactInt || i < -maxExactInt {
			return n
		}
		return float64(i)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return n
	}
	if hasLongDigitRun(s) && !sameDecimal(s, strconv.FormatFloat(f, 'g', -1, 64)) {
		return n
	}
	return f
}

// sameDecimal reports whether two decimal literals denote the same number.
func sameDecimal(a, b string) bool {
	var x, y big.Rat
	if _, ok := x.SetString(a); !ok {
		return false
	}
	if _, ok := y.SetString(b); !ok {
		return false
	}
	return x.Cmp(&y) == 0
}

// fixAny rewrites json.Number values inside a dynamically typed JSON value.
func fixAny(x any) any {
	switch t := x.(type) {
	case json.Number:
		return exactNumber(t)
	case map[string]any:
		for k, v := range t {
			t[k] = fixAny(v)
		}
		return t
	case []any:
		for i, v := range t {
			t[i] = fixAny(v)
		}
		return t
	}
	return x
}

var anyType = reflect.TypeOf((*any)(nil)).Elem()

// normalizeNumbers walks a decoded value and applies fixAny to every
// interface-typed value in it.
func normalizeNumbers(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			normalizeNumbers(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() || !v.CanSet() {
			return
		}
		if v.Type() == anyType {
			v.Set(reflect.ValueOf(fixAny(v.Interface())))
			if v.IsNil() {
				return
			}
		}
		inner := v.Elem()
		if inner.Kind() == reflect.Pointer {
			normalizeNumbers(inner)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				normalizeNumbers(f)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			normalizeNumbers(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		elem := v.Type().Elem()
		iter := v.MapRange()
		for iter.Next() {
			val := iter.Value()
			switch {
			case elem == anyType:
				v.SetMapIndex(iter.Key(), reflect.ValueOf(fixAny(val.Interface())))
			case elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Map || elem.Kind() == reflect.Slice:
				normalizeNumbers(val)
			case elem.Kind() == reflect.Struct:
				cp := reflect.New(elem).Elem()
				cp.Set(val)
				normalizeNumbers(cp)
				v.SetMapIndex(iter.Key(), cp)
			}
		}
	}
}

// isJSONNull reports whether data is the JSON literal null, give or take
// surrounding whitespace.
func isJSONNull(data []byte) bool {
	return string(trimJSONSpace(data)) == "null"
}

// jsonKind classifies a JSON value by its first significant byte: '{', '[',
// '"', 'n' (null), 't'/'f' (booleans) or '0' (numbers); 0 when empty.
func jsonKind(data []byte) byte {
	s := jsonScanner{data: data}
	if c := s.peek(); c != '-' && !isDigit(c) {
		return c
	}
	return '0'
}

// eachField calls fn for every top-level member of the object in data, with
// its decoded key and raw value.
func eachField(data []byte, fn func(key string, value []byte)) error {
	s := jsonScanner{data: data}
	return s.members(func(key []byte, escaped bool, value []byte) error {
		fn(unquote(key, escaped), value)
		return nil
	})
}

// peekString returns the string value of the top-level member key.
// isString is false when the key is missing or not a string. Like
// encoding/json, the last occurrence of a duplicated key wins.
func peekString(data []byte, key string) (value string, isString bool, err error) {
	var raw []byte
	found := false
	err = eachField(data, func(k string, v []byte) {
		if k == key {
			raw = v
			found = true
		}
	})
	if err != nil {
		// Let encoding/json report malformed input precisely.
		var x any
		if jerr := json.Unmarshal(data, &x); jerr != nil {
			return "", false, jerr
		}
		return "", false, err
	}
	if !found || len(raw) == 0 || raw[0] != '"' {
		return "", false, nil
	}
	content := raw[1 : len(raw)-1]
	return unquote(content, bytes.IndexByte(content, '\\') >= 0), true, nil
}

// presentKeys returns the object's top-level keys, each mapped to whether
// its value is non-null: present[k] is false for a missing or null key, and
// hasKey tells a null key from a missing one.
func presentKeys(data []byte) (map[string]bool, error) {
	keys := map[string]bool{}
	if isJSONNull(data) {
		return keys, nil // null decodes like {} (every default applies)
	}
	err := eachField(data, func(k string, v []byte) {
		keys[k] = string(v) != "null"
	})
	if err != nil {
		var x map[string]json.RawMessage
		if jerr := json.Unmarshal(data, &x); jerr != nil {
			return nil, jerr
		}
		return nil, err
	}
	return keys, nil
}

// arrayItemKeys returns, for an array of objects, each element's key set; an
// element that is not an object gets a nil set.
func arrayItemKeys(data []byte) ([]map[string]bool, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, err
	}
	out := make([]map[string]bool, len(items))
	for i, it := range items {
		if jsonKind(it) != '{' {
			continue
		}
		keys, err := presentKeys(it)
		if err != nil {
			return nil, err
		}
		out[i] = keys
	}
	return out, nil
}

// hasKey reports whether the key occurs, with any value including null.
func hasKey(present map[string]bool, key string) bool {
	_, ok := present[key]
	return ok
}

// allHaveKeys reports whether every element is an object carrying every key.
func allHaveKeys(items []map[string]bool, keys ...string) bool {
	for _, it := range items {
		if it == nil {
			return false
		}
		for _, k := range keys {
			if !hasKey(it, k) {
				return false
			}
		}
	}
	return true
}

// validItems decodes a JSON array item by item, dropping items that do not
// decode; ok is false when raw is not an array.
func validItems[T any](raw []byte) (items []T, ok bool) {
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return nil, false
	}
	items = []T{}
	for _, part := range parts {
		var x T
		if decodeExact(part, &x) == nil {
			items = append(items, x)
		}
	}
	return items, true
}

// unionError is why a union did not decode. Its text is upstream v0.13.5's
// ("invalid variant payload" when the tag or the keys chose a variant that
// failed to decode, "no matching variant for union" when none fit), because
// decode errors reach the peer as text; Unwrap gives the specific cause.
type unionError struct {
	text  string
	cause error
}

func (e *unionError) Error() string { return e.text }

// Unwrap returns the specific decode failure behind the upstream text.
func (e *unionError) Unwrap() error { return e.cause }

// invalidVariant reports that the variant chosen by tag or keys failed to decode.
func invalidVariant(cause error) error {
	return &unionError{text: "invalid variant payload", cause: cause}
}

// noVariant reports that no variant fits the payload.
func noVariant(cause error) error {
	return &unionError{text: "no matching variant for union", cause: cause}
}

// decodesItselfUpstream is implemented by the types whose decoding upstream
// v0.13.5 also customises (every union, every type with schema defaults).
// encoding/json restarts its error context inside such a type, so upstream's
// error texts name the struct that holds it rather than a struct within it.
type decodesItselfUpstream interface{ decodesItselfUpstream() }

var decodesItselfUpstreamType = reflect.TypeFor[decodesItselfUpstream]()

// withUpstreamStruct makes a decode error name the struct upstream's would.
// into points at the method-free local type an UnmarshalJSON decoded into
// (named like the type, or Alias where upstream uses that name). Upstream
// lets encoding/json walk nested structs itself, so a type error deep inside
// names the innermost struct on the path ("EnvVariable.env._meta"); here
// most structs decode themselves, which would make every outer level put its
// own name there. The path in Field is complete either way, so the struct is
// found by walking it from into's type, stopping at a type upstream also
// decodes itself. Other errors are returned unchanged.
func withUpstreamStruct(err error, into any) error {
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok || te.Field == "" {
		return err
	}
	cur := reflect.TypeOf(into).Elem()
	name := cur.Name()
	path := strings.Split(te.Field, ".")
	for _, key := range path[:len(path)-1] {
		ft, found := jsonFieldType(cur, key)
		if !found {
			break
		}
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array || ft.Kind() == reflect.Map {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct || reflect.PointerTo(ft).Implements(decodesItselfUpstreamType) {
			break
		}
		cur, name = ft, ft.Name()
	}
	te.Struct = name
	return te
}

// jsonFieldType returns the type of t's field whose JSON name is key.
func jsonFieldType(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == key {
			return f.Type, true
		}
	}
	return nil, false
}

// dropFields returns the object data without the members for which drop
// reports true (members keep their order and bytes). The generated decoders
// use it to remove malformed values of properties upstream v0.13.5 does not
// know, so the rest decodes, and fails, exactly as upstream's would.
func dropFields(data []byte, drop func(key string, value []byte) bool) ([]byte, error) {
	out := make([]byte, 0, len(data))
	out = append(out, '{')
	dropped := false
	err := eachField(data, func(key string, value []byte) {
		if drop(key, value) {
			dropped = true
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(key)
		out = append(out, k...)
		out = append(out, ':')
		out = append(out, value...)
	})
	if err != nil {
		return nil, err
	}
	if !dropped {
		return data, nil
	}
	return append(out, '}'), nil
}

// isKey reports whether an object key selects the property named name, as
// encoding/json matches keys (case-insensitively).
func isKey(key, name string) bool {
	return key == name || strings.EqualFold(key, name)
}

// legacyMember decodes the member old of the object data into p when data
// has no member cur: old is the v0.13.5 spelling of a key the protocol has
// renamed since (planCapabilities → plan, id → planId …). The current
// spelling wins when both are present; only the current one is written.
func legacyMember[T any](data []byte, cur, old string, p *T) error {
	if jsonKind(data) != '{' {
		return nil
	}
	var raw []byte
	hasCur := false
	if err := eachField(data, func(k string, v []byte) {
		switch k {
		case cur:
			hasCur = true
		case old:
			raw = v
		}
	}); err != nil {
		return err
	}
	if hasCur || raw == nil {
		return nil
	}
	return decodeExact(raw, p)
}
