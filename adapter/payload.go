package adapter

import "slices"

// PayloadKindSubagentTask is the only Payload.Kind this package produces. A
// persisted message is a subagent card iff metadata.normalized.kind equals it.
const PayloadKindSubagentTask = "subagent_task"

// BackgroundWorkKindSubagent is BackgroundWork.Kind for subagents.
const BackgroundWorkKindSubagent = "subagent"

// Payload is the normalised description of one subagent, the same for every
// agent and both Claude forms. It is the "normalized" object of a tool-call
// event. Events carry deep copies (see Clone), so a consumer may keep one.
type Payload struct {
	// Kind is always PayloadKindSubagentTask.
	Kind string `json:"kind"`
	// SubagentTask holds the subagent's fields; never nil in an event.
	SubagentTask *SubagentTask `json:"subagent_task"`
	// BackgroundWork feeds liveness accounting. It is set only by dialects
	// whose Traits ask for it (Claude and the mock agent), never for Cursor.
	BackgroundWork *BackgroundWork `json:"background_work,omitempty"`
}

// SubagentTask holds what is known about one subagent. Empty strings, zero
// numbers and false booleans mean "not reported"; ToolUseCount is a pointer
// so that a reported 0 stays distinguishable from "not reported".
//
// The JSON keys are fixed by the persistence contract: description, prompt
// and subagent_type are always present (possibly ""), every other key is
// omitted while unknown.
type SubagentTask struct {
	// Description is the short task text shown in the card header.
	Description string `json:"description"`
	// Prompt is the instruction handed to the subagent.
	Prompt string `json:"prompt"`
	// SubagentType is the agent's role or type ("" renders as "Task").
	SubagentType string `json:"subagent_type"`
	// Status is the agent's own word for the subagent's state, verbatim
	// ("completed", "async_launched", a Codex or child-session state …). It
	// is not the tool status.
	Status string `json:"status,omitempty"`
	// AgentID is the agent's id for the subagent (Claude agentId, Cursor
	// agentId, the background work id).
	AgentID string `json:"agent_id,omitempty"`
	// Model is the model the subagent ran on, verbatim.
	Model string `json:"model,omitempty"`
	// ChildSessionID is the subagent's own session or thread id.
	ChildSessionID string `json:"child_session_id,omitempty"`
	// DurationMs is the run time in milliseconds; 0 = not reported.
	DurationMs int64 `json:"duration_ms,omitempty"`
	// TotalTokens is the token total; 0 = not reported.
	TotalTokens int64 `json:"total_tokens,omitempty"`
	// ToolUseCount is the number of tool uses; nil = not reported, a
	// non-nil 0 is a reported zero and serialises as 0.
	ToolUseCount *int `json:"tool_use_count,omitempty"`
	// ResultText is the subagent's answer; never a placeholder.
	ResultText string `json:"result_text,omitempty"`
	// PromptBytes is the prompt's full length in bytes when Prompt holds
	// only its first bytes (a prompt over MaxFieldBytes, or a child's
	// prompt message over the session form's MaxMessageTextBytes); 0 while
	// Prompt is whole.
	PromptBytes int64 `json:"prompt_bytes,omitempty"`
	// ResultBytes is the answer's full length when ResultText is cut, as
	// PromptBytes (a child's answer over MaxMessageTextBytes included).
	ResultBytes int64 `json:"result_bytes,omitempty"`
	// IsAsync marks a subagent that runs detached (background). Sticky:
	// once true it never returns to false.
	IsAsync bool `json:"is_async,omitempty"`
	// OutputFile is where a Claude async subagent writes its output.
	OutputFile string `json:"output_file,omitempty"`
	// CanReadOutputFile is sticky true once Claude reports it.
	CanReadOutputFile bool `json:"can_read_output_file,omitempty"`
	// ErrorMessage is the failure's reason as the agent gave it (a child
	// session's idle error message); kept once learned.
	ErrorMessage string `json:"error_message,omitempty"`
	// EarlierResults are the answers a child gave before its latest one
	// (ResultText), oldest first, at most MaxEarlierResults.
	EarlierResults []string `json:"earlier_results,omitempty"`
	// Live is true while a child session runs (running or
	// requires_action), again after it finished when it is reused; never
	// for a replayed or unknown child.
	Live bool `json:"live,omitempty"`
}

