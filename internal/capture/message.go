package capture

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Message is the JSON-RPC envelope of one recorded message: the members a
// reader needs to route it, each kept as raw JSON. The capture readers of
// this repository (the adapter's Replayer, the scripted replay agent) share
// it, so they agree on what a request, a notification and a response are.
type Message struct {
	// ID is the raw id; absent and null mean "no id".
	ID json.RawMessage `json:"id"`
	// Method is the called method; "" for a response.
	Method string `json:"method"`
	// Params is the raw params member, nil when absent.
	Params json.RawMessage `json:"params"`
	// Result is the raw result member, nil when absent.
	Result json.RawMessage `json:"result"`
	// Error is the raw error member, nil when absent.
	Error json.RawMessage `json:"error"`
}

// ParseMessage decodes the envelope of one JSON-RPC message. It fails only
// when raw is not a JSON object (or its members have the wrong JSON types);
// it does not check that the envelope is a valid request, notification or
// response: use the Is* methods for that.
func ParseMessage(raw []byte) (Message, error) {
	var m Message
	err := json.Unmarshal(raw, &m)
	return m, err
}

// HasID reports an id that is present and not null.
func (m *Message) HasID() bool { return present(m.ID) }

// IsRequest reports a message with a method and an id.
func (m *Message) IsRequest() bool { return m.Method != "" && m.HasID() }

// IsNotification reports a message with a method and no id.
func (m *Message) IsNotification() bool { return m.Method != "" && !m.HasID() }

// IsResponse reports a message with an id and no method.
func (m *Message) IsResponse() bool { return m.Method == "" && m.HasID() }

// Failed reports a response whose error member is present and not null.
func (m *Message) Failed() bool { return present(m.Error) }

func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// IDKey canonicalises a JSON-RPC id so that a response can be paired with
// its request whatever spelling the peer used: a string is keyed by its
// decoded value (so "a" and "\u0061" match), a number by its value (1, 1.0
// and 1e0 match; integers of any size keep every digit). String and number
// keys never collide (a string key starts with a quote). Anything else is
// keyed by its trimmed bytes.
func IDKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return ""
	}
	if id[0] == '"' {
		var s string
		if json.Unmarshal(id, &s) == nil {
			return strconv.Quote(s)
		}
		return string(id)
	}
	text := string(id)
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	if isIntegerLiteral(text) {
		return text // beyond int64: exact digits, never rounded
	}
	if f, err := strconv.ParseFloat(text, 64); err == nil {
		if f == float64(int64(f)) && f > -(1<<53) && f < 1<<53 {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return text
}

// isIntegerLiteral reports an optional minus sign followed by digits only.
func isIntegerLiteral(s string) bool {
	s = trimMinus(s)
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func trimMinus(s string) string {
	if len(s) > 0 && s[0] == '-' {
		return s[1:]
	}
	return s
}
