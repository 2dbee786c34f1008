package adapter_test

import (
	"fmt"
	"slices"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// sessionTracker is a Tracker of the generic dialect whose client declared
// clientCapabilities.subagents and opened session s1: the subagent-session
// form is the core's, the same for every dialect.
func sessionTracker(t *testing.T, dialect string) (*adapter.Tracker, *collector) {
	t.Helper()
	tr, c := newTracker(t, adapter.Config{DialectName: dialect})
	tr.Initialize(&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, nil)
	tr.SessionStarted("s1")
	return tr, c
}

// subagentUpdate feeds a subagent_update for child c1 in s1 with the given
// fields (a JSON object's members).
func subagentUpdate(t *testing.T, tr *adapter.Tracker, fields string) {
	t.Helper()
	tr.SessionUpdate(notif(t, `{"sessionId":"s1","update":{"sessionUpdate":"subagent_update","sessionId":"c1",`+fields+`}}`))
}

// childChunk feeds an agent_message_chunk in child c1's own session.
func childChunk(t *testing.T, tr *adapter.Tracker, messageID, text string) {
	t.Helper()
	id := ""
	if messageID != "" {
		id = fmt.Sprintf(`"messageId":%q,`, messageID)
	}
	tr.SessionUpdate(notif(t, fmt.Sprintf(`{"sessionId":"c1","update":{"sessionUpdate":"agent_message_chunk",%s"content":{"type":"text","text":%q}}}`, id, text)))
}

// cardEvents are the events of card c1.
func cardEvents(c *collector) []adapter.Event {
	var out []adapter.Event
	for _, e := range c.all() {
		if e.ToolCallID == "c1" {
			out = append(out, e)
		}
	}
	return out
}

func lastCard(t *testing.T, c *collector) adapter.Event {
	t.Helper()
	evs := cardEvents(c)
	if len(evs) == 0 {
		t.Fatal("no event for c1")
	}
	return evs[len(evs)-1]
}

// unknown is its own state: a child the agent no longer tracks is neither
// running nor finished nor failed, and its cancel grant goes with the
// update that revokes it. For every dialect.
func TestUnknownStateIsItsOwnStatus(t *testing.T) {
	for _, dialect := range []string{adapter.DialectGeneric, adapter.DialectCodex, adapter.DialectCopilot} {
		t.Run(dialect, func(t *testing.T) {
			tr, c := sessionTracker(t, dialect)
			subagentUpdate(t, tr, `"title":"Review","capabilities":{"cancel":{}},"state":{"state":"running"}`)
			subagentUpdate(t, tr, `"state":{"state":"unknown"},"capabilities":null`)
			e := lastCard(t, c)
			if e.Status != adapter.ToolStatusUnknown || e.Status.Terminal() {
				t.Errorf("tool status %q, want unknown (not terminal)", e.Status)
			}
			if e.Child.Live || e.Child.CanCancel || e.Payload.SubagentTask.Live || tr.CanCancelChild("c1") {
				t.Errorf("unknown child shown live or cancellable: %+v", e.Child)
			}
			if e.Payload.SubagentTask.Status != "unknown" {
				t.Errorf("payload status %q", e.Payload.SubagentTask.Status)
			}
			// Tracked again: it runs (live) and may finish.
			subagentUpdate(t, tr, `"state":{"state":"running"}`)
			if e := lastCard(t, c); e.Status != adapter.ToolStatusInProgress || !e.Child.Live {
				t.Errorf("running after unknown: %s live %v", e.Status, e.Child.Live)
			}
		})
	}
}

// An idle child whose stop reason is missing (Claude 0.101.0 at /clear
// and at the end of its stream: the work ended, the cause was not seen)
// or is none of end_turn, cancelled and error claims no outcome: it is
// not live and not running, so its tool status is unknown, never
// in_progress, and no cancel of the turn turns it cancelled. For every
// dialect; the stop reason, when there is one, stays in the child view.
func TestIdleWithoutAnOutcomeIsUnknown(t *testing.T) {
	for _, dialect := range []string{adapter.DialectGeneric, adapter.DialectClaude, adapter.DialectCodex} {
		for _, idle := range []string{`{"state":"idle"}`, `{"state":"idle","stopReason":"max_tokens"}`, `{"state":"idle","stopReason":"refusal"}`} {
			t.Run(dialect+"/"+idle, func(t *testing.T) {
				tr, c := sessionTracker(t, dialect)
				subagentUpdate(t, tr, `"title":"Review","capabilities":{"cancel":{}},"state":{"state":"running"}`)
				subagentUpdate(t, tr, `"state":`+idle)
				e := lastCard(t, c)
				if e.Status != adapter.ToolStatusUnknown || e.Child.Live || e.Payload.SubagentTask.Live {
					t.Errorf("tool status %q live %v, want unknown and not live", e.Status, e.Child.Live)
				}
				if e.Child.State != "idle" || e.Payload.SubagentTask.Status != "idle" {
					t.Errorf("child state %q payload status %q, want idle", e.Child.State, e.Payload.SubagentTask.Status)
				}
				// The answer that may still come settles it.
				subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"end_turn"}`)
				if e := lastCard(t, c); e.Status != adapter.ToolStatusComplete {
					t.Errorf("end_turn after an idle without outcome: %s, want complete", e.Status)
				}
			})
		}
	}
}

// An idle child stopped by an error carries the error object's message as
// the failure's reason (payload, child view) and ends error.
func TestFailureCarriesItsReason(t *testing.T) {
	tr, c := sessionTracker(t, adapter.DialectGeneric)
	subagentUpdate(t, tr, `"title":"Fetch","state":{"state":"running"}`)
	subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"error","error":{"code":-32603,"message":"Agent terminated early due to an API error: 400"}}`)
	e := lastCard(t, c)
	const reason = "Agent terminated early due to an API error: 400"
	if e.Status != adapter.ToolStatusError || e.Payload.SubagentTask.ErrorMessage != reason ||
		e.Child.ErrorMessage != reason || e.Child.ErrorCode != -32603 {
		t.Errorf("status %s payload %+v child %+v", e.Status, e.Payload.SubagentTask, e.Child)
	}
	// A later idle without an error keeps what was learned.
	subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"end_turn"}`)
	if got := lastCard(t, c).Payload.SubagentTask.ErrorMessage; got != reason {
		t.Errorf("error message unset to %q", got)
	}
}

// A finished child that runs again (a follow-up message) is live again,
// and each of its answers is kept: the latest as the result, the earlier
// ones in earlier_results. With and without message ids.
func TestChildRunningAgainIsLiveAndKeepsEveryAnswer(t *testing.T) {
	for _, ids := range []bool{true, false} {
		t.Run(fmt.Sprint("message_ids=", ids), func(t *testing.T) {
			id := func(s string) string {
				if ids {
					return s
				}
				return ""
			}
			tr, c := sessionTracker(t, adapter.DialectGeneric)
			subagentUpdate(t, tr, `"title":"Review","state":{"state":"running"}`)
			childChunk(t, tr, id("m1"), "first ")
			childChunk(t, tr, id("m1"), "answer")
			subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"end_turn"}`)
			if e := lastCard(t, c); e.Payload.SubagentTask.ResultText != "first answer" || e.Status != adapter.ToolStatusComplete {
				t.Fatalf("first run: %s %+v", e.Status, e.Payload.SubagentTask)
			}
			subagentUpdate(t, tr, `"state":{"state":"running"}`)
			e := lastCard(t, c)
			if !e.Child.Live || !e.Payload.SubagentTask.Live {
				t.Errorf("running again not live: %+v", e.Child)
			}
			childChunk(t, tr, id("m2"), "second answer")
			subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"end_turn"}`)
			task := lastCard(t, c).Payload.SubagentTask
			if task.ResultText != "second answer" || !slices.Equal(task.EarlierResults, []string{"first answer"}) || task.Live {
				t.Errorf("after the follow-up: result %q earlier %q live %v", task.ResultText, task.EarlierResults, task.Live)
			}
		})
	}
}

// Earlier answers are bounded: the oldest beyond MaxEarlierResults is
// dropped and counted.
func TestEarlierResultsAreBounded(t *testing.T) {
	tr, c := sessionTracker(t, adapter.DialectGeneric)
	subagentUpdate(t, tr, `"title":"Review"`)
	for i := range adapter.MaxEarlierResults + 3 {
		subagentUpdate(t, tr, `"state":{"state":"running"}`)
		childChunk(t, tr, fmt.Sprint("m", i), fmt.Sprint("answer ", i))
		subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"end_turn"}`)
	}
	task := lastCard(t, c).Payload.SubagentTask
	if len(task.EarlierResults) != adapter.MaxEarlierResults || task.EarlierResults[0] != "answer 2" {
		t.Errorf("earlier results %d, first %q", len(task.EarlierResults), task.EarlierResults[0])
	}
	if got := tr.Counters()[adapter.CounterEarlierResultsDropped]; got != 2 {
		t.Errorf("dropped %d, want 2", got)
	}
}

