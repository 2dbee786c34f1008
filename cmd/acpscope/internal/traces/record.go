package traces

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// Attributes of acpscope's own, beside the GenAI conventions' (acp.* for
// what the protocol says, acpscope.* for what acpscope knows).
var (
	attrOptIn        = attribute.Key("acpscope.semconv.opt_in")
	attrTurn         = attribute.Key("acpscope.turn.index")
	attrDialect      = attribute.Key("acpscope.dialect")
	attrStopReason   = attribute.Key("acp.stop_reason")
	attrSessionID    = attribute.Key("acp.session.id")
	attrToolKind     = attribute.Key("acp.tool_call.kind")
	attrToolStatus   = attribute.Key("acp.tool_call.status")
	attrToolTitle    = attribute.Key("acp.tool_call.title")
	attrOpen         = attribute.Key("acpscope.open")
	attrAgentStatus  = attribute.Key("acpscope.subagent.status")
	attrAsync        = attribute.Key("acpscope.subagent.async")
	attrTotalTokens  = attribute.Key("acpscope.subagent.total_tokens")
	attrToolUses     = attribute.Key("acpscope.subagent.tool_use_count")
	attrDurationMs   = attribute.Key("acpscope.subagent.duration_ms")
	attrChildSession = attribute.Key("acp.child_session.id")
	attrChildState   = attribute.Key("acp.child_session.state")
	attrChildStop    = attribute.Key("acp.child_session.stop_reason")
	attrPermTitle    = attribute.Key("acp.permission.title")
	attrPermOptions  = attribute.Key("acp.permission.options")
	attrPermAnswer   = attribute.Key("acp.permission.answer")
	attrTotalUsage   = attribute.Key("acpscope.usage.total_tokens")
)

// Usage is a turn's token usage as the agent reported it.
type Usage struct {
	InputTokens, OutputTokens, TotalTokens int
	CachedReadTokens                       *int
}

// spanEvent is an event of a span (a permission's request or answer).
type spanEvent struct {
	name  string
	at    time.Time
	attrs []attribute.KeyValue
}

// turnRecord is one turn's invoke_agent span, before it is emitted.
type turnRecord struct {
	session string
	n       int
	// parent is the editor's span (the tap, from the prompt's
	// _meta.traceparent); invalid when the turn is a root.
	parent       trace.SpanContext
	agent        string // agentInfo.name, else the dialect
	agentVersion string
	dialect      string
	start, end   time.Time
	stop         string // "" when unknown (an export, a turn not answered)
	failure      string // the turn's error, "" when it has none
	open         bool   // never answered: ended with the session
	usage        *Usage
	prompt       string // content, kept only under CaptureContent
	events       []spanEvent
}

// spanContext is the turn span's own context.
func (t *turnRecord) spanContext() trace.SpanContext {
	tid, flags := TraceIDOf(t.session), trace.FlagsSampled
	if t.parent.IsValid() {
		tid, flags = t.parent.TraceID(), t.parent.TraceFlags()
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: turnSpan(t.salt(), t.session, t.n), TraceFlags: flags})
}

// salt is the turn's id salt: its editor parent's span id, else "".
func (t *turnRecord) salt() string {
	if t.parent.IsValid() {
		return t.parent.SpanID().String()
	}
	return ""
}

// cardKey is a card's session and tool call id.
type cardKey struct{ session, call string }

// cardRecord is one card's spans (execute_tool, and invoke_agent for a
// subagent), before they are emitted.
type cardRecord struct {
	key              cardKey
	parentToolCallID string
	parentSession    string // set for a card in a child session
	root             string // the session whose trace holds the card
	turn             int    // the root's turn it was first seen in; 0 outside turns
	turnID           string // the store's turn id (an export)
	turnCtx          trace.SpanContext
	salt             string // the turn's (turnRecord.salt)
	title, kind      string
	status           adapter.ToolStatus
	task             *adapter.SubagentTask
	child            *adapter.ChildSession
	start, end       time.Time
	terminal         bool
	emitted          bool // its spans were sent (the live feed)
	events           []spanEvent
}

// subagent reports whether the card is a subagent.
func (c *cardRecord) subagent() bool { return c.task != nil || c.childCard() }

