package adapter_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude"
)

// collector gathers events under a lock.
type collector struct {
	mu     sync.Mutex
	events []adapter.Event
}

func (c *collector) add(e adapter.Event) {
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
}

func (c *collector) all() []adapter.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]adapter.Event(nil), c.events...)
}

func newTracker(t *testing.T, cfg adapter.Config) (*adapter.Tracker, *collector) {
	t.Helper()
	c := &collector{}
	cfg.OnEvent = c.add
	tr, err := adapter.NewTracker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr, c
}

// notif decodes a session/update params object.
func notif(t testing.TB, js string) acp.SessionNotification {
	t.Helper()
	var n acp.SessionNotification
	if err := json.Unmarshal([]byte(js), &n); err != nil {
		t.Fatalf("decode %s: %v", js, err)
	}
	return n
}

func toolCall(t testing.TB, sid, id, title string) acp.SessionNotification {
	return notif(t, fmt.Sprintf(`{"sessionId":%q,"update":{"sessionUpdate":"tool_call","toolCallId":%q,"title":%q}}`, sid, id, title))
}

func toolUpdate(t testing.TB, sid, id, status string) acp.SessionNotification {
	return notif(t, fmt.Sprintf(`{"sessionId":%q,"update":{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q}}`, sid, id, status))
}

func TestDialectSelection(t *testing.T) {
	for agent, want := range map[string]string{
		"@agentclientprotocol/claude-agent-acp": "claude",
		"Cursor Agent":                          "cursor",
		"codex-acp":                             "codex",
		"opencode":                              "opencode",
		"auggie":                                "auggie",
		"GitHub Copilot":                        "copilot",
		"mock-agent":                            "claude",
		"gemini-cli":                            "gemini",
		"qwen-code":                             "qwen",
		"other-agent":                           "generic",
		"":                                      "generic",
	} {
		if got := adapter.DialectForAgent(agent); got != want {
			t.Errorf("DialectForAgent(%q) = %q, want %q", agent, got, want)
		}
	}
	if _, err := adapter.NewTracker(adapter.Config{DialectName: "nope"}); err == nil {
		t.Error("unregistered explicit dialect accepted")
	}
	// Explicit wins over agentInfo.
	tr, _ := newTracker(t, adapter.Config{DialectName: "codex"})
	tr.Initialize(nil, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "claude-agent-acp"}})
	if got := tr.Dialect(); got != "codex" {
		t.Errorf("explicit: %q", got)
	}
	// agentInfo, else generic.
	tr, _ = newTracker(t, adapter.Config{})
	tr.Initialize(&acp.InitializeRequest{}, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "claude-agent-acp"}})
	if got := tr.Dialect(); got != "claude" {
		t.Errorf("agentInfo: %q", got)
	}
	tr, _ = newTracker(t, adapter.Config{})
	tr.SessionUpdate(toolCall(t, "s1", "x", "task"))
	if got := tr.Dialect(); got != "generic" {
		t.Errorf("no initialize: %q", got)
	}
}

