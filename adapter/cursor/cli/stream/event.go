// Package stream parses the Cursor CLI's stream-json output (print mode,
// `--output-format stream-json`): one JSON object per line, decoded into a
// typed Event or rejected with a *SchemaError.
//
// Unknown-data policy (docs/cursor-cli.md#unknown-data):
//   - unknown fields are ignored;
//   - an unknown top-level type is a schema error (drift must be loud);
//   - an unknown subtype under system, retry, connection or thinking yields
//     KindIgnored; under tool_call or result it is a schema error;
//   - interaction_query events are reduced to their kind: no payload is ever
//     decoded or kept, so it cannot reach a log or an event;
//   - a line that is not a JSON object is a schema error carrying a short,
//     control-character-escaped excerpt.
//
// The parser is pure and safe for concurrent use; it keeps no state between
// lines. Stateful checks (one init, call_id bookkeeping) belong to the runner.
package stream

import "encoding/json"

// Kind classifies a parsed line.
type Kind int

// Kinds of stream-json events.
const (
	KindInvalid             Kind = iota
	KindInit                     // system/init: the session starts
	KindSystemNote               // system/task_notification, system/background_shell_timeout
	KindIgnored                  // tolerated unknown subtype (system, thinking, retry, connection)
	KindUserEcho                 // user: the CLI echoing the prompt; never projected
	KindThinkingDelta            // thinking/delta
	KindThinkingCompleted        // thinking/completed
	KindAssistant                // assistant: one complete text segment
	KindToolStarted              // tool_call/started
	KindToolCompleted            // tool_call/completed
	KindInteractionRequest       // interaction_query/request (payload dropped)
	KindInteractionResponse      // interaction_query/response (payload dropped)
	KindRetry                    // retry/starting, retry/resuming
	KindConnection               // connection/reconnecting, connection/reconnected
	KindResult                   // result: the terminal event
)

var kindNames = [...]string{
	KindInvalid:             "invalid",
	KindInit:                "init",
	KindSystemNote:          "system_note",
	KindIgnored:             "ignored",
	KindUserEcho:            "user_echo",
	KindThinkingDelta:       "thinking_delta",
	KindThinkingCompleted:   "thinking_completed",
	KindAssistant:           "assistant",
	KindToolStarted:         "tool_started",
	KindToolCompleted:       "tool_completed",
	KindInteractionRequest:  "interaction_request",
	KindInteractionResponse: "interaction_response",
	KindRetry:               "retry",
	KindConnection:          "connection",
	KindResult:              "result",
}

// String names the kind.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Event is one parsed stream-json line. Only the fields of its Kind are set.
type Event struct {
	Kind    Kind
	Type    string // top-level "type" as received
	Subtype string // "subtype" as received, may be empty
	// SessionID is the event's session_id when it is a string; only the
	// init event's value is validated (see ValidSessionID).
	SessionID string
	// ModelCallID and TimestampMs are optional on assistant, thinking and
	// tool_call events.
	ModelCallID string
	TimestampMs *int64

	Init   *Init     // KindInit
	Text   string    // KindAssistant (concatenated text parts), KindThinkingDelta
	Tool   *ToolCall // KindToolStarted, KindToolCompleted
	Result *Result   // KindResult
	// Attempt is the retry or reconnection attempt, when given as a number.
	Attempt *int64
}

// Init is the system/init payload.
type Init struct {
	SessionID      string
	Model          string
	Cwd            string
	APIKeySource   string
	PermissionMode string
}

// ToolCall is a tool_call event. The call's tool is the single key of the
// "tool_call" object (e.g. "readToolCall"); Name is that key without the
// "ToolCall" suffix ("read"), or the function name for the documented
// {"function":{"name":…,"arguments":…}} form.
type ToolCall struct {
	CallID string
	Key    string
	Name   string
	// Args is the raw "args" value (nil when absent, which completed events
	// allow).
	Args json.RawMessage
	// Outcome is the single key of a completed call's result ("success",
	// "rejected", …) and OutcomePayload its object value.
	Outcome        string
	OutcomeClass   OutcomeClass
	OutcomePayload json.RawMessage
	// ShellTimeoutMs is args.timeout of a shell call (0 when absent);
	// Background is args.isBackground. The runner uses both for the idle
	// tolerance while the call is open.
	ShellTimeoutMs int64
	Background     bool
}

// Result is the terminal result event, validated: IsError is true exactly
// when Subtype is "error".
type Result struct {
	Subtype       string
	IsError       bool
	Text          string
	DurationMs    *int64
	DurationAPIMs *int64
	RequestID     string
	// Usage is nil when the event carries none; each counter is nil when
	// missing (unknown, not zero).
	Usage *Usage
}

// Usage holds the token counters of a result.
type Usage struct {
	InputTokens      *int64 `json:"inputTokens,omitempty"`
	OutputTokens     *int64 `json:"outputTokens,omitempty"`
	CacheReadTokens  *int64 `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens *int64 `json:"cacheWriteTokens,omitempty"`
}
