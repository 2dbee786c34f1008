// Package storesink is acpscope's store sink: it maps tracker events onto
// persistence frames (FrameOf), gives each frame its turn id, notes the
// tool calls that reference a child session, and hands the frames to a
// persistence.Writer, which takes them off the turn's path (the store can
// neither stall nor fail a turn). run, replay and tap share it; package
// main opens the store and wires it in.
package storesink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// Bounds of the store's flushes. A finished turn waits up to FlushWait
// for its cards (a store that is down is retried that long), a cancelled
// one only its cancel grace; closing the writer after that gives up at
// once what is still not written.
const (
	FlushWait = 10 * time.Second
	CloseWait = 500 * time.Millisecond
)

// Sink records the subagent events of one acpscope process, one agent
// execution per dialect. A nil *Sink stores nothing (--no-db); every
// method may be called on it.
type Sink struct {
	writer *persistence.Writer
	store  *persistence.Store
	runID  string // one agent execution per acpscope process and dialect
	closed sync.Once
	final  persistence.Accounting // the writer's accounting once Close closed it

	mu sync.Mutex
	// turns holds the current turn id of each session a prompt opens
	// turns in (a top session); parents names, for each child session
	// seen, the session that launched it, whose turn its frames take.
	// Both hold at most maxSessions sessions.
	turns   map[string]string
	parents map[string]string
	// referrers lists, per child session, the tool calls whose `session`
	// content names it, first seen first (at most
	// persistence.MaxReferences), as --json's referenced_by; launched is
	// this run's card of each child session, which the list is stored on.
	referrers map[string][]string
	launched  map[string]cardKey
	// turnStart is when the current turn began: its flush is bounded by
	// that plus the turn's timeout and cancel grace.
	turnStart time.Time
	// The trace facts' state (traces.go): the agent's agentInfo, each
	// session's turns so far and open turn id, and the events' sequence.
	agent     struct{ name, version string }
	turnCount map[string]int
	openTurn  map[string]string
	eventSeq  int64
	// calls is what the store was last told of each tool call (at most
	// maxCalls), so an event that tells it nothing new is not queued.
	calls map[cardKey]persistence.ToolCallFact
	// clock dates turns and permission events (nil: the wall clock).
	clock func() time.Time
}

// cardKey is a card's session and tool call id.
type cardKey struct{ session, call string }

// New returns the sink of one acpscope process over s: its writer ensures
// each card's session row, and keeps a journal key ("acpscope-<run>")
// until it confirmed every card stored (persistence.WriterOptions).
func New(s *persistence.Store) *Sink {
	runID := RandomID()
	return &Sink{
		runID: runID, turns: map[string]string{}, parents: map[string]string{}, store: s,
		writer: persistence.NewWriter(s, persistence.WriterOptions{EnsureSessions: true, Journal: "acpscope-" + runID}),
	}
}

// Record queues e when it is a subagent card, and, when e references
// child sessions, the referring tool call as a fact of each child's card
// (Facts.ReferencedBy). It never fails the turn and waits only while the
// store is behind by the writer's whole queue (persistence.Writer). The
// dialect goes into the execution id, the only place the store keeps it
// (web.ExecutionID); e.At is the card's observation time.
func (s *Sink) Record(e sink.Event) {
	if s == nil || s.writer == nil {
		return
	}
	f := FrameOf(e.Event)
	s.mu.Lock()
	s.noteParents(e.Event)
	frames := s.referenceFrames(e.Event, f)
	if f != nil {
		frames = append(frames, f)
	}
	for _, f := range frames {
		f.TurnID = s.turnOf(f.TaskSessionID)
	}
	call, isCall := toolCallOf(e)
	if isCall {
		call.TurnID = s.turnOf(call.SessionID)
		isCall = s.newToolCallFact(call)
	}
	s.mu.Unlock()
	if isCall {
		s.writer.RecordToolCall(call)
	}
	for _, f := range frames {
		f.ExecutionID = web.ExecutionID(e.Dialect, s.runID)
		if !e.At.IsZero() {
			f.ObservedAt = e.At
		}
		s.writer.Record(f)
	}
}

