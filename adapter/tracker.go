package adapter

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"

	acp "github.com/coder/acp-go-sdk"
)

// Default bounds of a Tracker (per connection).
const (
	// DefaultMaxCompleted bounds the completed set of one session: cards
	// that turned terminal this turn and still take late enrichment.
	DefaultMaxCompleted = 256
	// DefaultMaxActive bounds the non-terminal cards of one session.
	DefaultMaxActive = 4096
	// DefaultMaxSessions bounds the sessions one connection tracks; the
	// least recently used session is dropped beyond it.
	DefaultMaxSessions = 1024
	// DefaultMaxBytes bounds the string bytes all cards of a connection
	// hold; the oldest cards are dropped beyond it.
	DefaultMaxBytes = 64 << 20
	// MaxFieldBytes caps each string a card keeps (title, every payload
	// string, child view strings); longer values keep their first
	// MaxFieldBytes bytes, cut on a UTF-8 boundary.
	MaxFieldBytes = 1 << 20
)

// Counter names reported by Tracker.Counters. Dialects add their own.
const (
	CounterFrames            = "frames"                  // tool frames received
	CounterEvents            = "events"                  // events queued for the callback
	CounterBadFields         = "bad_fields"              // fields of the wrong JSON type, ignored
	CounterNegativeValues    = "negative_values"         // negative numbers, ignored
	CounterBadStatus         = "bad_status"              // unrecognised ACP tool status, ignored
	CounterBadSessionID      = "bad_session_id"          // notifications without a session id, dropped
	CounterOrphanUpdates     = "orphan_updates"          // tool_call_update for an id not held: creates the card
	CounterDuplicateCalls    = "duplicate_tool_calls"    // tool_call for a held id: merged as an update
	CounterLoweredStatus     = "lowered_status"          // frames whose status would have moved backwards
	CounterCompletedEvicted  = "completed_evicted"       // completed cards dropped by the count bound
	CounterActiveEvicted     = "active_evicted"          // active cards dropped by the count bound
	CounterSessionsEvicted   = "sessions_evicted"        // sessions dropped by the session bound
	CounterCompletedSwept    = "completed_swept"         // completed cards dropped at prompt end
	CounterFramesSuppressed  = "frames_suppressed"       // frames a dialect suppressed
	CounterRecoveredPanics   = "recovered_panics"        // panics recovered while normalising input
	CounterCallbackPanics    = "callback_panics"         // panics recovered from the consumer callback
	CounterSubagentFramesOff = "subagent_frames_dropped" // subagent-session frames without the capability
	CounterFieldsTruncated   = "fields_truncated"        // strings cut at MaxFieldBytes
	CounterBytesEvicted      = "bytes_evicted"           // cards dropped by the byte budget
	// CounterForeignSessionUpdates counts session updates for a session id
	// the client never opened and the agent never announced as a child:
	// dropped, never a card (see SessionStarted).
	CounterForeignSessionUpdates = "foreign_session_updates"
)

// Config configures a Tracker.
type Config struct {
	// DialectName selects the dialect explicitly ("" = choose at
	// Initialize from agentInfo.name, else generic).
	DialectName string
	// Dialect, when non-nil, is used as is and wins over DialectName.
	Dialect Dialect
	// OnEvent receives every event, in order, one at a time. It runs on
	// the goroutine that fed the frame (or on another feeder's goroutine
	// when two feed at once); it may call back into the Tracker.
	OnEvent func(Event)
	// MaxCompleted overrides DefaultMaxCompleted (values ≤ 0 keep the
	// default).
	MaxCompleted int
	// MaxActive overrides DefaultMaxActive (values ≤ 0 keep the default).
	MaxActive int
	// MaxSessions overrides DefaultMaxSessions (values ≤ 0 keep the
	// default).
	MaxSessions int
	// MaxBytes overrides DefaultMaxBytes (values ≤ 0 keep the default).
	MaxBytes int64
}

