package adapter

import (
	"maps"
	"slices"
)

// What the Tracker remembers of the subagent cards it let go, so that
// history a session/load or session/resume replays on the same connection
// merges into what those cards had learned.
//
// A finished card is dropped at the end of its turn (tool call ids may
// recur in a later turn), and a load drops the session's cards before the
// agent replays them. The replay rarely carries everything the live turn
// did: Claude, for one, does not replay a background launch's receipt,
// which alone gives the card its agent id and is_async. So the Tracker
// keeps a copy of each subagent card it drops that way, and a card created
// for a replayed frame of a loading session starts from that copy: its
// status never moves backwards and nothing it learned is unset (the
// card's own merge rules then apply to the replayed frames). Outside a
// load the copy is never used, so a tool call id that recurs in a later
// live turn starts a new card.
//
// The memory is bounded: at most DefaultMaxRemembered cards and a quarter
// of the connection's byte budget, the oldest forgotten first. A card
// forgotten so is rebuilt from the replay alone, as if never seen.

// DefaultMaxRemembered bounds the dropped subagent cards a Tracker
// remembers for replayed history.
const DefaultMaxRemembered = 4096

// CounterRememberedEvicted counts remembered cards forgotten by the bound.
const CounterRememberedEvicted = "remembered_evicted"

// remembered is the Tracker's copy of the subagent cards it dropped.
type remembered struct {
	cards map[string]map[string]*Card // session → tool call id → copy
	order []globalRef                 // oldest first (lazy: stale refs skipped)
	count int
	bytes int64
}

// remember keeps a copy of c, a card about to be dropped, when it is a
// subagent; a newer copy replaces an older one.
func (t *Tracker) remember(c *Card) {
	if c.task == nil {
		return
	}
	r := &t.history
	if r.cards == nil {
		r.cards = map[string]map[string]*Card{}
	}
	byID := r.cards[c.sessionID]
	if byID == nil {
		byID = map[string]*Card{}
		r.cards[c.sessionID] = byID
	}
	if old := byID[c.id]; old != nil {
		r.count--
		r.bytes -= int64(old.bytes)
	}
	cp := copyCard(c)
	cp.gen = t.tick()
	byID[c.id] = cp
	r.count++
	r.bytes += int64(cp.bytes)
	r.order = append(r.order, globalRef{c.sessionID, c.id, cp.gen})
	for (r.count > DefaultMaxRemembered || r.bytes > t.maxBytes/4) && len(r.order) > 0 {
		ref := r.order[0]
		r.order = r.order[1:]
		if old := r.cards[ref.session][ref.id]; old != nil && old.gen == ref.gen {
			t.forgetRemembered(ref.session, ref.id)
			t.counters[CounterRememberedEvicted]++
		}
	}
	if len(r.order) > 2*r.count+1024 {
		r.order = slices.DeleteFunc(r.order, func(ref globalRef) bool {
			old := r.cards[ref.session][ref.id]
			return old == nil || old.gen != ref.gen
		})
	}
}

// forgetRemembered drops the copy of (sessionID, id), if any.
func (t *Tracker) forgetRemembered(sessionID, id string) {
	r := &t.history
	old := r.cards[sessionID][id]
	if old == nil {
		return
	}
	r.count--
	r.bytes -= int64(old.bytes)
	delete(r.cards[sessionID], id)
	if len(r.cards[sessionID]) == 0 {
		delete(r.cards, sessionID)
	}
}

// forgetSessionHistory drops the copies of sessionID's cards ("" = every
// session's).
func (t *Tracker) forgetSessionHistory(sessionID string) {
	r := &t.history
	if sessionID == "" {
		*r = remembered{}
		return
	}
	for id := range r.cards[sessionID] {
		t.forgetRemembered(sessionID, id)
	}
}

// recall starts c, just created for a frame, from the copy of the card it
// replaces when its session is being loaded, and reports whether it did.
// The copy stays: a load that fails, or one that drops the card again,
// still finds it.
func (t *Tracker) recall(tx *Tx, s *session, c *Card) bool {
	old := t.history.cards[s.id][c.id]
	if old == nil || !tx.Loading(s.id) {
		return false
	}
	gen := c.gen
	*c = *copyCard(old)
	c.gen, c.bytes, c.inDone = gen, 0, false
	t.account(c)
	if c.status.Terminal() {
		s.markDone(t, c)
	}
	return true
}

// copyCard returns a copy of c that shares nothing mutable with it.
func copyCard(c *Card) *Card {
	cp := *c
	cp.task = c.task.Clone()
	cp.values = maps.Clone(c.values)
	cp.child = c.child.Clone()
	cp.refs = slices.Clone(c.refs)
	return &cp
}