// referenceFrames notes ev's references to child sessions and returns a
// frame carrying only the new list for each referenced child whose card
// this run already stored; it gives card f (ev's own, nil when ev is no
// card) the references its child session has. Called with mu held.
func (s *Sink) referenceFrames(ev adapter.Event, f *persistence.Frame) []*persistence.Frame {
	if s.referrers == nil {
		s.referrers, s.launched = map[string][]string{}, map[string]cardKey{}
	}
	var out []*persistence.Frame
	for _, r := range ev.SessionRefs {
		list := s.referrers[r.SessionID]
		if !r.Known || ev.ToolCallID == "" || slices.Contains(list, ev.ToolCallID) || len(list) >= persistence.MaxReferences {
			continue
		}
		list = append(list, ev.ToolCallID)
		s.referrers[r.SessionID] = list
		if k, ok := s.launched[r.SessionID]; ok && (f == nil || k != (cardKey{f.TaskSessionID, f.ToolCallID})) {
			out = append(out, &persistence.Frame{TaskSessionID: k.session, TaskID: k.session, ToolCallID: k.call,
				Facts: &persistence.CardFacts{ReferencedBy: slices.Clone(list)}})
		}
	}
	if f != nil && ev.Child != nil && ev.Child.SessionID != "" {
		child := ev.Child.SessionID
		s.launched[child] = cardKey{f.TaskSessionID, f.ToolCallID}
		if list := s.referrers[child]; len(list) > 0 {
			if f.Facts == nil {
				f.Facts = &persistence.CardFacts{}
			}
			f.Facts.ReferencedBy = slices.Clone(list)
		}
	}
	return out
}

// maxSessions bounds the sessions whose turns and parents a Sink keeps;
// beyond it they are forgotten, and a forgotten session's next frame
// starts a turn of its own.
const maxSessions = 4096

// noteParents remembers the parent of each child session ev names: the
// session of a child's card, or the parent of a card in a child session.
// Called with mu held.
func (s *Sink) noteParents(ev adapter.Event) {
	note := func(child, parent string) {
		if child == "" || parent == "" || child == parent || s.parents[child] == parent {
			return
		}
		if len(s.parents) >= maxSessions {
			clear(s.parents)
		}
		s.parents[child] = parent
	}
	if ev.Child != nil {
		note(ev.Child.SessionID, ev.SessionID)
	}
	note(ev.SessionID, ev.ParentSessionID)
}

// topOf is the session whose prompts session's frames belong to: the
// session itself, or for a child session the session that launched it
// (up its chain, which a cycle cannot make endless). Called with mu held.
func (s *Sink) topOf(session string) string {
	for range maxSessions {
		p, ok := s.parents[session]
		if !ok {
			break
		}
		session = p
	}
	return session
}

// turnOf is the current turn id of session's top session, a new one when
// it has none yet (frames before its first prompt: a load's history).
// Called with mu held.
func (s *Sink) turnOf(session string) string {
	top := s.topOf(session)
	turn, ok := s.turns[top]
	if !ok {
		if len(s.turns) >= maxSessions {
			clear(s.turns)
		}
		turn = "turn-" + RandomID()
		s.turns[top] = turn
	}
	return turn
}

// BeginTurn starts a new turn of sessionID: the frames of that session and
// of its child sessions that follow get a new turn id; other sessions keep
// theirs (the store keeps a card's first turn id, so a card that goes on
// from an earlier turn keeps that one).
func (s *Sink) BeginTurn(sessionID string) {
	if s == nil || s.writer == nil {
		return
	}
	s.mu.Lock()
	top := s.topOf(sessionID)
	if _, ok := s.turns[top]; !ok && len(s.turns) >= maxSessions {
		clear(s.turns)
	}
	s.turns[top] = "turn-" + RandomID()
	s.turnStart = time.Now()
	s.mu.Unlock()
}