// History replayed by session/load (or resume) on the same connection
// never moves a status backwards, never unsets a learned fact, never
// appends a replayed answer again, and never makes a finished child
// cancellable, even when the agent grants cancel after the load.
func TestReplayedHistoryNeverMovesBackwards(t *testing.T) {
	tr, c := sessionTracker(t, adapter.DialectClaude)
	subagentUpdate(t, tr, `"title":"Inspect","description":"general-purpose","capabilities":{"cancel":{}},"state":{"state":"running"}`)
	// The background launch receipt: the child runs detached.
	tr.SessionUpdate(notif(t, `{"sessionId":"s1","update":{"sessionUpdate":"session_message","messageId":"r1","senderSessionId":"c1","recipientSessionId":"s1","content":[{"type":"text","text":"Async agent launched successfully. agentId: c1"}]}}`))
	childChunk(t, tr, "m1", "the answer")
	subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"end_turn"},"capabilities":{"cancel":null}`)
	before := lastCard(t, c)
	if !before.Payload.SubagentTask.IsAsync || before.Status != adapter.ToolStatusComplete {
		t.Fatalf("live run: %s %+v", before.Status, before.Payload.SubagentTask)
	}
	mark := len(cardEvents(c))

	tr.SessionLoaded("s1")
	subagentUpdate(t, tr, `"title":"Inspect","description":"general-purpose","capabilities":{"cancel":{}},"state":{"state":"running"}`)
	childChunk(t, tr, "m1", "the answer")
	subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"end_turn"}`)
	tr.SessionLoadFinished("s1", true)
	subagentUpdate(t, tr, `"capabilities":{"cancel":{}}`)

	for _, e := range cardEvents(c)[mark:] {
		task := e.Payload.SubagentTask
		if e.Status != adapter.ToolStatusComplete || task.Status != "idle" || task.Live || e.Child.Live {
			t.Errorf("replay moved the card: %s status %q live %v", e.Status, task.Status, e.Child.Live)
		}
		if !task.IsAsync || e.Payload.BackgroundWork == nil || !e.Payload.BackgroundWork.Detached {
			t.Errorf("replay unset is_async/detached: %+v", task)
		}
		if task.ResultText != "the answer" || len(task.EarlierResults) != 0 {
			t.Errorf("replay changed the result: %q earlier %q", task.ResultText, task.EarlierResults)
		}
		if e.Child.CanCancel {
			t.Error("a finished child became cancellable")
		}
	}
	if tr.CanCancelChild("c1") {
		t.Error("CanCancelChild true for a finished child after the load")
	}
	if got := tr.Counters()[adapter.CounterReplayedChunksIgnored]; got != 1 {
		t.Errorf("replayed chunks ignored %d, want 1", got)
	}
}

