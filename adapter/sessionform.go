package adapter

// The ACP subagent-session form (clientCapabilities.subagents), one
// implementation for every dialect: a child announced by subagent_update
// in its parent's session, its state (running, requires_action, idle with a
// stop reason and error, unknown, or a vendor state kept verbatim), its
// capabilities, the session_message views and their links, the child's own
// agent messages (its answers), and `session` tool-call content. It is
// driven by the wire form alone; a dialect adds only its agent's own
// reading through ChildSessionDialect (Claude's background-launch receipt,
// the agent id behind a child session id).

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// Default bounds of the subagent-session childRegistry (per connection); see
// SessionLimits.
const (
	// MaxChildren bounds the announced children remembered; the oldest is
	// forgotten beyond it.
	MaxChildren = 1024
	// MaxMessages bounds the message views remembered; the oldest is
	// forgotten beyond it.
	MaxMessages = 4096
	// MaxMessageTextBytes caps one message view's text; longer text keeps
	// its first MaxMessageTextBytes bytes (cut on a UTF-8 boundary). Every
	// chunk re-snapshots the whole text, so the cap also bounds the work
	// one chunk can cause.
	MaxMessageTextBytes = 256 << 10
	// MaxMessageBytes bounds the text all message views of a connection
	// hold; the oldest views are forgotten beyond it.
	MaxMessageBytes = 16 << 20
)

// Counters of the subagent-session form.
const (
	CounterReplayedChunksIgnored = "replayed_chunks_ignored" // chunks replayed by a load for a finished child already held
	CounterEarlierResultsDropped = "earlier_results_dropped" // earlier answers beyond MaxEarlierResults
	CounterChildrenAnnounced     = "children_announced"
	CounterChildrenEvicted       = "children_evicted"
	CounterChildReparent         = "child_reparent_ignored" // subagent_update for a known child from another parent
	CounterBadSubagentUpdate     = "bad_subagent_update"    // no or self-referencing session id
	CounterBadState              = "bad_state"              // a state union with no variant
	CounterBadMessage            = "bad_session_message"    // no message id
	CounterChunkWithoutMessage   = "chunk_without_message"  // chunk for a message not seen: kept apart
	CounterMessagesEvicted       = "messages_evicted"       // message views forgotten by the bound
	CounterMessageTruncated      = "message_text_truncated" // text cut at MaxMessageTextBytes
)

// MaxEarlierResults bounds the earlier answers a child card keeps
// (SubagentTask.EarlierResults); the oldest is dropped beyond it.
const MaxEarlierResults = 16

// SessionLimits bound what the subagent-session form keeps per connection.
// Zero fields take the defaults (MaxChildren, MaxMessages,
// MaxMessageTextBytes, MaxMessageBytes).
type SessionLimits struct {
	// Children bounds the announced children remembered (MaxChildren).
	Children int
	// Messages bounds the message views remembered (MaxMessages).
	Messages int
	// MessageTextBytes caps one view's text (MaxMessageTextBytes).
	MessageTextBytes int
	// MessageBytes bounds the text of all views, and separately the text
	// of all child answers (MaxMessageBytes).
	MessageBytes int
}

func (l SessionLimits) withDefaults() SessionLimits {
	def := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	return SessionLimits{
		Children:         def(l.Children, MaxChildren),
		Messages:         def(l.Messages, MaxMessages),
		MessageTextBytes: def(l.MessageTextBytes, MaxMessageTextBytes),
		MessageBytes:     def(l.MessageBytes, MaxMessageBytes),
	}
}

// ChildSessionDialect is implemented by a dialect that adds its agent's own
// reading to the subagent-session form; the form itself is the adapter
// core's, the same for every dialect. Every method is called with the
// Tracker's lock held.
type ChildSessionDialect interface {
	// ChildAgentID returns the agent's id for the subagent behind
	// childSessionID, "" when the agent names none.
	ChildAgentID(childSessionID string) string
	// IsLaunchReceipt reports whether text, sent by a child into its
	// parent's transcript (or as its own answer), is the receipt of a
	// background launch rather than an answer: it marks the child
	// background and is never its result.
	IsLaunchReceipt(text string) bool
	// SessionLimits bound what the form keeps on this connection (zero
	// fields take the defaults).
	SessionLimits() SessionLimits
	// ApplyChildDescription maps a subagent_update description (the
	// parent's display description of the child) onto the payload.
	ApplyChildDescription(task *SubagentTask, description string)
}

// sessionForm is the subagent-session form of one connection: its childRegistry,
// its bounds and the dialect's additions (nil for a dialect with none). It
// is only touched under the Tracker's lock.
type sessionForm struct {
	sessions *childRegistry
	limits   SessionLimits
	hooks    ChildSessionDialect
}