// ConnectionInfo is what the Tracker learned from initialize.
type ConnectionInfo struct {
	// AgentName is the agent's agentInfo.name ("" when not reported).
	AgentName string
	// SubagentsDeclared reports that the client declared
	// clientCapabilities.subagents as an object, opting in to the
	// subagent-session form.
	SubagentsDeclared bool
	// AIRDeclared reports that the client declared the JetBrains AIR
	// extension (clientCapabilities._meta.jetbrains.air with an integer
	// version of at least 1), opting in to the AIR subagent form (air.go).
	AIRDeclared bool
	// AIRCapabilities are the AIR capabilities it declared, verbatim.
	AIRCapabilities []string
}

// Tracker follows the tool calls of one connection and turns them into
// normalised events. Feed it every session/update notification
// (SessionUpdate), the initialize exchange (Initialize) and the session
// lifecycle (SessionStarted, PromptStarted, PromptEnded, SessionLoaded,
// SessionLoadFinished, SessionClosed, Reset). It is safe for concurrent
// use: one mutex serialises session updates and extension requests, and
// events are delivered in the order they were produced.
type Tracker struct {
	mu           sync.Mutex
	explicitName string
	dialect      Dialect
	form         *sessionForm // the subagent-session form, made with the dialect
	conn         ConnectionInfo
	opened       map[string]bool // sessions the client opened (new, load, resume)
	sessions     map[string]*session
	loading      map[string]bool // sessions between load request and response
	openPrompts  map[string]int  // prompts sent and not yet answered, per session (at most maxSessions)
	current      string
	lastSeen     string
	clock        int64
	counters     map[string]int64
	maxCompleted int
	maxActive    int
	maxSessions  int
	maxBytes     int64
	cardBytes    int64       // string bytes held by all cards
	liveCards    int         // cards held across sessions
	order        []globalRef // creation order of cards (lazy), for the byte budget
	history      remembered  // copies of dropped subagent cards, for replayed history (history.go)

	onEvent    func(Event)
	queue      []Event
	delivering bool
	idle       *sync.Cond // on mu; broadcast when a delivery run ends
}

// NewTracker returns a Tracker for one connection. It fails only when
// DialectName names an unregistered dialect.
func NewTracker(cfg Config) (*Tracker, error) {
	t := &Tracker{
		explicitName: cfg.DialectName,
		dialect:      cfg.Dialect,
		sessions:     map[string]*session{},
		loading:      map[string]bool{},
		opened:       map[string]bool{},
		openPrompts:  map[string]int{},
		counters:     map[string]int64{},
		onEvent:      cfg.OnEvent,
		maxCompleted: positiveOr(cfg.MaxCompleted, DefaultMaxCompleted),
		maxActive:    positiveOr(cfg.MaxActive, DefaultMaxActive),
		maxSessions:  positiveOr(cfg.MaxSessions, DefaultMaxSessions),
		maxBytes:     cfg.MaxBytes,
	}
	t.idle = sync.NewCond(&t.mu)
	if t.maxBytes <= 0 {
		t.maxBytes = DefaultMaxBytes
	}
	if t.dialect == nil && cfg.DialectName != "" {
		d, err := NewDialect(cfg.DialectName)
		if err != nil {
			return nil, err
		}
		t.dialect = d
	}
	return t, nil
}

func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Initialize records the initialize exchange: the client's declared
// capabilities and the agent's agentInfo.name, which selects the dialect
// unless one was set explicitly. Either argument may be nil. Call it before
// feeding frames; a dialect chosen earlier (explicitly, or generic because a
// frame came first) is kept.
func (t *Tracker) Initialize(req *acp.InitializeRequest, resp *acp.InitializeResponse) {
	t.do(func(tx *Tx) {
		if req != nil {
			t.conn.SubagentsDeclared = declaresSubagents(req.ClientCapabilities)
			t.conn.AIRDeclared, t.conn.AIRCapabilities = declaresAIR(req.ClientCapabilities.Meta)
		}
		if resp != nil && resp.AgentInfo != nil {
			t.conn.AgentName = resp.AgentInfo.Name
		}
		if t.dialect == nil {
			d, err := SelectDialect("", t.conn.AgentName)
			if err != nil {
				d = genericDialect{}
			}
			t.dialect = d
		}
	})
}

