package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxCallIDBytes bounds a tool call_id. Any other non-empty string is
// accepted: real captures hold newlines inside call ids.
const MaxCallIDBytes = 240

// excerptBytes bounds the excerpt a SchemaError carries.
const excerptBytes = 160

// SchemaError reports a line that breaks the stream-json contract.
type SchemaError struct {
	// Reason says what was wrong, without echoing payload text.
	Reason string
	// Excerpt is the start of an unparsable line, control characters
	// escaped, at most a few hundred bytes; empty for lines that parsed as
	// JSON (their payload may be sensitive and is not repeated).
	Excerpt string
}

func (e *SchemaError) Error() string {
	if e.Excerpt != "" {
		return "stream-json schema error: " + e.Reason + ": " + strconv.Quote(e.Excerpt)
	}
	return "stream-json schema error: " + e.Reason
}

func schemaErr(format string, args ...any) *SchemaError {
	return &SchemaError{Reason: fmt.Sprintf(format, args...)}
}

// IsSchemaError reports whether err is (or wraps) a *SchemaError.
func IsSchemaError(err error) bool {
	var se *SchemaError
	return errors.As(err, &se)
}

// Excerpt returns at most n bytes of b as valid UTF-8 with control
// characters escaped, for diagnostics.
func Excerpt(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	var sb strings.Builder
	for _, r := range string(b) {
		switch {
		case r == utf8.RuneError:
			sb.WriteString(`\ufffd`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// wireLine is the union of the top-level fields the parser reads. Every
// field is raw so that a mistyped field only matters to the event kinds
// that use it.
type wireLine struct {
	Type           json.RawMessage `json:"type"`
	Subtype        json.RawMessage `json:"subtype"`
	SessionID      json.RawMessage `json:"session_id"`
	Model          json.RawMessage `json:"model"`
	Cwd            json.RawMessage `json:"cwd"`
	APIKeySource   json.RawMessage `json:"apiKeySource"`
	PermissionMode json.RawMessage `json:"permissionMode"`
	Text           json.RawMessage `json:"text"`
	Message        json.RawMessage `json:"message"`
	CallID         json.RawMessage `json:"call_id"`
	ToolCall       json.RawMessage `json:"tool_call"`
	ModelCallID    json.RawMessage `json:"model_call_id"`
	TimestampMs    json.RawMessage `json:"timestamp_ms"`
	IsError        json.RawMessage `json:"is_error"`
	Result         json.RawMessage `json:"result"`
	DurationMs     json.RawMessage `json:"duration_ms"`
	DurationAPIMs  json.RawMessage `json:"duration_api_ms"`
	RequestID      json.RawMessage `json:"request_id"`
	Usage          json.RawMessage `json:"usage"`
	Attempt        json.RawMessage `json:"attempt"`
}

// Parse decodes one line (without its trailing newline). Blank lines must be
// skipped by the caller (IsBlank). It never panics on any input.
func Parse(line []byte) (Event, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Event{}, &SchemaError{Reason: "not a JSON object", Excerpt: Excerpt(line, excerptBytes)}
	}
	var w wireLine
	if err := json.Unmarshal(line, &w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Event{}, schemaErr("not a JSON object")
		}
		return Event{}, &SchemaError{Reason: "invalid JSON", Excerpt: Excerpt(line, excerptBytes)}
	}
	typ, ok := str(w.Type)
	if !ok || typ == "" {
		return Event{}, schemaErr("missing or non-string type")
	}
	ev := Event{Type: typ}
	if len(w.Subtype) > 0 && !isNull(w.Subtype) {
		if ev.Subtype, ok = str(w.Subtype); !ok {
			return Event{}, schemaErr("%s: non-string subtype", typ)
		}
	}
	ev.SessionID, _ = str(w.SessionID)
	ev.ModelCallID, _ = str(w.ModelCallID)
	ev.TimestampMs = integer(w.TimestampMs)

	switch typ {
	case "system":
		switch ev.Subtype {
		case "init":
			return parseInit(ev, &w)
		case "task_notification", "background_shell_timeout":
			ev.Kind = KindSystemNote
		default:
			ev.Kind = KindIgnored
		}
	case "user":
		ev.Kind = KindUserEcho
	case "thinking":
		switch ev.Subtype {
		case "delta":
			ev.Kind = KindThinkingDelta
			if len(w.Text) > 0 && !isNull(w.Text) {
				if ev.Text, ok = str(w.Text); !ok {
					return Event{}, schemaErr("thinking: non-string text")
				}
			}
		case "completed":
			ev.Kind = KindThinkingCompleted
		default:
			ev.Kind = KindIgnored
		}
	case "assistant":
		text, err := messageText(w.Message)
		if err != nil {
			return Event{}, err
		}
		ev.Kind, ev.Text = KindAssistant, text
	case "tool_call":
		return parseToolCall(ev, &w)
	case "interaction_query":
		// Nothing beyond type and subtype is read: the payload may hold
		// prompts, commands or URLs.
		if ev.Subtype == "response" {
			ev.Kind = KindInteractionResponse
		} else {
			ev.Kind = KindInteractionRequest
		}
	case "retry", "connection":
		switch {
		case typ == "retry" && (ev.Subtype == "starting" || ev.Subtype == "resuming"):
			ev.Kind = KindRetry
		case typ == "connection" && (ev.Subtype == "reconnecting" || ev.Subtype == "reconnected"):
			ev.Kind = KindConnection
		default:
			ev.Kind = KindIgnored
		}
		ev.Attempt = integer(w.Attempt)
	case "result":
		return parseResult(ev, &w)
	default:
		return Event{}, schemaErr("unknown event type %q", clip(typ))
	}
	return ev, nil
}

// IsBlank reports whether a line holds only whitespace (skipped, not an
// event).
func IsBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

func parseInit(ev Event, w *wireLine) (Event, error) {
	id, ok := str(w.SessionID)
	if !ok {
		return Event{}, schemaErr("system/init: missing or non-string session_id")
	}
	in := &Init{SessionID: id}
	in.Model, _ = str(w.Model)
	in.Cwd, _ = str(w.Cwd)
	in.APIKeySource, _ = str(w.APIKeySource)
	in.PermissionMode, _ = str(w.PermissionMode)
	ev.Kind, ev.Init, ev.SessionID = KindInit, in, id
	return ev, nil
}

type wireMessage struct {
	Content json.RawMessage `json:"content"`
}

type wirePart struct {
	Type string          `json:"type"`
	Text json.RawMessage `json:"text"`
}

// messageText concatenates the text parts of an assistant message; other
// part types are skipped.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return "", schemaErr("assistant: missing message object")
	}
	var m wireMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", schemaErr("assistant: malformed message")
	}
	if len(m.Content) == 0 || isNull(m.Content) {
		return "", nil
	}
	if m.Content[0] == '"' { // a bare string is tolerated
		s, _ := str(m.Content)
		return s, nil
	}
	var parts []wirePart
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", schemaErr("assistant: content is neither a string nor a list of parts")
	}
	var sb strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			continue
		}
		s, ok := str(p.Text)
		if !ok {
			return "", schemaErr("assistant: text part without a string text")
		}
		sb.WriteString(s)
	}
	return sb.String(), nil
}

