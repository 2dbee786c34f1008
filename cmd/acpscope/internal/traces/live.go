package traces

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
)

// Exporter turns one acpscope process's sessions into spans. Its methods
// may be called from any goroutine; every one is a no-op on a nil
// *Exporter, which is what New returns when no export is configured.
// Nothing it does waits on the collector: spans go to a bounded queue.
type Exporter struct {
	tp   *sdktrace.TracerProvider
	q    *queue
	emit emitter

	mu    sync.Mutex
	clock func() time.Time
	agent struct{ name, version string }
	// sessions holds each root session's turn state; roots maps a child
	// session to its root.
	sessions map[string]*liveSession
	roots    map[string]string
	tree     *tree
	// pending are the cards not emitted yet, in first-seen order.
	pending []*cardRecord
}

// liveSession is a root session's turns.
type liveSession struct {
	turns int
	open  *turnRecord
	// last is the context of the session's latest turn, for cards that
	// arrive between turns (they go under it).
	last trace.SpanContext
	salt string // the latest turn's id salt
}

// New returns the exporter o configures, or nil (and no error) when o
// asks for none (Options.Enabled). version is acpscope's, the scope's
// instrumentation version.
func New(ctx context.Context, o Options, version string) (*Exporter, error) {
	if !o.Enabled() {
		return nil, nil
	}
	tp, q, err := newProvider(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Exporter{
		tp: tp, q: q, emit: emitter{tracer: tracerOf(tp, version, o.LatestExperimental()), content: o.CaptureContent},
		sessions: map[string]*liveSession{}, roots: map[string]string{}, tree: newTree(),
	}, nil
}

// SetClock sets where event times come from (nil: the wall clock); a
// replay sets the capture's recorded times.
func (x *Exporter) SetClock(now func() time.Time) {
	if x == nil {
		return
	}
	x.mu.Lock()
	x.clock = now
	x.mu.Unlock()
}

func (x *Exporter) now() time.Time {
	if x.clock != nil {
		return x.clock()
	}
	return time.Now()
}

// Initialized records the agent's initialize answer (agentInfo): its
// name is the turn spans' gen_ai.agent.name.
func (x *Exporter) Initialized(name, version string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	x.agent.name, x.agent.version = name, version
	x.mu.Unlock()
}

// session returns the root session state of id.
func (x *Exporter) session(id string) *liveSession {
	s := x.sessions[id]
	if s == nil {
		s = &liveSession{}
		x.sessions[id] = s
	}
	return s
}

// rootOf is the root session of id (itself unless it is a known child).
func (x *Exporter) rootOf(id string) string {
	for i := 0; i < 64; i++ { // a cycle of children ends here
		p, ok := x.roots[id]
		if !ok || p == id {
			return id
		}
		id = p
	}
	return id
}

// TurnStarted opens the next turn of a session: dialect is the
// connection's dialect so far, traceparent the W3C value the editor put
// in the prompt's _meta ("" when none: the turn is a root), prompt its
// text (kept only under CaptureContent). A turn still open is ended
// first.
func (x *Exporter) TurnStarted(sessionID, dialect, traceparent, prompt string) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	s := x.session(sessionID)
	if s.open != nil {
		x.endTurn(s, now, true)
	}
	s.turns++
	t := &turnRecord{session: sessionID, n: s.turns, agent: x.agent.name, agentVersion: x.agent.version, dialect: dialect, start: now, end: now}
	if t.agent == "" {
		t.agent = dialect
	}
	if sc, ok := ParseTraceparent(traceparent); ok {
		t.parent = sc
	}
	if x.emit.content {
		t.prompt = prompt
	}
	s.open, s.last, s.salt = t, t.spanContext(), t.salt()
}

