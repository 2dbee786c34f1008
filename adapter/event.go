package adapter

import (
	"encoding/json"
	"slices"
)

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	// EventToolCall is the first event for a card (a tool call or an
	// announced child session).
	EventToolCall EventKind = "tool_call"
	// EventToolUpdate is every later change to a card, including a late
	// enrichment of a completed one.
	EventToolUpdate EventKind = "tool_update"
	// EventSessionMessage reports an inter-session message view (the
	// subagent-session form's session_message and session_message_chunk).
	// ToolCallID is empty; Message is set.
	EventSessionMessage EventKind = "session_message"
)

// Event is what the Tracker hands to the consumer callback. Every event is a
// snapshot: Payload, Child, Message and SessionRefs are deep copies that no
// later frame changes.
//
// A tool call that is not a subagent still gets events (with Payload nil),
// so that a consumer can nest children under their parent card.
type Event struct {
	// Kind is tool_call, tool_update or session_message.
	Kind EventKind `json:"kind"`
	// SessionID is the session the card or message belongs to: the
	// notification's session for tool calls, the parent's for a child
	// session card.
	SessionID string `json:"session_id"`
	// ParentSessionID is set when SessionID is a known child session.
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// ToolCallID is the card key: the tool call id as emitted (Codex may
	// derive one, see the codex dialect), or the child session id for a
	// child session card.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ParentToolCallID nests this card under another; "" at top level.
	ParentToolCallID string `json:"parent_tool_call_id"`
	// Title is the stored title (the latest non-empty one).
	Title string `json:"title"`
	// ToolKind is the tool call's ACP kind (read, edit, execute, think,
	// …), the latest non-empty one reported; "" when none was. It is not
	// part of the event's JSON form, which the adapters' goldens and the
	// identity suite pin.
	ToolKind string `json:"-"`
	// Status is the card's tool status after the monotonic guard, or
	// ToolStatusUnchanged when the frame said nothing about it. Once a card
	// is terminal every event carries that terminal status.
	Status ToolStatus `json:"status"`
	// Payload is the normalised subagent payload; nil when the card is not
	// a subagent.
	Payload *Payload `json:"normalized"`
	// Child describes the child session behind a subagent-session card.
	Child *ChildSession `json:"child,omitempty"`
	// Message is the message view of an EventSessionMessage.
	Message *MessageView `json:"message,omitempty"`
	// SessionRefs lists the `session` contents of the tool call's current
	// content, each resolved against the known child sessions.
	SessionRefs []SessionRef `json:"session_refs,omitempty"`
}

// Clone returns a deep copy of e.
func (e Event) Clone() Event {
	e.Payload = e.Payload.Clone()
	e.Child = e.Child.Clone()
	e.Message = e.Message.Clone()
	e.SessionRefs = slices.Clone(e.SessionRefs)
	return e
}

// Size estimates the bytes e holds: the length of every string and raw
// JSON value in it, nested ones included. A consumer that keeps events (a
// view, a buffer) can bound its memory with it; the Tracker caps each field
// at MaxFieldBytes, so one event stays within a few MiB.
func (e Event) Size() int {
	n := len(e.Kind) + len(e.Status) + len(e.SessionID) + len(e.ParentSessionID) + len(e.ToolCallID) + len(e.ParentToolCallID) + len(e.Title) + len(e.ToolKind)
	if p := e.Payload; p != nil {
		n += len(p.Kind)
		if t := p.SubagentTask; t != nil {
			n += len(t.Description) + len(t.Prompt) + len(t.SubagentType) + len(t.Status) + len(t.AgentID) +
				len(t.Model) + len(t.ChildSessionID) + len(t.ResultText) + len(t.OutputFile) + len(t.ErrorMessage)
			for _, r := range t.EarlierResults {
				n += len(r)
			}
		}
		if w := p.BackgroundWork; w != nil {
			n += len(w.Kind) + len(w.WorkID)
		}
	}
	if c := e.Child; c != nil {
		n += len(c.SessionID) + len(c.ParentSessionID) + len(c.Title) + len(c.Description) + len(c.State) +
			len(c.StopReason) + len(c.StateRaw) + len(c.Cwd) + len(c.Usage) + len(c.ErrorMessage)
		for _, d := range c.AdditionalDirectories {
			n += len(d)
		}
	}
	if m := e.Message; m != nil {
		n += len(m.SessionID) + len(m.MessageID) + len(m.SenderSessionID) + len(m.RecipientSessionID) +
			len(m.SenderMessageID) + len(m.RecipientMessageID) + len(m.Direction) + len(m.Text) +
			len(m.LinkedSessionID) + len(m.LinkedMessageID)
	}
	for _, r := range e.SessionRefs {
		n += len(r.SessionID)
	}
	return n
}

