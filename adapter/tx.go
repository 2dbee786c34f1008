package adapter

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
