package adapter

// Card is the Tracker's state for one tool call (or one announced child
// session). Dialects read and change it inside their hooks; it must not be
// kept beyond the hook.
type Card struct {
	sessionID string
	id        string
	gen       int64
	title     string
	kind      string // the latest non-empty ACP tool kind
	parent    string
	status    ToolStatus
	task      *SubagentTask
	values    map[string]any
	child     *ChildSession
	refs      []SessionRef
	keep      bool
	outlives  bool // runs past its turn: a cancel of the session spares it
	inDone    bool // counted in its session's completed set
	bytes     int  // string bytes counted in the Tracker's budget
	// cutPrompt and cutResult are the task's prompt and result as the
	// Tracker cut them at MaxFieldBytes ("" when not cut): while the text
	// is still that one, its full length (PromptBytes, ResultBytes) holds.
	cutPrompt, cutResult string
}

// KeepAcrossTurns exempts the card from the prompt-end sweep (a child
// session card lives as long as its parent session: idle children are
// reused). Such cards are dropped with their session or by DropCard.
func (c *Card) KeepAcrossTurns() { c.keep = true }

// OutliveTurns marks a card whose work goes on past the turn that
// launched it (a background child): it is kept across turns, and a
// cancelled turn of its session (Tracker.CancelTurn) spares it; only its
// own ending, or the connection's (EndOpen), ends it. EndOutliving undoes
// both once it ended.
func (c *Card) OutliveTurns() { c.keep, c.outlives = true, true }

// EndOutliving makes a card marked OutliveTurns an ordinary one again,
// swept at its session's next prompt end once terminal.
func (c *Card) EndOutliving() {
	if c.outlives {
		c.keep, c.outlives = false, false
	}
}

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
// wins) and a lower rank is ignored. It is the one way to change a card's
// status, from a dialect hook or from Do: when a frame's processing ends,
// the pipeline moves a card that turned terminal into the session's
// completed set; a card finished elsewhere (a child session's card, kept
// across turns) stays out of that set and is still swept at prompt end
// unless kept.
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
