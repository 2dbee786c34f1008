package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// Sender of a wire message, as in the capture format.
const (
	FromAgent  = string(capture.FromAgent)
	FromClient = string(capture.FromClient)
)

// Replayer feeds a Tracker from raw JSON-RPC messages in wire order, the
// way a capture file records them. It pairs requests with responses by id
// and direction, so that initialize, session/new, session/load,
// session/resume, session/close and session/prompt drive the Tracker's
// lifecycle, and every session/update notification is decoded into an
// acp.SessionNotification and fed.
//
// It is the replay path for tests, acpscope and the conformance identity
// suites; a live client calls the Tracker's methods directly. A Replayer is
// not safe for concurrent use (wire order is one order).
type Replayer struct {
	tracker *Tracker
	pending map[string]pendingRequest // key: pendingKey(sender, id)

	// OnExtension, when set, receives every agent→client request or
	// notification whose method the Replayer does not handle (cursor/task,
	// vendor methods). id is nil for a notification.
	OnExtension func(method string, id json.RawMessage, params json.RawMessage)
	// MaxPending bounds requests awaiting a response (default 4096);
	// beyond it the oldest is forgotten.
	MaxPending int
	order      []string
}

type pendingRequest struct {
	method string
	params json.RawMessage
}

// NewReplayer returns a Replayer feeding t.
func NewReplayer(t *Tracker) *Replayer {
	return &Replayer{tracker: t, pending: map[string]pendingRequest{}}
}

// ErrNotMessage is returned (wrapped) for input that is not a JSON-RPC
// message object.
var ErrNotMessage = errors.New("adapter: not a JSON-RPC message")

// Feed processes one message sent by from (FromAgent or FromClient). An
// error reports a message that could not be used; the Replayer stays
// usable and the Tracker unchanged by it.
func (r *Replayer) Feed(from string, msg []byte) error {
	m, err := capture.ParseMessage(msg)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotMessage, err)
	}
	return r.FeedMessage(from, m)
}

// FeedMessage is Feed for a message whose envelope the caller has parsed
// already with capture.ParseMessage (acpscope tap, which reads the
// envelope itself): a line is parsed once.
func (r *Replayer) FeedMessage(from string, m capture.Message) error {
	switch {
	case m.IsRequest():
		r.remember(from, m.ID, pendingRequest{m.Method, m.Params})
		return r.request(from, m)
	case m.IsNotification():
		return r.notification(from, m)
	case m.IsResponse():
		// A response travels the other way from its request.
		other := FromClient
		if from == FromClient {
			other = FromAgent
		}
		key := pendingKey(other, m.ID)
		req, ok := r.pending[key]
		if !ok {
			return nil
		}
		delete(r.pending, key)
		failed := m.Failed()
		if req.method == "session/load" || req.method == "session/resume" {
			var p sessionParams
			if json.Unmarshal(req.params, &p) == nil && p.SessionID != "" {
				r.tracker.SessionLoadFinished(p.SessionID, !failed)
			}
		}
		if failed {
			return nil
		}
		return r.response(req, m.Result)
	}
	return fmt.Errorf("%w: no method and no id", ErrNotMessage)
}

// pendingKey names a request by its sender and canonical id, so that a
// response spelling the id differently (1.0 for 1) still pairs with it.
func pendingKey(from string, id json.RawMessage) string {
	return from + " " + capture.IDKey(id)
}

func (r *Replayer) remember(from string, id json.RawMessage, req pendingRequest) {
	key := pendingKey(from, id)
	limit := r.MaxPending
	if limit <= 0 {
		limit = 4096
	}
	if _, dup := r.pending[key]; !dup {
		r.order = append(r.order, key)
	}
	r.pending[key] = req
	for len(r.pending) > limit && len(r.order) > 0 {
		delete(r.pending, r.order[0])
		r.order = r.order[1:]
	}
	if len(r.order) > 2*limit {
		kept := r.order[:0:0]
		for _, k := range r.order {
			if _, ok := r.pending[k]; ok {
				kept = append(kept, k)
			}
		}
		r.order = kept
	}
}

type sessionParams struct {
	SessionID string `json:"sessionId"`
}

func (r *Replayer) request(from string, m capture.Message) error {
	if from == FromClient {
		var p sessionParams
		if json.Unmarshal(m.Params, &p) != nil || p.SessionID == "" {
			return nil
		}
		switch m.Method {
		case "session/prompt":
			r.tracker.PromptStarted(p.SessionID)
		case "session/load", "session/resume":
			// Cleared when asked, so the history the agent replays
			// before its response builds fresh state.
			r.tracker.SessionLoaded(p.SessionID)
		}
		return nil
	}
	if r.OnExtension != nil && !clientMethod(m.Method) {
		r.OnExtension(m.Method, m.ID, m.Params)
	}
	return nil
}