func TestEventsAreDeepCopies(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{DialectName: "claude"})
	tr.SessionUpdate(notif(t, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"a","title":"Task","_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"totalToolUseCount":3}}}}}`))
	first := c.all()[0]
	*first.Payload.SubagentTask.ToolUseCount = 99
	first.Payload.SubagentTask.Description = "mutated"
	tr.SessionUpdate(notif(t, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"a","_meta":{"claudeCode":{"toolName":"Agent","toolResponse":{"totalToolUseCount":4}}}}}`))
	ev := c.all()
	if got := *ev[1].Payload.SubagentTask.ToolUseCount; got != 4 {
		t.Errorf("second event count %d", got)
	}
	if ev[1].Payload.SubagentTask.Description != "" {
		t.Error("mutation of an event leaked into the tracker")
	}
	if *ev[0].Payload.SubagentTask.ToolUseCount != 99 {
		t.Error("later merge changed an earlier event")
	}
}

func TestCompletedSetBoundAndSweep(t *testing.T) {
	tr, _ := newTracker(t, adapter.Config{MaxCompleted: 2})
	for _, id := range []string{"a", "b", "c"} {
		tr.SessionUpdate(toolCall(t, "s1", id, "task"))
		tr.SessionUpdate(toolUpdate(t, "s1", id, "completed"))
	}
	if got := tr.Counters()[adapter.CounterCompletedEvicted]; got != 1 {
		t.Errorf("completed_evicted = %d", got)
	}
	found := map[string]bool{}
	tr.Do(func(tx *adapter.Tx) {
		for _, id := range []string{"a", "b", "c"} {
			_, found[id] = tx.Card("s1", id)
		}
	})
	if found["a"] || !found["b"] || !found["c"] {
		t.Errorf("after eviction: %v", found)
	}
	tr.PromptEnded("s1")
	tr.Do(func(tx *adapter.Tx) {
		if _, ok := tx.FindCard("b"); ok {
			t.Error("completed card survived the prompt-end sweep")
		}
	})
}

func TestActiveAndSessionBounds(t *testing.T) {
	tr, _ := newTracker(t, adapter.Config{MaxActive: 3, MaxSessions: 2})
	for i := range 10 {
		tr.SessionUpdate(toolCall(t, "s1", fmt.Sprint(i), "Read"))
	}
	if got := tr.Counters()[adapter.CounterActiveEvicted]; got != 7 {
		t.Errorf("active_evicted = %d", got)
	}
	tr.SessionUpdate(toolCall(t, "s2", "x", "Read"))
	tr.SessionUpdate(toolCall(t, "s3", "x", "Read"))
	if got := tr.Counters()[adapter.CounterSessionsEvicted]; got != 1 {
		t.Errorf("sessions_evicted = %d", got)
	}
}

func TestLifecycleClearsOnlyThatSessionAndItsChildren(t *testing.T) {
	tr, _ := newTracker(t, adapter.Config{})
	for _, sid := range []string{"p", "child", "other"} {
		tr.SessionUpdate(toolCall(t, sid, "t", "Read"))
	}
	tr.Do(func(tx *adapter.Tx) { tx.SetParentSession("child", "p") })
	tr.SessionClosed("p")
	tr.Do(func(tx *adapter.Tx) {
		_, p := tx.Card("p", "t")
		_, ch := tx.Card("child", "t")
		_, o := tx.Card("other", "t")
		if p || ch || !o {
			t.Errorf("after close: parent %v child %v other %v", p, ch, o)
		}
	})
	tr.Reset()
	tr.Do(func(tx *adapter.Tx) {
		if _, ok := tx.FindCard("t"); ok {
			t.Error("Reset kept a card")
		}
	})
}

// A late enrichment through Tx (what the Cursor dialect does for a
// cursor/task after completion) emits one update with the terminal status.
func TestLateEnrichmentThroughTx(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{})
	tr.PromptStarted("s1")
	tr.SessionUpdate(notif(t, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Task: Subagent task","rawInput":{"_toolName":"task"}}}`))
	tr.SessionUpdate(toolUpdate(t, "s1", "t1", "completed"))
	tr.Do(func(tx *adapter.Tx) {
		card, ok := tx.FindCard("t1")
		if !ok || !card.IsSubagent() {
			t.Fatal("completed card not found")
		}
		if adapter.FillString(&card.Task().Description, "late") {
			tx.Emit(adapter.EventToolUpdate, card)
		}
	})
	ev := c.all()
	if len(ev) != 3 || ev[2].Status != adapter.ToolStatusComplete || ev[2].Payload.SubagentTask.Description != "late" || ev[2].Title != "Task: Subagent task" {
		t.Fatalf("late enrichment events: %+v", ev)
	}
}

