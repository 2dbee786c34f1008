package acp

// The JSON-RPC envelope codec: a single pass of the JSON scanner
// (jsonscan.go) over each inbound line that validates it as JSON (accepting
// exactly what encoding/json accepts) and picks out the envelope members,
// plus the writer side that lays out outbound envelopes in upstream's key
// order.

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

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

	keyRequestID = []byte("requestId")
)

var (
	errEnvelopeNotObject = errors.New("json-rpc message is not a JSON object")
	errMethodNotString   = errors.New("json-rpc member \"method\" is not a string")
	errJSONRPCNotString  = errors.New("json-rpc member \"jsonrpc\" is not a string")

	errCancelParamsNotObject = errors.New("$/cancel_request params are not a JSON object")
)

// keyMatches reports whether an object key selects the member name, with
// encoding/json's rules: exact match, else case-insensitive match of the
// decoded key.
func keyMatches(key []byte, escaped bool, name []byte) bool {
	if !escaped {
		return bytes.Equal(key, name) || bytes.EqualFold(key, name)
	}
	return strings.EqualFold(unquote(key, true), string(name))
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

// decodeEnvelope decodes one line into env in a single pass. It accepts and
// rejects exactly the lines upstream's json.Unmarshal into its envelope
// struct accepts and rejects: the whole line must be valid JSON, the top
// level an object (or null, which yields an empty envelope), "jsonrpc" and
// "method" strings or null, "error" an error object or null. Unknown members
// are ignored; a repeated member's last value wins.
func decodeEnvelope(line []byte, env *envelope) error {
	*env = envelope{}
	return objectText(line, env.member, errEnvelopeNotObject)
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
		content := value[1 : len(value)-1]
		if env.method = knownMethods[string(content)]; env.method == "" {
			env.method = unquote(content, bytes.IndexByte(content, '\\') >= 0)
		}
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
	var id json.RawMessage
	err := objectText(params, func(key []byte, escaped bool, value []byte) error {
		if keyMatches(key, escaped, keyRequestID) {
			id = value
		}
		return nil
	}, errCancelParamsNotObject)
	if err != nil {
		return nil, err
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