func (r *Replayer) notification(from string, m capture.Message) error {
	if from == FromClient {
		return nil
	}
	if m.Method != "session/update" {
		if r.OnExtension != nil && !clientMethod(m.Method) {
			r.OnExtension(m.Method, nil, m.Params)
		}
		return nil
	}
	// The envelope's parse validated params as JSON already: the SDK's
	// one-pass decoder takes them directly, without encoding/json
	// scanning them a second time (the tap observes at the wire's pace).
	var n acp.SessionNotification
	if err := n.UnmarshalJSON(m.Params); err != nil {
		r.tracker.Do(func(tx *Tx) { tx.Count(CounterUndecodable, 1) })
		return fmt.Errorf("adapter: session/update params: %w", err)
	}
	r.tracker.SessionUpdate(n)
	return nil
}

// CounterUndecodable counts session/update notifications the SDK types
// could not decode (Replayer only; a live connection never hands them over).
const CounterUndecodable = "undecodable_updates"

func (r *Replayer) response(req pendingRequest, result json.RawMessage) error {
	switch req.method {
	case "initialize":
		var in acp.InitializeRequest
		var out acp.InitializeResponse
		inErr := json.Unmarshal(req.params, &in)
		outErr := json.Unmarshal(result, &out)
		var pin *acp.InitializeRequest
		var pout *acp.InitializeResponse
		if inErr == nil {
			pin = &in
		}
		if outErr == nil {
			pout = &out
		}
		r.tracker.Initialize(pin, pout)
	case "session/new":
		var p sessionParams
		if json.Unmarshal(result, &p) == nil && p.SessionID != "" {
			r.tracker.SessionStarted(p.SessionID)
		}
	case "session/close":
		var p sessionParams
		if json.Unmarshal(req.params, &p) == nil && p.SessionID != "" {
			r.tracker.SessionClosed(p.SessionID)
		}
	case "session/prompt":
		var p sessionParams
		if json.Unmarshal(req.params, &p) == nil && p.SessionID != "" {
			r.tracker.PromptEnded(p.SessionID)
		}
	}
	return nil
}

// clientMethod reports the standard agent→client methods (the SDK's
// ClientMethod* names, plus session/elicitation, an older spelling some
// captures hold), which are not extensions.
func clientMethod(method string) bool {
	switch method {
	case acp.ClientMethodSessionUpdate, acp.ClientMethodSessionRequestPermission,
		acp.ClientMethodFsReadTextFile, acp.ClientMethodFsWriteTextFile,
		acp.ClientMethodTerminalCreate, acp.ClientMethodTerminalOutput,
		acp.ClientMethodTerminalRelease, acp.ClientMethodTerminalWaitForExit,
		acp.ClientMethodTerminalKill, acp.ClientMethodElicitationCreate,
		acp.ClientMethodElicitationComplete, acp.ClientMethodMcpConnect,
		acp.ClientMethodMcpDisconnect, acp.ClientMethodMcpMessage,
		"session/elicitation":
		return true
	}
	return false
}

// ReplayResult is what ReplayCapture observed.
type ReplayResult struct {
	// Events are every event the Tracker delivered, in order.
	Events []Event
	// Counters are the Tracker's counters after the last entry.
	Counters map[string]int64
	// Errors lists entries the Replayer could not use ("line N: reason").
	Errors []string
	// Dialect is the dialect the connection ended up with.
	Dialect string
}

// ReplayCapture replays a capture file (see internal/capture for the
// format) through a new Tracker configured by cfg; cfg.OnEvent is replaced
// by a collector. ext, when non-nil, receives agent→client extension
// requests and notifications (id nil) with the Tracker, the way an
// extension handler would.
func ReplayCapture(path string, cfg Config, ext func(t *Tracker, method string, id, params json.RawMessage)) (*ReplayResult, error) {
	c, err := capture.ReadFile(path)
	if err != nil {
		return nil, err
	}
	res := &ReplayResult{}
	var mu sync.Mutex
	cfg.OnEvent = func(e Event) {
		mu.Lock()
		res.Events = append(res.Events, e)
		mu.Unlock()
	}
	t, err := NewTracker(cfg)
	if err != nil {
		return nil, err
	}
	r := NewReplayer(t)
	if ext != nil {
		r.OnExtension = func(method string, id, params json.RawMessage) { ext(t, method, id, params) }
	}
	for _, e := range c.Entries {
		if err := r.Feed(string(e.From), e.Msg); err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("line %d: %v", e.Line, err))
		}
	}
	t.Flush() // events an extension handler left to DoAsync
	res.Counters = t.Counters()
	res.Dialect = t.Dialect()
	return res, nil
}
