package adapter

// The pipeline common to every dialect: a session/update becomes a
// ToolFrame, the dialect prepares it, the card is found or created, the
// dialect's and the common recognition rules run, the common merges and
// the dialect's Apply fill the payload, and the frame's status is applied
// without moving backwards. Agent-specific code lives in one file per
// agent (claudecode.go, opencode.go, auggie.go, copilot.go, codex.go,
// generic.go; adapter/claude and adapter/cursor for theirs).

import (
	acp "github.com/coder/acp-go-sdk"
)

// valueEarlyDurationMs keeps a positive rawOutput.durationMs seen while
// the card was not a subagent yet (a completion that arrived before the
// frame recognising it), applied once it is.
const valueEarlyDurationMs = "adapter.earlyDurationMs"

func (t *Tracker) handleNotification(tx *Tx, n *acp.SessionNotification) {
	sid := string(n.SessionId)
	if sid == "" {
		t.counters[CounterBadSessionID]++
		return
	}
	if t.foreign(sid) {
		t.counters[CounterForeignSessionUpdates]++
		return
	}
	t.lastSeen = sid
	t.ensureDialect()
	u := &n.Update
	var f *ToolFrame
	switch {
	case u.ToolCall != nil:
		f = frameFromToolCall(sid, u.ToolCall)
	case u.ToolCallUpdate != nil:
		f = frameFromToolCallUpdate(sid, u.ToolCallUpdate)
	default:
		if t.form.handleSessionForm(tx, n) {
			return
		}
		if !t.dialect.HandleUpdate(tx, n) {
			t.unhandledUpdate(tx, n)
		}
		return
	}
	t.counters[CounterFrames]++
	t.applyFrame(tx, f)
	if f.Read.Bad > 0 {
		t.counters[CounterBadFields] += int64(f.Read.Bad)
	}
	if f.Read.Negative > 0 {
		t.counters[CounterNegativeValues] += int64(f.Read.Negative)
	}
}

func frameFromToolCall(sid string, tc *acp.SessionUpdateToolCall) *ToolFrame {
	f := &ToolFrame{
		SessionID:      sid,
		ToolCallID:     string(tc.ToolCallId),
		WireToolCallID: string(tc.ToolCallId),
		Create:         true,
		Status:         string(tc.Status),
		Kind:           string(tc.Kind),
		RawInput:       DecodeUntyped(tc.RawInput),
		RawOutput:      DecodeUntyped(tc.RawOutput),
		Meta:           tc.Meta,
		Content:        tc.Content,
		HasLocations:   len(tc.Locations) > 0,
		Read:           &FieldReader{},
	}
	if tc.Title != "" {
		title := tc.Title
		f.Title = &title
	}
	return f
}

func frameFromToolCallUpdate(sid string, tu *acp.SessionToolCallUpdate) *ToolFrame {
	f := &ToolFrame{
		SessionID:      sid,
		ToolCallID:     string(tu.ToolCallId),
		WireToolCallID: string(tu.ToolCallId),
		RawInput:       DecodeUntyped(tu.RawInput),
		RawOutput:      DecodeUntyped(tu.RawOutput),
		Meta:           tu.Meta,
		Content:        tu.Content,
		HasLocations:   len(tu.Locations) > 0,
		Title:          tu.Title,
		Read:           &FieldReader{},
	}
	if tu.Status != nil {
		f.Status = string(*tu.Status)
	}
	if tu.Kind != nil {
		f.Kind = string(*tu.Kind)
	}
	return f
}

