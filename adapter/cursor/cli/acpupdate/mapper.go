// Package acpupdate maps the Cursor CLI runner's events onto ACP session
// updates, so that the subagent model, the terminal view and persistence
// serve CLI turns exactly like ACP turns.
//
// Mapping:
//
//	assistant_text      → agent_message_chunk (text)
//	thinking_delta      → agent_thought_chunk (text)
//	tool_started        → tool_call (kind, title, status in_progress, rawInput, locations)
//	tool_completed      → tool_call_update (status completed or failed, rawOutput,
//	                      text content for a diff or a decline); a completion whose
//	                      start was never seen becomes a tool_call with the final status
//	session_started, thinking_completed, status, idle_warning, truncated
//	                    → nothing: they describe the runner, not agent output
//
// Finish closes tool calls that were still open when the turn ended, so no
// card stays in progress after a failed or stopped turn.
package acpupdate

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli"
)

// Mapper converts the events of one session's turns. It is not safe for
// concurrent use; the runner delivers events on one goroutine.
type Mapper struct {
	session acp.SessionId
	open    map[string]bool // announced, not yet completed
	order   []string
}

// New returns a Mapper producing notifications for session.
func New(session acp.SessionId) *Mapper {
	return &Mapper{session: session, open: map[string]bool{}}
}

func (m *Mapper) note(u acp.SessionUpdate) acp.SessionNotification {
	return acp.SessionNotification{SessionId: m.session, Update: u}
}

// Map returns the notifications for one runner event (possibly none).
func (m *Mapper) Map(ev cli.Event) []acp.SessionNotification {
	switch ev.Kind {
	case cli.EventAssistantText:
		if ev.Text == "" {
			return nil
		}
		return []acp.SessionNotification{m.note(acp.UpdateAgentMessageText(ev.Text))}
	case cli.EventThinkingDelta:
		if ev.Text == "" {
			return nil
		}
		return []acp.SessionNotification{m.note(acp.UpdateAgentThoughtText(ev.Text))}
	case cli.EventToolStarted:
		if ev.Tool == nil {
			return nil
		}
		return []acp.SessionNotification{m.note(m.start(ev.Tool, acp.ToolCallStatusInProgress))}
	case cli.EventToolCompleted:
		if ev.Tool == nil {
			return nil
		}
		return []acp.SessionNotification{m.note(m.complete(ev.Tool))}
	}
	return nil
}

// Finish marks every tool call still open as failed when the turn did not
// succeed (a successful turn leaves them as the CLI reported them).
func (m *Mapper) Finish(res cli.Result) []acp.SessionNotification {
	var out []acp.SessionNotification
	for _, id := range m.order {
		if !m.open[id] {
			continue
		}
		delete(m.open, id)
		if res.Success() {
			continue
		}
		out = append(out, m.note(acp.UpdateToolCall(acp.ToolCallId(id),
			acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateRawOutput(map[string]any{"turn": string(res.Class)}))))
	}
	m.order = m.order[:0]
	return out
}

func (m *Mapper) start(t *cli.ToolEvent, status acp.ToolCallStatus) acp.SessionUpdate {
	if status == acp.ToolCallStatusInProgress {
		if !m.open[t.CallID] {
			m.order = append(m.order, t.CallID)
		}
		m.open[t.CallID] = true
	}
	opts := []acp.ToolCallStartOpt{acp.WithStartKind(Kind(t.Name)), acp.WithStartStatus(status)}
	if len(t.Args) > 0 {
		opts = append(opts, acp.WithStartRawInput(json.RawMessage(t.Args)))
	}
	if t.Path != "" {
		opts = append(opts, acp.WithStartLocations([]acp.ToolCallLocation{{Path: t.Path}}))
	}
	return acp.StartToolCall(acp.ToolCallId(t.CallID), Title(t), opts...)
}

func (m *Mapper) complete(t *cli.ToolEvent) acp.SessionUpdate {
	status := Status(t.Status)
	var content []acp.ToolCallContent
	switch {
	case t.Status == cli.ToolDeclined:
		content = append(content, acp.ToolContent(acp.TextBlock("Declined by Cursor's permission policy.")))
	case t.Diff != "":
		content = append(content, acp.ToolContent(acp.TextBlock(t.Diff)))
	}
	raw := map[string]any{"outcome": t.Outcome}
	if len(t.Output) > 0 {
		raw["result"] = json.RawMessage(t.Output)
	}
	if !m.open[t.CallID] {
		// Never announced: send the whole call with its final status.
		u := m.start(t, status)
		u.ToolCall.RawOutput = raw
		u.ToolCall.Content = content
		return u
	}
	delete(m.open, t.CallID)
	opts := []acp.ToolCallUpdateOpt{acp.WithUpdateStatus(status), acp.WithUpdateRawOutput(raw)}
	if len(content) > 0 {
		opts = append(opts, acp.WithUpdateContent(content))
	}
	return acp.UpdateToolCall(acp.ToolCallId(t.CallID), opts...)
}

// Status maps a runner tool status to ACP: a decline is a failure (the tool
// did not run), a neutral close is a completion.
func Status(s cli.ToolStatus) acp.ToolCallStatus {
	switch s {
	case cli.ToolRunning:
		return acp.ToolCallStatusInProgress
	case cli.ToolFailed, cli.ToolDeclined:
		return acp.ToolCallStatusFailed
	default:
		return acp.ToolCallStatusCompleted
	}
}

// Kind maps a Cursor tool name (the tool_call key without "ToolCall") to an
// ACP tool kind.
func Kind(name string) acp.ToolKind {
	switch strings.ToLower(name) {
	case "read", "readfile", "readlints":
		return acp.ToolKindRead
	case "write", "edit", "applypatch", "editnotebook", "multiedit":
		return acp.ToolKindEdit
	case "delete":
		return acp.ToolKindDelete
	case "move", "rename":
		return acp.ToolKindMove
	case "shell", "bash", "terminal":
		return acp.ToolKindExecute
	case "glob", "grep", "ls", "semanticsearch", "codebasesearch", "search", "filesearch":
		return acp.ToolKindSearch
	case "webfetch", "fetch", "websearch":
		return acp.ToolKindFetch
	case "think", "todo", "updatetodos", "todowrite":
		return acp.ToolKindThink
	}
	return acp.ToolKindOther
}

// Title is a short human-readable title for a tool call.
func Title(t *cli.ToolEvent) string {
	switch {
	case t.Command != "":
		return "Run " + clip(t.Command)
	case t.Path != "":
		return capitalise(clip(t.Name)) + " " + clip(t.Path)
	}
	return capitalise(clip(t.Name))
}

func capitalise(s string) string {
	if s == "" {
		return "Tool"
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		cut := 120
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		return s[:cut] + "…"
	}
	return s
}

// Forward returns a cli.Turn.OnEvent function that maps each event and
// hands the notifications to send, in order.
func (m *Mapper) Forward(send func(acp.SessionNotification)) func(cli.Event) {
	return func(ev cli.Event) {
		for _, n := range m.Map(ev) {
			send(n)
		}
	}
}
