package claude

import (
	"encoding/json"
	"slices"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// Default bounds of the subagent-session registry (per connection); see
// Limits.
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
	CounterChildrenAnnounced   = "children_announced"
	CounterChildrenEvicted     = "children_evicted"
	CounterChildReparent       = "child_reparent_ignored" // subagent_update for a known child from another parent
	CounterBadSubagentUpdate   = "bad_subagent_update"    // no or self-referencing session id
	CounterBadState            = "bad_state"              // a state union with no variant
	CounterBadMessage          = "bad_session_message"    // no message id
	CounterChunkWithoutMessage = "chunk_without_message"  // chunk for a message not seen: kept apart
	CounterMessagesEvicted     = "messages_evicted"       // message views forgotten by the bound
	CounterMessageTruncated    = "message_text_truncated" // text cut at MaxMessageTextBytes
)

// Limits bound what the subagent-session form keeps per connection. Zero
// fields take the defaults (MaxChildren, MaxMessages, MaxMessageTextBytes,
// MaxMessageBytes).
type Limits struct {
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

func (l Limits) withDefaults() Limits {
	def := func(v, d int) int {
		if v > 0 {
			return v
		}
		return d
	}
	return Limits{
		Children:         def(l.Children, MaxChildren),
		Messages:         def(l.Messages, MaxMessages),
		MessageTextBytes: def(l.MessageTextBytes, MaxMessageTextBytes),
		MessageBytes:     def(l.MessageBytes, MaxMessageBytes),
	}
}

// registry holds what the subagent-session form announced on one
// connection: children by session id, and message views by transcript and
// message id. It is only touched from Dialect hooks, under the Tracker's
// lock.
type registry struct {
	children map[string]string // child session id → parent session id
	order    []string          // announcement order, for the bound
	messages map[msgKey]*adapter.MessageView
	msgOrder []msgKey
	links    map[msgKey]msgKey  // established links, both directions
	text     int                // bytes of text held by all views
	answers  map[string]*answer // child session id → its latest agent message
	answered int                // bytes of text held by all answers
}

// answer is the latest agent message a child sent in its own session: its
// final answer once the child is idle.
type answer struct {
	messageID string
	text      string
}

type msgKey struct{ session, message string }

func newRegistry() *registry {
	return &registry{children: map[string]string{}, messages: map[msgKey]*adapter.MessageView{}, links: map[msgKey]msgKey{},
		answers: map[string]*answer{}}
}

// clear forgets the children of sessionID (every child for "") and the
// message views of those transcripts.
func (r *registry) clear(sessionID string) {
	if sessionID == "" {
		*r = *newRegistry()
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

// forgetAnswer drops the answer held for child.
func (r *registry) forgetAnswer(child string) {
	if a := r.answers[child]; a != nil {
		r.answered -= len(a.text)
		delete(r.answers, child)
	}
}

// known reports whether id is an announced child.
func (r *registry) known(id string) bool {
	_, ok := r.children[id]
	return ok
}

// handleSessionForm handles subagent_update, session_message,
// session_message_chunk, and a known child's model config update. Without
// the client capability the three subagent-session kinds are dropped and
// counted, changing nothing (the parent's title and transcript included).
func (d *Dialect) handleSessionForm(tx *adapter.Tx, n *acp.SessionNotification) bool {
	u := &n.Update
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
		tx.Count(adapter.CounterSubagentFramesOff, 1)
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
func (d *Dialect) subagentUpdate(tx *adapter.Tx, parent string, su *acp.SessionSubagentUpdate) {
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
		view = &adapter.ChildSession{SessionID: childID, ParentSessionID: parent}
		card.SetChild(view)
		card.KeepAcrossTurns()
		card.SetStatus(adapter.ToolStatusPending) // announced, no confirmed state yet
	}
	adapter.FillString(&task.ChildSessionID, childID)
	// claude-agent-acp names a child session by the subagent's agent id.
	adapter.FillString(&task.AgentID, childID)

	if v, ok := su.Title.Value(); ok {
		view.Title = v
		card.SetTitle(v)
		adapter.OverwriteString(&task.Description, v)
	} else if su.Title.Null() {
		view.Title = ""
	}
	if v, ok := su.Description.Value(); ok {
		view.Description = v
		adapter.OverwriteString(&task.SubagentType, v)
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
	if caps, ok := su.Capabilities.Value(); ok {
		view.CanCancel = caps.Cancel != nil
	} else if su.Capabilities.Null() {
		view.CanCancel = false
	}
	if st, ok := su.State.Value(); ok {
		applyState(tx, card, view, task, st)
		d.applyAnswer(childID, view, task)
	} else if su.State.Null() {
		view.State, view.StopReason, view.StateRaw, view.Live = "", "", nil, false
	}
	if tx.Loading(parent) {
		// Replayed history: never live, and historical grants never
		// revive; a current subagent_update after the load grants again.
		view.Live, view.CanCancel = false, false
	}
	kind := adapter.EventToolUpdate
	if created {
		kind = adapter.EventToolCall
	}
	tx.Emit(kind, card)
}

func (d *Dialect) announce(tx *adapter.Tx, childID, parent string) {
	d.sessions.children[childID] = parent
	d.sessions.order = append(d.sessions.order, childID)
	tx.SetParentSession(childID, parent)
	tx.Count(CounterChildrenAnnounced, 1)
	for len(d.sessions.children) > d.limits.Children && len(d.sessions.order) > 0 {
		old := d.sessions.order[0]
		d.sessions.order = d.sessions.order[1:]
		if parent, ok := d.sessions.children[old]; ok {
			delete(d.sessions.children, old)
			d.sessions.forgetAnswer(old)
			tx.DropCard(parent, old)
			tx.Count(CounterChildrenEvicted, 1)
		}
	}
	if len(d.sessions.order) > 2*d.limits.Children {
		kept := d.sessions.order[:0:0]
		for _, id := range d.sessions.order {
			if _, ok := d.sessions.children[id]; ok {
				kept = append(kept, id)
			}
		}
		d.sessions.order = kept
	}
}

// applyState applies a state snapshot. running and requires_action are
// live; idle ends the turn (end_turn → complete, cancelled → cancelled,
// error → error; any other or no stop reason claims no outcome); unknown
// and unrecognised states are kept verbatim, never live, never terminal.
// The child may be reused after idle: the view goes back to running while
// the card's tool status, which never moves backwards, stays terminal.
func applyState(tx *adapter.Tx, card *adapter.Card, view *adapter.ChildSession, task *adapter.SubagentTask, st acp.StateUpdate) {
	view.StopReason, view.StateRaw, view.Usage = "", nil, nil
	switch {
	case st.Running != nil:
		view.State, view.Live = "running", true
		card.SetStatus(adapter.ToolStatusInProgress)
	case st.RequiresAction != nil:
		view.State, view.Live = "requires_action", true
		card.SetStatus(adapter.ToolStatusInProgress)
	case st.Idle != nil:
		view.State, view.Live = "idle", false
		if st.Idle.StopReason != nil {
			view.StopReason = *st.Idle.StopReason
		}
		if st.Idle.Usage != nil {
			if b, err := json.Marshal(st.Idle.Usage); err == nil {
				view.Usage = b
			}
			adapter.OverwritePositive(&task.TotalTokens, int64(st.Idle.Usage.TotalTokens), true)
		}
		switch view.StopReason {
		case "end_turn":
			card.SetStatus(adapter.ToolStatusComplete)
		case "cancelled":
			card.SetStatus(adapter.ToolStatusCancelled)
		case "error":
			card.SetStatus(adapter.ToolStatusError)
		}
	case st.Unknown != nil:
		view.State, view.Live = "unknown", false
	case st.Other != nil:
		view.State, view.Live = st.Other.State, false
		view.StateRaw = append(json.RawMessage(nil), st.Other.Raw...)
	default:
		tx.Count(CounterBadState, 1)
		return
	}
	task.Status = view.State
}

// sessionMessage upserts a message view in the transcript named by the
// notification and links it to its counterpart only through
// senderMessageId/recipientMessageId.
func (d *Dialect) sessionMessage(tx *adapter.Tx, transcript string, m *acp.SessionUpdateSessionMessage) {
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
func (d *Dialect) sessionMessageChunk(tx *adapter.Tx, transcript string, c *acp.SessionUpdateSessionMessageChunk) {
	id := string(c.MessageId)
	if id == "" {
		tx.Count(CounterBadMessage, 1)
		return
	}
	if _, ok := d.sessions.messages[msgKey{transcript, id}]; !ok {
		tx.Count(CounterChunkWithoutMessage, 1)
	}
	v := d.view(tx, transcript, id)
	if c.Content.Text != nil && c.Content.Text.Text != "" {
		if len(v.Text) >= d.limits.MessageTextBytes {
			tx.Count(CounterMessageTruncated, 1)
		} else {
			d.setText(tx, v, v.Text+adapter.TruncateUTF8(c.Content.Text.Text, d.limits.MessageTextBytes))
		}
	}
	d.settle(tx, v)
}

// view returns the view of (transcript, id), creating it.
func (d *Dialect) view(tx *adapter.Tx, transcript, id string) *adapter.MessageView {
	k := msgKey{transcript, id}
	if v := d.sessions.messages[k]; v != nil {
		return v
	}
	v := &adapter.MessageView{SessionID: transcript, MessageID: id}
	d.sessions.messages[k] = v
	d.sessions.msgOrder = append(d.sessions.msgOrder, k)
	d.evictMessages(tx, v)
	if len(d.sessions.msgOrder) > 2*d.limits.Messages {
		kept := d.sessions.msgOrder[:0:0]
		for _, k := range d.sessions.msgOrder {
			if _, ok := d.sessions.messages[k]; ok {
				kept = append(kept, k)
			}
		}
		d.sessions.msgOrder = kept
	}
	return v
}

// evictMessages forgets the oldest views other than keep while there are
// more than MaxMessages or they hold more than MaxMessageBytes of text.
func (d *Dialect) evictMessages(tx *adapter.Tx, keep *adapter.MessageView) {
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
func (d *Dialect) setText(tx *adapter.Tx, v *adapter.MessageView, text string) {
	if len(text) > d.limits.MessageTextBytes {
		text = adapter.TruncateUTF8(text, d.limits.MessageTextBytes)
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
func (d *Dialect) settle(tx *adapter.Tx, v *adapter.MessageView) {
	switch {
	case v.SenderSessionID == "":
		v.Direction = adapter.MessageUnattributed
	case v.SenderSessionID == v.SessionID:
		v.Direction = adapter.MessageOutgoing
	default:
		v.Direction = adapter.MessageIncoming
	}
	// A link needs both participants, distinct, one of them this
	// transcript, and the other view's id from senderMessageId (incoming)
	// or recipientMessageId (outgoing). Equal message ids never link.
	k := msgKey{v.SessionID, v.MessageID}
	var other *adapter.MessageView
	if v.SenderSessionID != "" && v.RecipientSessionID != "" && v.SenderSessionID != v.RecipientSessionID {
		var to msgKey
		switch {
		case v.Direction == adapter.MessageOutgoing && v.RecipientMessageID != "":
			to = msgKey{v.RecipientSessionID, v.RecipientMessageID}
		case v.Direction == adapter.MessageIncoming && v.RecipientSessionID == v.SessionID && v.SenderMessageID != "":
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
	e := adapter.Event{Kind: adapter.EventSessionMessage, SessionID: v.SessionID, ParentSessionID: tx.ParentSession(v.SessionID), Message: v}
	tx.EmitEvent(e)
	if other != nil {
		tx.EmitEvent(adapter.Event{Kind: adapter.EventSessionMessage, SessionID: other.SessionID, ParentSessionID: tx.ParentSession(other.SessionID), Message: other})
	}
	d.mapMessage(tx, v)
}

// Per-card values naming the message a payload field follows.
const (
	valuePromptMessage = "claude.promptMessage"
	valueResultMessage = "claude.resultMessage"
)

func (d *Dialect) mapMessage(tx *adapter.Tx, v *adapter.MessageView) {
	if v.Direction != adapter.MessageIncoming || v.Text == "" {
		return
	}
	// Prompt: an incoming message in a child's own transcript.
	if parent, ok := d.sessions.children[v.SessionID]; ok {
		if card, ok := tx.Card(parent, v.SessionID); ok && card.IsSubagent() {
			follow(tx, card, valuePromptMessage, v, &card.Task().Prompt)
		}
	}
	// Result: a message in the parent's transcript sent by its child,
	// unless it is the receipt of a background launch, which only says the
	// child runs detached.
	if parent, ok := d.sessions.children[v.SenderSessionID]; ok && parent == v.SessionID {
		if card, ok := tx.Card(parent, v.SenderSessionID); ok && card.IsSubagent() {
			if IsLaunchReceipt(v.Text) {
				if adapter.SetSticky(&card.Task().IsAsync, true) {
					tx.Emit(adapter.EventToolUpdate, card)
				}
				return
			}
			follow(tx, card, valueResultMessage, v, &card.Task().ResultText)
		}
	}
}

// launchReceiptPrefix starts the tool result claude-agent-acp reports for
// an Agent call launched in the background: a receipt naming the agent id
// and its output file, sent while the child still runs.
const launchReceiptPrefix = "Async agent launched successfully"

// IsLaunchReceipt reports whether text is Claude's receipt for a
// background launch rather than a subagent's answer.
func IsLaunchReceipt(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), launchReceiptPrefix)
}

// childAnswer keeps the latest agent message a known child sends in its
// own session (chunks of one message id are joined; a new id starts a new
// message). Once the child is idle after end_turn it is the child's
// result, so a late chunk still updates it. Text beyond
// Limits.MessageTextBytes per answer or Limits.MessageBytes for all
// answers of the connection is dropped and counted.
func (d *Dialect) childAnswer(tx *adapter.Tx, sessionID string, c *acp.SessionUpdateAgentMessageChunk) bool {
	parent, ok := d.sessions.children[sessionID]
	if !ok || c.Content.Text == nil {
		return ok
	}
	r := d.sessions
	a := r.answers[sessionID]
	id := ""
	if c.MessageId != nil {
		id = string(*c.MessageId)
	}
	if a == nil || (id != "" && id != a.messageID) {
		r.forgetAnswer(sessionID)
		a = &answer{messageID: id}
		r.answers[sessionID] = a
	}
	add := c.Content.Text.Text
	room := min(d.limits.MessageTextBytes-len(a.text), d.limits.MessageBytes-r.answered)
	if len(add) > room {
		add = adapter.TruncateUTF8(add, max(room, 0))
		tx.Count(CounterMessageTruncated, 1)
	}
	a.text += add
	r.answered += len(add)
	if card, ok := tx.Card(parent, sessionID); ok && card.IsSubagent() && card.Child() != nil {
		if d.applyAnswer(sessionID, card.Child(), card.Task()) {
			tx.Emit(adapter.EventToolUpdate, card)
		}
	}
	return true
}

// applyAnswer makes a child's latest agent message its result once the
// child is idle after end_turn (its final answer, in the foreground as in
// the background). It reports whether the result changed.
func (d *Dialect) applyAnswer(child string, view *adapter.ChildSession, task *adapter.SubagentTask) bool {
	a := d.sessions.answers[child]
	if a == nil || view.State != "idle" || view.StopReason != "end_turn" || IsLaunchReceipt(a.text) {
		return false
	}
	return adapter.OverwriteString(&task.ResultText, a.text)
}

// follow fills *field from the view when empty, and keeps following the
// message that filled it (chunks and upserts update it); other messages
// never replace it.
func follow(tx *adapter.Tx, card *adapter.Card, key string, v *adapter.MessageView, field *string) {
	owner, _ := card.Value(key).(string)
	switch {
	case owner == "" && *field == "":
		card.SetValue(key, v.MessageID)
	case owner != v.MessageID || *field == v.Text:
		return
	}
	*field = v.Text
	tx.Emit(adapter.EventToolUpdate, card)
}

// childModel maps a known child's model select option onto its payload.
func (d *Dialect) childModel(tx *adapter.Tx, sessionID string, cu *acp.SessionConfigOptionUpdate) bool {
	parent, ok := d.sessions.children[sessionID]
	if !ok {
		return false
	}
	card, ok := tx.Card(parent, sessionID)
	if !ok || !card.IsSubagent() {
		return true
	}
	for _, opt := range cu.ConfigOptions {
		sel := opt.Select
		if sel == nil {
			continue
		}
		isModel := sel.Id == "model" || (sel.Category != nil && string(*sel.Category) == "model")
		if isModel && adapter.OverwriteString(&card.Task().Model, string(sel.CurrentValue)) {
			tx.Emit(adapter.EventToolUpdate, card)
		}
	}
	return true
}

// CanCancel reports whether the client may send session/cancel to
// childSessionID: only while that child is announced on t's connection and
// its last capabilities advertise cancel as an object. After the parent is
// loaded or resumed again, no child may be cancelled until a current
// subagent_update grants it.
func CanCancel(t *adapter.Tracker, childSessionID string) bool {
	can := false
	t.Do(func(tx *adapter.Tx) {
		d, ok := tx.Dialect().(*Dialect)
		if !ok {
			return
		}
		parent, ok := d.sessions.children[childSessionID]
		if !ok {
			return
		}
		if card, ok := tx.Card(parent, childSessionID); ok && card.Child() != nil {
			can = card.Child().CanCancel
		}
	})
	return can
}

// Disconnected records that the connection to the agent was lost: no child
// is live any more nor cancellable (last-known states stay as reported,
// never read as an outcome), and each child card gets one update. Fresh
// state after a reconnect is authoritative.
func Disconnected(t *adapter.Tracker) {
	t.Do(func(tx *adapter.Tx) {
		d, ok := tx.Dialect().(*Dialect)
		if !ok {
			return
		}
		ids := make([]string, 0, len(d.sessions.children))
		for id := range d.sessions.children {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			card, ok := tx.Card(d.sessions.children[id], id)
			if !ok || card.Child() == nil {
				continue
			}
			if v := card.Child(); v.Live || v.CanCancel {
				v.Live, v.CanCancel = false, false
				tx.Emit(adapter.EventToolUpdate, card)
			}
		}
	})
}