// applyFrame is the pipeline common to every agent.
func (t *Tracker) applyFrame(tx *Tx, f *ToolFrame) {
	if !t.dialect.Prepare(tx, f) {
		t.counters[CounterFramesSuppressed]++
		return
	}
	if f.ToolCallID == "" {
		t.counters[CounterBadFields]++
		return
	}
	s := t.session(f.SessionID)
	c, held := s.cards[f.ToolCallID]
	kind := EventToolUpdate
	if !held {
		c = s.addCard(t, f.ToolCallID)
		kind = EventToolCall
		if recalled := t.recall(tx, s, c); !f.Create && !recalled {
			t.counters[CounterOrphanUpdates]++
		}
	} else if f.Create {
		t.counters[CounterDuplicateCalls]++
	}
	before := c.status
	wasTerminal := before.Terminal()

	if f.Title != nil {
		c.SetTitle(*f.Title)
	}
	if f.Kind != "" {
		c.kind = f.Kind
	}
	if f.Parent != "" {
		c.SetParent(f.Parent)
	} else {
		c.SetParent(claudeParent(f))
	}

	if c.task == nil {
		if t.dialect.Recognize(tx, c, f) || recognizeCommon(c, f) {
			task := c.MarkSubagent()
			if n, ok := c.Value(valueEarlyDurationMs).(int64); ok {
				task.DurationMs = n
			}
		} else {
			rememberEarlyDuration(c, f)
		}
	}
	if c.task != nil {
		mergeCommon(c, f)
		t.dialect.Apply(tx, c, f)
	}
	if len(f.Content) > 0 {
		c.refs = resolveSessionRefs(tx, f.Content)
	}

	// Status: the dialect may have raised it already; the frame's own
	// status applies next, never lowering it.
	fs, ok := MapACPToolStatus(f.Status)
	if !ok && f.Status != "" {
		t.counters[CounterBadStatus]++
	}
	emitted := ToolStatusUnchanged
	switch {
	case ok:
		if !c.SetStatus(fs) && fs != c.status {
			t.counters[CounterLoweredStatus]++
		}
		emitted = c.status
	case !held && c.status == ToolStatusUnchanged:
		c.SetStatus(ToolStatusInProgress)
		emitted = c.status
	case c.status.Terminal() || c.status != before:
		emitted = c.status
	case f.carriesContent():
		c.SetStatus(ToolStatusInProgress)
		emitted = c.status
	}
	if !wasTerminal && c.status.Terminal() {
		s.markDone(t, c)
	}
	t.enqueue(t.snapshot(kind, c, emitted))
}

// foreign reports an update for a session the client did not open and the
// agent did not announce as a child, once the client reported the sessions
// it opened; a consumer that reports none has every session tracked.
func (t *Tracker) foreign(sid string) bool {
	if len(t.opened) == 0 || t.opened[sid] {
		return false
	}
	s := t.sessions[sid]
	return s == nil || s.parent == ""
}

// rememberEarlyDuration keeps the positive rawOutput.durationMs of a frame
// on a card that is not a subagent yet, so that the final payload does not
// depend on whether the completion came before the frame that recognises
// the card. Its fields are counted when the card applies them, not here.
func rememberEarlyDuration(c *Card, f *ToolFrame) {
	out := f.RawOutputMap()
	if out == nil {
		return
	}
	var r FieldReader
	if n, ok := r.Int(out, "durationMs"); ok && n > 0 {
		c.SetValue(valueEarlyDurationMs, n)
	}
}

// commonRules are the recognition rules every dialect shares, tried in
// order after the dialect's own Recognize. Each lives beside the agent whose
// frames it was written for.
var commonRules = []func(c *Card, f *ToolFrame) bool{
	recognizeClaudeToolName, // R1, claudecode.go
	recognizeTaskTitle,      // R2, generic.go
	recognizeTaskToolName,   // R3, generic.go
	recognizeAuggieTitle,    // R4, auggie.go
	recognizeAIRMarker,      // R5, air.go
}

// recognizeCommon applies the common rules R1–R5.
func recognizeCommon(c *Card, f *ToolFrame) bool {
	for _, rule := range commonRules {
		if rule(c, f) {
			return true
		}
	}
	return false
}

// frameTitle is the title a rule judges: the frame's when it carries one
// (even empty), else the stored title.
func frameTitle(c *Card, f *ToolFrame) string {
	if f.Title != nil {
		return *f.Title
	}
	return c.title
}

// mergeCommon applies the merges every agent shares: rawInput fields
// (fill-if-empty), the Auggie title, and a map-shaped rawOutput's
// durationMs, OpenCode metadata and (R4 cards only) output.
func mergeCommon(c *Card, f *ToolFrame) {
	task := c.task
	r := f.Read
	if in := f.RawInputMap(); in != nil {
		FillString(&task.Description, r.String(in, "description"))
		FillString(&task.Prompt, r.String(in, "prompt"))
		FillString(&task.SubagentType, r.String(in, "subagent_type"))
	}
	mergeAuggieTitle(c)
	mergeAIRContent(c, f)
	out := f.RawOutputMap()
	if out == nil {
		return
	}
	d, ok := r.Int(out, "durationMs")
	OverwritePositive(&task.DurationMs, d, ok)
	mergeOpenCodeMetadata(task, r, out)
	mergeAuggieOutput(c, r, out)
}

// unhandledUpdate is reached for session updates no dialect consumed.
// Subagent-session kinds without the capability are dropped and counted
// (see subagent.go).
func (t *Tracker) unhandledUpdate(tx *Tx, n *acp.SessionNotification) {
	switch {
	case isSubagentSessionUpdate(&n.Update):
		t.counters[CounterSubagentFramesOff]++
	default:
		if _, _, ok := n.Update.Unknown(); ok {
			t.counters[CounterUnknownUpdates]++
		}
	}
}