// childCard reports whether the card is a child session itself (the
// subagent-session form: the card key is the child's session id), which
// has no tool call of its own: only an invoke_agent span.
func (c *cardRecord) childCard() bool {
	return (c.child != nil && c.child.SessionID == c.key.call) || (c.task != nil && c.task.ChildSessionID == c.key.call)
}

// ownSpan is the span a card's children go under: a subagent's
// invoke_agent span, else its execute_tool span.
func (c *cardRecord) ownSpan() trace.SpanID {
	if c.subagent() {
		return agentSpan(c.salt, c.key.session, c.key.call)
	}
	return toolSpan(c.salt, c.key.session, c.key.call)
}

// tree resolves a card's parent span among the cards known.
type tree struct {
	cards map[cardKey]*cardRecord
	// childOf is the card a child session belongs to (its own card, else
	// the tool call that launched it); referrer the first tool call whose
	// `session` content named it.
	childOf  map[string]cardKey
	referrer map[string]cardKey
}

func newTree() *tree {
	return &tree{cards: map[cardKey]*cardRecord{}, childOf: map[string]cardKey{}, referrer: map[string]cardKey{}}
}

// noteChild records what c says about child sessions.
func (t *tree) noteChild(c *cardRecord) {
	if c.childCard() {
		t.childOf[c.key.call] = c.key
		return
	}
	if c.task != nil && c.task.ChildSessionID != "" {
		if k, ok := t.childOf[c.task.ChildSessionID]; !ok || !t.cards[k].childCard() {
			t.childOf[c.task.ChildSessionID] = c.key
		}
	}
}

// parentOf is the span c goes under: its parent tool call's span, the
// span of the subagent whose child session holds it, a child card's
// launching tool call, else its turn (invalid outside turns).
func (t *tree) parentOf(c *cardRecord) trace.SpanContext {
	under := func(k cardKey) (trace.SpanContext, bool) {
		p, ok := t.cards[k]
		if !ok || p == c {
			return trace.SpanContext{}, false
		}
		return p.traceCtx().WithSpanID(p.ownSpan()), true
	}
	if c.parentToolCallID != "" {
		if sc, ok := under(cardKey{c.key.session, c.parentToolCallID}); ok {
			return sc
		}
	}
	if c.parentSession != "" {
		if k, ok := t.childOf[c.key.session]; ok {
			if sc, ok := under(k); ok {
				return sc
			}
		}
		// An earlier AIR generation's session (`<task>:generation:<n>`)
		// that only the live feed saw named: the task's one card.
		if task := adapter.AIRTaskID(c.key.session); task != c.key.session {
			if sc, ok := under(cardKey{c.parentSession, task}); ok {
				return sc
			}
		}
	}
	if c.childCard() {
		if k, ok := t.referrer[c.key.call]; ok && k != c.key {
			if p, ok := t.cards[k]; ok {
				return p.traceCtx().WithSpanID(toolSpan(p.salt, p.key.session, p.key.call))
			}
		}
	}
	return c.turnCtx
}

// traceCtx is the trace the card's spans are in: its turn's, else (a
// card outside turns) its root session's.
func (c *cardRecord) traceCtx() trace.SpanContext {
	if c.turnCtx.IsValid() {
		return c.turnCtx
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: TraceIDOf(c.root), SpanID: c.ownSpan(), TraceFlags: trace.FlagsSampled})
}

// emitter starts and ends the spans of records.
type emitter struct {
	tracer  trace.Tracer
	content bool
}

// start begins a span with derived ids under parent (a root when parent
// is invalid: then in trace tid).
func (e emitter) start(parent trace.SpanContext, tid trace.TraceID, sid trace.SpanID, name string, kind trace.SpanKind, at time.Time, attrs []attribute.KeyValue) trace.Span {
	ctx := withIDs(context.Background(), tid, sid)
	if parent.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, parent)
	}
	_, span := e.tracer.Start(ctx, name, trace.WithTimestamp(at), trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return span
}

func addEvents(span trace.Span, evs []spanEvent) {
	for _, ev := range evs {
		span.AddEvent(ev.name, trace.WithTimestamp(ev.at), trace.WithAttributes(ev.attrs...))
	}
}