// newSessionForm returns the form for a connection speaking dialect d.
func newSessionForm(d Dialect) *sessionForm {
	f := &sessionForm{sessions: newChildRegistry()}
	if h, ok := d.(ChildSessionDialect); ok {
		f.hooks = h
		f.limits = h.SessionLimits()
	}
	f.limits = f.limits.withDefaults()
	return f
}

// agentID is the dialect's agent id for a child session ("" = none).
func (d *sessionForm) agentID(child string) string {
	if d.hooks == nil {
		return ""
	}
	return d.hooks.ChildAgentID(child)
}

// childDescription maps a child's display description onto the payload:
// the dialect's reading, else the card's description until a title names
// it.
func (d *sessionForm) childDescription(task *SubagentTask, description string) {
	if d.hooks != nil {
		d.hooks.ApplyChildDescription(task, description)
		return
	}
	FillString(&task.Description, description)
}

// isReceipt reports a background-launch receipt in the dialect's terms.
func (d *sessionForm) isReceipt(text string) bool {
	return d.hooks != nil && d.hooks.IsLaunchReceipt(text)
}

// childRegistry holds what the subagent-session form announced on one
// connection: children by session id, and message views by transcript and
// message id.
type childRegistry struct {
	children map[string]string // child session id → parent session id
	order    []string          // announcement order, for the bound
	messages map[msgKey]*MessageView
	msgOrder []msgKey
	links    map[msgKey]msgKey  // established links, both directions
	text     int                // bytes of text held by all views
	answers  map[string]*answer // child session id → its latest agent message
	answered int                // bytes of text held by all answers
	serial   uint64             // the last answer's serial
	// cardOf maps a later AIR generation's session id to the card of its
	// task (the first generation's id); absent = the session's own card.
	cardOf map[string]string
}

// answer is the latest agent message a child sent in its own session: its
// final answer once the child is idle.
type answer struct {
	messageID string
	serial    uint64 // tells answers apart when the agent sends no message ids
	text      string
	bytes     int64 // the answer's full length; more than len(text) when cut
}

type msgKey struct{ session, message string }

func newChildRegistry() *childRegistry {
	return &childRegistry{children: map[string]string{}, messages: map[msgKey]*MessageView{}, links: map[msgKey]msgKey{},
		answers: map[string]*answer{}}
}

// clear forgets the children of sessionID (every child for "") and the
// message views of those transcripts.
func (r *childRegistry) clear(sessionID string) {
	if sessionID == "" {
		*r = *newChildRegistry()
		return
	}
	drop := map[string]bool{sessionID: true}
	for changed := true; changed; {
		changed = false
		for child, parent := range r.children {
			if drop[parent] && !drop[child] {
				drop[child] = true
				changed = true
			}
		}
	}
	for id := range drop {
		delete(r.children, id)
		delete(r.cardOf, id)
		r.forgetAnswer(id)
	}
	for k, v := range r.messages {
		if drop[k.session] {
			r.text -= len(v.Text)
			delete(r.messages, k)
		}
	}
	for k, o := range r.links {
		if drop[k.session] || drop[o.session] {
			delete(r.links, k)
		}
	}
}

// cleared forgets what the form holds for sessionID and its children
// (every session for ""). A forgotten child whose parent stays tracked
// (a child session the session bound evicted) loses its card in the
// parent too, as a child the children bound evicts does: a card the form
// no longer feeds would be held unbounded.
func (d *sessionForm) cleared(tx *Tx, sessionID string) {
	if sessionID != "" {
		if parent, ok := d.sessions.children[sessionID]; ok {
			if _, held := tx.t.sessions[parent]; held {
				key := sessionID
				if k, ok := d.sessions.cardOf[sessionID]; ok {
					key = k
				}
				if c, ok := tx.Card(parent, key); ok && c.Child() != nil && c.Child().SessionID == sessionID {
					tx.DropCard(parent, key)
				}
			}
		}
	}
	d.sessions.clear(sessionID)
}

// forgetAnswer drops the answer held for child.
func (r *childRegistry) forgetAnswer(child string) {
	if a := r.answers[child]; a != nil {
		r.answered -= len(a.text)
		delete(r.answers, child)
	}
}

// known reports whether id is an announced child.
func (r *childRegistry) known(id string) bool {
	_, ok := r.children[id]
	return ok
}

// handleSessionForm handles subagent_update, session_message,
// session_message_chunk, and a known child's model config update. Without
// the client capability the three subagent-session kinds are dropped and
// counted, changing nothing (the parent's title and transcript included).
func (d *sessionForm) handleSessionForm(tx *Tx, n *acp.SessionNotification) bool {
	u := &n.Update
	if kind, raw, ok := airUnknown(u); ok {
		d.handleAIR(tx, string(n.SessionId), kind, raw)
		return true
	}
	if u.SubagentUpdate == nil && u.SessionMessage == nil && u.SessionMessageChunk == nil {
		switch {
		case u.ConfigOptionUpdate != nil:
			return d.childModel(tx, string(n.SessionId), u.ConfigOptionUpdate)
		case u.AgentMessageChunk != nil:
			return d.childAnswer(tx, string(n.SessionId), u.AgentMessageChunk)
		}
		return false
	}
	if !tx.Connection().SubagentsDeclared {
		tx.Count(CounterSubagentFramesOff, 1)
		return true
	}
	parent := string(n.SessionId)
	switch {
	case u.SubagentUpdate != nil:
		d.subagentUpdate(tx, parent, u.SubagentUpdate)
	case u.SessionMessage != nil:
		d.sessionMessage(tx, parent, u.SessionMessage)
	default:
		d.sessionMessageChunk(tx, parent, u.SessionMessageChunk)
	}
	return true
}

