package acp

// The JSON-RPC envelope codec: a single hand-written pass over each inbound
// line that validates it as JSON (accepting exactly what encoding/json
// accepts) and picks out the envelope members, plus the writer side that
// lays out outbound envelopes in upstream's key order.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxNestingDepth matches encoding/json's limit on nested arrays/objects.
const maxNestingDepth = 10000

// envelope is one decoded inbound JSON-RPC message. Slices point into the
// line the message was decoded from.
type envelope struct {
	// id is the raw id value; nil when absent or null (a message with a
	// method and a null id is a notification, as upstream).
	id json.RawMessage
	// method is the decoded method name; "" when absent or null.
	method string
	// params and result are the raw member values (the bytes "null" for an
	// explicit null); nil when absent.
	params json.RawMessage
	result json.RawMessage
	// err is the decoded error object; nil when absent or null.
	err *RequestError
}

// envelope member names, matched like encoding/json matches struct fields:
// exact first, else case-insensitively (Unicode simple folding).
var (
	keyJSONRPC = []byte("jsonrpc")
	keyID      = []byte("id")
	keyMethod  = []byte("method")
	keyParams  = []byte("params")
	keyResult  = []byte("result")
	keyError   = []byte("error")
)

// syntaxError reports malformed JSON at a byte offset.
type syntaxError struct {
	msg    string
	offset int
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.offset, e.msg)
}

var (
	errEnvelopeNotObject = errors.New("json-rpc message is not a JSON object")
	errMethodNotString   = errors.New("json-rpc member \"method\" is not a string")
	errJSONRPCNotString  = errors.New("json-rpc member \"jsonrpc\" is not a string")
)

// jsonScanner walks a byte slice holding JSON text.
type jsonScanner struct {
	data  []byte
	pos   int
	depth int
}

