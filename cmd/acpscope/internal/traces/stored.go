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
// (persistence.Store.ListFamily: one card per tool call), with the ids a
// live run or a replay of it gives: the session's turns are numbered in
// the order of their first stored card, and a card in a child session is
// in the turn of the card that launched it. Times are the store's: a card
// runs from its first observation to its settlement (else its last
// update), a turn from its first card's start to its last card's end.
//
// The store keeps subagent cards only, without titles, tool kinds, the
// agent's initialize answer or stop reasons: the export has the spans of
// the subagents and the turns that held them, named by the dialect
// (agentOf derives it from an execution id), and nothing it would have to
// invent.
func (x *Exporter) ExportStored(ctx context.Context, st *persistence.Store, sessionID string, agentOf func(executionID string) string) (spans int, err error) {
	if x == nil {
		return 0, nil
	}
	family, rows, err := st.ListFamily(ctx, sessionID)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, fmt.Errorf("no stored cards for session %s", sessionID)
	}
	facts := map[cardKey]persistence.CardFactsSummary{}
	if list, err := st.ListCardFacts(ctx, family...); err == nil {
		for _, f := range list {
			facts[cardKey{f.SessionID, f.ToolCallID}] = f
		}
	} else if !errors.Is(err, persistence.ErrNoFactStore) {
		return 0, err
	}

	tr := newTree()
	byRow := make([]*cardRecord, len(rows))
	for i, r := range rows {
		c := storedCard(r, facts[cardKey{r.TaskSessionID, r.ToolCallID}])
		c.root = sessionID
		if r.TurnID != nil {
			c.turnID = *r.TurnID
		}
		if x.emit.content {
			if tx, err := st.SubagentTexts(ctx, r.TaskSessionID, r.AgentExecutionID, r.ToolCallID); err == nil {
				c.task.Prompt, c.task.ResultText = deref(tx.Prompt), deref(tx.ResultText)
			}
		}
		tr.cards[c.key] = c
		byRow[i] = c
	}
	for _, c := range byRow {
		tr.noteChild(c)
		if f, ok := facts[c.key]; ok && c.childCard() && len(f.ReferencedBy) > 0 {
			if f.ParentSessionID != "" {
				tr.referrer[c.key.call] = cardKey{f.ParentSessionID, f.ReferencedBy[0]}
			} else {
				tr.referrer[c.key.call] = cardKey{c.key.session, f.ReferencedBy[0]}
			}
		}
	}

	// The root session's turns, in the order of their first card.
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
			if byRow[i].start.Before(order[j].first) {
				order[j].first = byRow[i].start
			}
			continue
		}
		index[*r.TurnID] = len(order)
		order = append(order, turnOf{*r.TurnID, byRow[i].start})
	}
	slices.SortStableFunc(order, func(a, b turnOf) int { return a.first.Compare(b.first) })
	turnNo := map[string]int{}
	for i, t := range order {
		turnNo[t.id] = i + 1
	}
	turns := map[int]*turnRecord{}
	for i, c := range byRow {
		n := storedTurn(tr, c, turnNo)
		if n == 0 {
			continue
		}
		t := turns[n]
		if t == nil {
			agent := ""
			if agentOf != nil {
				agent = agentOf(rows[i].AgentExecutionID)
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
	for n := 1; n <= len(order); n++ {
		if t := turns[n]; t != nil {
			x.emit.turn(t)
			spans++
		}
	}
	for _, c := range byRow {
		x.emit.card(tr, c)
		spans++
		if c.subagent() && !c.childCard() {
			spans++
		}
	}
	return spans, nil
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