// subagentUpdate applies one subagent_update with patch semantics: an
// omitted field is unchanged, null clears, a value replaces; capabilities
// are replaced whole.
func (d *sessionForm) subagentUpdate(tx *Tx, parent string, su *acp.SessionSubagentUpdate) {
	childID := string(su.SessionId)
	if childID == "" || childID == parent {
		tx.Count(CounterBadSubagentUpdate, 1)
		return
	}
	if p, ok := d.sessions.children[childID]; ok && p != parent {
		tx.Count(CounterChildReparent, 1)
		return
	}
	card, created := tx.NewCard(parent, childID)
	if !d.sessions.known(childID) {
		d.announce(tx, childID, parent)
	}
	task := card.MarkSubagent()
	view := card.Child()
	if view == nil {
		view = &ChildSession{SessionID: childID, ParentSessionID: parent}
		card.SetChild(view)
		card.KeepAcrossTurns()
		card.SetStatus(ToolStatusPending) // announced, no confirmed state yet
	}
	FillString(&task.ChildSessionID, childID)
	FillString(&task.AgentID, d.agentID(childID))

	if v, ok := su.Title.Value(); ok {
		view.Title = v
		card.SetTitle(v)
		OverwriteString(&task.Description, v)
	} else if su.Title.Null() {
		view.Title = ""
	}
	if v, ok := su.Description.Value(); ok {
		view.Description = v
		d.childDescription(task, v)
	} else if su.Description.Null() {
		view.Description = ""
	}
	if v, ok := su.Cwd.Value(); ok {
		view.Cwd = v
	} else if su.Cwd.Null() {
		view.Cwd = ""
	}
	if v, ok := su.AdditionalDirectories.Value(); ok {
		view.AdditionalDirectories = append([]string{}, v...)
	} else if su.AdditionalDirectories.Null() {
		view.AdditionalDirectories = nil
	}
	loading := tx.Loading(parent)
	if caps, ok := su.Capabilities.Value(); ok {
		view.cancelGranted = caps.Cancel != nil
	} else if su.Capabilities.Null() {
		view.cancelGranted = false
	}
	// History replayed by a load never revises a card already finished:
	// its state, stop reason and liveness stay what was seen.
	replayedOverFinished := loading && !created && card.Terminal()
	if st, ok := su.State.Value(); ok && !replayedOverFinished {
		if d.applyState(tx, card, view, task, st) {
			d.applyAnswer(tx, card, task)
		}
	} else if su.State.Null() && !replayedOverFinished {
		view.State, view.StopReason, view.StateRaw, view.Live = "", "", nil, false
		view.ErrorCode, view.ErrorMessage = 0, ""
	}
	if loading {
		// Replayed history: never live, and historical grants never
		// revive; a current subagent_update after the load grants again.
		view.Live, view.cancelGranted = false, false
	}
	view.refreshCancel()
	task.Live = view.Live
	kind := EventToolUpdate
	if created {
		kind = EventToolCall
	}
	tx.Emit(kind, card)
}

func (d *sessionForm) announce(tx *Tx, childID, parent string) {
	d.sessions.children[childID] = parent
	d.sessions.order = append(d.sessions.order, childID)
	tx.SetParentSession(childID, parent)
	tx.Count(CounterChildrenAnnounced, 1)
	for len(d.sessions.children) > d.limits.Children && len(d.sessions.order) > 0 {
		old := d.sessions.order[0]
		d.sessions.order = d.sessions.order[1:]
		if parent, ok := d.sessions.children[old]; ok {
			delete(d.sessions.children, old)
			delete(d.sessions.cardOf, old)
			d.sessions.forgetAnswer(old)
			tx.DropCard(parent, old)
			tx.Count(CounterChildrenEvicted, 1)
		}
	}
	if len(d.sessions.order) > 2*d.limits.Children {
		d.sessions.order = stillHeld(d.sessions.order, d.sessions.children)
	}
}

// stillHeld compacts an order list to the keys m still holds, keeping
// their order (the lists are lazy: a forgotten key stays until then).
func stillHeld[K comparable, V any](order []K, m map[K]V) []K {
	kept := order[:0:0]
	for _, k := range order {
		if _, ok := m[k]; ok {
			kept = append(kept, k)
		}
	}
	return kept
}