// A session loaded by a new agent process (a fresh connection) replays
// its child as one finished card.
func TestLoadInANewProcessIsOneFinishedCard(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{DialectName: adapter.DialectClaude})
	tr.Initialize(&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, nil)
	tr.SessionLoaded("s1")
	subagentUpdate(t, tr, `"title":"Inspect","capabilities":{"cancel":{}},"state":{"state":"running"}`)
	childChunk(t, tr, "m1", "the answer")
	subagentUpdate(t, tr, `"state":{"state":"idle","stopReason":"end_turn"}`)
	tr.SessionLoadFinished("s1", true)
	e := lastCard(t, c)
	if e.Status != adapter.ToolStatusComplete || e.Payload.SubagentTask.ResultText != "the answer" || e.Child.Live || e.Child.CanCancel {
		t.Errorf("replayed card %s %+v %+v", e.Status, e.Payload.SubagentTask, e.Child)
	}
	for _, e := range cardEvents(c) {
		if e.Child.Live || e.Child.CanCancel {
			t.Errorf("a replayed child was shown live or cancellable: %+v", e.Child)
		}
	}
}

// Updates for a session the client never opened and the agent never
// announced as a child are counted and never a card; an announced child's
// (and a nested child's) are tracked (issue 26 point 4).
func TestForeignSessionIsNeverACard(t *testing.T) {
	tr, c := sessionTracker(t, adapter.DialectGeneric)
	tr.SessionUpdate(toolCall(t, "ghost", "t1", "task"))
	tr.SessionUpdate(notif(t, `{"sessionId":"ghost","update":{"sessionUpdate":"subagent_update","sessionId":"g1","state":{"state":"running"}}}`))
	if n := len(c.all()); n != 0 {
		t.Fatalf("%d events for a foreign session", n)
	}
	if got := tr.Counters()[adapter.CounterForeignSessionUpdates]; got != 2 {
		t.Errorf("foreign_session_updates %d, want 2", got)
	}
	subagentUpdate(t, tr, `"title":"Child","state":{"state":"running"}`)
	tr.SessionUpdate(toolCall(t, "c1", "t2", "Read"))
	tr.SessionUpdate(notif(t, `{"sessionId":"c1","update":{"sessionUpdate":"subagent_update","sessionId":"c2","title":"Grandchild","state":{"state":"running"}}}`))
	tr.SessionUpdate(toolCall(t, "c2", "t3", "Read"))
	seen := map[string]string{}
	for _, e := range c.all() {
		seen[e.ToolCallID] = e.SessionID
	}
	if seen["c1"] != "s1" || seen["t2"] != "c1" || seen["c2"] != "c1" || seen["t3"] != "c2" {
		t.Errorf("announced children's traffic: %v", seen)
	}
	if got := tr.Counters()[adapter.CounterForeignSessionUpdates]; got != 2 {
		t.Errorf("foreign_session_updates %d after the children, want 2", got)
	}
}

