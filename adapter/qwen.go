package adapter

import (
	"regexp"

	acp "github.com/coder/acp-go-sdk"
)

// Qwen Code (qwen --acp): a subagent is the agent tool. Its launching
// tool_call carries _meta {toolName: "agent", subagentSessionReady: false};
// the model's tool call is first announced while it streams
// (_meta.phase "preparing", title "Agent", empty rawInput), then executed
// (title "Agent: <description>", rawInput {description, prompt,
// subagent_type, run_in_background}). A foreground child's own messages,
// thoughts and tool calls arrive on the parent's session: the tool calls
// tagged _meta {parentToolCallId: <launch>, subagentType, provenance:
// "subagent"}, the message and thought chunks (and the child's usage
// chunks) tagged parentToolCallId and subagentType. Progress is a
// tool_call_update on the launch {status: in_progress, content: [text],
// _meta: {subagentType, provenance: "subagent", subagentProgress: true}}.
// The completion's rawOutput is a task_execution record {subagentName,
// taskDescription, taskPrompt, executionMode, status, result,
// executionSummary {totalDurationMs, totalTokens, totalToolCalls, …},
// terminateReason}; its content repeats the result. A child cut short by
// session/cancel ends failed, status "failed", terminateReason "Failed to
// run subagent: Request was aborted.". A foreground child has no agent id
// and no child session id on the wire.
//
// A background child (run_in_background, Qwen's default for a top-level
// launch) sends nothing of its own: the launch completes at once, its
// record's executionMode "background" and status "background", its content
// a receipt naming "task_id: <id>". When it finishes, the parent's session
// gets an agent_message_chunk ("Background agent … completed.") whose
// _meta.backgroundTask {taskId, status, kind: "agent", toolUseId: <launch>}
// says so; the answer itself goes to the parent's model, not the wire.

// Qwen counters.
const (
	// CounterQwenChildText counts a child's message and thought chunks
	// sent on the parent's session: consumed, never the parent's.
	CounterQwenChildText = "qwen_child_text"
)

// qwenAgentTool is _meta.toolName of the launching call.
const qwenAgentTool = "agent"

// qwenReceipt matches the task id line of a background launch's receipt.
var qwenReceipt = regexp.MustCompile(`(?m)^task_id: ([^\s()]+)`)

// qwenDialect is the Qwen Code dialect.
type qwenDialect struct{ Base }

// Name returns "qwen".
func (qwenDialect) Name() string { return DialectQwen }

// Prepare nests a child's tool call under its launch, by
// _meta.parentToolCallId, and keeps a background launch's completion (a
// receipt: the child runs on) from ending its card.
func (qwenDialect) Prepare(_ *Tx, f *ToolFrame) bool {
	if p := QwenParentToolCallID(f.Read, f.Meta); p != "" && p != f.ToolCallID {
		f.Parent = p
	}
	if f.Status == string(acp.ToolCallStatusCompleted) && qwenBackgroundReceipt(f) {
		f.Status = ""
	}
	return true
}

// qwenBackgroundReceipt reports a frame whose task_execution record says
// the child was launched in the background and runs on.
func qwenBackgroundReceipt(f *ToolFrame) bool {
	out := f.RawOutputMap()
	r := f.Read
	return out != nil && r.String(out, "type") == "task_execution" &&
		r.String(out, "executionMode") == "background" && r.String(out, "status") == "background"
}

// Recognize makes an executed agent tool call a subagent: _meta.toolName
// "agent", unless the frame only announces a call still streaming from the
// model (phase "preparing" without a prompt), which may yet be discarded.
func (qwenDialect) Recognize(_ *Tx, _ *Card, f *ToolFrame) bool {
	r := f.Read
	if r.String(f.Meta, "toolName") != qwenAgentTool {
		return false
	}
	if r.String(f.Meta, "phase") == "preparing" {
		_, prompted := f.RawInputMap()["prompt"].(string)
		return prompted
	}
	return true
}

