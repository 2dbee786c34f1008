package cursor

import "time"

// Default bounds of the pending store, per session.
const (
	// DefaultMaxPending is how many unmatched cursor/task requests a session
	// keeps; the oldest is evicted beyond it.
	DefaultMaxPending = 256
	// DefaultMaxPendingBytes bounds the string bytes a session's pending
	// entries keep (ids and metadata); the oldest are evicted beyond it.
	DefaultMaxPendingBytes = 8 << 20
	// DefaultMaxPendingSessions bounds how many sessions of one connection
	// hold pending entries at once; beyond it the session whose newest entry
	// is oldest loses its entries.
	DefaultMaxPendingSessions = 8
	// DefaultMaxPendingAge is how long an unmatched request waits for its
	// tool_call. Cursor sends both within the same turn, seconds apart; the
	// prompt-end sweep normally clears the store long before this.
	DefaultMaxPendingAge = 10 * time.Minute
)

// Limits bounds the pending store. A zero or negative field uses its default.
type Limits struct {
	// MaxPending is the per-session count cap (default DefaultMaxPending).
	MaxPending int
	// MaxPendingBytes is the per-session byte budget (default DefaultMaxPendingBytes).
	MaxPendingBytes int
	// MaxPendingAge is the per-entry age cap (default DefaultMaxPendingAge).
	MaxPendingAge time.Duration
	// MaxPendingSessions bounds the sessions holding pending entries
	// (default DefaultMaxPendingSessions).
	MaxPendingSessions int
}

func (l Limits) withDefaults() Limits {
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultMaxPending
	}
	if l.MaxPendingBytes <= 0 {
		l.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if l.MaxPendingAge <= 0 {
		l.MaxPendingAge = DefaultMaxPendingAge
	}
	if l.MaxPendingSessions <= 0 {
		l.MaxPendingSessions = DefaultMaxPendingSessions
	}
	return l
}

// pendingEntry is one unmatched cursor/task, linked in arrival order.
type pendingEntry struct {
	params     TaskParams
	added      time.Time
	prev, next *pendingEntry
}

// sessionPending is one session's unmatched requests: an index by tool call
// id and a list from oldest (head) to newest (tail).
type sessionPending struct {
	byID       map[string]*pendingEntry
	head, tail *pendingEntry
	bytes      int
}

// pendingStore keeps unmatched cursor/task metadata per session until the
// matching tool_call arrives, bounded by count, bytes and age. It has no
// lock: its owner serialises every call (the dialect does so under the
// tracker's lock, so "lookup card, else store" is atomic with "create card,
// take pending").
type pendingStore struct {
	limits   Limits
	now      func() time.Time
	sessions map[string]*sessionPending
	stats    *Stats
}

func newPendingStore(limits Limits, now func() time.Time, stats *Stats) *pendingStore {
	if now == nil {
		now = time.Now
	}
	return &pendingStore{
		limits:   limits.withDefaults(),
		now:      now,
		sessions: make(map[string]*sessionPending),
		stats:    stats,
	}
}

// put stores p under session, merging into an existing entry for the same
// id first-non-empty per field. It reports whether anything changed.
func (s *pendingStore) put(session string, p TaskParams) bool {
	sp := s.sessions[session]
	if sp == nil {
		for len(s.sessions) >= s.limits.MaxPendingSessions {
			s.evictStalestSession()
		}
		sp = &sessionPending{byID: make(map[string]*pendingEntry)}
		s.sessions[session] = sp
	}
	s.expire(sp)
	if e := sp.byID[p.ToolCallID]; e != nil {
		before := e.params.size()
		if !fillTask(&e.params, p) {
			return false
		}
		sp.bytes += e.params.size() - before
		s.stats.PendingMerged++
	} else {
		e = &pendingEntry{params: p, added: s.now()}
		sp.byID[p.ToolCallID] = e
		sp.pushBack(e)
		sp.bytes += p.size()
		s.stats.PendingStored++
	}
	for len(sp.byID) > s.limits.MaxPending {
		s.evictOldest(sp)
		s.stats.PendingEvictedCount++
	}
	// The newest entry is never evicted for bytes: a single request is
	// already bounded by the field caps, far below the byte budget.
	for sp.bytes > s.limits.MaxPendingBytes && sp.head != sp.tail {
		s.evictOldest(sp)
		s.stats.PendingEvictedBytes++
	}
	return true
}

