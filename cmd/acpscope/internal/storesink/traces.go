package storesink

import (
	"fmt"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// The store's trace facts (persistence.WithTraceFacts): what the live
// export sees beside the subagent cards, kept so that an export of the
// stored session (traces.Exporter.ExportStored) rebuilds its whole trace
// with the live ids. The Sink is a traces.TurnObserver: run, replay and
// the tap tell it what they tell the export. Turns are numbered per
// session as the export numbers them (one per TurnStarted, from 1).

var _ traces.TurnObserver = (*Sink)(nil)

// SetClock sets where turn and permission times come from (nil: the wall
// clock); a replay sets the capture's recorded times, which its events
// carry too.
func (s *Sink) SetClock(now func() time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.clock = now
	s.mu.Unlock()
}

// now is the clock's time, with mu held.
func (s *Sink) now() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// Initialized keeps the agent's agentInfo for the turns that follow.
func (s *Sink) Initialized(name, version string) {
	if s == nil || s.writer == nil {
		return
	}
	s.mu.Lock()
	s.agent.name, s.agent.version = name, version
	s.mu.Unlock()
}

// TurnStarted stores the session's next turn: its number, the agent, the
// dialect and the editor's traceparent (prompt text is not stored here).
// The turn's id is the session's current one (BeginTurn).
func (s *Sink) TurnStarted(sessionID, dialect, traceparent, _ string) {
	if s == nil || s.writer == nil {
		return
	}
	s.mu.Lock()
	if s.turnCount == nil || len(s.turnCount) >= maxSessions {
		s.turnCount, s.openTurn = map[string]int{}, map[string]string{}
	}
	s.turnCount[sessionID]++
	f := persistence.TurnFact{SessionID: sessionID, TurnID: s.turnOf(sessionID), Index: s.turnCount[sessionID],
		AgentName: s.agent.name, AgentVersion: s.agent.version, Dialect: dialect, Traceparent: traceparent, StartedAt: s.now()}
	s.openTurn[sessionID] = f.TurnID
	s.mu.Unlock()
	s.writer.RecordTurn(f)
}

// TurnEnded stores how the session's open turn ended: its stop reason,
// usage and, when failed, err as its error.
func (s *Sink) TurnEnded(sessionID, stop string, usage *traces.Usage, err error, failed bool) {
	if s == nil || s.writer == nil {
		return
	}
	s.mu.Lock()
	turn, ok := s.openTurn[sessionID]
	delete(s.openTurn, sessionID)
	at := s.now()
	s.mu.Unlock()
	if !ok {
		return
	}
	f := persistence.TurnFact{SessionID: sessionID, TurnID: turn, StopReason: stop, EndedAt: at}
	if failed && err != nil {
		f.Error = err.Error()
	}
	if usage != nil {
		f.Usage = &persistence.TurnUsage{InputTokens: int64(usage.InputTokens), OutputTokens: int64(usage.OutputTokens), TotalTokens: int64(usage.TotalTokens)}
		if usage.CachedReadTokens != nil {
			n := int64(*usage.CachedReadTokens)
			f.Usage.CachedReadTokens = &n
		}
	}
	s.writer.RecordTurn(f)
}

// PermissionAsked stores a permission request as an event of its tool
// call.
func (s *Sink) PermissionAsked(sessionID, toolCallID, title string, options []string) {
	s.permission(sessionID, toolCallID, traces.EventPermissionRequest, title, traces.JoinOptions(options))
}

// PermissionAnswered stores the answer to a permission request.
func (s *Sink) PermissionAnswered(sessionID, toolCallID, title, answer string) {
	s.permission(sessionID, toolCallID, traces.EventPermissionAnswer, title, answer)
}

func (s *Sink) permission(sessionID, toolCallID, name, title, detail string) {
	if s == nil || s.writer == nil {
		return
	}
	s.mu.Lock()
	s.eventSeq++
	f := persistence.ToolEventFact{SessionID: sessionID, ToolCallID: toolCallID, TurnID: s.turnOf(sessionID),
		EventID: fmt.Sprintf("%s-%012d", s.runID, s.eventSeq), Name: name, Title: title, Detail: detail, At: s.now()}
	s.mu.Unlock()
	s.writer.RecordToolEvent(f)
}

// maxCalls bounds the tool calls whose last fact a Sink remembers; past
// it they are forgotten, and the next event of each is queued again.
const maxCalls = 16384

// newToolCallFact reports whether f tells the store something new of its
// tool call: a value it did not have, or the settlement. The Writer
// merges what waits, but each event of a burst (a subagent's hundred
// progress updates) would still take its lock. Called with mu held.
func (s *Sink) newToolCallFact(f persistence.ToolCallFact) bool {
	k := cardKey{f.SessionID, f.ToolCallID}
	last, seen := s.calls[k]
	merged := last
	for _, p := range []struct {
		to *string
		v  string
	}{{&merged.ParentSessionID, f.ParentSessionID}, {&merged.ParentToolCallID, f.ParentToolCallID},
		{&merged.Title, f.Title}, {&merged.Kind, f.Kind}, {&merged.Status, f.Status}, {&merged.ChildState, f.ChildState}, {&merged.ChildStopReason, f.ChildStopReason}} {
		if p.v != "" {
			*p.to = p.v
		}
	}
	merged.Settled = last.Settled || f.Settled
	if seen && merged == last {
		return false
	}
	if s.calls == nil || len(s.calls) >= maxCalls {
		s.calls = map[cardKey]persistence.ToolCallFact{}
	}
	s.calls[k] = merged
	return true
}

// toolCallOf is the tool call fact of an event, as the export sees a tool
// call (every event of one, subagent or not); false for other events.
func toolCallOf(e sink.Event) (persistence.ToolCallFact, bool) {
	ev := e.Event
	if ev.Kind == adapter.EventSessionMessage || ev.ToolCallID == "" || ev.SessionID == "" {
		return persistence.ToolCallFact{}, false
	}
	f := persistence.ToolCallFact{
		SessionID: ev.SessionID, ToolCallID: ev.ToolCallID, ParentToolCallID: ev.ParentToolCallID,
		Title: ev.Title, Kind: ev.ToolKind, Status: string(ev.Status), SeenAt: e.At,
		Settled: ev.Status.Terminal() && (ev.Child == nil || !ev.Child.Live),
	}
	if ev.Child != nil {
		f.ChildState, f.ChildStopReason = ev.Child.State, ev.Child.StopReason
	}
	if ev.ParentSessionID != ev.SessionID {
		f.ParentSessionID = ev.ParentSessionID
	}
	return f, true
}