// applyState applies a state snapshot and reports whether it was one.
// running and requires_action are live; idle ends the turn (end_turn →
// complete, cancelled → cancelled, error → error, its error object's
// message the failure reason; any other or no stop reason claims no
// outcome: tool status unknown, as a child the agent no longer tracks,
// since the child is no longer running); unknown is its own tool status
// (neither live nor final);
// unrecognised states are kept verbatim, never live, never terminal. The
// child may be reused after idle: the view and the payload go back to
// running (live again), a new answer starts, while the card's tool status,
// which never moves backwards, stays terminal.
func (d *sessionForm) applyState(tx *Tx, card *Card, view *ChildSession, task *SubagentTask, st acp.StateUpdate) bool {
	// An idle that claims no outcome (no stop reason, error or usage) for
	// a child that was idle already says nothing new of the child's work:
	// the view takes the snapshot, but the agent's status word the card
	// holds (a dialect's "completed") stays. codex-acp 2.6.0 sends one
	// right after a session/load, and whether a live client handles it
	// just before or just after the load's end must not change the card.
	repeated := repeatedIdle(view, st)
	wasLive := view.Live
	view.StopReason, view.StateRaw, view.Usage = "", nil, nil
	view.ErrorCode, view.ErrorMessage = 0, ""
	switch {
	case st.Running != nil:
		view.State, view.Live = "running", true
		card.SetStatus(ToolStatusInProgress)
	case st.RequiresAction != nil:
		view.State, view.Live = "requires_action", true
		card.SetStatus(ToolStatusInProgress)
	case st.Idle != nil:
		view.State, view.Live = "idle", false
		if st.Idle.StopReason != nil {
			view.StopReason = *st.Idle.StopReason
		}
		if e := st.Idle.Error; e != nil {
			view.ErrorCode, view.ErrorMessage = errorCode(e.Code), e.Message
			OverwriteString(&task.ErrorMessage, e.Message)
		}
		if st.Idle.Usage != nil {
			if b, err := json.Marshal(st.Idle.Usage); err == nil {
				view.Usage = b
			}
			OverwritePositive(&task.TotalTokens, int64(st.Idle.Usage.TotalTokens), true)
		}
		switch view.StopReason {
		case "end_turn":
			card.SetStatus(ToolStatusComplete)
		case "cancelled":
			card.SetStatus(ToolStatusCancelled)
		case "error":
			card.SetStatus(ToolStatusError)
		default:
			// The work ended and no outcome is claimed: not running any
			// more, nor finished, nor failed.
			card.SetStatus(ToolStatusUnknown)
		}
	case st.Unknown != nil:
		view.State, view.Live = "unknown", false
		card.SetStatus(ToolStatusUnknown)
	case st.Other != nil:
		view.State, view.Live = st.Other.State, false
		view.StateRaw = append(json.RawMessage(nil), st.Other.Raw...)
	default:
		tx.Count(CounterBadState, 1)
		return false
	}
	if view.Live && !wasLive {
		// A new run of the child: its next message is a new answer.
		d.sessions.forgetAnswer(view.SessionID)
	}
	if !repeated {
		task.Status = view.State
	}
	return true
}

// repeatedIdle reports an idle state without a stop reason, error or
// usage for a child that is idle already.
func repeatedIdle(view *ChildSession, st acp.StateUpdate) bool {
	i := st.Idle
	return i != nil && i.StopReason == nil && i.Error == nil && i.Usage == nil && view.State == "idle" && !view.Live
}

// sessionMessage upserts a message view in the transcript named by the
// notification and links it to its counterpart only through
// senderMessageId/recipientMessageId.
func (d *sessionForm) sessionMessage(tx *Tx, transcript string, m *acp.SessionUpdateSessionMessage) {
	id := string(m.MessageId)
	if id == "" {
		tx.Count(CounterBadMessage, 1)
		return
	}
	v := d.view(tx, transcript, id)
	patchID(&v.SenderSessionID, m.SenderSessionId)
	patchID(&v.RecipientSessionID, m.RecipientSessionId)
	patchID(&v.SenderMessageID, m.SenderMessageId)
	patchID(&v.RecipientMessageID, m.RecipientMessageId)
	if blocks, ok := m.Content.Value(); ok && len(blocks) > 0 {
		var parts []string
		for _, b := range blocks {
			if b.Text != nil && b.Text.Text != "" {
				parts = append(parts, b.Text.Text)
			}
		}
		d.setText(tx, v, strings.Join(parts, "\n"))
	} else if m.Content.Set() {
		d.setText(tx, v, "") // null or [] clears
	}
	d.settle(tx, v)
}

// patchID applies a nullable id: omitted unchanged, null clears, a value
// replaces.
func patchID[T ~string](dst *string, n acp.Nullable[T]) {
	if v, ok := n.Value(); ok {
		*dst = string(v)
	} else if n.Null() {
		*dst = ""
	}
}