// take removes and returns the pending metadata for (session, id).
func (s *pendingStore) take(session string, id string) (TaskParams, bool) {
	sp := s.sessions[session]
	if sp == nil {
		return TaskParams{}, false
	}
	s.expire(sp)
	e := sp.byID[id]
	if e != nil {
		sp.remove(e)
	}
	s.dropIfEmpty(session, sp)
	if e == nil {
		return TaskParams{}, false
	}
	s.stats.PendingMatched++
	return e.params, true
}

// clearSession drops every pending entry of session, counting them as swept.
func (s *pendingStore) clearSession(session string) {
	if sp := s.sessions[session]; sp != nil {
		s.stats.PendingSwept += uint64(len(sp.byID))
		delete(s.sessions, session)
	}
}

// clearAll drops every pending entry of every session, counting them as swept.
func (s *pendingStore) clearAll() {
	for id := range s.sessions {
		s.clearSession(id)
	}
}

// len reports how many entries session holds.
func (s *pendingStore) len(session string) int {
	if sp := s.sessions[session]; sp != nil {
		return len(sp.byID)
	}
	return 0
}

// total reports how many entries every session holds together.
func (s *pendingStore) total() int {
	n := 0
	for _, sp := range s.sessions {
		n += len(sp.byID)
	}
	return n
}

// evictStalestSession drops the session whose newest entry is the oldest.
func (s *pendingStore) evictStalestSession() {
	var stalest string
	var newest time.Time
	first := true
	for id, sp := range s.sessions {
		if t := sp.tail.added; first || t.Before(newest) || (t.Equal(newest) && id < stalest) {
			stalest, newest, first = id, t, false
		}
	}
	s.stats.PendingEvictedSession += uint64(len(s.sessions[stalest].byID))
	delete(s.sessions, stalest)
}

// expire evicts entries older than the age cap, oldest first.
func (s *pendingStore) expire(sp *sessionPending) {
	deadline := s.now().Add(-s.limits.MaxPendingAge)
	for sp.head != nil && sp.head.added.Before(deadline) {
		s.evictOldest(sp)
		s.stats.PendingEvictedAge++
	}
}

func (s *pendingStore) evictOldest(sp *sessionPending) {
	sp.remove(sp.head)
}

func (s *pendingStore) dropIfEmpty(session string, sp *sessionPending) {
	if len(sp.byID) == 0 {
		delete(s.sessions, session)
	}
}

func (sp *sessionPending) pushBack(e *pendingEntry) {
	e.prev = sp.tail
	if sp.tail != nil {
		sp.tail.next = e
	} else {
		sp.head = e
	}
	sp.tail = e
}

func (sp *sessionPending) remove(e *pendingEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sp.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		sp.tail = e.prev
	}
	e.prev, e.next = nil, nil
	delete(sp.byID, e.params.ToolCallID)
	sp.bytes -= e.params.size()
}

// fillTask copies into dst each field of src that dst lacks (first non-empty
// per field wins). It reports whether dst changed.
func fillTask(dst *TaskParams, src TaskParams) bool {
	changed := false
	fill := func(d *string, v string) {
		if *d == "" && v != "" {
			*d = v
			changed = true
		}
	}
	fill(&dst.AgentID, src.AgentID)
	fill(&dst.Description, src.Description)
	fill(&dst.Prompt, src.Prompt)
	fill(&dst.Model, src.Model)
	return changed
}