// turn emits a turn's invoke_agent span.
func (e emitter) turn(t *turnRecord) {
	sc := t.spanContext()
	name := "invoke_agent"
	if t.agent != "" {
		name += " " + t.agent
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIConversationID(t.session),
		attrSessionID.String(t.session),
		attrTurn.Int(t.n),
	}
	if t.agent != "" {
		attrs = append(attrs, semconv.GenAIAgentName(t.agent))
	}
	if t.agentVersion != "" {
		attrs = append(attrs, semconv.GenAIAgentVersion(t.agentVersion))
	}
	if t.dialect != "" {
		attrs = append(attrs, attrDialect.String(t.dialect))
	}
	if t.stop != "" {
		attrs = append(attrs, attrStopReason.String(t.stop), semconv.GenAIResponseFinishReasons(t.stop))
	}
	if t.open {
		attrs = append(attrs, attrOpen.Bool(true))
	}
	if u := t.usage; u != nil {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(u.InputTokens), semconv.GenAIUsageOutputTokens(u.OutputTokens), attrTotalUsage.Int(u.TotalTokens))
		if u.CachedReadTokens != nil {
			attrs = append(attrs, semconv.GenAIUsageCacheReadInputTokens(*u.CachedReadTokens))
		}
	}
	if e.content && t.prompt != "" {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messages("user", t.prompt)))
	}
	span := e.start(t.parent, sc.TraceID(), sc.SpanID(), name, trace.SpanKindClient, t.start, attrs)
	addEvents(span, t.events)
	if t.failure != "" {
		span.SetStatus(codes.Error, t.failure)
	}
	span.End(trace.WithTimestamp(later(t.start, t.end)))
}

// card emits a card's execute_tool span (none for a child session card)
// and, for a subagent, its invoke_agent span.
func (e emitter) card(tr *tree, c *cardRecord) {
	parent := tr.parentOf(c)
	tid := parent.TraceID()
	if !tid.IsValid() {
		tid = TraceIDOf(c.root)
	}
	end := later(c.start, c.end)
	failed, reason := c.failure()
	if !c.childCard() {
		name := "execute_tool"
		if tool := c.toolName(); tool != "" {
			name += " " + tool
		}
		attrs := []attribute.KeyValue{
			semconv.GenAIOperationNameExecuteTool,
			semconv.GenAIToolCallID(c.key.call),
			semconv.GenAIConversationID(c.key.session),
			attrSessionID.String(c.key.session),
		}
		if tool := c.toolName(); tool != "" {
			attrs = append(attrs, semconv.GenAIToolName(tool))
		}
		if c.title != "" {
			attrs = append(attrs, attrToolTitle.String(c.title))
		}
		if c.kind != "" {
			attrs = append(attrs, attrToolKind.String(c.kind))
		}
		attrs = append(attrs, c.statusAttrs()...)
		span := e.start(parent, tid, toolSpan(c.salt, c.key.session, c.key.call), name, trace.SpanKindInternal, c.start, attrs)
		addEvents(span, c.events)
		if failed {
			span.SetStatus(codes.Error, reason)
		}
		span.End(trace.WithTimestamp(end))
		parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: toolSpan(c.salt, c.key.session, c.key.call), TraceFlags: parentFlags(parent)})
	}
	if !c.subagent() {
		return
	}
	e.subagent(parent, tid, c, end, failed, reason)
}