func (s *jsonScanner) fail(msg string) error {
	return &syntaxError{msg: msg, offset: s.pos}
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value skips one JSON value starting at s.pos (no leading space), validating
// it.
func (s *jsonScanner) value() error {
	if s.pos >= len(s.data) {
		return s.fail("unexpected end of JSON input")
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{':
		return s.object(nil)
	case c == '[':
		return s.array()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.fail(fmt.Sprintf("invalid character %q looking for beginning of value", c))
	}
}

func (s *jsonScanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.fail("invalid literal")
	}
	s.pos += len(word)
	return nil
}

// str skips a string starting at the opening quote and reports whether it
// holds escapes. Plain runs are skipped with bytes.IndexByte and a
// word-at-a-time control-character check: string content is most of the
// bytes of a typical message.
func (s *jsonScanner) str() (escaped bool, err error) {
	s.pos++ // opening quote
	for {
		rest := s.data[s.pos:]
		q := bytes.IndexByte(rest, '"')
		if q < 0 {
			s.pos = len(s.data)
			return escaped, s.fail("unexpected end of JSON input")
		}
		seg := rest[:q]
		b := bytes.IndexByte(seg, '\\')
		if b < 0 {
			if i := indexControl(seg); i >= 0 {
				s.pos += i
				return escaped, s.fail("invalid control character in string literal")
			}
			s.pos += q + 1
			return escaped, nil
		}
		if i := indexControl(seg[:b]); i >= 0 {
			s.pos += i
			return escaped, s.fail("invalid control character in string literal")
		}
		escaped = true
		s.pos += b + 1 // past the backslash
		if s.pos >= len(s.data) {
			return escaped, s.fail("unexpected end of JSON input")
		}
		switch s.data[s.pos] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.pos++
		case 'u':
			s.pos++
			for i := 0; i < 4; i++ {
				if s.pos >= len(s.data) {
					return escaped, s.fail("unexpected end of JSON input")
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

func isHexDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (s *jsonScanner) number() error {
	d := s.data
	if d[s.pos] == '-' {
		s.pos++
	}
	if s.pos >= len(d) {
		return s.fail("unexpected end of JSON input")
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

func (s *jsonScanner) push() error {
	s.depth++
	if s.depth > maxNestingDepth {
		return s.fail("exceeded max depth")
	}
	return nil
}

func (s *jsonScanner) array() error {
	if err := s.push(); err != nil {
		return err
	}
	s.pos++ // '['
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		s.skipSpace()
		if err := s.value(); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of JSON input")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			s.depth--
			return nil
		default:
			return s.fail("invalid character after array element")
		}
	}
}

// memberFunc receives one object member: the raw key (without quotes),
// whether the key holds escapes, and the raw value.
type memberFunc func(key []byte, keyEscaped bool, value []byte) error

// object skips an object starting at '{', handing each member to fn when fn
// is not nil.
func (s *jsonScanner) object(fn memberFunc) error {
	if err := s.push(); err != nil {
		return err
	}
	s.pos++ // '{'
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of JSON input")
		}
		if s.data[s.pos] != '"' {
			return s.fail("invalid character looking for beginning of object key string")
		}
		keyStart := s.pos
		escaped, err := s.str()
		if err != nil {
			return err
		}
		key := s.data[keyStart+1 : s.pos-1]
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of JSON input")
		}
		if s.data[s.pos] != ':' {
			return s.fail("invalid character after object key")
		}
		s.pos++
		s.skipSpace()
		valueStart := s.pos
		if err := s.value(); err != nil {
			return err
		}
		if fn != nil {
			if err := fn(key, escaped, s.data[valueStart:s.pos]); err != nil {
				return err
			}
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of JSON input")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			s.depth--
			return nil
		default:
			return s.fail("invalid character after object key:value pair")
		}
	}
}

// keyMatches reports whether an object key selects the member name, with
// encoding/json's rules: exact match, else case-insensitive match of the
// decoded key.
func keyMatches(key []byte, escaped bool, name []byte) bool {
	if !escaped {
		return bytes.Equal(key, name) || bytes.EqualFold(key, name)
	}
	var decoded string
	quoted := make([]byte, 0, len(key)+2)
	quoted = append(append(append(quoted, '"'), key...), '"')
	if json.Unmarshal(quoted, &decoded) != nil {
		return false
	}
	return bytes.EqualFold([]byte(decoded), name)
}

// knownMethods interns the method names of ACP traffic, so decoding a
// message's method allocates nothing for them.
var knownMethods = func() map[string]string {
	names := []string{
		"initialize", "authenticate", "logout", "session/new", "session/load", "session/prompt",
		"session/cancel", "session/update", "session/request_permission", "session/set_mode",
		"session/set_config_option", "session/set_model", "session/list", "session/resume",
		"session/close", "session/fork", "session/delete", "fs/read_text_file", "fs/write_text_file",
		"terminal/create", "terminal/output", "terminal/release", "terminal/wait_for_exit",
		"terminal/kill", "elicitation/create", "elicitation/complete", "cursor/task",
		methodCancelRequest,
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = n
	}
	return m
}()

// decodeJSONString decodes a raw JSON string value (with quotes) the way
// encoding/json does, including replacing invalid UTF-8 with U+FFFD.
func decodeJSONString(raw []byte, escaped bool) (string, error) {
	inner := raw[1 : len(raw)-1]
	if !escaped {
		if name, ok := knownMethods[string(inner)]; ok {
			return name, nil
		}
		if utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// decodeEnvelope decodes one line into env in a single pass. It accepts and
// rejects exactly the lines upstream's json.Unmarshal into its envelope
// struct accepts and rejects: the whole line must be valid JSON, the top
// level an object (or null, which yields an empty envelope), "jsonrpc" and
// "method" strings or null, "error" an error object or null. Unknown members
// are ignored; a repeated member's last value wins.
func decodeEnvelope(line []byte, env *envelope) error {
	*env = envelope{}
	s := jsonScanner{data: line}
	s.skipSpace()
	if s.pos >= len(s.data) {
		return s.fail("unexpected end of JSON input")
	}
	switch s.data[s.pos] {
	case '{':
		if err := s.object(env.member); err != nil {
			return err
		}
	case 'n':
		if err := s.literal("null"); err != nil {
			return err
		}
	default:
		if err := s.value(); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos != len(s.data) {
			return s.fail("invalid character after top-level value")
		}
		return errEnvelopeNotObject
	}
	s.skipSpace()
	if s.pos != len(s.data) {
		return s.fail("invalid character after top-level value")
	}
	return nil
}

// member stores one top-level member of an envelope.
func (env *envelope) member(key []byte, escaped bool, value []byte) error {
	isNull := value[0] == 'n'
	switch {
	case keyMatches(key, escaped, keyID):
		if isNull {
			env.id = nil
		} else {
			env.id = value
		}
	case keyMatches(key, escaped, keyMethod):
		if isNull {
			return nil
		}
		if value[0] != '"' {
			return errMethodNotString
		}
		m, err := decodeJSONString(value, bytes.IndexByte(value, '\\') >= 0)
		if err != nil {
			return err
		}
		env.method = m
	case keyMatches(key, escaped, keyParams):
		env.params = value
	case keyMatches(key, escaped, keyResult):
		env.result = value
	case keyMatches(key, escaped, keyError):
		if isNull {
			env.err = nil
			return nil
		}
		if env.err == nil {
			env.err = new(RequestError)
		}
		if err := json.Unmarshal(value, env.err); err != nil {
			return err
		}
	case keyMatches(key, escaped, keyJSONRPC):
		if !isNull && value[0] != '"' {
			return errJSONRPCNotString
		}
	}
	return nil
}

// cancelRequestRequestID extracts params.requestId of a $/cancel_request the
// way upstream's json.Unmarshal into {RequestID json.RawMessage} does: nil
// params or a non-object is an error, a missing member gives nil.
func cancelRequestRequestID(params json.RawMessage) (json.RawMessage, error) {
	s := jsonScanner{data: params}
	s.skipSpace()
	if s.pos >= len(s.data) {
		return nil, s.fail("unexpected end of JSON input")
	}
	var id json.RawMessage
	switch s.data[s.pos] {
	case '{':
		err := s.object(func(key []byte, escaped bool, value []byte) error {
			if keyMatches(key, escaped, []byte("requestId")) {
				id = value
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	case 'n':
		if err := s.literal("null"); err != nil {
			return nil, err
		}
	default:
		if err := s.value(); err != nil {
			return nil, err
		}
		return nil, errors.New("$/cancel_request params are not a JSON object")
	}
	s.skipSpace()
	if s.pos != len(s.data) {
		return nil, s.fail("invalid character after top-level value")
	}
	return id, nil
}

// safeJSONStringByte reports whether b may appear unescaped in a JSON string
// exactly as encoding/json (with HTML escaping) writes it.
func safeJSONStringByte(b byte) bool {
	return b >= 0x20 && b < 0x7f && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
}

// appendJSONString appends s as encoding/json would encode it.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !safeJSONStringByte(s[i]) {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendRawID appends an inbound id for echoing in a response. Upstream
// re-marshals the raw id, which compacts it and applies HTML escaping; ids
// made of plain characters (every number, most strings) are copied as they
// are.
func appendRawID(dst []byte, id json.RawMessage) []byte {
	for _, b := range id {
		if (!safeJSONStringByte(b) && b != '"') || b == ' ' {
			out, err := json.Marshal(id)
			if err != nil {
				break
			}
			return append(dst, out...)
		}
	}
	return append(dst, id...)
}

// appendUintID appends an outbound numeric id.
func appendUintID(dst []byte, id uint64) []byte {
	return strconv.AppendUint(dst, id, 10)
}
