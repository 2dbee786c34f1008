package adapter

import (
	"fmt"
	"maps"
	"sync"

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
	conn         ConnectionInfo
	sessions     map[string]*session
	loading      map[string]bool // sessions between load request and response
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
func (t *Tracker) SessionStarted(sessionID string) {
	t.do(func(tx *Tx) {
		t.clearSession(tx, sessionID)
		t.current = sessionID
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
func (t *Tracker) SessionLoaded(sessionID string) {
	t.do(func(tx *Tx) {
		t.clearSession(tx, sessionID)
		t.current = sessionID
		t.loading[sessionID] = true
	})
}

// SessionLoadFinished records the response to session/load or
// session/resume. A failed attempt (ok false) drops the state received
// during it.
func (t *Tracker) SessionLoadFinished(sessionID string, ok bool) {
	t.do(func(tx *Tx) {
		delete(t.loading, sessionID)
		if !ok {
			t.clearSession(tx, sessionID)
		}
	})
}

// SessionClosed drops the state of sessionID and its children.
func (t *Tracker) SessionClosed(sessionID string) {
	t.do(func(tx *Tx) {
		t.clearSession(tx, sessionID)
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
		t.cardBytes, t.liveCards, t.order = 0, 0, nil
		t.current, t.lastSeen = "", ""
		if t.dialect != nil {
			t.dialect.SessionCleared(tx, "")
		}
	})
}

// PromptStarted records that a prompt turn began in sessionID, making it
// the current session (the one an extension request without a session id
// belongs to).
func (t *Tracker) PromptStarted(sessionID string) {
	t.do(func(tx *Tx) { t.current = sessionID })
}

// PromptEnded ends a prompt turn of sessionID. Call it after every
// notification received before the prompt response was fed. The completed
// sets of the session and its child sessions are swept (tool call ids may
// recur in the next turn) and the dialect drops its per-turn state.
func (t *Tracker) PromptEnded(sessionID string) {
	t.do(func(tx *Tx) {
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

// Do runs fn under the Tracker's lock with a Tx, then delivers the events
// fn emitted. Extension handlers (cursor/task) use it; fn must not block.
func (t *Tracker) Do(fn func(tx *Tx)) { t.do(fn) }

// DoAsync is Do without waiting for the callback: fn's state changes are
// made before DoAsync returns (so they are ordered with every later
// frame), while its events are delivered, still in order, by another
// goroutine (or by whichever caller feeds the Tracker next). An extension
// handler uses it to answer without waiting for the consumer.
func (t *Tracker) DoAsync(fn func(tx *Tx)) {
	t.mu.Lock()
	t.runLocked(fn)
	queued := len(t.queue) > 0 && !t.delivering
	t.mu.Unlock()
	if queued {
		go t.deliver()
	}
}

// Flush returns once every event emitted so far has been handed to the
// callback: it delivers what is queued itself, or waits for the goroutine
// that is delivering. Call it before reading results that events feed (for
// example after the prompt response, when a cursor/task handler answered
// without waiting, see DoAsync). Never call it from the event callback: the
// callback is part of the delivery Flush waits for.
func (t *Tracker) Flush() {
	t.mu.Lock()
	for t.delivering || len(t.queue) > 0 {
		if !t.delivering {
			t.mu.Unlock()
			t.deliver()
			t.mu.Lock()
			continue
		}
		t.idle.Wait()
	}
	t.mu.Unlock()
}

func (t *Tracker) do(fn func(tx *Tx)) {
	t.mu.Lock()
	t.runLocked(fn)
	t.mu.Unlock()
	t.deliver()
}

// runLocked runs fn with a Tx valid only during the call, recovering (and
// counting) a panic so that bad input never escapes the Tracker. t.mu is
// held.
func (t *Tracker) runLocked(fn func(tx *Tx)) {
	tx := &Tx{t: t}
	defer func() {
		tx.t = nil
		if r := recover(); r != nil {
			t.counters[CounterRecoveredPanics]++
		}
	}()
	fn(tx)
}

// ensureDialect decides the dialect now, once, when a frame or an extension
// request needs it before Initialize was fed.
func (t *Tracker) ensureDialect() {
	if t.dialect != nil {
		return
	}
	d, err := SelectDialect(t.explicitName, t.conn.AgentName)
	if err != nil {
		d = genericDialect{}
	}
	t.dialect = d
}

// deliver hands queued events to the callback in order. One goroutine
// delivers at a time; events queued meanwhile by others are delivered by it.
func (t *Tracker) deliver() {
	t.mu.Lock()
	if t.delivering || len(t.queue) == 0 {
		t.mu.Unlock()
		return
	}
	t.delivering = true
	for len(t.queue) > 0 {
		batch := t.queue
		t.queue = nil
		t.mu.Unlock()
		for _, e := range batch {
			t.call(e)
		}
		t.mu.Lock()
	}
	t.delivering = false
	t.idle.Broadcast()
	t.mu.Unlock()
}

func (t *Tracker) call(e Event) {
	if t.onEvent == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			t.mu.Lock()
			t.counters[CounterCallbackPanics]++
			t.mu.Unlock()
		}
	}()
	t.onEvent(e)
}

// --- sessions and cards -----------------------------------------------

type session struct {
	id       string
	parent   string // set when this session is a known child session
	cards    map[string]*Card
	active   []cardRef // insertion order of non-terminal cards (lazy)
	done     []cardRef // completion order of terminal cards (lazy)
	nDone    int
	lastUsed int64
}

type cardRef struct {
	id  string
	gen int64
}

func (t *Tracker) tick() int64 { t.clock++; return t.clock }

// session returns the state of id, creating it (and evicting the least
// recently used session beyond the bound).
func (t *Tracker) session(id string) *session {
	s := t.sessions[id]
	if s == nil {
		if len(t.sessions) >= t.maxSessions {
			t.evictSession()
		}
		s = &session{id: id, cards: map[string]*Card{}}
		t.sessions[id] = s
	}
	s.lastUsed = t.tick()
	return s
}

func (t *Tracker) evictSession() {
	var oldest *session
	for _, s := range t.sessions {
		if s.id == t.current {
			continue
		}
		if oldest == nil || s.lastUsed < oldest.lastUsed {
			oldest = s
		}
	}
	if oldest == nil {
		return
	}
	// Its child sessions go with it: a child whose parent is forgotten
	// would still be attributed to it and counted as a known child.
	for _, id := range t.familyOf(oldest.id) {
		if id == t.current {
			continue
		}
		t.dropSession(id)
		delete(t.loading, id)
		t.counters[CounterSessionsEvicted]++
		if t.dialect != nil {
			t.dialect.SessionCleared(&Tx{t: t}, id)
		}
	}
}

// familyOf returns id and every tracked session whose parent chain leads to
// it.
func (t *Tracker) familyOf(id string) []string {
	out := []string{id}
	for i := 0; i < len(out); i++ {
		for _, s := range t.sessions {
			if s.parent == out[i] && s.id != id {
				out = append(out, s.id)
			}
		}
		if len(out) > len(t.sessions)+1 {
			break // a parent cycle; stop
		}
	}
	return out
}

func (t *Tracker) clearSession(tx *Tx, id string) {
	for _, sid := range t.familyOf(id) {
		t.dropSession(sid)
		if t.dialect != nil {
			t.dialect.SessionCleared(tx, sid)
		}
	}
}

// dropSession forgets a session and its cards.
func (t *Tracker) dropSession(id string) {
	s := t.sessions[id]
	if s == nil {
		return
	}
	for _, c := range s.cards {
		t.cardBytes -= int64(c.bytes)
		t.liveCards--
	}
	delete(t.sessions, id)
}

// removeCard forgets one card of s.
func (t *Tracker) removeCard(s *session, id string) {
	c := s.cards[id]
	if c == nil {
		return
	}
	if c.inDone {
		s.nDone--
	}
	t.cardBytes -= int64(c.bytes)
	t.liveCards--
	delete(s.cards, id)
}

type globalRef struct {
	session, id string
	gen         int64
}

// account caps c's strings at MaxFieldBytes, updates the byte total, and
// drops the oldest other cards while the total exceeds the budget.
func (t *Tracker) account(c *Card) {
	n := 0
	capField := func(f *string) {
		if len(*f) > MaxFieldBytes {
			*f = TruncateUTF8(*f, MaxFieldBytes)
			t.counters[CounterFieldsTruncated]++
		}
		n += len(*f)
	}
	capField(&c.title)
	capField(&c.parent)
	if k := c.task; k != nil {
		for _, f := range []*string{&k.Description, &k.Prompt, &k.SubagentType, &k.Status, &k.AgentID,
			&k.Model, &k.ChildSessionID, &k.ResultText, &k.OutputFile} {
			capField(f)
		}
	}
	if ch := c.child; ch != nil {
		for _, f := range []*string{&ch.Title, &ch.Description, &ch.State, &ch.StopReason, &ch.Cwd} {
			capField(f)
		}
		n += len(ch.StateRaw) + len(ch.Usage)
		for i := range ch.AdditionalDirectories {
			capField(&ch.AdditionalDirectories[i])
		}
	}
	t.cardBytes += int64(n - c.bytes)
	c.bytes = n
	for t.cardBytes > t.maxBytes && len(t.order) > 0 {
		r := t.order[0]
		t.order = t.order[1:]
		s := t.sessions[r.session]
		if s == nil {
			continue
		}
		old := s.cards[r.id]
		if old == nil || old.gen != r.gen {
			continue
		}
		if old == c {
			t.order = append(t.order, r)
			if len(t.order) == 1 {
				break
			}
			continue
		}
		t.removeCard(s, r.id)
		t.counters[CounterBytesEvicted]++
	}
}

func (s *session) addCard(t *Tracker, id string) *Card {
	c := &Card{sessionID: s.id, id: id, gen: t.tick()}
	s.cards[id] = c
	t.liveCards++
	t.order = append(t.order, globalRef{s.id, id, c.gen})
	if len(t.order) > 2*t.liveCards+1024 {
		kept := t.order[:0:0]
		for _, r := range t.order {
			if ss := t.sessions[r.session]; ss != nil {
				if cc := ss.cards[r.id]; cc != nil && cc.gen == r.gen {
					kept = append(kept, r)
				}
			}
		}
		t.order = kept
	}
	s.active = append(s.active, cardRef{id, c.gen})
	if active := len(s.cards) - s.nDone; active > t.maxActive {
		s.evictActive(t)
	}
	if len(s.active) > 2*len(s.cards)+64 {
		s.active = s.liveRefs(s.active, false)
	}
	return c
}

func (s *session) evictActive(t *Tracker) {
	for len(s.active) > 0 {
		r := s.active[0]
		s.active = s.active[1:]
		if c := s.cards[r.id]; c != nil && c.gen == r.gen && !c.status.Terminal() {
			t.removeCard(s, r.id)
			t.counters[CounterActiveEvicted]++
			return
		}
	}
}

// markDone moves c into the completed set, evicting the oldest completed
// card beyond the bound.
func (s *session) markDone(t *Tracker, c *Card) {
	if c.inDone {
		return
	}
	c.inDone = true
	s.done = append(s.done, cardRef{c.id, c.gen})
	s.nDone++
	for s.nDone > t.maxCompleted && len(s.done) > 0 {
		r := s.done[0]
		s.done = s.done[1:]
		if old := s.cards[r.id]; old != nil && old.gen == r.gen && old.inDone {
			t.removeCard(s, r.id)
			t.counters[CounterCompletedEvicted]++
		}
	}
	if len(s.done) > 2*s.nDone+64 {
		s.done = s.liveRefs(s.done, true)
	}
}

func (s *session) liveRefs(refs []cardRef, terminal bool) []cardRef {
	out := refs[:0:0]
	for _, r := range refs {
		if c := s.cards[r.id]; c != nil && c.gen == r.gen && c.status.Terminal() == terminal {
			out = append(out, r)
		}
	}
	return out
}

func (s *session) sweepCompleted(t *Tracker) int {
	n := 0
	for id, c := range s.cards {
		switch {
		case c.status.Terminal() && !c.keep:
			t.removeCard(s, id)
			n++
		case c.inDone:
			c.inDone = false // kept across turns: out of the completed set
		}
	}
	s.done, s.nDone = nil, 0
	return n
}

// Card is the Tracker's state for one tool call (or one announced child
// session). Dialects read and change it inside their hooks; it must not be
// kept beyond the hook.
type Card struct {
	sessionID string
	id        string
	gen       int64
	title     string
	parent    string
	status    ToolStatus
	task      *SubagentTask
	values    map[string]any
	child     *ChildSession
	refs      []SessionRef
	keep      bool
	inDone    bool // counted in its session's completed set
	bytes     int  // string bytes counted in the Tracker's budget
}

// KeepAcrossTurns exempts the card from the prompt-end sweep (a child
// session card lives as long as its parent session: idle children are
// reused). Such cards are dropped with their session or by DropCard.
func (c *Card) KeepAcrossTurns() { c.keep = true }

// SessionID is the session that holds the card.
func (c *Card) SessionID() string { return c.sessionID }

// ToolCallID is the card key.
func (c *Card) ToolCallID() string { return c.id }

// Title is the stored title.
func (c *Card) Title() string { return c.title }

// SetTitle replaces the stored title with a non-empty one.
func (c *Card) SetTitle(title string) {
	if title != "" {
		c.title = title
	}
}

// ParentToolCallID is the stored parent id ("" at top level).
func (c *Card) ParentToolCallID() string { return c.parent }

// SetParent sets the parent id when p is non-empty; it never clears one.
func (c *Card) SetParent(p string) {
	if p != "" && p != c.id {
		c.parent = p
	}
}

// Status is the card's current tool status.
func (c *Card) Status() ToolStatus { return c.status }

// Terminal reports whether the card's tool status is terminal.
func (c *Card) Terminal() bool { return c.status.Terminal() }

// SetStatus raises the tool status to s and reports whether it changed. A
// status never moves backwards: a terminal status is final (the first one
// wins) and a lower rank is ignored.
func (c *Card) SetStatus(s ToolStatus) bool {
	if s.rank() == 0 || c.status.Terminal() || s.rank() < c.status.rank() || s == c.status {
		return false
	}
	c.status = s
	return true
}

// IsSubagent reports whether the card is a recognised subagent.
func (c *Card) IsSubagent() bool { return c.task != nil }

// Task returns the card's payload fields for in-place merging (nil when
// the card is not a subagent).
func (c *Card) Task() *SubagentTask { return c.task }

// MarkSubagent makes the card a subagent (if it is not already) and returns
// its fields.
func (c *Card) MarkSubagent() *SubagentTask {
	if c.task == nil {
		c.task = &SubagentTask{}
	}
	return c.task
}

// Value returns per-card dialect state stored under key (gates such as
// "recognised by the Auggie rule" live here, never on the payload).
func (c *Card) Value(key string) any { return c.values[key] }

// SetValue stores per-card dialect state.
func (c *Card) SetValue(key string, v any) {
	if c.values == nil {
		c.values = map[string]any{}
	}
	c.values[key] = v
}

// Child returns the card's child-session view (nil for a tool call), for
// in-place changes.
func (c *Card) Child() *ChildSession { return c.child }

// SetChild attaches a child-session view to the card.
func (c *Card) SetChild(ch *ChildSession) { c.child = ch }

// SetSessionRefs replaces the card's resolved `session` content references.
func (c *Card) SetSessionRefs(refs []SessionRef) { c.refs = refs }

// --- Tx ----------------------------------------------------------------

// Tx is the Tracker as seen from inside Do or a dialect hook, with the lock
// held. It is valid only during that call.
type Tx struct{ t *Tracker }

// Dialect returns the connection's dialect.
func (tx *Tx) Dialect() Dialect {
	tx.t.ensureDialect()
	return tx.t.dialect
}

// Connection returns what the Tracker learned from initialize.
func (tx *Tx) Connection() ConnectionInfo { return tx.t.conn }

// CurrentSession is the session an extension request without a session id
// belongs to: the last session started, loaded or prompted, else the
// session of the last notification; "" when there is none.
func (tx *Tx) CurrentSession() string {
	if tx.t.current != "" {
		return tx.t.current
	}
	return tx.t.lastSeen
}

// Card returns the card held for (sessionID, toolCallID): active, or
// completed this turn.
func (tx *Tx) Card(sessionID, toolCallID string) (*Card, bool) {
	s := tx.t.sessions[sessionID]
	if s == nil {
		return nil, false
	}
	c, ok := s.cards[toolCallID]
	return c, ok
}

// FindCard resolves a tool call id across the connection's sessions, for
// requests that carry no session id: the current session first, then any
// session holding exactly that id (the most recently used wins).
func (tx *Tx) FindCard(toolCallID string) (*Card, bool) {
	if c, ok := tx.Card(tx.CurrentSession(), toolCallID); ok {
		return c, true
	}
	var best *Card
	var bestUsed int64
	for _, s := range tx.t.sessions {
		if c, ok := s.cards[toolCallID]; ok && (best == nil || s.lastUsed > bestUsed) {
			best, bestUsed = c, s.lastUsed
		}
	}
	return best, best != nil
}

// NewCard creates a card in sessionID (replacing nothing: an existing card
// is returned as is, with created false).
func (tx *Tx) NewCard(sessionID, toolCallID string) (c *Card, created bool) {
	s := tx.t.session(sessionID)
	if c := s.cards[toolCallID]; c != nil {
		return c, false
	}
	return s.addCard(tx.t, toolCallID), true
}

// DropCard forgets the card (sessionID, toolCallID), if held.
func (tx *Tx) DropCard(sessionID, toolCallID string) {
	if s := tx.t.sessions[sessionID]; s != nil {
		t := tx.t
		t.removeCard(s, toolCallID)
	}
}

// SetStatus raises c's status (see Card.SetStatus) and moves it into the
// completed set when it turns terminal.
func (tx *Tx) SetStatus(c *Card, s ToolStatus) bool {
	was := c.status.Terminal()
	changed := c.SetStatus(s)
	if !was && c.status.Terminal() {
		if ss := tx.t.sessions[c.sessionID]; ss != nil && ss.cards[c.id] == c {
			ss.markDone(tx.t, c)
		}
	}
	return changed
}

// SetParentSession records that child is a child session of parent, so its
// traffic is attributed to it and cleared with it.
func (tx *Tx) SetParentSession(child, parent string) {
	if child == "" || child == parent {
		return
	}
	tx.t.session(child).parent = parent
}

// Loading reports whether sessionID, or the session it descends from, is
// being loaded: frames arriving now replay history.
func (tx *Tx) Loading(sessionID string) bool {
	for i := 0; sessionID != "" && i <= len(tx.t.sessions); i++ {
		if tx.t.loading[sessionID] {
			return true
		}
		sessionID = tx.ParentSession(sessionID)
	}
	return false
}

// ParentSession returns the parent of a known child session ("" if none).
func (tx *Tx) ParentSession(sessionID string) string {
	if s := tx.t.sessions[sessionID]; s != nil {
		return s.parent
	}
	return ""
}

// Emit queues an event for c with the given kind, carrying the card's
// current status, stored title and parent, and a snapshot of its payload.
func (tx *Tx) Emit(kind EventKind, c *Card) {
	tx.t.enqueue(tx.t.snapshot(kind, c, c.status))
}

// EmitEvent queues e as is (a deep copy is taken).
func (tx *Tx) EmitEvent(e Event) { tx.t.enqueue(e.Clone()) }

// Count adds n to the named counter.
func (tx *Tx) Count(name string, n int64) { tx.t.counters[name] += n }

func (t *Tracker) enqueue(e Event) {
	t.counters[CounterEvents]++
	t.queue = append(t.queue, e)
}

func (t *Tracker) snapshot(kind EventKind, c *Card, status ToolStatus) Event {
	t.account(c)
	e := Event{
		Kind:             kind,
		SessionID:        c.sessionID,
		ToolCallID:       c.id,
		ParentToolCallID: c.parent,
		Title:            c.title,
		Status:           status,
		Child:            c.child.Clone(),
	}
	if s := t.sessions[c.sessionID]; s != nil {
		e.ParentSessionID = s.parent
	}
	if len(c.refs) > 0 {
		e.SessionRefs = append([]SessionRef(nil), c.refs...)
	}
	if c.task != nil {
		p := &Payload{Kind: PayloadKindSubagentTask, SubagentTask: c.task.Clone()}
		if t.dialect != nil && t.dialect.Traits().BackgroundWork {
			p.BackgroundWork = &BackgroundWork{
				Kind:     BackgroundWorkKindSubagent,
				WorkID:   c.task.AgentID,
				Detached: c.task.IsAsync,
				Ended:    c.status.Terminal() && c.task.Status != "async_launched",
			}
		}
		e.Payload = p
	}
	return e
}

// String renders the connection info for logs.
func (ci ConnectionInfo) String() string {
	return fmt.Sprintf("agent=%q subagents=%t", ci.AgentName, ci.SubagentsDeclared)
}