// wireToolEntry is the value under the single tool_call key: args and
// result for "<name>ToolCall" keys, name and arguments for "function".
// Decoding it in one pass keeps large results from being rescanned.
type wireToolEntry struct {
	Args      json.RawMessage            `json:"args"`
	Result    map[string]json.RawMessage `json:"result"`
	Name      json.RawMessage            `json:"name"`
	Arguments json.RawMessage            `json:"arguments"`
}

type wireShellArgs struct {
	Timeout      json.RawMessage `json:"timeout"`
	IsBackground json.RawMessage `json:"isBackground"`
}

func parseToolCall(ev Event, w *wireLine) (Event, error) {
	switch ev.Subtype {
	case "started":
		ev.Kind = KindToolStarted
	case "completed":
		ev.Kind = KindToolCompleted
	default:
		return Event{}, schemaErr("tool_call: unknown subtype %q", clip(ev.Subtype))
	}
	callID, ok := str(w.CallID)
	if !ok || callID == "" {
		return Event{}, schemaErr("tool_call: missing or non-string call_id")
	}
	if len(callID) > MaxCallIDBytes {
		return Event{}, schemaErr("tool_call: call_id longer than %d bytes", MaxCallIDBytes)
	}
	if len(w.ToolCall) == 0 || w.ToolCall[0] != '{' {
		return Event{}, schemaErr("tool_call: tool_call is not an object")
	}
	var obj map[string]*wireToolEntry
	if err := json.Unmarshal(w.ToolCall, &obj); err != nil {
		return Event{}, schemaErr("tool_call: malformed tool_call (each tool must be an object with an object result)")
	}
	if len(obj) != 1 {
		return Event{}, schemaErr("tool_call: tool_call holds %d keys, want exactly 1", len(obj))
	}
	tc := &ToolCall{CallID: callID}
	var result map[string]json.RawMessage
	for key, t := range obj {
		tc.Key = key
		if t == nil {
			return Event{}, schemaErr("tool_call: %q is not an object", clip(key))
		}
		if key == "function" {
			name, ok := str(t.Name)
			if !ok || name == "" {
				return Event{}, schemaErr("tool_call: function without a name")
			}
			tc.Name, tc.Args = name, nonNull(t.Arguments)
		} else {
			tc.Name = strings.TrimSuffix(key, "ToolCall")
			if tc.Name == "" {
				tc.Name = key
			}
			tc.Args = nonNull(t.Args)
		}
		result = t.Result
	}
	if tc.Key == "shellToolCall" && len(tc.Args) > 0 && tc.Args[0] == '{' {
		var sa wireShellArgs
		if json.Unmarshal(tc.Args, &sa) == nil {
			if n := integer(sa.Timeout); n != nil && *n > 0 {
				tc.ShellTimeoutMs = *n
			}
			tc.Background = string(sa.IsBackground) == "true"
		}
	}
	if ev.Kind == KindToolCompleted {
		if len(result) != 1 {
			return Event{}, schemaErr("tool_call: result holds %d outcome keys, want exactly 1", len(result))
		}
		for key, val := range result {
			class := ClassifyOutcome(key)
			if class == OutcomeUnknown {
				return Event{}, schemaErr("tool_call: unknown outcome %q", clip(key))
			}
			if len(val) == 0 || val[0] != '{' {
				return Event{}, schemaErr("tool_call: outcome %q is not an object", clip(key))
			}
			tc.Outcome, tc.OutcomeClass, tc.OutcomePayload = key, class, val
		}
	}
	ev.Tool = tc
	return ev, nil
}