// sessionMessageChunk appends one content block to a message view. A chunk
// for a message not seen yet starts a view of its own, kept apart as
// unattributed until a session_message names its participants.
func (d *sessionForm) sessionMessageChunk(tx *Tx, transcript string, c *acp.SessionUpdateSessionMessageChunk) {
	id := string(c.MessageId)
	if id == "" {
		tx.Count(CounterBadMessage, 1)
		return
	}
	if old, ok := d.sessions.messages[msgKey{transcript, id}]; !ok {
		tx.Count(CounterChunkWithoutMessage, 1)
	} else if old.heldBeforeLoad {
		if tx.Loading(transcript) {
			// A load replays a view already held: its text is known.
			tx.Count(CounterReplayedChunksIgnored, 1)
			return
		}
		old.heldBeforeLoad = false
	}
	v := d.view(tx, transcript, id)
	if c.Content.Text != nil && c.Content.Text.Text != "" {
		full := v.textBytes() + int64(len(c.Content.Text.Text))
		if len(v.Text) >= d.limits.MessageTextBytes {
			tx.Count(CounterMessageTruncated, 1)
		} else {
			d.setText(tx, v, v.Text+TruncateUTF8(c.Content.Text.Text, d.limits.MessageTextBytes))
		}
		v.fullBytes = 0
		if full > int64(len(v.Text)) {
			v.fullBytes = full
		}
	}
	d.settle(tx, v)
}

// view returns the view of (transcript, id), creating it.
func (d *sessionForm) view(tx *Tx, transcript, id string) *MessageView {
	k := msgKey{transcript, id}
	if v := d.sessions.messages[k]; v != nil {
		return v
	}
	v := &MessageView{SessionID: transcript, MessageID: id}
	d.sessions.messages[k] = v
	d.sessions.msgOrder = append(d.sessions.msgOrder, k)
	d.evictMessages(tx, v)
	if len(d.sessions.msgOrder) > 2*d.limits.Messages {
		d.sessions.msgOrder = stillHeld(d.sessions.msgOrder, d.sessions.messages)
	}
	return v
}

// evictMessages forgets the oldest views other than keep while there are
// more than MaxMessages or they hold more than MaxMessageBytes of text.
func (d *sessionForm) evictMessages(tx *Tx, keep *MessageView) {
	r := d.sessions
	for (len(r.messages) > d.limits.Messages || r.text > d.limits.MessageBytes) && len(r.msgOrder) > 0 {
		old := r.msgOrder[0]
		r.msgOrder = r.msgOrder[1:]
		v, ok := r.messages[old]
		if !ok {
			continue
		}
		if v == keep {
			r.msgOrder = append(r.msgOrder, old)
			if len(r.msgOrder) == 1 {
				return
			}
			continue
		}
		r.text -= len(v.Text)
		delete(r.messages, old)
		if o, ok := r.links[old]; ok {
			delete(r.links, old)
			delete(r.links, o)
		}
		tx.Count(CounterMessagesEvicted, 1)
	}
}

// setText replaces the view's text, within MaxMessageTextBytes and the
// connection's MaxMessageBytes.
func (d *sessionForm) setText(tx *Tx, v *MessageView, text string) {
	v.fullBytes = 0
	if len(text) > d.limits.MessageTextBytes {
		v.fullBytes = int64(len(text))
		text = TruncateUTF8(text, d.limits.MessageTextBytes)
		tx.Count(CounterMessageTruncated, 1)
	}
	d.sessions.text += len(text) - len(v.Text)
	v.Text = text
	d.evictMessages(tx, v)
}

// settle recomputes the view's direction and link, emits it, and maps it
// onto a child's payload: the first incoming message in a child's
// transcript is its prompt; a message in the parent's transcript sent by
// the child is its result. A sender-less message is never attributed.
func (d *sessionForm) settle(tx *Tx, v *MessageView) {
	switch {
	case v.SenderSessionID == "":
		v.Direction = MessageUnattributed
	case v.SenderSessionID == v.SessionID:
		v.Direction = MessageOutgoing
	default:
		v.Direction = MessageIncoming
	}
	// A link needs both participants, distinct, one of them this
	// transcript, and the other view's id from senderMessageId (incoming)
	// or recipientMessageId (outgoing). Equal message ids never link.
	k := msgKey{v.SessionID, v.MessageID}
	var other *MessageView
	if v.SenderSessionID != "" && v.RecipientSessionID != "" && v.SenderSessionID != v.RecipientSessionID {
		var to msgKey
		switch {
		case v.Direction == MessageOutgoing && v.RecipientMessageID != "":
			to = msgKey{v.RecipientSessionID, v.RecipientMessageID}
		case v.Direction == MessageIncoming && v.RecipientSessionID == v.SessionID && v.SenderMessageID != "":
			to = msgKey{v.SenderSessionID, v.SenderMessageID}
		}
		if to.session != "" && to != k {
			if _, had := d.sessions.links[k]; !had {
				d.sessions.links[k], d.sessions.links[to] = to, k
				if o := d.sessions.messages[to]; o != nil {
					o.LinkedSessionID, o.LinkedMessageID = k.session, k.message
					other = o
				}
			}
		}
	}
	if to, ok := d.sessions.links[k]; ok {
		// Once established a link is kept (the older "retain" reading of
		// a participant patched to null).
		v.LinkedSessionID, v.LinkedMessageID = to.session, to.message
	}
	e := Event{Kind: EventSessionMessage, SessionID: v.SessionID, ParentSessionID: tx.ParentSession(v.SessionID), Message: v}
	tx.EmitEvent(e)
	if other != nil {
		tx.EmitEvent(Event{Kind: EventSessionMessage, SessionID: other.SessionID, ParentSessionID: tx.ParentSession(other.SessionID), Message: other})
	}
	d.mapMessage(tx, v)
}

