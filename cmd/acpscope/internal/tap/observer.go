package tap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude" // registers the claude dialect, as run does
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// ObserverConfig is what an Observer feeds.
type ObserverConfig struct {
	// Dialect is the explicit dialect name (--agent); "" chooses it from
	// the agent's initialize answer, as run does.
	Dialect string
	// View shows the cards as they change (the tap's log); required.
	View *view.Terminal
	// Sink, when set, receives every event with the connection's dialect
	// (the store).
	Sink func(dialect string, ev adapter.Event)
	// Record, when set, receives every message in wire order (--record).
	Record *capture.Writer
	// TurnStarted, when set, is called with the session's id when the
	// editor sends a prompt while none of that session is open: a turn
	// span begins, as run's session.Config.TurnStarted (a prompt queued
	// behind an open one joins its span).
	TurnStarted func(sessionID string)
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
	// cancelledTurn is set when a prompt ended cancelled while another
	// was still running; the open cards end once none runs.
	cancelledTurn bool

	// Unparsed counts lines that are not JSON-RPC messages (forwarded,
	// not observed).
	Unparsed atomic.Int64
}

// permissionAsked is what the view shows of a permission request.
type permissionAsked struct {
	title   string
	options map[string]string // option id → "name (kind)"
}

// NewObserver returns an observer of one connection.
func NewObserver(cfg ObserverConfig) (*Observer, error) {
	o := &Observer{cfg: cfg, prompts: newTracked[string](), permissions: newTracked[permissionAsked]()}
	var err error
	o.tracker, err = adapter.NewTracker(adapter.Config{
		DialectName: cfg.Dialect,
		OnEvent: func(ev adapter.Event) {
			cfg.View.Event(ev)
			if cfg.Sink != nil {
				cfg.Sink(o.tracker.Dialect(), ev)
			}
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

// extension takes the agent's extension messages: cursor/task merges its
// metadata into the card, as run's client does; the editor answers it.
func (o *Observer) extension(method string, id, params json.RawMessage) {
	if id != nil {
		_, _ = o.cursor.HandleExtensionMethod(context.Background(), method, params)
	}
}

// Observe takes one wire line sent by from.
func (o *Observer) Observe(from capture.Direction, line []byte) {
	msg := bytes.TrimSpace(line) // a CRLF line end is the peer's framing, not the message
	if len(msg) == 0 {
		return
	}
	if msg[0] != '{' {
		o.Unparsed.Add(1)
		return
	}
	m, err := capture.ParseMessage(msg)
	if err != nil {
		o.Unparsed.Add(1)
		return
	}
	if o.cfg.Record != nil {
		_ = o.cfg.Record.Write(from, msg) // the writer keeps its first error for Err
	}
	o.before(from, &m)
	if err := o.replayer.Feed(string(from), msg); err != nil {
		o.Unparsed.Add(1)
	}
	o.after(from, &m)
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
		}
		if json.Unmarshal(m.Params, &p) == nil {
			if o.cfg.TurnStarted != nil && !o.promptOpen(p.SessionID) {
				o.cfg.TurnStarted(p.SessionID)
			}
			o.prompts.put(capture.IDKey(m.ID), p.SessionID)
		}
	case from == capture.FromAgent && m.Method == "session/request_permission":
		o.permissions.put(capture.IDKey(m.ID), askedPermission(m.Params))
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
		if _, ok := o.prompts.take(key); ok {
			o.promptEnded(m)
		}
		return
	}
	if asked, ok := o.permissions.take(key); ok {
		o.cfg.View.Permission(asked.title, asked.answer(m))
	}
}

// promptEnded ends the open cards once a turn that ended cancelled is the
// last one running: cards of a turn still running elsewhere stay open.
func (o *Observer) promptEnded(m *capture.Message) {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if !m.Failed() && json.Unmarshal(m.Result, &r) == nil && r.StopReason == "cancelled" {
		o.cancelledTurn = true
	}
	if !o.cancelledTurn || o.prompts.len() > 0 {
		return
	}
	o.cancelledTurn = false
	o.tracker.Flush() // cursor/task merges still on their way
	var spare func(adapter.Event) bool
	if o.tracker.Connection().BackgroundChildren() {
		spare = view.LiveChild // it outlives the turn (AIR backgroundSubagents)
	}
	for _, ev := range o.cfg.View.CancelOpenExcept(spare) {
		if o.cfg.Sink != nil {
			o.cfg.Sink(o.tracker.Dialect(), ev)
		}
	}
}

// Finish delivers what the tracker still holds; call it after the last
// Observe.
func (o *Observer) Finish() { o.tracker.Flush() }

// askedPermission reads the title and options of a permission request.
func askedPermission(params json.RawMessage) permissionAsked {
	var p struct {
		ToolCall struct {
			Title string `json:"title"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Name     string `json:"name"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	_ = json.Unmarshal(params, &p)
	a := permissionAsked{title: p.ToolCall.Title, options: map[string]string{}}
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

func (t *tracked[V]) len() int { return len(t.m) }
