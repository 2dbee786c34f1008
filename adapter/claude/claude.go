// Package claude is the Claude Code dialect (claude-agent-acp) of the
// subagent adapter, in both of the agent's forms:
//
//   - the legacy form, which claude-agent-acp sends to a client that does
//     not declare clientCapabilities.subagents: the Agent/Task tool call
//     carries _meta.claudeCode (toolName, parentToolUseId) and the
//     post-tool-use hook's toolResponse with the subagent's results;
//   - the subagent-session form, when the consumer opts in by declaring
//     clientCapabilities.subagents: children are sessions of their own,
//     announced by subagent_update, talking through session_message views.
//
// Both map onto the same adapter.Payload, so one card model serves both.
// Importing the package registers the dialect as "claude" (also chosen for
// an agentInfo.name containing "claude" or "mock-agent").
package claude

import (
	"strings"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

func init() {
	adapter.Register(adapter.DialectClaude, func() adapter.Dialect { return NewDialect(Options{}) })
}

// StatusAsyncLaunched is the toolResponse status of a subagent launched in
// the background: the Agent call is finished while the child runs on.
const StatusAsyncLaunched = "async_launched"

// valueTypeFromAgentType marks a card whose subagent_type came from
// toolResponse.agentType, so that a later rawInput.subagent_type replaces it.
const valueTypeFromAgentType = "claude.typeFromAgentType"

// Dialect is the Claude dialect for one connection. The subagent-session
// form is the adapter core's; Claude adds its background-launch receipt and
// names a child session by the subagent's agent id (adapter.ChildSessionDialect).
type Dialect struct {
	adapter.Base
	limits Limits
}

// Options configure a Claude dialect. The zero Options take the defaults.
type Options struct {
	// Limits bound what the subagent-session form keeps (zero fields take
	// the defaults).
	Limits Limits
}

// NewDialect returns a Claude dialect for one connection. Pass it as
// adapter.Config.Dialect to set the limits; otherwise the Tracker makes one
// with the defaults when the agent is Claude.
func NewDialect(opts Options) *Dialect {
	return &Dialect{limits: opts.Limits}
}

// Name returns "claude".
func (d *Dialect) Name() string { return adapter.DialectClaude }

// Traits: Claude subagents feed liveness accounting (background_work).
func (d *Dialect) Traits() adapter.Traits { return adapter.Traits{BackgroundWork: true} }

// Apply maps the post-tool-use hook's _meta.claudeCode.toolResponse onto
// the payload (legacy form). A toolResponse that is not an object is
// ignored; so is rawOutput, which for Claude is the raw tool result (a
// string or an array of blocks), never the subagent's result.
func (d *Dialect) Apply(tx *adapter.Tx, c *adapter.Card, f *adapter.ToolFrame) {
	ApplyToolResponse(c, f)
}

// ApplyToolResponse applies _meta.claudeCode.toolResponse of f to the card:
//
//   - overwrite when non-empty: agentId, status, outputFile, resolvedModel;
//   - overwrite when > 0: totalDurationMs, totalTokens;
//   - set when a valid number, 0 included: totalToolUseCount;
//   - sticky: isAsync, canReadOutputFile;
//   - fill-if-empty: agentType (a later rawInput.subagent_type still
//     replaces it), and the text blocks of content joined with "\n" (blank
//     and non-text blocks skipped) as the result text.
//
// A status-less frame whose toolResponse says async_launched completes the
// tool call. usage and toolStats are not read.
func ApplyToolResponse(c *adapter.Card, f *adapter.ToolFrame) {
	task := c.Task()
	if task == nil {
		return
	}
	r := f.Read
	// rawInput's subagent_type (what was asked for) outranks agentType
	// whatever the arrival order, so every order gives one payload.
	if c.Value(valueTypeFromAgentType) == true {
		if typ := r.String(f.RawInputMap(), "subagent_type"); typ != "" {
			task.SubagentType = typ
			c.SetValue(valueTypeFromAgentType, false)
		}
	}
	cc := r.Map(f.Meta, "claudeCode")
	tr := r.Map(cc, "toolResponse")
	if tr == nil {
		return
	}
	adapter.OverwriteString(&task.AgentID, r.String(tr, "agentId"))
	status := r.String(tr, "status")
	adapter.OverwriteString(&task.Status, status)
	adapter.OverwriteString(&task.OutputFile, r.String(tr, "outputFile"))
	adapter.OverwriteString(&task.Model, r.String(tr, "resolvedModel"))
	n, ok := r.Int(tr, "totalDurationMs")
	adapter.OverwritePositive(&task.DurationMs, n, ok)
	n, ok = r.Int(tr, "totalTokens")
	adapter.OverwritePositive(&task.TotalTokens, n, ok)
	n, ok = r.Int(tr, "totalToolUseCount")
	adapter.SetCount(&task.ToolUseCount, n, ok)
	adapter.SetSticky(&task.IsAsync, r.True(tr, "isAsync"))
	adapter.SetSticky(&task.CanReadOutputFile, r.True(tr, "canReadOutputFile"))
	if adapter.FillString(&task.SubagentType, r.String(tr, "agentType")) {
		c.SetValue(valueTypeFromAgentType, true)
	}
	adapter.FillString(&task.ResultText, textBlocks(r, r.Slice(tr, "content")))
	if status == StatusAsyncLaunched && f.Status == "" {
		c.SetStatus(adapter.ToolStatusComplete)
	}
}

// textBlocks joins the text of {"type":"text","text":…} blocks with "\n",
// verbatim, skipping blank and non-text blocks and the tools-used note.
func textBlocks(r *adapter.FieldReader, blocks []any) string {
	var parts []string
	for _, b := range blocks {
		m := adapter.AsMap(b)
		if m == nil || r.String(m, "type") != "text" {
			continue
		}
		text := r.String(m, "text")
		if strings.TrimSpace(text) == "" || isToolsUsedNote(text) {
			continue
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "\n")
}

// isToolsUsedNote reports a content block that is only the note
// claude-agent-acp 0.101.0 puts before a subagent's answer when the
// subagent used tools: <tools-used-before-summary>NAMES</tools-used-before-summary>.
// It names the tools; it is not part of the answer.
func isToolsUsedNote(text string) bool {
	const open, closing = "<tools-used-before-summary>", "</tools-used-before-summary>"
	t := strings.TrimSpace(text)
	return len(t) >= len(open)+len(closing) && strings.HasPrefix(t, open) && strings.HasSuffix(t, closing) &&
		!strings.Contains(t[len(open):len(t)-len(closing)], "<")
}

// ChildAgentID: claude-agent-acp names a child session by the subagent's
// agent id.
func (d *Dialect) ChildAgentID(childSessionID string) string { return childSessionID }

// IsLaunchReceipt is Claude's receipt of a background launch.
func (d *Dialect) IsLaunchReceipt(text string) bool { return IsLaunchReceipt(text) }

// ApplyChildDescription: claude-agent-acp describes a child by its agent
// type (general-purpose, Explore, …).
func (d *Dialect) ApplyChildDescription(task *adapter.SubagentTask, description string) {
	adapter.OverwriteString(&task.SubagentType, description)
}

// SessionLimits are the Options' limits.
func (d *Dialect) SessionLimits() adapter.SessionLimits { return d.limits }