func TestCallbackMayReenterAndPanicsAreContained(t *testing.T) {
	var tr *adapter.Tracker
	n := 0
	tr, _ = adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		n++
		_ = tr.Counters()
		if e.ToolCallID == "a" && e.Kind == adapter.EventToolCall {
			tr.SessionUpdate(toolCall(t, "s1", "b", "Read")) // re-entrant feed
		}
		if e.ToolCallID == "boom" {
			panic("consumer bug")
		}
	}})
	tr.SessionUpdate(toolCall(t, "s1", "a", "Read"))
	tr.SessionUpdate(toolCall(t, "s1", "boom", "Read"))
	tr.SessionUpdate(toolCall(t, "s1", "c", "Read"))
	if n != 4 {
		t.Errorf("delivered %d events, want 4", n)
	}
	if got := tr.Counters()[adapter.CounterCallbackPanics]; got != 1 {
		t.Errorf("callback_panics = %d", got)
	}
}

// Session updates and extension-style Do calls from many goroutines: every
// card's emitted statuses stay monotonic and delivery is serialised.
func TestConcurrentFeedersKeepOrder(t *testing.T) {
	var mu sync.Mutex
	inCallback := false
	rank := map[adapter.ToolStatus]int{"pending": 1, "in_progress": 2, "complete": 3, "error": 3}
	seen := map[string]int{}
	tr, _ := adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		mu.Lock()
		if inCallback {
			t.Error("callback entered twice at once")
		}
		inCallback = true
		mu.Unlock()
		if r := rank[e.Status]; r > 0 {
			if r < seen[e.ToolCallID] {
				t.Errorf("%s: status went back to %s", e.ToolCallID, e.Status)
			}
			seen[e.ToolCallID] = r
		}
		mu.Lock()
		inCallback = false
		mu.Unlock()
	}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				id := fmt.Sprintf("t%d-%d", g, i)
				tr.SessionUpdate(toolCall(t, "s1", id, "task"))
				tr.SessionUpdate(toolUpdate(t, "s1", id, "completed"))
				tr.SessionUpdate(toolUpdate(t, "s1", id, "in_progress"))
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				id := fmt.Sprintf("t%d-%d", g, i)
				tr.Do(func(tx *adapter.Tx) {
					if c, ok := tx.FindCard(id); ok && c.IsSubagent() {
						if adapter.FillString(&c.Task().Model, "m") {
							tx.Emit(adapter.EventToolUpdate, c)
						}
					}
				})
			}
		}()
	}
	wg.Wait()
}

// Oversized strings are cut at MaxFieldBytes, and the cards of a connection
// stay within the byte budget by dropping the oldest.
func TestFieldCapAndByteBudget(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{MaxBytes: 2<<20 + 1024})
	big := strings.Repeat("é", adapter.MaxFieldBytes/2+1000) // just over the cap, two-byte runes
	for i := range 4 {
		raw, _ := json.Marshal(map[string]any{"prompt": big})
		tr.SessionUpdate(notif(t, fmt.Sprintf(`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t%d","title":"task","rawInput":%s}}`, i, raw)))
	}
	ev := c.all()
	p := ev[0].Payload.SubagentTask.Prompt
	if len(p) > adapter.MaxFieldBytes || len(p) < adapter.MaxFieldBytes-1 || !utf8.ValidString(p) {
		t.Errorf("prompt kept %d bytes (valid UTF-8: %v)", len(p), utf8.ValidString(p))
	}
	cnt := tr.Counters()
	if cnt[adapter.CounterFieldsTruncated] != 4 || cnt[adapter.CounterBytesEvicted] != 2 {
		t.Errorf("counters %v", cnt)
	}
	held := 0
	tr.Do(func(tx *adapter.Tx) {
		for i := range 4 {
			if _, ok := tx.Card("s1", fmt.Sprintf("t%d", i)); ok {
				held++
			}
		}
	})
	if held != 2 {
		t.Errorf("%d cards held, want the newest 2", held)
	}
}