// declaresSubagents reports whether the client declared
// clientCapabilities.subagents as an object.
func declaresSubagents(caps acp.ClientCapabilities) bool {
	return caps.Subagents != nil
}

// Dialect returns the connection's dialect name ("" before one is chosen).
func (t *Tracker) Dialect() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dialect == nil {
		return ""
	}
	return t.dialect.Name()
}

// Connection returns what the Tracker learned from initialize.
func (t *Tracker) Connection() ConnectionInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn
}

// ParentSession returns the parent of a known child session ("" when
// sessionID is not an announced child), so that a client can attribute a
// child's requests (permission, fs, terminal) to it.
func (t *Tracker) ParentSession(sessionID string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.sessions[sessionID]; s != nil {
		return s.parent
	}
	return ""
}

// ChildText reports whether agent text (an agent_message_chunk) arriving
// now in sessionID belongs to a running subagent rather than to the
// session itself, and which card it belongs to ("" when several subagents
// could be speaking). Copilot sends a foreground child's final text as the
// parent's own message; a consumer that shows agent text asks before it
// shows a chunk, and leaves a child's text to the card (whose result it
// becomes). Dialects without such agents always answer false.
func (t *Tracker) ChildText(sessionID string) (toolCallID string, child bool) {
	t.do(func(tx *Tx) {
		t.ensureDialect()
		if ct, ok := t.dialect.(ChildTexter); ok {
			toolCallID, child = ct.ChildText(tx, sessionID)
		}
	})
	return toolCallID, child
}

// ChildMessage is ChildText for one update: it reports whether the agent
// text n carries (an agent_message_chunk or agent_thought_chunk) belongs
// to a subagent rather than to n's session, judging the update itself
// where the agent tags a child's text (Qwen Code), else as ChildText does
// for n's session. A consumer that shows agent text asks it before it
// shows a chunk, and leaves a child's text to the card.
func (t *Tracker) ChildMessage(n acp.SessionNotification) (toolCallID string, child bool) {
	t.do(func(tx *Tx) {
		t.ensureDialect()
		if ut, ok := t.dialect.(ChildUpdateTexter); ok {
			if toolCallID, child = ut.ChildUpdateText(tx, &n); child {
				return
			}
		}
		if ct, ok := t.dialect.(ChildTexter); ok {
			toolCallID, child = ct.ChildText(tx, string(n.SessionId))
		}
	})
	return toolCallID, child
}

// HoldText reports whether agent text arriving now in sessionID should be
// held rather than shown: a background subagent of the session is live
// and its answer not known yet, and the agent may send that answer as the
// session's own untagged agent_message_chunk (Copilot). A consumer that
// shows agent text holds such chunks, bounded (bytes and time), and
// releases them when HoldText turns false (the answer was read), at the
// turn's end or past its bound, having HeldChildText judge them. Dialects
// without such agents always answer false.
func (t *Tracker) HoldText(sessionID string) (hold bool) {
	t.do(func(tx *Tx) {
		t.ensureDialect()
		if h, ok := t.dialect.(ChildTextHolder); ok {
			hold = h.HoldText(tx, sessionID)
		}
	})
	return hold
}

// HeldChildText judges the agent text chunks a consumer held in sessionID
// (HoldText), in arrival order: it returns, per chunk, the tool call id of
// the subagent whose answer it is, "" for the session's own text. A
// contiguous run of chunks whose concatenation, whitespace-trimmed, equals
// a known answer of a background subagent (trimmed) is that subagent's
// (its card shows it as the result); each answer claims at most one run,
// the earliest and shortest; everything else is the session's.
func (t *Tracker) HeldChildText(sessionID string, chunks []string) []string {
	var answers []ChildAnswer
	t.do(func(tx *Tx) {
		t.ensureDialect()
		if h, ok := t.dialect.(ChildTextHolder); ok {
			answers = h.ChildAnswers(tx, sessionID)
		}
	})
	owners := make([]string, len(chunks))
	for _, a := range answers {
		claimAnswerRun(owners, chunks, a)
	}
	return owners
}

