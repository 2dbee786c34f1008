package tap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude" // registers the claude dialect, as run does
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traffic"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// ObserverConfig is what an Observer feeds.
type ObserverConfig struct {
	// Dialect is the explicit dialect name (--agent); "" chooses it from
	// the agent's initialize answer, as run does.
	Dialect string
	// View shows the permission answers (the tap's log); required.
	View *view.Terminal
	// Sink receives every tracker event, with the connection's dialect
	// and its wire time: the fan-out (the view, the store) the command
	// built; nil hands them to View alone.
	Sink sink.Sink
	// Record, when set, receives every message in wire order (--record).
	Record *capture.Writer
	// TurnStarted, when set, is called with the session's id when the
	// editor sends a prompt while none of that session is open: a turn
	// span begins, as run's session.Config.TurnStarted (a prompt queued
	// behind an open one joins its span).
	TurnStarted func(sessionID string)
	// Traces, when set, exports the connection as traces: turns (parented
	// on the traceparent the editor put in the prompt's _meta, if any)
	// and permission requests; events reach it through Sink.
	Traces *traces.Exporter
	// Turns, when set, is told what Traces is told of turns, the agent
	// and permissions (the store keeps them for an export).
	Turns traces.TurnObserver
	// Traffic, when set, keeps every observed line (a message, or a line
	// that is none) for the traffic view (--web).
	Traffic *traffic.Log
	// Incomplete, when set, is told that the session's observation is
	// incomplete: unobserved lines of the connection (the count so far)
	// went by without being observed (dropped by a busy observer, or over
	// its line limit). Which session a lost line was of is unknown (it was
	// never parsed), so every session the connection observed is told:
	// once when the loss or the session is first seen, and again at
	// Finish when more were lost since.
	Incomplete func(sessionID string, unobserved int64)
}

// maxTracked bounds the prompts and permission requests an Observer waits
// for the answers of; beyond it the oldest is forgotten.
const maxTracked = 4096

// Observer follows one editor–agent connection from its wire lines: it
// feeds the adapter's Replayer (and through it the Tracker, the view and
// the store) with both directions in wire order, answers nothing, and
// records the messages. It is used by one goroutine.
type Observer struct {
	cfg      ObserverConfig
	tracker  *adapter.Tracker
	replayer *adapter.Replayer
	cursor   *cursor.Handler

	// prompts are the editor's session/prompt requests not answered yet.
	prompts tracked[string]
	// permissions are the agent's session/request_permission requests not
	// answered yet.
	permissions tracked[permissionAsked]
	// cancelled are the sessions a prompt of which ended cancelled while
	// another of theirs was still open (a queued prompt); their open
	// cards end once none of theirs is (at most maxTracked).
	cancelled map[string]bool

	// at is the wire time of the line being observed (Unix nanoseconds);
	// an event the Cursor handler delivers on its own goroutine reads it.
	at atomic.Int64

	// agentEnded is set when the agent ended the connection by itself
	// (see Finish).
	agentEnded atomic.Bool

	// Unparsed counts lines that are not JSON-RPC messages (forwarded,
	// not observed).
	Unparsed atomic.Int64

	// nice is the priority its thread ran at while the connection lasted
	// (set by follow).
	nice int

	// lost counts the connection's lines not observed so far
	// (unobserved); seen maps each session observed (at most maxTracked)
	// to the lost count it was last marked incomplete with (0: never).
	// gapMu guards both: events reach observed from the Cursor handler's
	// goroutine too.
	gapMu sync.Mutex
	lost  int64
	seen  map[string]int64
}

// permissionAsked is what the view shows of a permission request.
type permissionAsked struct {
	session, toolCall string
	title             string
	options           map[string]string // option id → "name (kind)"
}

