package traces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// ExportStored emits the spans of a stored session and its child sessions
// with the ids a live run or a replay of it gives. The store's subagent
// cards (persistence.Store.ListFamily: one per tool call) give the
// subagents; its trace facts (persistence.WithTraceFacts) give the turns,
// numbered as the live export numbered them, with their stop reasons,
// usage, errors and the agent's agentInfo, every other tool call with its
// title, kind and status, and the permission events. Times are the
// store's: a tool call runs from its first observation to its settlement
// (else its last update), a turn from its start to its answer.
//
// A store written before the trace facts (or without them) has cards
// only: then the export has the spans of the subagents and of the turns
// that held them, named by the dialect (agentOf derives it from an
// execution id), the turns numbered in the order of their first card
// (cardTurns), and nothing it would have to invent.
func (x *Exporter) ExportStored(ctx context.Context, st *persistence.Store, sessionID string, agentOf func(executionID string) string) (spans int, err error) {
	if x == nil {
		return 0, nil
	}
	family, rows, err := st.ListFamily(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	facts := map[cardKey]persistence.CardFactsSummary{}
	if list, err := st.ListCardFacts(ctx, family...); err == nil {
		for _, f := range list {
			facts[cardKey{f.SessionID, f.ToolCallID}] = f
		}
	} else if !errors.Is(err, persistence.ErrNoFactStore) {
		return 0, err
	}
	var tf persistence.TraceFacts
	if all, err := st.TraceFamily(ctx, family...); err != nil {
		return 0, err
	} else if tf, err = st.ListTraceFacts(ctx, all...); err != nil && !errors.Is(err, persistence.ErrNoTraceStore) {
		return 0, err
	}
	if len(rows) == 0 && len(tf.ToolCalls) == 0 && len(tf.Turns) == 0 {
		return 0, fmt.Errorf("nothing stored for session %s", sessionID)
	}

	tr := newTree()
	var cards []*cardRecord
	dialectOf := map[string]string{} // a turn id's dialect, from its cards' execution ids
	for _, r := range rows {
		c := storedCard(r, facts[cardKey{r.TaskSessionID, r.ToolCallID}])
		c.root = sessionID
		if r.TurnID != nil {
			c.turnID = *r.TurnID
			if _, ok := dialectOf[c.turnID]; !ok && agentOf != nil {
				dialectOf[c.turnID] = agentOf(r.AgentExecutionID)
			}
		}
		if x.emit.content {
			if tx, err := st.SubagentTexts(ctx, r.TaskSessionID, r.AgentExecutionID, r.ToolCallID); err == nil {
				c.task.Prompt, c.task.ResultText = deref(tx.Prompt), deref(tx.ResultText)
			}
		}
		tr.cards[c.key] = c
		cards = append(cards, c)
	}
	for _, call := range tf.ToolCalls {
		k := cardKey{call.SessionID, call.ToolCallID}
		if c := tr.cards[k]; c != nil {
			c.title, c.kind = call.Title, call.Kind
			if (call.ChildState != "" || call.ChildStopReason != "") && c.task != nil {
				// A child session's card: its state and stop reason as the
				// live export last saw them (the child is the card's).
				child := c.task.ChildSessionID
				if child == "" {
					child = c.key.call
				}
				c.child = &adapter.ChildSession{SessionID: child, State: call.ChildState, StopReason: call.ChildStopReason, ErrorMessage: c.task.ErrorMessage}
			}
			if c.turnID == "" {
				c.turnID = call.TurnID
			}
			if c.parentSession == "" {
				c.parentSession = call.ParentSessionID
			}
			continue
		}
		c := &cardRecord{key: k, root: sessionID, turnID: call.TurnID, parentToolCallID: call.ParentToolCallID, parentSession: call.ParentSessionID,
			title: call.Title, kind: call.Kind, status: adapter.ToolStatus(call.Status), start: call.FirstSeenAt, end: call.UpdatedAt, terminal: call.SettledAt != nil}
		if call.SettledAt != nil {
			c.end = *call.SettledAt
		}
		tr.cards[k] = c
		cards = append(cards, c)
	}
	for _, c := range cards {
		tr.noteChild(c)
		if f, ok := facts[c.key]; ok && c.childCard() && len(f.ReferencedBy) > 0 {
			if f.ParentSessionID != "" {
				tr.referrer[c.key.call] = cardKey{f.ParentSessionID, f.ReferencedBy[0]}
			} else {
				tr.referrer[c.key.call] = cardKey{c.key.session, f.ReferencedBy[0]}
			}
		}
	}

	turns := storedTurns(tf.Turns, sessionID, dialectOf)
	byID := map[string]*turnRecord{}
	for _, t := range turns {
		byID[t.id] = &t.turnRecord
	}
	// A permission event is its tool call's, else (a tool call never
	// reported) its turn's, as live.
	for _, ev := range tf.Events {
		span := permissionEvent(ev.Name, ev.ToolCallID, ev.Title, ev.Detail)
		span.at = ev.At
		if c := tr.cards[cardKey{ev.SessionID, ev.ToolCallID}]; c != nil {
			if len(c.events) < maxSpanEvents {
				c.events = append(c.events, span)
			}
		} else if t := byID[ev.TurnID]; t != nil && len(t.events) < maxSpanEvents {
			t.events = append(t.events, span)
		}
	}
	if len(turns) > 0 {
		// Each tool call is in the turn its first observation was in, as
		// the live export put it; one outside the stored turns (before the
		// first prompt) is a root, as it was live.
		for _, c := range cards {
			if t := byID[c.turnID]; t != nil {
				c.turn, c.turnCtx, c.salt = t.n, t.spanContext(), t.salt()
			}
		}
		for _, t := range turns {
			if t.open {
				for _, c := range cards {
					if c.turn == t.n && c.end.After(t.end) {
						t.end = c.end
					}
				}
			}
			x.emit.turn(&t.turnRecord)
			spans++
		}
	} else {
		spans += x.cardTurns(tr, cards, rows, sessionID, agentOf)
	}
	for _, c := range cards {
		x.emit.card(tr, c)
		spans++
		if c.subagent() && !c.childCard() {
			spans++
		}
	}
	return spans, nil
}

// storedTurnRecord is a turn of the trace facts, with its id.
type storedTurnRecord struct {
	turnRecord
	id string
}

// storedTurns are the root session's stored turns with a number, in
// order: named by the agent's agentInfo name, else the dialect (stored,
// else that of the turn's cards); a turn never answered is open.
func storedTurns(list []persistence.TurnFact, sessionID string, dialectOf map[string]string) []*storedTurnRecord {
	var out []*storedTurnRecord
	for _, f := range list {
		if f.SessionID != sessionID || f.Index <= 0 {
			continue
		}
		dialect := f.Dialect
		if dialect == "" {
			dialect = dialectOf[f.TurnID]
		}
		t := &storedTurnRecord{id: f.TurnID, turnRecord: turnRecord{session: sessionID, n: f.Index, agent: f.AgentName, agentVersion: f.AgentVersion,
			dialect: dialect, start: f.StartedAt, end: f.EndedAt, stop: f.StopReason, failure: f.Error, open: f.EndedAt.IsZero()}}
		if t.agent == "" {
			t.agent = dialect
		}
		if sc, ok := ParseTraceparent(f.Traceparent); ok {
			t.parent = sc
		}
		if t.end.IsZero() {
			t.end = t.start
		}
		if u := f.Usage; u != nil {
			t.usage = &Usage{InputTokens: int(u.InputTokens), OutputTokens: int(u.OutputTokens), TotalTokens: int(u.TotalTokens)}
			if u.CachedReadTokens != nil {
				n := int(*u.CachedReadTokens)
				t.usage.CachedReadTokens = &n
			}
		}
		out = append(out, t)
	}
	return out
}

// cardTurns emits the turns of a store without trace facts, as far as its
// cards hold them: the root session's turns numbered in the order of
// their first card, a card in the turn of the card it is under, a turn
// from its first card's start to its last card's end. It returns the
// spans emitted.
func (x *Exporter) cardTurns(tr *tree, cards []*cardRecord, rows []persistence.SubagentContext, sessionID string, agentOf func(string) string) int {
	type turnOf struct {
		id    string
		first time.Time
	}
	var order []turnOf
	index := map[string]int{}
	for i, r := range rows {
		if r.TaskSessionID != sessionID || r.TurnID == nil {
			continue
		}
		if j, ok := index[*r.TurnID]; ok {
			if cards[i].start.Before(order[j].first) {
				order[j].first = cards[i].start
			}
			continue
		}
		index[*r.TurnID] = len(order)
		order = append(order, turnOf{*r.TurnID, cards[i].start})
	}
	slices.SortStableFunc(order, func(a, b turnOf) int { return a.first.Compare(b.first) })
	turnNo := map[string]int{}
	for i, t := range order {
		turnNo[t.id] = i + 1
	}
	turns := map[int]*turnRecord{}
	for i, r := range rows {
		c := cards[i]
		n := storedTurn(tr, c, turnNo)
		if n == 0 {
			continue
		}
		t := turns[n]
		if t == nil {
			agent := ""
			if agentOf != nil {
				agent = agentOf(r.AgentExecutionID)
			}
			t = &turnRecord{session: sessionID, n: n, agent: agent, dialect: agent, start: c.start, end: c.end}
			turns[n] = t
		}
		c.turn, c.turnCtx = n, t.spanContext()
		t.start = minTime(t.start, c.start)
		if c.end.After(t.end) {
			t.end = c.end
		}
	}
	spans := 0
	for n := 1; n <= len(order); n++ {
		if t := turns[n]; t != nil {
			x.emit.turn(t)
			spans++
		}
	}
	return spans
}

// storedTurn is the turn of a stored card: the turn of the card it is
// under (its parent tool call, the card of its child session), up to a
// card of the root session, whose turn id's number it is (0: none).
func storedTurn(tr *tree, c *cardRecord, turnNo map[string]int) int {
	for depth := 0; depth < 64; depth++ {
		var next *cardRecord
		if c.parentToolCallID != "" {
			next = tr.cards[cardKey{c.key.session, c.parentToolCallID}]
		}
		if next == nil && c.key.session != c.root {
			if k, ok := tr.childOf[c.key.session]; ok {
				next = tr.cards[k]
			}
		}
		if next == nil || next == c {
			return turnNo[c.turnID]
		}
		c = next
	}
	return 0
}

// storedCard is the record of a stored card.
func storedCard(r persistence.SubagentContext, f persistence.CardFactsSummary) *cardRecord {
	c := &cardRecord{
		key:              cardKey{r.TaskSessionID, r.ToolCallID},
		parentToolCallID: deref(r.ParentToolCallID),
		parentSession:    f.ParentSessionID,
		status:           adapter.ToolStatus(deref(r.ToolStatus)),
		start:            r.ObservedAt,
		end:              r.UpdatedAt,
		terminal:         r.SettledAt != nil,
		task: &adapter.SubagentTask{
			Description: deref(r.Description), SubagentType: deref(r.SubagentType), Status: deref(r.AgentStatus),
			AgentID: deref(r.AgentID), Model: deref(r.Model), ChildSessionID: deref(r.ChildSessionID),
			IsAsync: r.IsAsync, ErrorMessage: f.ErrorMessage,
		},
	}
	if r.SettledAt != nil {
		c.end = *r.SettledAt
	}
	if r.TotalTokens != nil {
		c.task.TotalTokens = *r.TotalTokens
	}
	if r.DurationMs != nil {
		c.task.DurationMs = *r.DurationMs
	}
	if r.ToolUseCount != nil {
		n := int(*r.ToolUseCount)
		c.task.ToolUseCount = &n
	}
	return c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