// A consumer that reports no session it opened has every session tracked,
// as before.
func TestNoOpenedSessionsTracksEverySession(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{DialectName: adapter.DialectGeneric})
	tr.SessionUpdate(toolCall(t, "any", "t1", "task"))
	if len(c.all()) != 1 {
		t.Errorf("events %d, want 1", len(c.all()))
	}
}

// A card inside a child session knows the child's parent session, so a
// consumer can name its parent card (the child session's own card).
func TestNestedChildNamesItsParentSession(t *testing.T) {
	tr, c := sessionTracker(t, adapter.DialectGeneric)
	subagentUpdate(t, tr, `"title":"Child","state":{"state":"running"}`)
	tr.SessionUpdate(notif(t, `{"sessionId":"c1","update":{"sessionUpdate":"subagent_update","sessionId":"c2","title":"Grandchild","state":{"state":"running"}}}`))
	var got adapter.Event
	for _, e := range c.all() {
		if e.ToolCallID == "c2" {
			got = e
		}
	}
	if got.SessionID != "c1" || got.ParentSessionID != "s1" || got.Child.ParentSessionID != "c1" {
		t.Errorf("grandchild card: session %q parent session %q child %+v", got.SessionID, got.ParentSessionID, got.Child)
	}
}

// Codex names a child session <root>:subagent:<thread>: the agent id is
// the thread, and a v1 child's description is its prompt.
func TestCodexChildSessionIDs(t *testing.T) {
	tr, c := sessionTracker(t, adapter.DialectCodex)
	tr.SessionUpdate(notif(t, `{"sessionId":"s1","update":{"sessionUpdate":"subagent_update","sessionId":"s1:subagent:th-1","capabilities":{},"description":"Find the entry"}}`))
	e := c.all()[0]
	task := e.Payload.SubagentTask
	if task.AgentID != "th-1" || task.ChildSessionID != "s1:subagent:th-1" || task.Prompt != "Find the entry" || task.Description != "Find the entry" || task.SubagentType != "" {
		t.Errorf("codex child: %+v", task)
	}
}