// Only clientCapabilities.subagents as an object opts in to the
// subagent-session form; its absence, null, and AIR `_meta` leave the
// legacy form.
func TestSubagentsDeclarationOptsIn(t *testing.T) {
	for caps, want := range map[string]bool{
		`{}`:                                 false,
		`{"subagents":null}`:                 false,
		`{"_meta":{"jetbrains":{"air":{}}}}`: false,
		`{"subagents":{}}`:                   true,
		`{"subagents":{"_meta":{"x":1}}}`:    true,
	} {
		var req acp.InitializeRequest
		if err := json.Unmarshal([]byte(`{"protocolVersion":1,"clientCapabilities":`+caps+`}`), &req); err != nil {
			t.Fatalf("%s: %v", caps, err)
		}
		tr, _ := newTracker(t, adapter.Config{})
		tr.Initialize(&req, nil)
		if got := tr.Connection().SubagentsDeclared; got != want {
			t.Errorf("%s: declared %v, want %v", caps, got, want)
		}
	}
}

// DoAsync changes state before it returns and delivers its events in order
// without waiting for the callback.
func TestDoAsyncDoesNotWaitForTheCallback(t *testing.T) {
	release := make(chan struct{})
	got := make(chan adapter.Event, 4)
	tr, _ := adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		<-release
		got <- e
	}})
	var seq []string
	tr.DoAsync(func(tx *adapter.Tx) {
		c, _ := tx.NewCard("s1", "x")
		c.SetTitle("async")
		c.SetStatus(adapter.ToolStatusInProgress)
		tx.Emit(adapter.EventToolCall, c)
		seq = append(seq, "changed")
	})
	seq = append(seq, "returned") // reached while the callback is blocked
	close(release)
	tr.Do(func(tx *adapter.Tx) {
		if _, ok := tx.Card("s1", "x"); !ok {
			t.Error("state change not visible after DoAsync returned")
		}
	})
	if e := <-got; e.Title != "async" || len(seq) != 2 {
		t.Errorf("event %+v seq %v", e, seq)
	}
}

// TestCompletionBeforeRecognitionKeepsDuration pins that a completion
// arriving before the frame that recognises its card (out of order) still
// gives the subagent its duration, for every agent: the final payload does
// not depend on the order (issue 4 item 4).
func TestCompletionBeforeRecognitionKeepsDuration(t *testing.T) {
	completion := `{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"x","status":"completed","rawOutput":{"durationMs":4200}}}`
	call := `{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"x","title":"task","rawInput":{"description":"D"}}}`
	for _, order := range [][]string{{call, completion}, {completion, call}} {
		tr, c := newTracker(t, adapter.Config{DialectName: adapter.DialectOpenCode})
		for _, js := range order {
			tr.SessionUpdate(notif(t, js))
		}
		events := c.all()
		e := events[len(events)-1]
		if e.Payload == nil || e.Payload.SubagentTask.DurationMs != 4200 || e.Status != adapter.ToolStatusComplete {
			t.Fatalf("order %v: last event %+v", order[0][40:70], e)
		}
	}
}