// ChildSession is the client-side view of a child session announced by
// subagent_update (subagent-session form), after patch semantics.
type ChildSession struct {
	// SessionID is the child's session id.
	SessionID string `json:"session_id"`
	// ParentSessionID is the session whose subagent_update announced it.
	ParentSessionID string `json:"parent_session_id"`
	// Title is the parent's display title for the child.
	Title string `json:"title,omitempty"`
	// Description is the parent's display description (the child's role).
	Description string `json:"description,omitempty"`
	// State is the last state discriminator, verbatim ("running", "idle",
	// "requires_action", "unknown", or an unrecognised string); "" means no
	// confirmed state (never reported, or reported null).
	State string `json:"state,omitempty"`
	// StopReason is an idle state's stop reason, verbatim.
	StopReason string `json:"stop_reason,omitempty"`
	// StateRaw keeps the state object verbatim when State is not one of
	// the four known discriminators.
	StateRaw json.RawMessage `json:"state_raw,omitempty"`
	// Live is true only while the last confirmed state is running or
	// requires_action. unknown, null and unrecognised states are never
	// live, and neither is a child after its parent was loaded again.
	Live bool `json:"live"`
	// CanCancel is true only while the child advertises capabilities.cancel
	// as an object and is not idle; this is the only mutation a client may
	// invoke on it. A finished child is never cancellable, whatever a
	// replayed or later grant says, until it runs again.
	CanCancel bool `json:"can_cancel"`
	// ErrorCode and ErrorMessage are an idle state's error object (with
	// stopReason "error"): the failure's JSON-RPC code and message.
	ErrorCode    int    `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	// cancelGranted is the last capabilities' cancel grant, before the
	// idle rule of CanCancel.
	cancelGranted bool
	// air marks a child of the AIR form (subagent_spawned), whose states
	// are AIR's words.
	air bool
	// Cwd is the child's working directory ("" = inherits the parent's).
	Cwd string `json:"cwd,omitempty"`
	// AdditionalDirectories is the last reported list (nil = never set or
	// cleared; empty = none).
	AdditionalDirectories []string `json:"additional_directories,omitempty"`
	// Usage is the idle state's usage object, verbatim.
	Usage json.RawMessage `json:"usage,omitempty"`
}

// answered reports a child that finished with an answer: idle after
// end_turn (the ACP form), or completed (AIR).
func (c *ChildSession) answered() bool {
	if c.air {
		return c.State == "completed"
	}
	return c.State == "idle" && c.StopReason == "end_turn"
}

// refreshCancel derives CanCancel from the grant and the state.
func (c *ChildSession) refreshCancel() {
	c.CanCancel = c.cancelGranted && c.State != "idle"
}

// Clone returns a deep copy of c (nil stays nil).
func (c *ChildSession) Clone() *ChildSession {
	if c == nil {
		return nil
	}
	d := *c
	d.StateRaw = slices.Clone(c.StateRaw)
	d.AdditionalDirectories = slices.Clone(c.AdditionalDirectories)
	d.Usage = slices.Clone(c.Usage)
	return &d
}

// Message directions of a MessageView.
const (
	// MessageOutgoing: the transcript's own session sent it.
	MessageOutgoing = "outgoing"
	// MessageIncoming: the transcript's own session received it from a
	// named sender.
	MessageIncoming = "incoming"
	// MessageUnattributed: no sender is known. Shown apart as an
	// inter-session entry: never a user message, never the parent's.
	MessageUnattributed = "unattributed"
)

// MessageView is one view of an inter-session message in one transcript.
// Views in different transcripts are linked only through
// senderMessageId/recipientMessageId, never because their message ids are
// equal.
type MessageView struct {
	// SessionID is the transcript (the notification's session).
	SessionID string `json:"session_id"`
	// MessageID is local to the transcript.
	MessageID string `json:"message_id"`
	// SenderSessionID is the sending session, when known.
	SenderSessionID string `json:"sender_session_id,omitempty"`
	// RecipientSessionID is the receiving session, when known.
	RecipientSessionID string `json:"recipient_session_id,omitempty"`
	// SenderMessageID, on an incoming view, names the outgoing view in the
	// sender's transcript.
	SenderMessageID string `json:"sender_message_id,omitempty"`
	// RecipientMessageID, on an outgoing view, names the incoming view in
	// the recipient's transcript.
	RecipientMessageID string `json:"recipient_message_id,omitempty"`
	// Direction is MessageOutgoing, MessageIncoming or MessageUnattributed.
	Direction string `json:"direction"`
	// Text is the message's text content blocks joined with "\n".
	Text string `json:"text"`
	// LinkedSessionID is the transcript of the other view, once the link
	// is established.
	LinkedSessionID string `json:"linked_session_id,omitempty"`
	// LinkedMessageID is the other view's message id, once linked.
	LinkedMessageID string `json:"linked_message_id,omitempty"`
	// heldBeforeLoad marks a view held when its transcript was loaded
	// again: chunks the load replays for it are already in its text.
	heldBeforeLoad bool
	// fullBytes is the text's full length when Text holds only its first
	// MaxMessageTextBytes (0 when whole).
	fullBytes int64
}

// textBytes is the full length of the view's text, cut or not.
func (m *MessageView) textBytes() int64 {
	if m.fullBytes > 0 {
		return m.fullBytes
	}
	return int64(len(m.Text))
}

// Clone returns a copy of m (nil stays nil).
func (m *MessageView) Clone() *MessageView {
	if m == nil {
		return nil
	}
	d := *m
	return &d
}

// SessionRef is a `session` tool-call content item. Known is true only when
// SessionID names a child announced on this connection; an unknown reference
// is shown unavailable and grants nothing.
type SessionRef struct {
	// SessionID is the referenced session.
	SessionID string `json:"session_id"`
	// Known reports whether the session is an announced child.
	Known bool `json:"known"`
}
