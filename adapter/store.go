package adapter

// The Tracker's store: sessions, the cards they hold, and the bounds on
// both (completed set, active cards, sessions, string bytes).

// session is the state of one ACP session: its cards, in creation and
// completion order, and its parent when it is a known child session.
type session struct {
	id       string
	parent   string // set when this session is a known child session
	cards    map[string]*Card
	active   []cardRef // insertion order of non-terminal cards (lazy)
	done     []cardRef // completion order of terminal cards (lazy)
	nDone    int
	lastUsed int64
}

// cardRef names one generation of a card in an order list; a stale ref
// (card dropped or replaced) is skipped.
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
		t.forgetSessionHistory(id)
		delete(t.loading, id)
		t.counters[CounterSessionsEvicted]++
		t.sessionCleared(&Tx{t: t}, id)
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
		t.sessionCleared(tx, sid)
	}
}

// sessionCleared tells the subagent-session form and the dialect that the
// state of sessionID ("" = every session) was dropped.
func (t *Tracker) sessionCleared(tx *Tx, sessionID string) {
	if t.form != nil {
		t.form.cleared(tx, sessionID)
	}
	if t.dialect != nil {
		t.dialect.SessionCleared(tx, sessionID)
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

// globalRef is a cardRef across sessions, for the byte budget.
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
	// capText caps a text whose full length the payload keeps: a cut one
	// is marked with its length, which holds until another text replaces it.
	capText := func(f *string, full *int64, cut *string) {
		switch {
		case len(*f) > MaxFieldBytes:
			*full = int64(len(*f))
			*f = TruncateUTF8(*f, MaxFieldBytes)
			*cut = *f
			t.counters[CounterFieldsTruncated]++
		case *cut != "" && *f != *cut:
			*full, *cut = 0, ""
		}
		n += len(*f)
	}
	capField(&c.title)
	capField(&c.parent)
	if k := c.task; k != nil {
		capText(&k.Prompt, &k.PromptBytes, &c.cutPrompt)
		capText(&k.ResultText, &k.ResultBytes, &c.cutResult)
		for _, f := range []*string{&k.Description, &k.SubagentType, &k.Status, &k.AgentID,
			&k.Model, &k.ChildSessionID, &k.OutputFile, &k.ErrorMessage} {
			capField(f)
		}
		for i := range k.EarlierResults {
			capField(&k.EarlierResults[i])
		}
	}
	if ch := c.child; ch != nil {
		for _, f := range []*string{&ch.Title, &ch.Description, &ch.State, &ch.StopReason, &ch.Cwd, &ch.ErrorMessage} {
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
			t.remember(c)
			t.removeCard(s, id)
			n++
		case c.inDone:
			c.inDone = false // kept across turns: out of the completed set
		}
	}
	s.done, s.nDone = nil, 0
	return n
}
