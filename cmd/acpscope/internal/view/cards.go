// Package view turns the adapter's events into what acpscope shows: a
// running log of the turn, subagent cards, and the --json card lines.
//
// The package is a sink: it keeps the latest snapshot of every card it has
// been shown and never looks at wire JSON or at the connection.
package view

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// Card is the latest snapshot of one tool call, subagent or not.
type Card struct {
	// Event is the last event seen for the card (a deep copy).
	Event adapter.Event
	// Status is the card's tool status: the last status any event carried.
	Status adapter.ToolStatus
	// order is the arrival order of the card's first event.
	order int
	// at is the card's position in each of the board's queues (-1: not in
	// it); running says whether Board.Running counts it.
	at      [queueCount]int
	running bool
}

// IsSubagent reports whether the card carries a normalised subagent payload.
func (c *Card) IsSubagent() bool {
	return c.Event.Payload != nil && c.Event.Payload.SubagentTask != nil
}

// isRunningSubagent reports whether c is a subagent whose tool status is
// not terminal: the cards the memory bound forgets last.
func (c *Card) isRunningSubagent() bool {
	return c.IsSubagent() && !c.Status.Terminal()
}

// countsAsRunning reports whether Board.Running counts c: a subagent
// that is not terminal and not a child session (a child's own state says
// whether it runs), or a child session confirmed live, a finished one run
// again included.
func (c *Card) countsAsRunning() bool {
	live := c.Event.Child != nil && c.Event.Child.Live
	return c.IsSubagent() && (live || !c.Status.Terminal() && c.Event.Child == nil)
}

// MaxToolCards bounds the tool calls that are not subagents a Board keeps
// (they are shown nested under subagent cards); beyond it the oldest is
// forgotten. Subagent cards are always kept.
const MaxToolCards = 10000

// MaxBoardBytes bounds the bytes a Board's cards hold (adapter.Event.Size).
// Beyond it the oldest cards are forgotten: tool calls and finished
// subagents first, then any card but the one just shown. Forgotten counts
// them; the summary says so. The store (--db) keeps every subagent anyway.
const MaxBoardBytes = 64 << 20

// The board's queues: every card, the tool calls that are not subagents,
// and the cards that are not running subagents (forgotten first). Each is
// ordered by first sight, so the oldest card of a kind is found, and a
// card moved or dropped, in O(log n): an update costs the same at any
// number of cards.
const (
	queueAll = iota
	queueTools
	queueSpare
	queueCount
)

// Board holds the subagent cards of a connection and its latest tool calls
// (up to MaxToolCards, and MaxBoardBytes in all), in first-seen order.
type Board struct {
	cards map[cardKey]*Card
	next  int
	bytes int
	// Forgotten counts the cards dropped to stay within MaxBoardBytes.
	Forgotten int
	queues    [queueCount]cardQueue
	running   int
	// budget is MaxBoardBytes (tests lower it); visited counts the cards
	// the bounds looked at, which the tests hold to what they dropped.
	budget  int
	visited int
}

type cardKey struct{ session, toolCall string }

// NewBoard returns an empty board.
func NewBoard() *Board {
	b := &Board{cards: map[cardKey]*Card{}, budget: MaxBoardBytes}
	for i := range b.queues {
		b.queues[i].slot = i
	}
	return b
}

// Apply records ev and returns its card. Events without a tool call id (the
// inter-session message views) are not cards; Apply returns nil for them.
func (b *Board) Apply(ev adapter.Event) *Card {
	if ev.ToolCallID == "" {
		return nil
	}
	k := cardKey{ev.SessionID, ev.ToolCallID}
	c, ok := b.cards[k]
	if !ok {
		c = &Card{order: b.next, at: [queueCount]int{-1, -1, -1}}
		b.next++
		b.cards[k] = c
	}
	b.bytes += ev.Size() - c.Event.Size()
	c.Event = ev.Clone()
	if ev.Status != adapter.ToolStatusUnchanged {
		c.Status = ev.Status
	}
	b.place(c)
	b.forgetOldTools(c)
	b.forgetOverBudget(c)
	return c
}

// place puts c into the queues and the running count its state calls for.
func (b *Board) place(c *Card) {
	b.queues[queueAll].put(c, true)
	b.queues[queueTools].put(c, !c.IsSubagent())
	b.queues[queueSpare].put(c, !c.isRunningSubagent())
	running := c.countsAsRunning()
	if running != c.running {
		c.running = running
		if running {
			b.running++
		} else {
			b.running--
		}
	}
}

// unplace takes c out of every queue and the running count.
func (b *Board) unplace(c *Card) {
	for i := range b.queues {
		b.queues[i].put(c, false)
	}
	if c.running {
		c.running = false
		b.running--
	}
}