// TestEvictedSessionTakesItsChildren pins that the session bound drops a
// session together with its child sessions, so no child stays attributed to
// a forgotten parent.
func TestEvictedSessionTakesItsChildren(t *testing.T) {
	tr, _ := newTracker(t, adapter.Config{DialectName: adapter.DialectClaude, MaxSessions: 3})
	tr.Initialize(&acp.InitializeRequest{ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, nil)
	tr.SessionStarted("p1")
	tr.SessionUpdate(notif(t, `{"sessionId":"p1","update":{"sessionUpdate":"subagent_update","sessionId":"c1","state":{"state":"running"}}}`))
	if tr.ParentSession("c1") != "p1" {
		t.Fatal("child not announced")
	}
	for _, sid := range []string{"s2", "s3"} {
		tr.SessionStarted(sid)
		tr.SessionUpdate(toolCall(t, sid, "x", "Read"))
	}
	if got := tr.ParentSession("c1"); got != "" {
		t.Fatalf("c1 still attributed to %q after p1 was evicted", got)
	}
	if got := tr.Counters()[adapter.CounterSessionsEvicted]; got != 2 {
		t.Fatalf("sessions_evicted = %d, want 2 (p1 and its child)", got)
	}
}

// A finished subagent card dropped at the end of its turn is remembered for
// history only: a load of its session starts the replayed card from it, a
// live turn that reuses the tool call id starts a new card, and a closed
// session's cards are forgotten.
func TestRememberedCardsServeOnlyALoad(t *testing.T) {
	tr, events := newTracker(t, adapter.Config{})
	first := func() adapter.ToolStatus {
		t.Helper()
		all := events.all()
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].Kind == adapter.EventToolCall && all[i].ToolCallID == "a" {
				return all[i].Status
			}
		}
		t.Fatal("no tool_call event for a")
		return ""
	}
	finish := func() {
		tr.SessionUpdate(toolUpdate(t, "s1", "a", "completed"))
		tr.PromptEnded("s1")
	}
	tr.SessionUpdate(toolCall(t, "s1", "a", "task"))
	finish()
	tr.SessionUpdate(toolCall(t, "s1", "a", "task")) // a later live turn
	if got := first(); got != adapter.ToolStatusInProgress {
		t.Fatalf("a live turn reusing the id starts at %q, want in_progress", got)
	}
	finish()
	tr.SessionLoaded("s1")
	tr.SessionUpdate(toolCall(t, "s1", "a", "task"))
	tr.SessionLoadFinished("s1", true)
	if got := first(); got != adapter.ToolStatusComplete {
		t.Fatalf("the replayed card starts at %q, want the remembered complete", got)
	}
	tr.PromptEnded("s1")
	tr.SessionClosed("s1")
	tr.SessionLoaded("s1")
	tr.SessionUpdate(toolCall(t, "s1", "a", "task"))
	if got := first(); got != adapter.ToolStatusInProgress {
		t.Fatalf("after the session closed the replayed card starts at %q, want in_progress", got)
	}
}

// The remembered cards are bounded: beyond DefaultMaxRemembered the oldest
// are forgotten, and their replay starts from nothing.
func TestRememberedCardsAreBounded(t *testing.T) {
	tr, events := newTracker(t, adapter.Config{})
	const extra = 10
	for i := range adapter.DefaultMaxRemembered + extra {
		id := fmt.Sprint("c", i)
		tr.SessionUpdate(toolCall(t, "s1", id, "task"))
		tr.SessionUpdate(toolUpdate(t, "s1", id, "completed"))
		tr.PromptEnded("s1")
	}
	if got := tr.Counters()[adapter.CounterRememberedEvicted]; got != extra {
		t.Fatalf("remembered_evicted = %d, want %d", got, extra)
	}
	tr.SessionLoaded("s1")
	oldest, newest := "c0", fmt.Sprint("c", adapter.DefaultMaxRemembered+extra-1)
	tr.SessionUpdate(toolCall(t, "s1", oldest, "task"))
	tr.SessionUpdate(toolCall(t, "s1", newest, "task"))
	all := events.all()
	if got := all[len(all)-2]; got.ToolCallID != oldest || got.Status != adapter.ToolStatusInProgress {
		t.Errorf("forgotten card replayed as %s %s, want %s in_progress", got.ToolCallID, got.Status, oldest)
	}
	if got := all[len(all)-1]; got.ToolCallID != newest || got.Status != adapter.ToolStatusComplete {
		t.Errorf("remembered card replayed as %s %s, want %s complete", got.ToolCallID, got.Status, newest)
	}
}