// claimAnswerRun marks the earliest, shortest contiguous run of unclaimed
// chunks whose concatenation, whitespace-trimmed, equals the answer's
// trimmed text as the answer's card. A run starts at a chunk's first
// non-space byte and ends in whitespace up to a chunk's end, so each
// start costs one comparison of the answer's length.
func claimAnswerRun(owners, chunks []string, a ChildAnswer) {
	want := strings.TrimSpace(a.Text)
	if want == "" {
		return
	}
	all := strings.Join(chunks, "")
	if len(want) > len(all) {
		return
	}
	ends := make([]int, len(chunks)) // ends[k]: chunk k's end offset in all
	n := 0
	for k, c := range chunks {
		n += len(c)
		ends[k] = n
	}
	start := 0
	for i, c := range chunks {
		p := start + len(c) - len(strings.TrimLeftFunc(c, unicode.IsSpace))
		start = ends[i]
		if owners[i] != "" || p == ends[i] || !strings.HasPrefix(all[p:], want) {
			continue
		}
		end := p + len(want)
		j := i
		for ends[j] < end {
			j++
		}
		if strings.TrimSpace(all[end:ends[j]]) != "" || slices.ContainsFunc(owners[i:j+1], func(o string) bool { return o != "" }) {
			continue
		}
		for k := i; k <= j; k++ {
			owners[k] = a.ToolCallID
		}
		return
	}
}

