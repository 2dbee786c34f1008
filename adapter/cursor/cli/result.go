package cli

import (
	"encoding/json"
	"strconv"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli/stream"
)

// Class is a turn's outcome classification (docs/cursor-cli.md#classes).
type Class string

// Outcome classes. Every class but ClassSuccess projects as an empty final
// result with IsError true.
const (
	ClassSuccess          Class = "success"
	ClassNoInit           Class = "no_init"
	ClassInvalidSessionID Class = "invalid_session_id"
	ClassNoResult         Class = "no_result"
	ClassLogicalError     Class = "logical_error"
	ClassSchemaError      Class = "schema_error"
	ClassApprovalRequired Class = "approval_required"
	ClassExitNonzero      Class = "exit_nonzero"
	ClassIdleTimeout      Class = "idle_timeout"
	ClassWallClockTimeout Class = "wall_clock_timeout"
	ClassStopped          Class = "stopped"
	ClassLineTooLong      Class = "line_too_long"
	ClassSpawnFailed      Class = "spawn_failed"
)

// Result is a finished turn. On any failure FinalText is empty and IsError
// true, so consumers that read only those two fields (jobs, digests,
// cross-chat finalizers) cannot mistake partial output for an answer.
type Result struct {
	Class   Class `json:"class"`
	IsError bool  `json:"is_error"`
	// FinalText is the result event's text on success (bounded), else "".
	FinalText string `json:"final_text"`
	// SessionID is the provider session id from a valid init, set even when
	// the turn failed afterwards.
	SessionID string `json:"cursor_session_id,omitempty"`
	// SessionIDChanged is true when a resumed turn's init reported another
	// id than the one resumed.
	SessionIDChanged bool `json:"session_id_changed,omitempty"`
	// Model is the init event's model display name.
	Model string `json:"model,omitempty"`

	Usage         *stream.Usage `json:"usage,omitempty"`
	DurationMs    *int64        `json:"duration_ms,omitempty"`
	DurationAPIMs *int64        `json:"duration_api_ms,omitempty"`
	RequestID     string        `json:"request_id,omitempty"`

	// ExitCode is the CLI's exit status (128+N for signal N); -1 if it never
	// ran. KilledByRunner is true when the runner signalled it before it
	// exited, in which case the status says nothing about the turn.
	ExitCode       int  `json:"exit_code"`
	KilledByRunner bool `json:"killed_by_runner,omitempty"`

	// Detail explains a failure in one line, redacted.
	Detail string `json:"detail,omitempty"`
	// Hint maps known stderr texts (not logged in, trust required, plan
	// limit) to advice.
	Hint string `json:"hint,omitempty"`
	// StderrTail is the ANSI-stripped, redacted tail of stderr; StderrBytes
	// counts everything the CLI wrote there.
	StderrTail  string `json:"stderr_tail,omitempty"`
	StderrBytes int64  `json:"stderr_bytes"`

	// Argv is the spawned command line with the executable reduced to its
	// name and the prompt replaced by a placeholder: safe to persist.
	Argv []string `json:"argv,omitempty"`

	// IgnoredEvents counts tolerated unknown subtypes; IdleWarnings counts
	// idle warnings; Truncated is true once the aggregate cap was hit.
	IgnoredEvents int  `json:"ignored_events,omitempty"`
	IdleWarnings  int  `json:"idle_warnings,omitempty"`
	Truncated     bool `json:"truncated,omitempty"`
}

// Success reports a turn that ended with a valid success result.
func (r Result) Success() bool { return r.Class == ClassSuccess && !r.IsError }

// EventKind names a runner event.
type EventKind string

// Runner event kinds.
const (
	EventSessionStarted    EventKind = "session_started"    // valid init; SessionID set
	EventAssistantText     EventKind = "assistant_text"     // one complete assistant segment
	EventThinkingDelta     EventKind = "thinking_delta"     // reasoning text
	EventThinkingCompleted EventKind = "thinking_completed" // reasoning block closed
	EventToolStarted       EventKind = "tool_started"       // Tool set, Status ToolRunning
	EventToolCompleted     EventKind = "tool_completed"     // Tool set, final status
	EventStatus            EventKind = "status"             // retry, connection, system notes; Status set
	EventIdleWarning       EventKind = "idle_warning"       // the idle limit is near
	EventTruncated         EventKind = "truncated"          // aggregate cap reached; once per turn
)

// Event is what the runner reports while a turn runs. Events never carry the
// prompt envelope (the CLI's echo is dropped) nor interaction payloads.
type Event struct {
	Kind      EventKind  `json:"kind"`
	SessionID string     `json:"cursor_session_id,omitempty"`
	Text      string     `json:"text,omitempty"`
	Tool      *ToolEvent `json:"tool,omitempty"`
	// Status is "retry/starting", "connection/reconnecting",
	// "system/task_notification", … for EventStatus.
	Status  string `json:"status,omitempty"`
	Attempt *int64 `json:"attempt,omitempty"`
}

// ToolStatus is a tool call's state as the runner reports it.
type ToolStatus string

// Tool statuses.
const (
	ToolRunning   ToolStatus = "running"
	ToolSucceeded ToolStatus = "succeeded"
	ToolFailed    ToolStatus = "failed"
	ToolDeclined  ToolStatus = "declined" // policy decline, e.g. shell under default mode
	ToolClosed    ToolStatus = "closed"   // neutral outcome: approved, async, stillRunning
)

// ToolEvent is one tool call's state. Payloads are bounded JSON.
type ToolEvent struct {
	CallID string `json:"call_id"`
	// Name is the tool key without its "ToolCall" suffix ("read", "shell").
	Name   string     `json:"name"`
	Key    string     `json:"key"`
	Status ToolStatus `json:"status"`
	// Outcome is the result key ("success", "rejected", …).
	Outcome string          `json:"outcome,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
	// Path and Command are read from args when present (for titles and
	// locations); Diff is editToolCall's diffString.
	Path       string `json:"path,omitempty"`
	Command    string `json:"command,omitempty"`
	Diff       string `json:"diff,omitempty"`
	Background bool   `json:"background,omitempty"`
}

// RefusedError reports a turn refused before anything was spawned (invalid
// model, invalid resume id, prompt too large for argv, no executable).
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "cursor turn refused: " + e.Reason }

func quoteClip(s string) string { return strconv.Quote(clipString(s, 64)) }