// NewObserver returns an observer of one connection.
func NewObserver(cfg ObserverConfig) (*Observer, error) {
	if cfg.Sink == nil {
		cfg.Sink = cfg.View
	}
	o := &Observer{cfg: cfg, prompts: newTracked[string](), permissions: newTracked[permissionAsked](), cancelled: map[string]bool{},
		seen: map[string]int64{}}
	var err error
	o.tracker, err = adapter.NewTracker(adapter.Config{
		DialectName: cfg.Dialect,
		OnEvent: func(ev adapter.Event) {
			cfg.Sink.Record(sink.Event{Event: ev, Dialect: o.tracker.Dialect(), At: o.wireTime()})
			o.observed(ev.SessionID)
		},
	})
	if err != nil {
		return nil, err
	}
	o.cursor = cursor.NewHandler(o.tracker)
	o.replayer = adapter.NewReplayer(o.tracker)
	o.replayer.OnExtension = o.extension
	return o, nil
}

// Dialect is the connection's dialect so far ("" before initialize).
func (o *Observer) Dialect() string { return o.tracker.Dialect() }

// CanCancelChild reports whether the observed connection's child session
// holds the ACP cancel capability now (adapter.Tracker.CanCancelChild):
// tap --web --allow-stop may then send it session/cancel.
func (o *Observer) CanCancelChild(child string) bool { return o.tracker.CanCancelChild(child) }

// extension takes the agent's extension messages: cursor/task merges its
// metadata into the card, as run's client does; the editor answers it.
func (o *Observer) extension(method string, id, params json.RawMessage) {
	if id != nil {
		_, _ = o.cursor.HandleExtensionMethod(context.Background(), method, params)
	}
}

// Observe takes one wire line sent by from, passed now.
func (o *Observer) Observe(from capture.Direction, line []byte) {
	o.ObserveAt(from, line, time.Now())
}

// ObserveAt takes one wire line sent by from that passed the tap at at:
// the events it causes carry that time (a zero at: now).
func (o *Observer) ObserveAt(from capture.Direction, line []byte, at time.Time) {
	if at.IsZero() {
		at = time.Now()
	}
	o.at.Store(at.UnixNano())
	msg := bytes.TrimSpace(line) // a CRLF line end is the peer's framing, not the message
	if len(msg) == 0 {
		return
	}
	if msg[0] != '{' {
		o.Unparsed.Add(1)
		o.cfg.Traffic.Add(from, msg, at)
		return
	}
	m, err := capture.ParseMessage(msg)
	if err != nil {
		o.Unparsed.Add(1)
		o.cfg.Traffic.Add(from, msg, at)
		return
	}
	o.cfg.Traffic.AddParsed(from, msg, &m, at)
	if o.cfg.Record != nil {
		_ = o.cfg.Record.Write(from, msg) // the writer keeps its first error for Err
	}
	o.before(from, &m)
	if err := o.replayer.FeedMessage(string(from), m); err != nil {
		o.Unparsed.Add(1)
	}
	o.after(from, &m)
}

// unobserved tells the observer that total lines of the connection were
// lost so far: the sessions it observed are marked incomplete (see
// ObserverConfig.Incomplete) the first time.
func (o *Observer) unobserved(total int64) {
	o.gapMu.Lock()
	defer o.gapMu.Unlock()
	if total <= o.lost {
		return
	}
	first := o.lost == 0
	o.lost = total
	if first {
		for session := range o.seen {
			o.mark(session)
		}
	}
}

// observed notes a session an event was of, and marks it when the
// connection lost lines already.
func (o *Observer) observed(session string) {
	if session == "" {
		return
	}
	o.gapMu.Lock()
	defer o.gapMu.Unlock()
	if _, ok := o.seen[session]; !ok {
		if len(o.seen) >= maxTracked {
			return // a peer with thousands of sessions: the first ones are told
		}
		o.seen[session] = 0
	}
	if o.lost > 0 && o.seen[session] == 0 {
		o.mark(session)
	}
}

// mark tells Incomplete about session with the count lost so far; gapMu
// is held.
func (o *Observer) mark(session string) {
	o.seen[session] = o.lost
	if o.cfg.Incomplete != nil {
		o.cfg.Incomplete(session, o.lost)
	}
}