func parseResult(ev Event, w *wireLine) (Event, error) {
	if ev.Subtype != "success" && ev.Subtype != "error" {
		return Event{}, schemaErr("result: unknown subtype %q", clip(ev.Subtype))
	}
	var isErr bool
	switch string(w.IsError) {
	case "true":
		isErr = true
	case "false":
	default:
		return Event{}, schemaErr("result: is_error missing or not a boolean")
	}
	if isErr != (ev.Subtype == "error") {
		return Event{}, schemaErr("result: subtype %q contradicts is_error=%t", ev.Subtype, isErr)
	}
	text, ok := str(w.Result)
	if !ok {
		return Event{}, schemaErr("result: result is missing or not a string")
	}
	r := &Result{Subtype: ev.Subtype, IsError: isErr, Text: text}
	r.DurationMs = integer(w.DurationMs)
	r.DurationAPIMs = integer(w.DurationAPIMs)
	r.RequestID, _ = str(w.RequestID)
	if len(w.Usage) > 0 && w.Usage[0] == '{' {
		var u Usage
		if json.Unmarshal(w.Usage, &u) == nil {
			r.Usage = &u
		}
	}
	ev.Kind, ev.Result = KindResult, r
	return ev, nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

func nonNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	return raw
}

// str decodes a JSON string; ok is false for anything else.
func str(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if inner := raw[1 : len(raw)-1]; simpleString(inner) {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// integer decodes a JSON number that fits an int64, else nil.
func integer(raw json.RawMessage) *int64 {
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(raw), 64)
		if ferr != nil || f != f || f > 9e18 || f < -9e18 {
			return nil
		}
		n = int64(f)
	}
	return &n
}

// simpleString reports bytes that need no unescaping: printable ASCII
// without quotes or backslashes (RawMessage values are already valid JSON).
func simpleString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// clip bounds a name echoed in an error.
func clip(s string) string { return Excerpt([]byte(s), 64) }
