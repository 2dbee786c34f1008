package acp

// Request-id matching. Ids are echoed verbatim, but matched by value:
// numbers are normalised (1, 1.0, 10e-1 and 1e0 are the same id), strings by
// their canonical JSON form, and a string never matches a number ("1" ≠ 1).

import (
	"errors"
	"strings"
)

// Bounds of numeric id normalisation (as upstream): at most this many
// significant digits, this large a decimal exponent, and this long a
// normalised form. Larger ids are matched by their raw bytes.
const (
	maxIDKeyLen      = 4096
	maxIDAbsExponent = 4096
)

var (
	errInvalidNumericID  = errors.New("invalid json-rpc numeric id")
	errNumericIDTooLarge = errors.New("json-rpc numeric id too large")
	errIDKind            = errors.New("json-rpc id must be string, number, or null")
	errEmptyID           = errors.New("empty json-rpc id")
	errInvalidStringID   = errors.New("invalid json-rpc string id")
)

// canonicalIDKey returns the key under which an id is matched. raw is one
// JSON value; surrounding whitespace is ignored.
func canonicalIDKey(raw []byte) (string, error) {
	raw = trimJSONSpace(raw)
	if len(raw) == 0 {
		return "", errEmptyID
	}
	switch c := raw[0]; {
	case c == '"':
		return canonicalStringID(raw)
	case c == '-' || isDigit(c):
		return canonicalNumericID(raw)
	case c == 'n':
		if string(raw) == "null" {
			return "null", nil
		}
		return "", errInvalidNumericID
	default:
		s := jsonScanner{data: raw}
		if err := s.skip(); err != nil {
			return "", err
		}
		return "", errIDKind
	}
}

func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// canonicalStringID returns the string's canonical JSON encoding (decoded,
// then encoded as encoding/json would).
func canonicalStringID(raw []byte) (string, error) {
	s := jsonScanner{data: raw}
	escaped, err := s.scanString()
	if err != nil {
		return "", err
	}
	if s.pos != len(raw) {
		return "", errInvalidStringID
	}
	content := raw[1 : len(raw)-1]
	plain := true
	for _, b := range content {
		if !safeJSONStringByte(b) {
			plain = false
			break
		}
	}
	if plain {
		return string(raw), nil
	}
	return string(appendJSONString(nil, unquote(content, escaped))), nil
}

// canonicalNumericID normalises a JSON number to plain decimal notation
// without leading or trailing zeros ("0" for any zero).
func canonicalNumericID(raw []byte) (string, error) {
	if isPlainUint(raw) {
		return string(raw), nil
	}
	negative, digits, exp10, err := splitNumber(raw)
	if err != nil {
		return "", err
	}
	// Drop trailing zeros into the exponent.
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp10++
	}
	if len(digits) == 0 {
		return "0", nil
	}
	if len(digits) > maxIDKeyLen {
		return "", errNumericIDTooLarge
	}
	var sb strings.Builder
	if negative {
		sb.WriteByte('-')
	}
	switch {
	case exp10 >= 0:
		if len(digits)+exp10 > maxIDKeyLen {
			return "", errNumericIDTooLarge
		}
		sb.Write(digits)
		for i := 0; i < exp10; i++ {
			sb.WriteByte('0')
		}
	case len(digits) > -exp10:
		point := len(digits) + exp10
		sb.Write(digits[:point])
		sb.WriteByte('.')
		sb.Write(digits[point:])
	default:
		zeros := -exp10 - len(digits)
		if zeros+len(digits)+2 > maxIDKeyLen {
			return "", errNumericIDTooLarge
		}
		sb.WriteString("0.")
		for i := 0; i < zeros; i++ {
			sb.WriteByte('0')
		}
		sb.Write(digits)
	}
	return sb.String(), nil
}

// isPlainUint reports whether raw is a non-negative integer without
// leading zeros, fraction or exponent: already canonical.
func isPlainUint(raw []byte) bool {
	if len(raw) == 0 || len(raw) > maxIDKeyLen || (raw[0] == '0' && len(raw) > 1) {
		return false
	}
	for _, c := range raw {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// splitNumber parses a JSON number into sign, significant digits (leading
// zeros removed) and a decimal exponent.
func splitNumber(raw []byte) (negative bool, digits []byte, exp10 int, err error) {
	if s := (jsonScanner{data: raw}); s.number() != nil || s.pos != len(raw) {
		return false, nil, 0, errInvalidNumericID
	}
	// raw is one valid number: -?int(.frac)?([eE][+-]?exp)?
	digitsFrom := func(i int) int {
		for i < len(raw) && isDigit(raw[i]) {
			i++
		}
		return i
	}
	i := 0
	if raw[0] == '-' {
		negative = true
		i++
	}
	intStart := i
	i = digitsFrom(i)
	intDigits := raw[intStart:i]
	var fracDigits []byte
	if i < len(raw) && raw[i] == '.' {
		start := i + 1
		i = digitsFrom(start)
		fracDigits = raw[start:i]
	}
	exponent := 0
	if i < len(raw) { // 'e' or 'E'
		i++
		sign := 1
		if raw[i] == '+' || raw[i] == '-' {
			if raw[i] == '-' {
				sign = -1
			}
			i++
		}
		for ; i < len(raw); i++ {
			exponent = exponent*10 + int(raw[i]-'0')
			if exponent > maxIDAbsExponent {
				return false, nil, 0, errNumericIDTooLarge
			}
		}
		exponent *= sign
	}
	all := make([]byte, 0, len(intDigits)+len(fracDigits))
	all = append(append(all, intDigits...), fracDigits...)
	for len(all) > 0 && all[0] == '0' {
		all = all[1:]
	}
	return negative, all, exponent - len(fracDigits), nil
}

// responseIDValue returns the outbound id a response id refers to. Only
// positive integers (in any notation: 5, 5.0, 0.5e1) can match, since that
// is all this connection sends.
func responseIDValue(raw []byte) (uint64, bool, error) {
	raw = trimJSONSpace(raw)
	if len(raw) > 0 && isDigit(raw[0]) && len(raw) <= 19 && isPlainUint(raw) {
		var v uint64
		for _, c := range raw {
			v = v*10 + uint64(c-'0')
		}
		return v, true, nil
	}
	key, err := canonicalIDKey(raw)
	if err != nil {
		return 0, false, err
	}
	if !isPlainUint([]byte(key)) || len(key) > 20 {
		return 0, false, nil
	}
	var v uint64
	for _, c := range []byte(key) {
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, false, nil
		}
		v = v*10 + d
	}
	return v, true, nil
}