// EndOpen ends the open cards of one session and its child sessions only:
// open cards take the status given, a live child is no longer live (a
// finished child run again keeps its outcome), a child the agent stopped
// tracking keeps unknown (no outcome invented), and the cards of another
// session, its running child included, are untouched. Each change is one
// event through OnEvent.
func TestEndOpenEndsOneSessionsFamily(t *testing.T) {
	tr, c := sessionTracker(t, adapter.DialectGeneric)
	tr.SessionStarted("s2")
	upd := func(parent, child, fields string) {
		tr.SessionUpdate(notif(t, `{"sessionId":"`+parent+`","update":{"sessionUpdate":"subagent_update","sessionId":"`+child+`",`+fields+`}}`))
	}
	upd("s1", "lost", `"state":{"state":"unknown"}`)
	upd("s1", "again", `"state":{"state":"idle","stopReason":"end_turn"}`)
	upd("s1", "again", `"state":{"state":"running"}`)
	upd("s1", "open", `"state":{"state":"running"}`)
	tr.SessionUpdate(toolCall(t, "open", "grandchild-tool", "Read")) // a tool call in s1's child session
	upd("s2", "other", `"state":{"state":"running"}`)
	tr.SessionUpdate(toolCall(t, "s2", "other-tool", "Grep"))
	before := len(c.all())
	if n := tr.EndOpen("s1", adapter.ToolStatusCancelled); n != 3 {
		t.Errorf("EndOpen changed %d cards, want 3 (again, open, its child's tool call)", n)
	}
	got := map[string]adapter.Event{}
	for _, e := range c.all()[before:] {
		got[e.ToolCallID] = e
	}
	if _, ok := got["lost"]; ok {
		t.Error("an unknown child was given an outcome")
	}
	if e := got["again"]; e.Status != adapter.ToolStatusComplete || e.Child.Live || e.Payload.SubagentTask.Live {
		t.Errorf("child run again: %s live %v, want complete, not live", e.Status, e.Child != nil && e.Child.Live)
	}
	if e := got["open"]; e.Status != adapter.ToolStatusCancelled || e.Child.Live || e.Child.CanCancel {
		t.Errorf("open child: %s live %v, want cancelled, not live", e.Status, e.Child.Live)
	}
	if e := got["grandchild-tool"]; e.Status != adapter.ToolStatusCancelled {
		t.Errorf("tool call in the child session: %q, want cancelled", e.Status)
	}
	for _, id := range []string{"other", "other-tool"} {
		if _, ok := got[id]; ok {
			t.Errorf("%s of the other session was changed", id)
		}
	}
	// Nothing is left open: a second call changes nothing, and the other
	// session's child still completes.
	if n := tr.EndOpen("s1", adapter.ToolStatusCancelled); n != 0 {
		t.Errorf("a second EndOpen changed %d cards", n)
	}
	upd("s2", "other", `"state":{"state":"idle","stopReason":"end_turn"}`)
	if e := c.all()[len(c.all())-1]; e.ToolCallID != "other" || e.Status != adapter.ToolStatusComplete {
		t.Errorf("the other session's child after it ended: %s %s, want complete", e.ToolCallID, e.Status)
	}
}

// EndOpen with unknown claims no outcome: open cards become unknown, and
// a status that is neither terminal nor unknown changes nothing.
func TestEndOpenUnknownClaimsNoOutcome(t *testing.T) {
	tr, c := sessionTracker(t, adapter.DialectGeneric)
	subagentUpdate(t, tr, `"title":"Review","state":{"state":"running"}`)
	if n := tr.EndOpen("s1", adapter.ToolStatusInProgress); n != 0 {
		t.Errorf("EndOpen(in_progress) changed %d cards", n)
	}
	if n := tr.EndOpen("s1", adapter.ToolStatusUnknown); n != 1 {
		t.Fatalf("EndOpen(unknown) changed %d cards, want 1", n)
	}
	if e := lastCard(t, c); e.Status != adapter.ToolStatusUnknown || e.Child.Live {
		t.Errorf("child: %s live %v, want unknown, not live", e.Status, e.Child.Live)
	}
}