// FlushTurn flushes the cards of the turn that just ended to the store:
// until the end of the turn's time (its start plus timeout and grace;
// timeout 0: no turn time of its own, as the tap's) or FlushWait,
// whichever is first; for a turn that was cancelled, only grace. A store
// that is down is retried that long; what it still lacks is counted
// (Accounting).
func (s *Sink) FlushTurn(timeout, grace time.Duration, cancelled bool) {
	if s == nil || s.writer == nil {
		return
	}
	s.mu.Lock()
	start := s.turnStart
	s.mu.Unlock()
	if start.IsZero() {
		start = time.Now()
	}
	wait := FlushWait
	if timeout > 0 {
		wait = min(wait, time.Until(start.Add(timeout+grace)))
	}
	if cancelled {
		wait = grace
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(wait, 0))
	defer cancel()
	_ = s.writer.Flush(ctx)
}

// MarkWait bounds one MarkIncomplete.
const MarkWait = 2 * time.Second

// MarkIncomplete stores that the session's observation is incomplete:
// unobserved lines of its connection went by without being observed
// (persistence.Store.MarkObservationIncomplete, within MarkWait). A nil
// sink, or a store without the gaps table, stores nothing.
func (s *Sink) MarkIncomplete(sessionID string, unobserved int64) error {
	if s == nil || s.store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), MarkWait)
	defer cancel()
	return s.store.MarkObservationIncomplete(ctx, sessionID, unobserved)
}

// Flush waits until every card recorded so far is stored or given up on,
// or ctx ends.
func (s *Sink) Flush(ctx context.Context) error {
	if s == nil || s.writer == nil {
		return nil
	}
	return s.writer.Flush(ctx)
}

// Accounting is what the writer stored and lost so far (zero for a nil
// sink).
func (s *Sink) Accounting() persistence.Accounting {
	if s == nil || s.writer == nil {
		return persistence.Accounting{}
	}
	return s.writer.Accounting()
}

// Close gives the writer CloseWait more for what is still queued, then
// closes it, and returns its final accounting: what it could not write is
// counted, and its journal key says whether it stored every card (until
// then the store holds the writer as unconfirmed, which health reports).
// The store stays open. Only the first call closes; later ones return the
// same accounting, and a card recorded after it is counted as not stored.
func (s *Sink) Close() persistence.Accounting {
	if s == nil || s.writer == nil {
		return persistence.Accounting{}
	}
	s.closed.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), CloseWait)
		defer cancel()
		s.final = s.writer.Close(ctx)
	})
	return s.final
}

// FrameOf maps an adapter event onto the persistence frame; nil for events
// that are not subagent cards. The ACP session id serves as both the task
// session and the task: acpscope has no task layer of its own.
func FrameOf(ev adapter.Event) *persistence.Frame {
	if ev.Payload == nil || ev.Payload.SubagentTask == nil || ev.ToolCallID == "" || ev.SessionID == "" {
		return nil
	}
	t := ev.Payload.SubagentTask
	f := &persistence.Frame{
		TaskSessionID:    ev.SessionID,
		TaskID:           ev.SessionID,
		ToolCallID:       ev.ToolCallID,
		ParentToolCallID: ev.ParentToolCallID,
		ToolStatus:       string(ev.Status),
		Description:      t.Description,
		SubagentType:     t.SubagentType,
		Status:           t.Status,
		AgentID:          t.AgentID,
		Model:            t.Model,
		ChildSessionID:   t.ChildSessionID,
		DurationMs:       t.DurationMs,
		TotalTokens:      t.TotalTokens,
		IsAsync:          t.IsAsync,
		Prompt:           t.Prompt,
		ResultText:       t.ResultText,
		PromptBytes:      t.PromptBytes,
		ResultBytes:      t.ResultBytes,
		ObservedAt:       time.Now(),
	}
	if t.ToolUseCount != nil {
		n := *t.ToolUseCount
		f.ToolUseCount = &n
	}
	// A card in a child session: its parent card is that child session's
	// card (tool call id = the row's session), held in ParentSessionID.
	facts := persistence.CardFacts{ErrorMessage: t.ErrorMessage, EarlierResults: t.EarlierResults, ParentSessionID: ev.ParentSessionID}
	if !facts.IsZero() {
		f.Facts = &facts
	}
	return f
}

// RandomID is 16 random hex digits: a run's id, a turn's.
func RandomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