// Per-card values naming the message a payload field follows.
const (
	valuePromptMessage = "adapter.promptMessage"
	valueResultMessage = "adapter.resultMessage"
	valueResultAnswer  = "adapter.resultAnswer" // the answer (by message id) result_text holds
)

func (d *sessionForm) mapMessage(tx *Tx, v *MessageView) {
	if v.Direction != MessageIncoming || v.Text == "" {
		return
	}
	// Prompt: an incoming message in a child's own transcript.
	if _, ok := d.sessions.children[v.SessionID]; ok {
		if card, ok := d.card(tx, v.SessionID); ok && card.IsSubagent() {
			follow(tx, card, valuePromptMessage, v, &card.Task().Prompt, &card.Task().PromptBytes)
		}
	}
	// Result: a message in the parent's transcript sent by its child,
	// unless it is the receipt of a background launch, which only says the
	// child runs detached.
	if parent, ok := d.sessions.children[v.SenderSessionID]; ok && parent == v.SessionID {
		if card, ok := d.card(tx, v.SenderSessionID); ok && card.IsSubagent() {
			if d.isReceipt(v.Text) {
				if SetSticky(&card.Task().IsAsync, true) {
					tx.Emit(EventToolUpdate, card)
				}
				return
			}
			follow(tx, card, valueResultMessage, v, &card.Task().ResultText, &card.Task().ResultBytes)
		}
	}
}

// childAnswer keeps the latest agent message a known child sends in its
// own session (chunks of one message id are joined; a new id, or a new run
// of the child, starts a new message). Once the child is idle after
// end_turn it is the child's result, so a late chunk still updates it.
// Text beyond SessionLimits.MessageTextBytes per answer or
// SessionLimits.MessageBytes for all answers of the connection is dropped
// and counted. A chunk a load replays for a finished child already held is
// history already seen: ignored and counted.
func (d *sessionForm) childAnswer(tx *Tx, sessionID string, c *acp.SessionUpdateAgentMessageChunk) bool {
	_, ok := d.sessions.children[sessionID]
	if !ok || c.Content.Text == nil {
		return ok
	}
	card, held := d.card(tx, sessionID)
	if held && card.Terminal() && tx.Loading(sessionID) {
		tx.Count(CounterReplayedChunksIgnored, 1)
		return true
	}
	r := d.sessions
	a := r.answers[sessionID]
	id := ""
	if c.MessageId != nil {
		id = string(*c.MessageId)
	}
	if a == nil || (id != "" && id != a.messageID) {
		r.forgetAnswer(sessionID)
		r.serial++
		a = &answer{messageID: id, serial: r.serial}
		r.answers[sessionID] = a
	}
	add := c.Content.Text.Text
	a.bytes += int64(len(add))
	room := min(d.limits.MessageTextBytes-len(a.text), d.limits.MessageBytes-r.answered)
	if len(add) > room {
		add = TruncateUTF8(add, max(room, 0))
		tx.Count(CounterMessageTruncated, 1)
	}
	a.text += add
	r.answered += len(add)
	if held && card.IsSubagent() && card.Child() != nil {
		if d.applyAnswer(tx, card, card.Task()) {
			tx.Emit(EventToolUpdate, card)
		}
	}
	return true
}

// applyAnswer makes a child's latest agent message its result once the
// child is idle after end_turn (its final answer, in the foreground as in
// the background). An answer of an earlier run that the new one replaces
// is kept in EarlierResults (at most MaxEarlierResults, oldest dropped and
// counted). It reports whether the payload changed.
func (d *sessionForm) applyAnswer(tx *Tx, card *Card, task *SubagentTask) bool {
	view := card.Child()
	a := d.sessions.answers[view.SessionID]
	if a == nil || !view.answered() || d.isReceipt(a.text) {
		return false
	}
	owner, _ := card.Value(valueResultAnswer).(uint64)
	if owner != a.serial {
		replaceResult(tx, task, a.text)
	}
	card.SetValue(valueResultAnswer, a.serial)
	full := int64(0)
	if a.bytes > int64(len(a.text)) {
		full = a.bytes // the answer was cut at MessageTextBytes
	}
	cut := task.ResultBytes != full
	task.ResultBytes = full
	return OverwriteString(&task.ResultText, a.text) || owner != a.serial || cut
}