// wireTime is the time the line being observed passed the tap.
func (o *Observer) wireTime() time.Time {
	if n := o.at.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Now()
}

// before notes the requests whose answers the observer waits for.
func (o *Observer) before(from capture.Direction, m *capture.Message) {
	if !m.IsRequest() {
		return
	}
	switch {
	case from == capture.FromClient && m.Method == "session/prompt":
		var p struct {
			SessionID string `json:"sessionId"`
			Meta      struct {
				Traceparent any `json:"traceparent"`
			} `json:"_meta"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			if !o.promptOpen(p.SessionID) {
				if o.cfg.TurnStarted != nil {
					o.cfg.TurnStarted(p.SessionID)
				}
				o.turnObservers().Initialized(o.tracker.Connection().AgentName, "")
				tp, _ := p.Meta.Traceparent.(string)
				o.turnObservers().TurnStarted(p.SessionID, o.tracker.Dialect(), tp, traces.PromptText(m.Params))
			}
			o.prompts.put(capture.IDKey(m.ID), p.SessionID)
		}
	case from == capture.FromAgent && m.Method == "session/request_permission":
		asked := askedPermission(m.Params)
		o.permissions.put(capture.IDKey(m.ID), asked)
		o.turnObservers().PermissionAsked(asked.session, asked.toolCall, asked.title, slices.Sorted(maps.Values(asked.options)))
	}
}

// promptOpen reports whether a prompt of the session is still unanswered
// (a scan of at most maxTracked prompts, once per prompt).
func (o *Observer) promptOpen(session string) bool {
	for _, e := range o.prompts.m {
		if e.v == session {
			return true
		}
	}
	return false
}

// after handles the answers: a prompt that ended cancelled ends the cards
// the agent left open (as run does), a permission answer is shown.
func (o *Observer) after(from capture.Direction, m *capture.Message) {
	if !m.IsResponse() {
		return
	}
	key := capture.IDKey(m.ID)
	if from == capture.FromAgent {
		if session, ok := o.prompts.take(key); ok {
			o.promptEnded(session, m)
			if !o.promptOpen(session) {
				o.turnEnded(session, m)
			}
		}
		return
	}
	if asked, ok := o.permissions.take(key); ok {
		answer := asked.answer(m)
		o.cfg.View.Permission(asked.title, answer)
		o.turnObservers().PermissionAnswered(asked.session, asked.toolCall, asked.title, answer)
	}
}

// promptEnded ends the session's open cards cancelled (in the tracker,
// so every sink sees it) once a turn of it that ended cancelled is the
// last of its prompts open: cards of its queued prompt still running stay
// open, and other sessions' cards are never touched.
func (o *Observer) promptEnded(session string, m *capture.Message) {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if !m.Failed() && json.Unmarshal(m.Result, &r) == nil && r.StopReason == "cancelled" {
		if len(o.cancelled) >= maxTracked {
			clear(o.cancelled) // only a peer leaving thousands of prompts open
		}
		o.cancelled[session] = true
	}
	if !o.cancelled[session] || o.promptOpen(session) {
		return
	}
	delete(o.cancelled, session)
	o.tracker.Flush() // cursor/task merges still on their way
	o.tracker.CancelTurn(session)
}

// Finish ends the observation: call it after the last Observe, once the
// connection is over. It delivers what the tracker still holds, then ends
// what the connection left open, since nothing more will come for it
// (adapter.Tracker.EndConnection, per session and its child sessions):
//
//   - a session with a prompt still open: its open cards end cancelled
//     when the tap ended the agent (the editor closed its side, or a stop
//     signal), as run stores a turn it cancels; unknown when the agent
//     ended the connection by itself (it exited or crashed, after a
//     forwarded SIGINT too): how its work ended cannot be known;
//   - a session with no prompt open whose cards are still open (a child
//     that outlived its turn, a background task): unknown, since the
//     agent is gone and never reported an outcome.
//
// Cards already unknown stay so, and nothing is ever made complete: no
// outcome is invented, and no card stays open for ever.
func (o *Observer) Finish() {
	o.at.Store(time.Now().UnixNano()) // what ends now is stored at the ending's time
	o.tracker.Flush()
	o.tracker.EndConnection(func(session string) bool {
		return o.promptOpen(session) && !o.agentEnded.Load()
	})
	o.tracker.Flush()
	o.gapMu.Lock()
	defer o.gapMu.Unlock()
	for session, marked := range o.seen {
		if o.lost > marked {
			o.mark(session) // more was lost since its mark
		}
	}
}

// endedByAgent records, before the last line is observed, whether the
// agent ended the connection by itself (true) or the tap ended it (the
// editor closed its side, or a stop signal): see Finish.
func (o *Observer) endedByAgent(agent bool) { o.agentEnded.Store(agent) }

// turnEnded ends the session's turn span in the export, with the
// answer's stop reason and usage (an error answer fails it).
func (o *Observer) turnEnded(session string, m *capture.Message) {
	if o.cfg.Traces == nil && o.cfg.Turns == nil {
		return
	}
	o.tracker.Flush() // the turn's events reach the export before its end
	var r struct {
		StopReason string     `json:"stopReason"`
		Usage      *acp.Usage `json:"usage"`
	}
	if m.Failed() {
		o.turnObservers().TurnEnded(session, "", nil, fmt.Errorf("session/prompt failed: %s", m.Error), true)
		return
	}
	_ = json.Unmarshal(m.Result, &r)
	o.turnObservers().TurnEnded(session, r.StopReason, traces.UsageOf(r.Usage), nil, false)
}

// turnObservers are the observers of the connection's turns: the export,
// then the store.
func (o *Observer) turnObservers() traces.TurnObservers {
	return traces.TurnObservers{o.cfg.Traces, o.cfg.Turns}
}

// askedPermission reads the title and options of a permission request.
func askedPermission(params json.RawMessage) permissionAsked {
	var p struct {
		SessionID string `json:"sessionId"`
		ToolCall  struct {
			ToolCallID string `json:"toolCallId"`
			Title      string `json:"title"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Name     string `json:"name"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	_ = json.Unmarshal(params, &p)
	a := permissionAsked{session: p.SessionID, toolCall: p.ToolCall.ToolCallID, title: p.ToolCall.Title, options: map[string]string{}}
	for _, opt := range p.Options {
		a.options[opt.OptionID] = fmt.Sprintf("%s (%s)", opt.Name, opt.Kind)
	}
	return a
}

// answer describes the editor's answer to the request for the view.
func (a permissionAsked) answer(m *capture.Message) string {
	if m.Failed() {
		return "refused by the editor (error)"
	}
	var r struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(m.Result, &r)
	if r.Outcome.Outcome == "selected" {
		if d, ok := a.options[r.Outcome.OptionID]; ok {
			return d
		}
		return r.Outcome.OptionID
	}
	return "cancelled"
}

// tracked is a bounded map of requests awaiting their answers, keyed by
// canonical id. Each entry carries the order it came in; past maxTracked
// the oldest is forgotten (a scan, paid only by a peer that leaves
// thousands of requests unanswered).
type tracked[V any] struct {
	m    map[string]trackedEntry[V]
	next uint64
}

type trackedEntry[V any] struct {
	v   V
	seq uint64
}

func newTracked[V any]() tracked[V] { return tracked[V]{m: map[string]trackedEntry[V]{}} }

func (t *tracked[V]) put(key string, v V) {
	t.next++
	t.m[key] = trackedEntry[V]{v, t.next}
	if len(t.m) <= maxTracked {
		return
	}
	oldest, least := "", t.next
	for k, e := range t.m {
		if e.seq < least {
			oldest, least = k, e.seq
		}
	}
	delete(t.m, oldest)
}

func (t *tracked[V]) take(key string) (V, bool) {
	e, ok := t.m[key]
	delete(t.m, key)
	return e.v, ok
}