// forgetOverBudget drops the oldest cards while the board holds more than
// its budget: first those that are not running subagents, then any but
// keep (the card just applied).
func (b *Board) forgetOverBudget(keep *Card) {
	if b.bytes <= b.budget {
		return
	}
	b.unplace(keep)
	for _, q := range []int{queueSpare, queueAll} {
		for b.bytes > b.budget && b.queues[q].Len() > 0 {
			b.visited++
			b.drop(b.queues[q].oldest())
			b.Forgotten++
		}
	}
	b.place(keep)
}

// drop removes c from the board.
func (b *Board) drop(c *Card) {
	delete(b.cards, cardKey{c.Event.SessionID, c.Event.ToolCallID})
	b.bytes -= c.Event.Size()
	b.unplace(c)
}

// forgetOldTools drops the oldest tool calls that are not subagents while
// there are more than MaxToolCards of them; keep (the card just applied)
// stays.
func (b *Board) forgetOldTools(keep *Card) {
	tools := &b.queues[queueTools]
	if tools.Len() <= MaxToolCards {
		return
	}
	b.unplace(keep)
	for tools.Len() > MaxToolCards-boolInt(!keep.IsSubagent()) {
		b.visited++
		b.drop(tools.oldest())
	}
	b.place(keep)
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// Cards returns every card in first-seen order.
func (b *Board) Cards() []*Card {
	out := make([]*Card, 0, len(b.cards))
	for _, c := range b.cards {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// Subagents returns the subagent cards in first-seen order.
func (b *Board) Subagents() []*Card {
	var out []*Card
	for _, c := range b.Cards() {
		if c.IsSubagent() {
			out = append(out, c)
		}
	}
	return out
}

// Children returns the cards nested under parent, in first-seen order. To
// nest every card, use ChildIndex, which costs one pass for all of them.
func (b *Board) Children(parent *Card) []*Card {
	return b.ChildIndex()[cardKey{parent.Event.SessionID, parent.Event.ToolCallID}]
}

// ChildIndex maps every parent card's key to its nested cards in
// first-seen order, in one pass over the board.
func (b *Board) ChildIndex() map[cardKey][]*Card {
	idx := map[cardKey][]*Card{}
	for _, c := range b.Cards() {
		if p := c.Event.ParentToolCallID; p != "" && p != c.Event.ToolCallID {
			k := cardKey{c.Event.SessionID, p}
			idx[k] = append(idx[k], c)
		}
	}
	return idx
}

// Running counts the subagent cards whose tool status is not terminal,
// leaving out child sessions not confirmed live (unknown, idle without an
// outcome, unrecognised states), and the child sessions confirmed live,
// finished ones run again included. It runs on every shown line and spinner
// tick, so the board keeps the count as cards change.
func (b *Board) Running() int { return b.running }

// Header is the card's header line: the subagent type (else "Task") and
// the description (else the title, else "Subagent").
func Header(c *Card) string {
	t := c.Event.Payload.SubagentTask
	kind := t.SubagentType
	if kind == "" {
		kind = "Task"
	}
	desc := t.Description
	if desc == "" {
		desc = c.Event.Title
	}
	if desc == "" {
		desc = "Subagent"
	}
	return kind + " — " + desc
}

// Chips lists the card's facts in display order: background, duration,
// tokens, tool count, model, child session. childCount is the number of
// nested cards rendered under it (a tool count equal to it is not repeated).
func Chips(c *Card, childCount int) []string {
	t := c.Event.Payload.SubagentTask
	var chips []string
	if t.IsAsync || t.Status == "async_launched" {
		chips = append(chips, "background")
	}
	if t.DurationMs > 0 {
		chips = append(chips, formatDuration(t.DurationMs))
	}
	if t.TotalTokens > 0 {
		chips = append(chips, formatCount(t.TotalTokens)+" tokens")
	}
	if t.ToolUseCount != nil && !(childCount > 0 && *t.ToolUseCount == childCount) {
		unit := "tools"
		if *t.ToolUseCount == 1 {
			unit = "tool"
		}
		chips = append(chips, fmt.Sprintf("%d %s", *t.ToolUseCount, unit))
	}
	if t.Model != "" {
		chips = append(chips, t.Model)
	}
	if t.ChildSessionID != "" {
		chips = append(chips, "session "+truncate(t.ChildSessionID, 12))
	}
	return chips
}

// formatDuration renders milliseconds as 850ms, 12.3s or 4m05s.
func formatDuration(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	default:
		s := ms / 1000
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
}

// formatCount renders n with thousands separators.
func formatCount(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// truncate cuts s to n runes, marking a cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// oneLine folds s onto one line and cuts it to n runes.
func oneLine(s string, n int) string {
	return truncate(strings.Join(strings.Fields(s), " "), n)
}

// referrers maps each child session named by a `session` tool-call content
// to the tool calls naming it, in first-seen order.
func (b *Board) referrers() map[string][]string {
	out := map[string][]string{}
	for _, c := range b.Cards() {
		for _, r := range c.Event.SessionRefs {
			if r.Known && !slices.Contains(out[r.SessionID], c.Event.ToolCallID) {
				out[r.SessionID] = append(out[r.SessionID], c.Event.ToolCallID)
			}
		}
	}
	return out
}
