package adapter

import (
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// Per-card gate keys used by the common pipeline.
const (
	// valueAuggie marks a card recognised by rule R4; only such cards read
	// rawOutput.output as their result.
	valueAuggie = "adapter.auggie"
	// valueEarlyDurationMs keeps a positive rawOutput.durationMs seen
	// while the card was not a subagent yet (a completion that arrived
	// before the frame recognising it), applied once it is.
	valueEarlyDurationMs = "adapter.earlyDurationMs"
)

func (t *Tracker) handleNotification(tx *Tx, n *acp.SessionNotification) {
	sid := string(n.SessionId)
	if sid == "" {
		t.counters[CounterBadSessionID]++
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
		Read:           &Reader{},
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
		Read:           &Reader{},
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
		if !f.Create {
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

// rememberEarlyDuration keeps the positive rawOutput.durationMs of a frame
// on a card that is not a subagent yet, so that the final payload does not
// depend on whether the completion came before the frame that recognises
// the card. Its fields are counted when the card applies them, not here.
func rememberEarlyDuration(c *Card, f *ToolFrame) {
	out := f.RawOutputMap()
	if out == nil {
		return
	}
	var r Reader
	if n, ok := r.Int(out, "durationMs"); ok && n > 0 {
		c.SetValue(valueEarlyDurationMs, n)
	}
}

// claudeParent reads _meta.claudeCode.parentToolUseId (a non-empty string).
func claudeParent(f *ToolFrame) string {
	cc := f.Read.Map(f.Meta, "claudeCode")
	return f.Read.String(cc, "parentToolUseId")
}

// recognizeCommon applies rules R1–R4 (every agent).
func recognizeCommon(c *Card, f *ToolFrame) bool {
	// R1: _meta.claudeCode.toolName is exactly "Agent" or "Task".
	if cc := AsMap(f.Meta["claudeCode"]); cc != nil {
		if name, _ := cc["toolName"].(string); name == "Agent" || name == "Task" {
			return true
		}
	}
	title := c.title
	if f.Title != nil {
		title = *f.Title
	}
	// R2: the trimmed title equals "task", any case.
	if strings.EqualFold(strings.TrimSpace(title), "task") {
		return true
	}
	// R3: rawInput._toolName equals "task", any case.
	if in := f.RawInputMap(); in != nil {
		if name, _ := in["_toolName"].(string); strings.EqualFold(name, "task") {
			return true
		}
	}
	// R4: the Auggie title shape.
	if typ, _, ok := ParseAuggieTitle(title); ok && typ != "" {
		c.SetValue(valueAuggie, true)
		return true
	}
	return false
}

// ParseAuggieTitle splits an Auggie subagent title "sub-agent-<type>: <text>"
// (rule R4): the prefix is case-sensitive, a colon is required, and the
// trimmed type before it must be non-empty.
func ParseAuggieTitle(title string) (subagentType, description string, ok bool) {
	const prefix = "sub-agent-"
	rest, found := strings.CutPrefix(title, prefix)
	if !found {
		return "", "", false
	}
	typ, desc, found := strings.Cut(rest, ":")
	typ = strings.TrimSpace(typ)
	if !found || typ == "" {
		return "", "", false
	}
	return typ, strings.TrimSpace(desc), true
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
	if c.Value(valueAuggie) == true {
		if typ, desc, ok := ParseAuggieTitle(c.title); ok {
			FillString(&task.SubagentType, typ)
			FillString(&task.Description, desc)
		}
	}
	out := f.RawOutputMap()
	if out == nil {
		return
	}
	d, ok := r.Int(out, "durationMs")
	OverwritePositive(&task.DurationMs, d, ok)
	if md := r.Map(out, "metadata"); md != nil {
		OverwriteString(&task.ChildSessionID, r.String(md, "sessionId"))
		if m := r.Map(md, "model"); m != nil {
			OverwriteString(&task.Model, joinModel(r.String(m, "providerID"), r.String(m, "modelID")))
		}
	}
	if c.Value(valueAuggie) == true {
		FillString(&task.ResultText, r.String(out, "output"))
	}
}

// joinModel renders an OpenCode model as "provider/model", or whichever
// half is non-empty.
func joinModel(provider, model string) string {
	switch {
	case provider != "" && model != "":
		return provider + "/" + model
	case provider != "":
		return provider
	}
	return model
}

// unhandledUpdate is reached for session updates no dialect consumed.
// Subagent-session kinds without the capability are dropped and counted
// (see subagent.go).
func (t *Tracker) unhandledUpdate(tx *Tx, n *acp.SessionNotification) {
	switch {
	case isSubagentSessionUpdate(&n.Update):
		t.counters[CounterSubagentFramesOff]++
	default:
		if kind, _, ok := n.Update.Unknown(); ok {
			if airKinds[kind] {
				// The AIR draft form is never supported: dropped
				// like the subagent-session kinds without opt-in.
				t.counters[CounterSubagentFramesOff]++
			} else {
				t.counters[CounterUnknownUpdates]++
			}
		}
	}
}

// airKinds are the session-update kinds of the AIR subagent draft.
var airKinds = map[string]bool{
	"subagent_spawned": true, "subagent_state_update": true,
	"async_task_spawned": true, "async_task_progress": true, "async_task_state_update": true,
}

// genericDialect is the dialect of agents without agent-specific code; the
// opencode, auggie and copilot names are generic under their own name.
type genericDialect struct {
	Base
	name string
}

// Name returns the registry name the dialect was made for.
func (d genericDialect) Name() string {
	if d.name == "" {
		return DialectGeneric
	}
	return d.name
}

func init() {
	for _, name := range []string{DialectGeneric, DialectOpenCode, DialectAuggie, DialectCopilot} {
		Register(name, func() Dialect { return genericDialect{name: name} })
	}
}