// Apply reads the task_execution record of rawOutput, the progress
// updates' subagent type, and a completion's result.
func (qwenDialect) Apply(_ *Tx, c *Card, f *ToolFrame) {
	task := c.Task()
	r := f.Read
	if r.String(f.Meta, "provenance") == "subagent" {
		FillString(&task.SubagentType, r.String(f.Meta, "subagentType"))
	}
	// A background launch's completion reaches Apply without its status
	// (Prepare): it is still the completed call whose content is read.
	receipt := qwenBackgroundReceipt(f)
	completed := f.Status == string(acp.ToolCallStatusCompleted) || receipt
	answered := completed // the content may be the child's answer
	out := f.RawOutputMap()
	if out != nil && r.String(out, "type") == "task_execution" {
		FillString(&task.Description, r.String(out, "taskDescription"))
		FillString(&task.Prompt, r.String(out, "taskPrompt"))
		FillString(&task.SubagentType, r.String(out, "subagentName"))
		SetSticky(&task.IsAsync, r.String(out, "executionMode") == "background")
		status := r.String(out, "status")
		OverwriteString(&task.Status, status)
		answered = answered && (status == "completed" || status == "background")
		reason := r.String(out, "terminateReason")
		switch {
		case completed && status == "completed":
			FillString(&task.ResultText, r.String(out, "result"))
		case f.Status == string(acp.ToolCallStatusFailed):
			// A cancelled child ends failed: "Failed to run subagent:
			// Request was aborted."
			FillString(&task.ErrorMessage, reason)
		}
		if sum := r.Map(out, "executionSummary"); sum != nil {
			d, ok := r.Int(sum, "totalDurationMs")
			OverwritePositive(&task.DurationMs, d, ok)
			n, ok := r.Int(sum, "totalTokens")
			OverwritePositive(&task.TotalTokens, n, ok)
			n, ok = r.Int(sum, "totalToolCalls")
			SetCount(&task.ToolUseCount, n, ok)
		}
	}
	if receipt && !c.Terminal() {
		// Launched in the background: the card runs past its turn
		// until the parent's notice settles it.
		task.Live = true
		c.OutliveTurns()
	}
	switch text := ContentText(f.Content); {
	case !answered:
	case task.IsAsync:
		// A background launch's content is its receipt, never the
		// answer.
		if m := qwenReceipt.FindStringSubmatch(text); m != nil {
			OverwriteString(&task.AgentID, m[1])
		}
	default:
		// The content repeats the child's final message.
		FillString(&task.ResultText, text)
	}
}

// HandleUpdate consumes a child's message and thought chunks (and its
// usage chunks) sent on the parent's session: they are the child's, whose
// final message the launch's completion carries as the result.
// A parent's notice that a background child finished
// (_meta.backgroundTask) gives its card the task id and the final status,
// which ends the card (completed, failed, cancelled), also after the
// turn's answer; the notice itself stays the parent's text.
func (qwenDialect) HandleUpdate(tx *Tx, n *acp.SessionNotification) bool {
	if _, child := qwenChildChunk(n); child {
		tx.Count(CounterQwenChildText, 1)
		return true
	}
	if chunk := n.Update.AgentMessageChunk; chunk != nil {
		qwenBackgroundNotice(tx, string(n.SessionId), chunk.Meta)
	}
	return false
}

// qwenBackgroundNotice applies a _meta.backgroundTask notice to the
// launch's card, when it is held and is a subagent.
func qwenBackgroundNotice(tx *Tx, sessionID string, meta map[string]any) {
	var r FieldReader
	defer func() {
		if r.Bad > 0 {
			tx.Count(CounterBadFields, int64(r.Bad))
		}
	}()
	bt := r.Map(meta, "backgroundTask")
	if bt == nil || r.String(bt, "kind") != qwenAgentTool {
		return
	}
	c, ok := tx.Card(sessionID, r.String(bt, "toolUseId"))
	if !ok || !c.IsSubagent() {
		return
	}
	task := c.Task()
	word := r.String(bt, "status")
	changed := OverwriteString(&task.AgentID, r.String(bt, "taskId"))
	if OverwriteString(&task.Status, word) {
		changed = true
	}
	if ts, ends := outcomeStatus(word); ends {
		// The child's end, also when it comes after its turn's answer:
		// the card was kept for it (OutliveTurns).
		if c.SetStatus(ts) || task.Live {
			changed = true
		}
		task.Live = false
		c.EndOutliving()
	}
	if changed {
		tx.Emit(EventToolUpdate, c)
	}
}

// ChildUpdateText reports a chunk tagged with a launching call as that
// child's text.
func (qwenDialect) ChildUpdateText(_ *Tx, n *acp.SessionNotification) (string, bool) {
	return qwenChildChunk(n)
}

// qwenChildChunk reports an agent message or thought chunk that names its
// launching call in _meta.parentToolCallId, and that call's id.
func qwenChildChunk(n *acp.SessionNotification) (string, bool) {
	var meta map[string]any
	switch u := &n.Update; {
	case u.AgentMessageChunk != nil:
		meta = u.AgentMessageChunk.Meta
	case u.AgentThoughtChunk != nil:
		meta = u.AgentThoughtChunk.Meta
	default:
		return "", false
	}
	var r FieldReader
	p := QwenParentToolCallID(&r, meta)
	return p, p != ""
}

// QwenParentToolCallID returns the launching call a Qwen Code frame names
// in _meta.parentToolCallId ("" when absent, empty or not a string).
func QwenParentToolCallID(r *FieldReader, meta map[string]any) string {
	return r.String(meta, "parentToolCallId")
}

func init() { Register(DialectQwen, func() Dialect { return qwenDialect{} }) }