// replaceResult keeps the card's result in EarlierResults (at most
// MaxEarlierResults, the oldest dropped and counted) when a new answer
// other than it is about to replace it: the one rule for a child that
// answers more than once (a follow-up message, a new run, a later turn).
func replaceResult(tx *Tx, task *SubagentTask, next string) {
	if task.ResultText == "" || task.ResultText == next {
		return
	}
	task.EarlierResults = append(task.EarlierResults, task.ResultText)
	if n := len(task.EarlierResults) - MaxEarlierResults; n > 0 {
		task.EarlierResults = slices.Delete(task.EarlierResults, 0, n)
		tx.Count(CounterEarlierResultsDropped, int64(n))
	}
}

// follow fills *field from the view when empty, and keeps following the
// message that filled it (chunks and upserts update it); other messages
// never replace it. *full gets the view's full length when its text is
// cut (0 when whole).
func follow(tx *Tx, card *Card, key string, v *MessageView, field *string, full *int64) {
	owner, _ := card.Value(key).(string)
	switch {
	case owner == "" && *field == "":
		card.SetValue(key, v.MessageID)
	case owner != v.MessageID || (*field == v.Text && *full == v.fullBytes):
		return
	}
	*field, *full = v.Text, v.fullBytes
	tx.Emit(EventToolUpdate, card)
}

// childModel maps a known child's model select option onto its payload.
func (d *sessionForm) childModel(tx *Tx, sessionID string, cu *acp.SessionConfigOptionUpdate) bool {
	if _, ok := d.sessions.children[sessionID]; !ok {
		return false
	}
	card, ok := d.card(tx, sessionID)
	if !ok || !card.IsSubagent() {
		return true
	}
	for _, opt := range cu.ConfigOptions {
		sel := opt.Select
		if sel == nil {
			continue
		}
		isModel := sel.Id == "model" || (sel.Category != nil && string(*sel.Category) == "model")
		if isModel && OverwriteString(&card.Task().Model, string(sel.CurrentValue)) {
			tx.Emit(EventToolUpdate, card)
		}
	}
	return true
}

// CanCancelChild reports whether the client may send session/cancel to
// childSessionID: only while that child is announced on this connection,
// its last capabilities advertise cancel as an object, and it is not idle
// (a finished child is never cancellable, whatever a replay or a later
// grant says). After the parent is loaded or resumed again, no child may
// be cancelled until a current subagent_update grants it.
func (t *Tracker) CanCancelChild(childSessionID string) bool {
	can := false
	t.Do(func(tx *Tx) {
		d := t.form
		if d == nil {
			return
		}
		if card, ok := d.card(tx, childSessionID); ok && card.Child() != nil && card.Child().SessionID == childSessionID {
			can = card.Child().CanCancel
		}
	})
	return can
}

// Disconnected records that the connection to the agent was lost: no child
// is live any more nor cancellable (last-known states stay as reported,
// never read as an outcome), and each child card gets one update. Fresh
// state after a reconnect is authoritative.
func (t *Tracker) Disconnected() {
	t.Do(func(tx *Tx) {
		if t.form != nil {
			t.form.silence(tx, func(string) bool { return true })
		}
	})
}

// forgetLiveness makes the children of the loaded family historical: not
// live, no cancel grant, until a current subagent_update says otherwise
// (each changed child card gets one update).
func (d *sessionForm) forgetLiveness(tx *Tx, family []string) {
	in := map[string]bool{}
	for _, id := range family {
		in[id] = true
	}
	for k, v := range d.sessions.messages {
		if in[k.session] {
			v.heldBeforeLoad = true
		}
	}
	d.silence(tx, func(parent string) bool { return in[parent] })
}

// silence makes the announced children whose parent passes in neither
// live nor cancellable (their states stay as reported, never read as an
// outcome), one update per changed card, in child id order.
func (d *sessionForm) silence(tx *Tx, in func(parent string) bool) {
	var ids []string
	for id, parent := range d.sessions.children {
		if in(parent) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		card, ok := d.card(tx, id)
		if !ok || card.Child() == nil || card.Child().SessionID != id {
			continue
		}
		if v := card.Child(); v.Live || v.CanCancel || v.cancelGranted {
			v.Live, v.cancelGranted = false, false
			v.refreshCancel()
			card.Task().Live = false
			tx.Emit(EventToolUpdate, card)
		}
	}
}

// errorCode is the integer of a JSON-RPC error code union (0 when it has
// none).
func errorCode(c acp.ErrorCode) int {
	var n int
	if b, err := json.Marshal(c); err == nil && json.Unmarshal(b, &n) == nil {
		return n
	}
	return 0
}