// TurnContext is the span context of the session's open turn (invalid
// when none is open): run sends it as the prompt's traceparent.
func (x *Exporter) TurnContext(sessionID string) trace.SpanContext {
	if x == nil {
		return trace.SpanContext{}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if s := x.sessions[sessionID]; s != nil && s.open != nil {
		return s.open.spanContext()
	}
	return trace.SpanContext{}
}

// TurnEnded ends the session's open turn: stop is the stop reason (""
// when the agent gave none), usage the tokens it reported (nil: none);
// when failed, err is the turn's failure (the span's ERROR status; a
// cancelled turn is not failed: its stop reason says so). The turn's
// span and those of its settled cards are emitted now; cards still open
// go on.
func (x *Exporter) TurnEnded(sessionID, stop string, usage *Usage, err error, failed bool) {
	if x == nil {
		return
	}
	failure := ""
	if failed && err != nil {
		failure = truncate(err.Error(), maxAttributeBytes)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.sessions[sessionID]
	if s == nil || s.open == nil {
		return
	}
	s.open.stop, s.open.usage, s.open.failure = stop, usage, failure
	x.endTurn(s, x.now(), false)
}

// endTurn emits the open turn (ended at now; unanswered says it was
// never answered: the session went on or ended without it) and the
// settled cards.
func (x *Exporter) endTurn(s *liveSession, now time.Time, unanswered bool) {
	t := s.open
	s.open = nil
	t.end, t.open = now, unanswered
	x.emit.turn(t)
	x.flushCards(false)
}

// flushCards emits the pending cards that are settled (all with all).
func (x *Exporter) flushCards(all bool) {
	kept := x.pending[:0]
	for _, c := range x.pending {
		if !all && !c.terminal {
			kept = append(kept, c)
			continue
		}
		x.emit.card(x.tree, c)
		c.emitted = true
		// What children still need of it is its key and kind: the heavy
		// parts go.
		c.events = nil
		if c.task != nil {
			c.task = &adapter.SubagentTask{ChildSessionID: c.task.ChildSessionID, SubagentType: c.task.SubagentType}
		}
	}
	clear(x.pending[len(kept):])
	x.pending = kept
}

// Record takes one event of the command's sink fan-out (sink.Sink: run,
// replay and the tap), dated by its wire time.
func (x *Exporter) Record(e sink.Event) { x.event(e.Event, e.At) }

// Event takes one tracker event dated by the exporter's clock (SetClock).
func (x *Exporter) Event(dialect string, ev adapter.Event) { x.event(ev, time.Time{}) }

// event creates or updates the card's record of ev, seen at at (zero: the
// exporter's clock). Events after a card was emitted (a late enrichment)
// are not sent again.
func (x *Exporter) event(ev adapter.Event, at time.Time) {
	if x == nil || ev.Kind == adapter.EventSessionMessage || ev.ToolCallID == "" || ev.SessionID == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	now := at
	if now.IsZero() {
		now = x.now()
	}
	if ev.ParentSessionID != "" && ev.ParentSessionID != ev.SessionID {
		x.roots[ev.SessionID] = ev.ParentSessionID
	}
	key := cardKey{ev.SessionID, ev.ToolCallID}
	c := x.tree.cards[key]
	if c != nil && c.emitted {
		return
	}
	if c == nil {
		root := x.rootOf(ev.SessionID)
		s := x.session(root)
		c = &cardRecord{key: key, root: root, start: now, turnCtx: s.last, salt: s.salt}
		if s.open != nil {
			c.turn = s.open.n
		}
		x.tree.cards[key] = c
		x.pending = append(x.pending, c)
	}
	c.parentSession = ev.ParentSessionID
	if ev.ParentToolCallID != "" {
		c.parentToolCallID = ev.ParentToolCallID
	}
	if ev.Title != "" {
		c.title = ev.Title
	}
	if ev.ToolKind != "" {
		c.kind = ev.ToolKind
	}
	if ev.Status != adapter.ToolStatusUnchanged {
		c.status = ev.Status
	}
	if ev.Payload != nil && ev.Payload.SubagentTask != nil {
		c.task = ev.Payload.SubagentTask // a snapshot: no later frame changes it
	}
	if ev.Child != nil {
		c.child = ev.Child
	}
	if !c.terminal {
		c.end = now
		c.terminal = c.status.Terminal() && (c.child == nil || !c.child.Live)
	}
	x.tree.noteChild(c)
	for _, r := range ev.SessionRefs {
		if _, ok := x.tree.referrer[r.SessionID]; r.Known && !ok && r.SessionID != ev.ToolCallID {
			x.tree.referrer[r.SessionID] = key
		}
	}
}

// PermissionAsked records a session/request_permission: an event of the
// tool call's span (of the open turn's when the tool call is not a card).
func (x *Exporter) PermissionAsked(sessionID, toolCallID, title string, options []string) {
	x.permission(sessionID, toolCallID, permissionEvent(EventPermissionRequest, toolCallID, title, JoinOptions(options)))
}

// PermissionAnswered records the answer to a permission request.
func (x *Exporter) PermissionAnswered(sessionID, toolCallID, title, answer string) {
	x.permission(sessionID, toolCallID, permissionEvent(EventPermissionAnswer, toolCallID, title, answer))
}

func (x *Exporter) permission(sessionID, toolCallID string, ev spanEvent) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	ev.at = x.now()
	if c := x.tree.cards[cardKey{sessionID, toolCallID}]; c != nil && !c.emitted {
		if len(c.events) < maxSpanEvents {
			c.events = append(c.events, ev)
		}
		return
	}
	if s := x.sessions[x.rootOf(sessionID)]; s != nil && s.open != nil && len(s.open.events) < maxSpanEvents {
		s.open.events = append(s.open.events, ev)
	}
}

// Report is what an export did: spans sent, and spans dropped (a full
// queue, a collector that refused or did not answer, the shutdown's time
// up).
type Report struct {
	Exported, Dropped int64
}

// String is the closing report's line.
func (r Report) String() string {
	return fmt.Sprintf("traces: %d span(s) exported, %d dropped", r.Exported, r.Dropped)
}

// Close ends what is open (turns never answered, cards never settled:
// marked acpscope.open, their status as last reported), sends what is
// queued for at most ShutdownWait, and reports.
func (x *Exporter) Close() Report {
	if x == nil {
		return Report{}
	}
	x.mu.Lock()
	now := x.now()
	for _, s := range x.sessions {
		if s.open != nil {
			x.endTurn(s, now, true)
		}
	}
	x.flushCards(true)
	x.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownWait)
	defer cancel()
	_ = x.tp.Shutdown(ctx)
	return Report{Exported: x.q.exported.Load(), Dropped: x.q.dropped.Load()}
}

// eventAttrs are a permission event's attributes.
func eventAttrs(toolCallID, title string, more ...attributeKV) []attributeKV {
	attrs := []attributeKV{attrToolCallID.String(toolCallID)}
	if title != "" {
		attrs = append(attrs, attrPermTitle.String(title))
	}
	return append(attrs, more...)
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