// OpenedSessions returns the sessions the client opened (SessionStarted,
// SessionLoaded), in byte order (a closed one holds no cards); when it reported none,
// every tracked session that is not a known child. A consumer that ends
// the connection ends their open cards with EndOpen.
func (t *Tracker) OpenedSessions() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for id := range t.opened {
		out = append(out, id)
	}
	if len(t.opened) == 0 {
		for id, s := range t.sessions {
			if s.parent == "" {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Counters returns a copy of the counters (see the Counter* names; dialects
// add their own).
func (t *Tracker) Counters() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.counters)
}

// SessionUpdate feeds one session/update notification.
func (t *Tracker) SessionUpdate(n acp.SessionNotification) {
	t.do(func(tx *Tx) { t.handleNotification(tx, &n) })
}

// SessionStarted records a session created by session/new: it becomes the
// current session and any state held under its id is dropped.
//
// Once the client reported a session it opened (SessionStarted or
// SessionLoaded), only those sessions and the child sessions the agent
// announced in them are tracked: an update for any other session id is
// counted (CounterForeignSessionUpdates) and changes nothing, so no card
// of a session nobody opened reaches a consumer.
func (t *Tracker) SessionStarted(sessionID string) {
	t.do(func(tx *Tx) {
		t.clearSession(tx, sessionID)
		t.current = sessionID
		t.opened[sessionID] = true
	})
}

// SessionLoaded records session/load or session/resume of sessionID; call
// it when the request is sent, before the agent replays history. The
// session's state and its children's are dropped (cached liveness and
// cancel grants included, so child capabilities start empty) and it
// becomes current.
//
// Until SessionLoadFinished, what the agent replays is historical: a child
// replayed then is never live and gets no cancel grant.
//
// The cards of announced children (kept across turns) stay: replayed
// history merges into them and never moves a status backwards, never
// unsets what was learned (is_async, a result), never revives a finished
// child, and replayed chunks of a message already held are not appended
// again. Every other card of the family is dropped, as before.
func (t *Tracker) SessionLoaded(sessionID string) {
	t.do(func(tx *Tx) {
		family := t.familyOf(sessionID)
		t.clearLoadedSession(tx, family)
		t.current = sessionID
		t.loading[sessionID] = true
		t.opened[sessionID] = true
	})
}

// clearLoadedSession drops the family's cards except the announced
// children's, which become historical (not live, no cancel grant).
func (t *Tracker) clearLoadedSession(tx *Tx, family []string) {
	if t.form == nil {
		t.clearSession(tx, family[0])
		return
	}
	for _, sid := range family {
		if s := t.sessions[sid]; s != nil {
			for id, c := range s.cards {
				if c.child == nil {
					t.remember(c)
					t.removeCard(s, id)
				}
			}
		}
		if t.dialect != nil {
			t.dialect.SessionCleared(tx, sid)
		}
	}
	t.form.forgetLiveness(tx, family)
}

// SessionLoadFinished records the response to session/load or
// session/resume. A failed attempt (ok false) drops the state received
// during it.
func (t *Tracker) SessionLoadFinished(sessionID string, ok bool) {
	t.do(func(tx *Tx) {
		delete(t.loading, sessionID)
		if !ok {
			t.clearSession(tx, sessionID)
			delete(t.opened, sessionID)
		}
	})
}

// SessionClosed drops the state of sessionID and its children.
func (t *Tracker) SessionClosed(sessionID string) {
	t.do(func(tx *Tx) {
		for _, id := range t.familyOf(sessionID) {
			t.forgetSessionHistory(id)
		}
		t.clearSession(tx, sessionID) // still a session the client opened
		delete(t.openPrompts, sessionID)
		if t.current == sessionID {
			t.current = ""
		}
	})
}

// Reset drops every session's state.
func (t *Tracker) Reset() {
	t.do(func(tx *Tx) {
		t.sessions = map[string]*session{}
		t.loading = map[string]bool{}
		t.opened = map[string]bool{}
		t.openPrompts = map[string]int{}
		t.cardBytes, t.liveCards, t.order = 0, 0, nil
		t.forgetSessionHistory("")
		t.current, t.lastSeen = "", ""
		t.sessionCleared(tx, "")
	})
}

// PromptStarted records that a prompt turn began in sessionID, making it
// the current session (the one an extension request without a session id
// belongs to). A prompt sent while another of the session is still open
// (a queued prompt) joins that turn's span: see PromptEnded.
func (t *Tracker) PromptStarted(sessionID string) {
	t.do(func(tx *Tx) {
		t.current = sessionID
		if _, ok := t.openPrompts[sessionID]; ok || len(t.openPrompts) < t.maxSessions {
			t.openPrompts[sessionID]++
		}
	})
}

// PromptEnded ends a prompt turn of sessionID. Call it after every
// notification received before the prompt response was fed. The completed
// sets of the session and its child sessions are swept (tool call ids may
// recur in the next turn) and the dialect drops its per-turn state.
//
// While other prompts of the session are still open (prompts queued
// behind this one), nothing is swept: ACP updates do not say which open
// prompt they belong to, and the agent may already be working on the
// next, so the span of queued prompts ends with the last answer.
func (t *Tracker) PromptEnded(sessionID string) {
	t.do(func(tx *Tx) {
		if n := t.openPrompts[sessionID]; n > 1 {
			t.openPrompts[sessionID] = n - 1
			return
		}
		delete(t.openPrompts, sessionID)
		for _, id := range t.familyOf(sessionID) {
			if s := t.sessions[id]; s != nil {
				if n := s.sweepCompleted(t); n > 0 {
					t.counters[CounterCompletedSwept] += int64(n)
				}
			}
		}
		if t.dialect != nil {
			t.dialect.PromptEnded(tx, sessionID)
		}
	})
}

// ensureDialect decides the dialect now, once, when a frame or an extension
// request needs it before Initialize was fed.
func (t *Tracker) ensureDialect() {
	if t.dialect == nil {
		d, err := SelectDialect(t.explicitName, t.conn.AgentName)
		if err != nil {
			d = genericDialect{}
		}
		t.dialect = d
	}
	if t.form == nil {
		t.form = newSessionForm(t.dialect)
	}
}

// String renders the connection info for logs.
func (ci ConnectionInfo) String() string {
	return fmt.Sprintf("agent=%q subagents=%t", ci.AgentName, ci.SubagentsDeclared)
}