// EndOpen ends what is still open in sessionID and its child sessions
// (its family): the consumer knows no more will come for them (the turn
// was cancelled, or the connection ended). Every card whose tool status is
// neither terminal nor unknown takes status, which must be terminal
// (ToolStatusCancelled for a turn cut short) or ToolStatusUnknown (the
// outcome cannot be known); a live child session is no longer live nor
// cancellable, and a finished child run again keeps its first outcome; a
// card the agent stopped tracking (unknown) is left as it is: no outcome
// is invented. Each changed card gets one EventToolUpdate, in creation
// order, delivered through OnEvent like every other event, so every sink
// sees the same. Other sessions' cards are untouched. It reports how many
// cards changed.
func (t *Tracker) EndOpen(sessionID string, status ToolStatus) int {
	return t.endOpen(sessionID, status, false)
}

// EndConnection ends, once the connection is over, what it left open in
// every session the client opened (OpenedSessions) and their child
// sessions, since nothing more will come for them (EndOpen): a session
// for which cancelled reports true (a prompt still open that the
// consumer cut short) ends cancelled; every other one unknown, since the
// agent is gone and never reported an outcome (a child that outlived its
// turn, a card left open after the last answer, a prompt whose agent
// ended the connection by itself). cancelled may be nil (none). Nothing is
// ever made complete. It reports how many cards changed; the caller
// flushes.
func (t *Tracker) EndConnection(cancelled func(sessionID string) bool) int {
	n := 0
	for _, session := range t.OpenedSessions() {
		status := ToolStatusUnknown
		if cancelled != nil && cancelled(session) {
			status = ToolStatusCancelled
		}
		n += t.EndOpen(session, status)
	}
	return n
}

// CancelTurn ends the open cards of sessionID's family as cancelled after
// a turn of it was cancelled while the connection goes on: EndOpen, except
// that a live child of a client that declared AIR's backgroundSubagents
// (ConnectionInfo.BackgroundChildren), and a card a dialect marked
// OutliveTurns (a Qwen Code background child), outlive the turns, their
// own or a later one, and end only by their own update, or with the
// connection (EndOpen). It reports how many cards changed.
func (t *Tracker) CancelTurn(sessionID string) int {
	return t.endOpen(sessionID, ToolStatusCancelled, true)
}

// endOpen is EndOpen, sparing what outlives a turn when cancelTurn is set.
func (t *Tracker) endOpen(sessionID string, status ToolStatus, cancelTurn bool) int {
	if sessionID == "" || (!status.Terminal() && status != ToolStatusUnknown) {
		return 0
	}
	n := 0
	spareLive := cancelTurn && t.Connection().BackgroundChildren()
	t.do(func(tx *Tx) {
		var cards []*Card
		for _, sid := range t.familyOf(sessionID) {
			if s := t.sessions[sid]; s != nil {
				for _, c := range s.cards {
					cards = append(cards, c)
				}
			}
		}
		slices.SortFunc(cards, func(a, b *Card) int { return cmp.Compare(a.gen, b.gen) })
		for _, c := range cards {
			live := c.child != nil && c.child.Live
			switch {
			case spareLive && live, cancelTurn && c.outlives:
				continue
			case c.status == ToolStatusUnknown:
				continue
			case c.status.Terminal() && !live:
				continue
			}
			c.SetStatus(status)
			if ch := c.child; ch != nil {
				ch.Live, ch.cancelGranted = false, false
				ch.refreshCancel()
			}
			if c.task != nil {
				c.task.Live = false
			}
			tx.Emit(EventToolUpdate, c)
			n++
		}
	})
	return n
}

// LiveBackground counts what may still run after the last prompt answer
// and will report its own end: the live children (LiveChildren) of a
// client that declared AIR's backgroundSubagents, and the live cards a
// dialect marked OutliveTurns (a Qwen Code background child, whatever the
// client declared). acpscope run waits while it is positive.
func (t *Tracker) LiveBackground() int {
	n := 0
	if t.Connection().BackgroundChildren() {
		n = t.LiveChildren()
	}
	t.Do(func(*Tx) {
		for _, s := range t.sessions {
			for _, c := range s.cards {
				if c.outlives && !c.status.Terminal() && c.task != nil && c.task.Live {
					n++
				}
			}
		}
	})
	return n
}

// LiveChildren counts the announced children of the connection that are
// live now (running or requiring action): with AIR's backgroundSubagents
// they may outlive the turn that launched them.
func (t *Tracker) LiveChildren() int {
	n := 0
	t.Do(func(tx *Tx) {
		d := t.form
		if d == nil {
			return
		}
		for id := range d.sessions.children {
			if card, ok := d.card(tx, id); ok && card.Child() != nil && card.Child().SessionID == id && card.Child().Live {
				n++
			}
		}
	})
	return n
}