// subagent emits the invoke_agent span of a subagent card.
func (e emitter) subagent(parent trace.SpanContext, tid trace.TraceID, c *cardRecord, end time.Time, failed bool, reason string) {
	t := c.task
	if t == nil {
		t = &adapter.SubagentTask{}
	}
	agentName := t.SubagentType
	if agentName == "" {
		agentName = "Task"
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(agentName),
		attrSessionID.String(c.key.session),
	}
	conv := c.key.session
	child := t.ChildSessionID
	if c.child != nil && c.child.SessionID != "" {
		child = c.child.SessionID
	}
	if child != "" {
		conv = child
		attrs = append(attrs, attrChildSession.String(child))
	}
	attrs = append(attrs, semconv.GenAIConversationID(conv))
	if t.AgentID != "" {
		attrs = append(attrs, semconv.GenAIAgentID(t.AgentID))
	}
	desc := t.Description
	if desc == "" && c.child != nil {
		desc = c.child.Description
	}
	if desc != "" {
		attrs = append(attrs, semconv.GenAIAgentDescription(desc))
	}
	if t.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(t.Model))
	}
	if t.Status != "" {
		attrs = append(attrs, attrAgentStatus.String(t.Status))
	}
	if t.IsAsync {
		attrs = append(attrs, attrAsync.Bool(true))
	}
	if t.TotalTokens > 0 {
		attrs = append(attrs, attrTotalTokens.Int64(t.TotalTokens))
	}
	if t.ToolUseCount != nil {
		attrs = append(attrs, attrToolUses.Int(*t.ToolUseCount))
	}
	if t.DurationMs > 0 {
		attrs = append(attrs, attrDurationMs.Int64(t.DurationMs))
	}
	if ch := c.child; ch != nil {
		if ch.State != "" {
			attrs = append(attrs, attrChildState.String(ch.State))
		}
		if ch.StopReason != "" {
			attrs = append(attrs, attrChildStop.String(ch.StopReason))
		}
	}
	if c.childCard() {
		attrs = append(attrs, c.statusAttrs()...)
	}
	if e.content {
		if t.Prompt != "" {
			attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messages("user", t.Prompt)))
		}
		if t.ResultText != "" {
			attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(messages("assistant", t.ResultText)))
		}
	}
	span := e.start(parent, tid, agentSpan(c.salt, c.key.session, c.key.call), "invoke_agent "+agentName, trace.SpanKindInternal, c.start, attrs)
	if c.childCard() {
		addEvents(span, c.events)
	}
	if failed {
		span.SetStatus(codes.Error, reason)
	}
	span.End(trace.WithTimestamp(end))
}

// toolName is the tool's name as far as acpscope knows it: the title,
// else a subagent's description.
func (c *cardRecord) toolName() string {
	if c.title != "" {
		return c.title
	}
	if c.task != nil && c.task.Description != "" {
		return c.task.Description
	}
	return ""
}

// statusAttrs say the card's status as reported: cancelled and unknown
// are statuses, never outcomes; a card not settled says it is open.
func (c *cardRecord) statusAttrs() []attribute.KeyValue {
	var attrs []attribute.KeyValue
	if c.status != adapter.ToolStatusUnchanged {
		attrs = append(attrs, attrToolStatus.String(string(c.status)))
	}
	if !c.terminal {
		attrs = append(attrs, attrOpen.Bool(true))
	}
	return attrs
}

// failure reports whether the card failed (tool status error, or a child
// session that stopped with an error) and the reason as reported.
func (c *cardRecord) failure() (bool, string) {
	reason := ""
	if c.task != nil {
		reason = c.task.ErrorMessage
	}
	if c.child != nil && reason == "" {
		reason = c.child.ErrorMessage
	}
	childFailed := c.child != nil && c.child.StopReason == "error"
	if c.status != adapter.ToolStatusError && !childFailed {
		return false, ""
	}
	if reason == "" {
		reason = "failed"
		if childFailed {
			reason = "the child session stopped with an error"
		}
	}
	return true, reason
}

func parentFlags(sc trace.SpanContext) trace.TraceFlags {
	if sc.IsValid() {
		return sc.TraceFlags()
	}
	return trace.FlagsSampled
}

// minSpan is the shortest span: the store's time resolution. A backend
// may rewrite a span that does not end after it began (Jaeger moves its
// end and adds a warning on each ingestion, so the same span exported
// twice is then kept twice), and a card the store saw settle at its first
// observation has no duration of its own.
const minSpan = time.Microsecond

// later is end, or start plus minSpan when end is not after start (a span
// always ends after it began).
func later(start, end time.Time) time.Time {
	if !end.After(start) {
		return start.Add(minSpan)
	}
	return end
}

// messages is the conventions' message list holding one text part.
func messages(role, text string) string {
	b, err := json.Marshal([]map[string]any{{"role": role, "parts": []map[string]string{{"type": "text", "content": text}}}})
	if err != nil {
		return fmt.Sprintf("%q", text)
	}
	return string(b)
}

// attributeKV is an attribute (short for the event helpers).
type attributeKV = attribute.KeyValue

// attrToolCallID is gen_ai.tool.call.id on a permission event.
var attrToolCallID = semconv.GenAIToolCallIDKey