// BackgroundWork is the liveness record emitted beside SubagentTask for
// dialects that ask for it. False booleans are omitted.
type BackgroundWork struct {
	// Kind is always BackgroundWorkKindSubagent.
	Kind string `json:"kind"`
	// WorkID is the subagent's agent id ("" while unknown).
	WorkID string `json:"work_id"`
	// Detached mirrors SubagentTask.IsAsync.
	Detached bool `json:"detached,omitempty"`
	// Ended is true once the tool status is terminal, except while the
	// payload status is "async_launched" (the child still runs).
	Ended bool `json:"ended,omitempty"`
}

// Clone returns a deep copy of t (nil stays nil), including a fresh
// ToolUseCount pointer, so later merges cannot change the copy.
func (t *SubagentTask) Clone() *SubagentTask {
	if t == nil {
		return nil
	}
	c := *t
	c.EarlierResults = slices.Clone(t.EarlierResults)
	if t.ToolUseCount != nil {
		n := *t.ToolUseCount
		c.ToolUseCount = &n
	}
	return &c
}

// Clone returns a deep copy of p (nil stays nil).
func (p *Payload) Clone() *Payload {
	if p == nil {
		return nil
	}
	c := Payload{Kind: p.Kind, SubagentTask: p.SubagentTask.Clone()}
	if p.BackgroundWork != nil {
		bw := *p.BackgroundWork
		c.BackgroundWork = &bw
	}
	return &c
}

// ToolStatus is the card's tool status, mapped from ACP's tool-call status
// (pending, in_progress, completed, failed) and from child-session states.
// It is distinct from SubagentTask.Status.
type ToolStatus string

// Tool statuses. ToolStatusUnchanged ("") on an event means the frame said
// nothing about the status.
const (
	ToolStatusUnchanged  ToolStatus = ""
	ToolStatusPending    ToolStatus = "pending"
	ToolStatusInProgress ToolStatus = "in_progress"
	ToolStatusComplete   ToolStatus = "complete"
	ToolStatusError      ToolStatus = "error"
	ToolStatusCancelled  ToolStatus = "cancelled"
	// ToolStatusUnknown is a child session the agent no longer tracks (the
	// state "unknown"): neither running nor finished nor failed. It ranks
	// with in_progress, so the child may run again, and never ends a card.
	ToolStatusUnknown ToolStatus = "unknown"
)

// Terminal reports whether s is complete, error or cancelled.
func (s ToolStatus) Terminal() bool {
	return s == ToolStatusComplete || s == ToolStatusError || s == ToolStatusCancelled
}

// rank orders statuses: unrecognised/unchanged 0, pending 1, in_progress
// and unknown 2, terminal 3.
func (s ToolStatus) rank() int {
	switch {
	case s == ToolStatusPending:
		return 1
	case s == ToolStatusInProgress || s == ToolStatusUnknown:
		return 2
	case s.Terminal():
		return 3
	}
	return 0
}

// MapACPToolStatus maps an ACP tool-call status to a ToolStatus; ok is false
// for any other value (the frame is then treated as status-less).
func MapACPToolStatus(s string) (ToolStatus, bool) {
	switch s {
	case "pending":
		return ToolStatusPending, true
	case "in_progress":
		return ToolStatusInProgress, true
	case "completed":
		return ToolStatusComplete, true
	case "failed":
		return ToolStatusError, true
	}
	return ToolStatusUnchanged, false
}

// outcomeStatus maps an agent's word for how a child ended (a Codex agent
// status or activity, a Qwen Code background task's status) onto a tool
// status: ok is false for a word that ends nothing (running, pendingInit,
// started, background, …).
func outcomeStatus(word string) (ToolStatus, bool) {
	switch word {
	case "completed", "complete":
		return ToolStatusComplete, true
	case "errored", "error", "failed", "notFound":
		return ToolStatusError, true
	case "interrupted", "shutdown", "cancelled":
		return ToolStatusCancelled, true
	}
	return ToolStatusUnchanged, false
}
