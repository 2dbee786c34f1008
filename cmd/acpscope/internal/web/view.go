package web

import (
	"container/heap"
	"context"
	"errors"
	"sort"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// Card is one stored subagent card as the session page shows it: in the
// tree (Parent, Depth) and on the timeline (Start, End, Lane). Times are
// milliseconds since SessionView.Origin.
type Card struct {
	SessionID        string `json:"session_id"`
	ToolCallID       string `json:"tool_call_id"`
	ParentToolCallID string `json:"parent_tool_call_id,omitempty"`
	Execution        string `json:"execution"`
	// Parent is the index of the card this one hangs under in the tree: its
	// parent tool call in the same session, else the card that launched its
	// (child) session; -1 at the top.
	Parent int `json:"parent"`
	Depth  int `json:"depth"`

	Description    string `json:"description,omitempty"`
	SubagentType   string `json:"subagent_type,omitempty"`
	Model          string `json:"model,omitempty"`
	AgentID        string `json:"agent_id,omitempty"`
	AgentStatus    string `json:"agent_status,omitempty"`
	ToolStatus     string `json:"tool_status,omitempty"`
	ChildSessionID string `json:"child_session_id,omitempty"`
	// Status is the card's status class: open, unknown (a child the agent
	// no longer tracks: neither running nor finished nor failed), complete,
	// error or cancelled.
	Status       string `json:"status"`
	IsAsync      bool   `json:"is_async,omitempty"`
	TotalTokens  *int64 `json:"total_tokens"`
	ToolUseCount *int64 `json:"tool_use_count"`
	DurationMs   *int64 `json:"duration_ms"`
	Source       string `json:"source"`

	// The card's facts (persistence.ListCardFacts), agent text sanitised
	// by safetext.Lines. ErrorMessage is the failure's reason, cut at
	// persistence.MaxFactSummary characters (ErrorTruncated); the whole
	// reason and the earlier answers are /api/card's.
	ErrorMessage   string `json:"error_message,omitempty"`
	ErrorTruncated bool   `json:"error_truncated,omitempty"`
	// HasEarlierResults: the child answered before its latest answer (it
	// was messaged again); /api/card serves those answers.
	HasEarlierResults bool `json:"has_earlier_results,omitempty"`
	// ParentSessionID is the session holding the parent card of a card in
	// a child session (that card's tool call id is SessionID).
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// ReferencedBy are the tool calls whose `session` content names the
	// card's child session (TaskStop, SendMessage, …), first seen first,
	// sanitised by safetext.Text.
	ReferencedBy []string `json:"referenced_by,omitempty"`

	Observed time.Time  `json:"observed_at"`
	Settled  *time.Time `json:"settled_at"`
	// Updated is the card's last activity: when the store last changed it.
	Updated time.Time `json:"updated_at"`
	// Start and End delimit the timeline bar: first seen to terminal status,
	// or to the session's latest update while the card is open.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	Lane  int   `json:"lane"`
	// Turn is the number of the turn the card began in (TurnMark.N), 0
	// when the store recorded no turn for it.
	Turn int `json:"turn"`
	// turnID is the stored turn id, numbered by numberTurns.
	turnID string
}

// TurnMark is one turn of the session on the timeline: its number in the
// order the turns began and where its first card was first seen (ms since
// the origin).
type TurnMark struct {
	N     int    `json:"n"`
	ID    string `json:"id"`
	Start int64  `json:"start"`
}

// MaxTurnMarks bounds the turns a view marks on the timeline (the first
// ones); cards of later turns still carry their number.
const MaxTurnMarks = 1000

// SessionView is everything the session page draws.
type SessionView struct {
	Session SessionRow `json:"session"`
	// Family lists the session and its child sessions (breadth first).
	Family []string `json:"family"`
	Cards  []Card   `json:"cards"`
	// Origin is the earliest observation; Span the timeline's length in ms.
	Origin *time.Time `json:"origin"`
	Span   int64      `json:"span"`
	Lanes  int        `json:"lanes"`
	// Token is the change mark of the family when the view was read.
	Token string `json:"token"`
	// Turns marks where each turn began (at most MaxTurnMarks); TurnCount
	// is how many distinct turns the cards began in.
	Turns     []TurnMark `json:"turns"`
	TurnCount int        `json:"turn_count"`
	// Total is the number of cards of the whole view, and Offset the index
	// of Cards[0] in it: a window (Window) holds only some of them.
	Total  int `json:"total"`
	Offset int `json:"offset"`
}

// DefaultWindow and MaxWindow bound the cards one session page carries:
// a session of 100,000 cards is read in pages of them.
const (
	DefaultWindow = 1000
	MaxWindow     = 5000
)

// Window returns the view with only the cards [offset, offset+limit) of
// it (limit clamped to 1..MaxWindow, offset to the cards there are); the
// tree links (Parent) keep their indexes into the whole view.
func (v SessionView) Window(offset, limit int) SessionView {
	if limit <= 0 {
		limit = DefaultWindow
	}
	limit = min(limit, MaxWindow)
	offset = max(0, min(offset, len(v.Cards)))
	end := min(len(v.Cards), offset+limit)
	w := v
	w.Cards = v.Cards[offset:end:end]
	w.Offset = offset
	w.Total = len(v.Cards)
	return w
}

// LoadSession reads one session's view; ok is false when it is not stored.
func LoadSession(ctx context.Context, s *persistence.Store, id string) (v SessionView, ok bool, err error) {
	sum, ok, err := s.Session(ctx, id)
	if err != nil || !ok {
		return v, ok, err
	}
	// The mark is read first: a write racing the read moves the mark past
	// the token, and the next poll re-reads.
	token, err := FamilyToken(ctx, s, id)
	if err != nil {
		return v, false, err
	}
	family, rows, err := s.ListFamily(ctx, id)
	if err != nil {
		return v, false, err
	}
	facts, err := s.ListCardFacts(ctx, family...)
	if err != nil && !errors.Is(err, persistence.ErrNoFactStore) {
		return v, false, err
	}
	v = BuildView(rowOf(sum), rows, facts)
	v.Family = family
	v.Token = token
	return v, true, nil
}

// FamilyToken is the change token of a session and its child sessions;
// with id "" it covers the whole store.
func FamilyToken(ctx context.Context, s *persistence.Store, id string) (string, error) {
	var family []string
	if id != "" {
		var err error
		if family, err = s.SessionFamily(ctx, id); err != nil {
			return "", err
		}
	}
	mark, err := s.Changes(ctx, family...)
	return mark.Token(), err
}

// BuildView lays out a session's cards (the root session's first, as
// persistence.Store.ListFamily returns them) with their facts (of
// persistence.Store.ListCardFacts, matched by each card's key): tree
// parents and depths, timeline bars and lanes.
func BuildView(session SessionRow, rows []persistence.SubagentContext, facts []persistence.CardFactsSummary) SessionView {
	v := SessionView{Session: session, Cards: make([]Card, len(rows)), Turns: []TurnMark{}}
	if len(rows) == 0 {
		return v
	}
	origin, last := rows[0].ObservedAt, rows[0].UpdatedAt
	for _, r := range rows {
		if r.ObservedAt.Before(origin) {
			origin = r.ObservedAt
		}
		last = latest(last, r.UpdatedAt, r.ObservedAt)
		if r.SettledAt != nil {
			last = latest(last, *r.SettledAt)
		}
	}
	for i, r := range rows {
		v.Cards[i] = cardOf(r, origin, last)
	}
	applyFacts(v.Cards, facts)
	linkTree(v.Cards, session.ID)
	v.Lanes = assignLanes(v.Cards)
	v.Turns, v.TurnCount = numberTurns(v.Cards)
	v.Total = len(v.Cards)
	o := origin.UTC()
	v.Origin = &o
	v.Span = last.Sub(origin).Milliseconds()
	return v
}

func latest(t time.Time, more ...time.Time) time.Time {
	for _, u := range more {
		if u.After(t) {
			t = u
		}
	}
	return t
}

func cardOf(r persistence.SubagentContext, origin, last time.Time) Card {
	c := Card{
		SessionID: r.TaskSessionID, ToolCallID: r.ToolCallID, ParentToolCallID: str(r.ParentToolCallID),
		Execution:   r.AgentExecutionID,
		Description: safetext.Text(str(r.Description)), SubagentType: safetext.Text(str(r.SubagentType)),
		Model: safetext.Text(str(r.Model)), AgentID: safetext.Text(str(r.AgentID)),
		AgentStatus: safetext.Text(str(r.AgentStatus)), ToolStatus: str(r.ToolStatus),
		ChildSessionID: str(r.ChildSessionID), IsAsync: r.IsAsync,
		TotalTokens: r.TotalTokens, ToolUseCount: r.ToolUseCount, DurationMs: r.DurationMs,
		Source: r.Source, Observed: r.ObservedAt.UTC(), Updated: r.UpdatedAt.UTC(), Parent: -1, turnID: str(r.TurnID),
	}
	end := last
	c.Status = statusClass(c.ToolStatus, r.SettledAt != nil)
	c.ToolStatus = safetext.Text(c.ToolStatus) // shown as is once classed
	switch {
	case r.SettledAt != nil:
		t := r.SettledAt.UTC()
		c.Settled, end = &t, t
	case c.Status == statusUnknown:
		// Not running: the bar ends where the card was last updated (the
		// agent stopped tracking it), not at the session's latest update.
		end = r.UpdatedAt
	}
	c.Start = r.ObservedAt.Sub(origin).Milliseconds()
	c.End = max(end.Sub(origin).Milliseconds(), c.Start)
	return c
}

// numberTurns numbers the turns the cards began in (the store keeps a
// card's first turn) in the order they began, sets each card's Turn, and
// returns the first MaxTurnMarks marks and the number of turns. A turn
// began at its first card's observed time, at full precision; turns that
// began at the same instant go in the order the store lists their first
// cards (never by their random ids).
func numberTurns(cards []Card) ([]TurnMark, int) {
	type begin struct {
		at    time.Time
		index int // of the first card, in the store's order
	}
	first := map[string]begin{}
	for i, c := range cards {
		if c.turnID == "" {
			continue
		}
		if b, ok := first[c.turnID]; !ok || c.Observed.Before(b.at) {
			first[c.turnID] = begin{c.Observed, i}
		}
	}
	type mark struct {
		TurnMark
		begin
	}
	sorted := make([]mark, 0, len(first))
	for id, b := range first {
		sorted = append(sorted, mark{TurnMark{ID: id, Start: cards[b.index].Start}, b})
	}
	sort.Slice(sorted, func(i, j int) bool {
		if !sorted[i].at.Equal(sorted[j].at) {
			return sorted[i].at.Before(sorted[j].at)
		}
		return sorted[i].index < sorted[j].index
	})
	marks := make([]TurnMark, len(sorted))
	number := make(map[string]int, len(marks))
	for i := range sorted {
		marks[i] = sorted[i].TurnMark
		marks[i].N = i + 1
		number[marks[i].ID] = i + 1
	}
	for i := range cards {
		cards[i].Turn = number[cards[i].turnID]
	}
	return marks[:min(len(marks), MaxTurnMarks):min(len(marks), MaxTurnMarks)], len(marks)
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// statusUnknown is the status class of a child the agent no longer
// tracks (tool status unknown, never settled): shown as itself, never as
// open (running), complete or error.
const statusUnknown = "unknown"

// statusClass folds the terminal tool statuses into the classes the page
// colours.
func statusClass(toolStatus string, settled bool) string {
	switch {
	case !settled && toolStatus == statusUnknown:
		return statusUnknown
	case !settled:
		return "open"
	case toolStatus == "error" || toolStatus == "failed":
		return "error"
	case toolStatus == "cancelled":
		return "cancelled"
	}
	return "complete"
}

// applyFacts sets each card's facts from the summary of its key (session,
// execution, tool call); a summary of no card is ignored.
func applyFacts(cards []Card, facts []persistence.CardFactsSummary) {
	if len(facts) == 0 {
		return
	}
	type key struct{ session, execution, call string }
	byKey := make(map[key]int, len(cards))
	for i, c := range cards {
		byKey[key{c.SessionID, c.Execution, c.ToolCallID}] = i
	}
	for _, f := range facts {
		i, ok := byKey[key{f.SessionID, f.ExecutionID, f.ToolCallID}]
		if !ok {
			continue
		}
		c := &cards[i]
		c.ErrorMessage, c.ErrorTruncated = safetext.Lines(f.ErrorMessage), f.ErrorTruncated
		c.HasEarlierResults, c.ParentSessionID = f.HasEarlierResults, f.ParentSessionID
		c.ReferencedBy = safeTexts(f.ReferencedBy)
	}
}

// safeTexts is list with each text sanitised by safetext.Text (nil when
// empty).
func safeTexts(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = safetext.Text(s)
	}
	return out
}

// linkTree sets every card's Parent and Depth. Stored links are the
// agent's and may be anything: a link to a missing card, to itself or into
// a cycle leaves the card at the top.
func linkTree(cards []Card, root string) {
	type key struct{ session, call string }
	byCall := map[key]int{}
	launcher := map[string]int{} // child session → the card that launched it
	for i, c := range cards {
		if _, dup := byCall[key{c.SessionID, c.ToolCallID}]; !dup {
			byCall[key{c.SessionID, c.ToolCallID}] = i
		}
		if c.ChildSessionID != "" && c.ChildSessionID != c.SessionID {
			if _, dup := launcher[c.ChildSessionID]; !dup {
				launcher[c.ChildSessionID] = i
			}
		}
	}
	for i := range cards {
		c := &cards[i]
		if p, ok := byCall[key{c.SessionID, c.ParentToolCallID}]; ok && c.ParentToolCallID != "" && p != i {
			c.Parent = p
		} else if p, ok := byCall[key{c.ParentSessionID, c.SessionID}]; ok && c.ParentSessionID != "" && p != i {
			// A card in a child session: its parent card is the child
			// session's own card (tool call id = the child session id) in
			// the session the facts name.
			c.Parent = p
		} else if p, ok := launcher[c.SessionID]; ok && c.SessionID != root && p != i {
			c.Parent = p
		} else if p, ok := byCall[key{c.ParentSessionID, adapter.AIRTaskID(c.SessionID)}]; ok && c.ParentSessionID != "" && p != i {
			// A card in an earlier AIR generation's session
			// (`<task>:generation:<n>`): every generation's card is the
			// task's one card, whose child_session_id names only the
			// latest.
			c.Parent = p
		}
	}
	// Cut cycles: walk up from each card; a card met twice on one walk is
	// in a cycle and is detached. state: 0 unvisited, 1 on the walk, 2 done.
	state := make([]byte, len(cards))
	var path []int
	for i := range cards {
		path = path[:0]
		for j := i; j >= 0 && state[j] != 2; j = cards[j].Parent {
			if state[j] == 1 {
				cards[j].Parent = -1
				break
			}
			state[j] = 1
			path = append(path, j)
		}
		for _, j := range path {
			state[j] = 2
		}
	}
	// Depths, parents first (a parent may come after its child in order).
	depth := make([]int, len(cards))
	for i := range depth {
		depth[i] = -1
	}
	// Iterative: a chain may be as long as the card list.
	var chain []int
	depthOf := func(i int) int {
		chain = chain[:0]
		j := i
		for j >= 0 && depth[j] < 0 {
			chain = append(chain, j)
			j = cards[j].Parent
		}
		d := -1
		if j >= 0 {
			d = depth[j]
		}
		for k := len(chain) - 1; k >= 0; k-- {
			d++
			depth[chain[k]] = d
		}
		return depth[i]
	}
	for i := range cards {
		cards[i].Depth = depthOf(i)
	}
}

// assignLanes packs the bars into as few lanes as concurrency allows
// (interval partitioning: each bar takes the lowest lane free at its
// start) and returns the number of lanes.
func assignLanes(cards []Card) int {
	order := make([]int, len(cards))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cards[order[a]].Start < cards[order[b]].Start })
	busy := &laneHeap{less: func(a, b lane) bool { return a.end < b.end }}
	free := &laneHeap{less: func(a, b lane) bool { return a.id < b.id }}
	lanes := 0
	for _, i := range order {
		c := &cards[i]
		for busy.Len() > 0 && busy.items[0].end < c.Start {
			heap.Push(free, heap.Pop(busy))
		}
		if free.Len() > 0 {
			c.Lane = heap.Pop(free).(lane).id
		} else {
			c.Lane = lanes
			lanes++
		}
		heap.Push(busy, lane{id: c.Lane, end: c.End})
	}
	return lanes
}

type lane struct {
	id  int
	end int64
}

// laneHeap is a heap of lanes ordered by less.
type laneHeap struct {
	items []lane
	less  func(a, b lane) bool
}

func (h *laneHeap) Len() int           { return len(h.items) }
func (h *laneHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *laneHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *laneHeap) Push(x any)         { h.items = append(h.items, x.(lane)) }
func (h *laneHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
