package cursor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
)

// conn is a Tracker and its Cursor handler, collecting events.
type conn struct {
	tracker *adapter.Tracker
	handler *cursor.Handler
	mu      sync.Mutex
	events  []adapter.Event
}

func newConn(t *testing.T, cfg adapter.Config) *conn {
	t.Helper()
	c := &conn{}
	cfg.OnEvent = func(e adapter.Event) {
		c.mu.Lock()
		c.events = append(c.events, e)
		c.mu.Unlock()
	}
	tr, err := adapter.NewTracker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.tracker, c.handler = tr, cursor.NewHandler(tr)
	return c
}

// cursorConn is a Cursor connection with session s1 mid-turn.
func cursorConn(t *testing.T) *conn {
	t.Helper()
	c := newConn(t, adapter.Config{})
	c.tracker.Initialize(nil, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "cursor-agent"}})
	c.tracker.SessionStarted("s1")
	c.tracker.PromptStarted("s1")
	return c
}

func (c *conn) update(t *testing.T, sid, raw string) {
	t.Helper()
	var n acp.SessionNotification
	if err := json.Unmarshal([]byte(`{"sessionId":"`+sid+`","update":`+raw+`}`), &n); err != nil {
		t.Fatalf("bad test frame %s: %v", raw, err)
	}
	c.tracker.SessionUpdate(n)
}

func (c *conn) task(t *testing.T, params string) (any, error) {
	t.Helper()
	return c.handler.HandleExtensionMethod(context.Background(), cursor.MethodTask, json.RawMessage(params))
}

func (c *conn) snapshot() []adapter.Event {
	c.tracker.Flush() // cursor/task answers before its events are delivered
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]adapter.Event(nil), c.events...)
}

const (
	frameToolCall   = `{"sessionUpdate":"tool_call","toolCallId":"tc","title":"Task: Subagent task","kind":"other","rawInput":{"_toolName":"task"}}`
	frameUpdate     = `{"sessionUpdate":"tool_call_update","toolCallId":"tc","status":"in_progress"}`
	frameCompletion = `{"sessionUpdate":"tool_call_update","toolCallId":"tc","status":"completed","rawOutput":{"durationMs":41235,"isBackground":true}}`
	paramsFull      = `{"agentId":"ag","description":"desc","durationMs":812,"model":"composer-2.5-fast","prompt":"do it","subagentType":{"custom":{"unspecified":{}}},"toolCallId":"tc"}`
	finalPayload    = `{"kind":"subagent_task","subagent_task":{"description":"desc","prompt":"do it","subagent_type":"","agent_id":"ag","model":"composer-2.5-fast","duration_ms":41235,"is_async":true}}`
)

// permutations returns every ordering of n items.
func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// Every permutation of cursor/task, tool_call, an update and the
// completion gives one final payload, a terminal final status and no
// lowered tool status.
func TestCursorTaskEveryPermutation(t *testing.T) {
	steps := []func(t *testing.T, c *conn){
		func(t *testing.T, c *conn) {
			if res, err := c.task(t, paramsFull); err != nil || res != (struct{}{}) {
				t.Fatalf("cursor/task answered %v, %v", res, err)
			}
		},
		func(t *testing.T, c *conn) { c.update(t, "s1", frameToolCall) },
		func(t *testing.T, c *conn) { c.update(t, "s1", frameUpdate) },
		func(t *testing.T, c *conn) { c.update(t, "s1", frameCompletion) },
	}
	perms := permutations(len(steps))
	if len(perms) != 24 {
		t.Fatalf("%d permutations", len(perms))
	}
	for _, p := range perms {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			c := cursorConn(t)
			for _, i := range p {
				steps[i](t, c)
			}
			evs := c.snapshot()
			assertMonotonic(t, evs)
			last := evs[len(evs)-1]
			if last.Status != adapter.ToolStatusComplete {
				t.Errorf("final status %s", last.Status)
			}
			wantPayload(t, last, finalPayload)
		})
	}
}

// Request-path scheduling: cursor/task runs on its own goroutine (as the
// SDK runs requests) while the frames arrive in order.
func TestCursorTaskConcurrentRequestPath(t *testing.T) {
	for i := 0; i < 200; i++ {
		c := cursorConn(t)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.handler.HandleExtensionMethod(context.Background(), cursor.MethodTask, json.RawMessage(paramsFull))
		}()
		c.update(t, "s1", frameToolCall)
		c.update(t, "s1", frameUpdate)
		c.update(t, "s1", frameCompletion)
		wg.Wait()
		evs := c.snapshot()
		assertMonotonic(t, evs)
		wantPayload(t, evs[len(evs)-1], finalPayload)
	}
}

// A Cursor connection always gets an empty result from the handler,
// whatever the params.
func TestHandlerCursorAlwaysEmptyResult(t *testing.T) {
	c := cursorConn(t)
	for _, params := range []string{"", "null", "[]", `"x"`, "{}", "{", "\xff\xfe", `{"toolCallId":7}`,
		`{"toolCallId":"t","prompt":{"a":1}}`, paramsFull, paramsFull} {
		res, err := c.task(t, params)
		if err != nil || res != (struct{}{}) {
			t.Errorf("params %q: %v, %v", params, res, err)
		}
		if b, _ := json.Marshal(res); string(b) != "{}" {
			t.Errorf("result encodes as %s", b)
		}
	}
}

// The {} reply does not wait for event delivery (the agent blocks on it,
// the consumer must not be able to stall the agent). The consumer's callback blocks on the update cursor/task
// produces; the answer comes anyway, and the update is delivered once the
// callback is released.
func TestHandlerAnswersWithoutWaitingForTheCallback(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var got []adapter.Event
	tr, err := adapter.NewTracker(adapter.Config{OnEvent: func(e adapter.Event) {
		if e.Kind == adapter.EventToolUpdate {
			<-release
		}
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := cursor.NewHandler(tr)
	tr.Initialize(nil, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: "cursor-agent"}})
	tr.SessionStarted("s1")
	tr.PromptStarted("s1")
	var n acp.SessionNotification
	if err := json.Unmarshal([]byte(`{"sessionId":"s1","update":`+frameToolCall+`}`), &n); err != nil {
		t.Fatal(err)
	}
	tr.SessionUpdate(n) // the card: delivered at once

	answered := make(chan any, 1)
	go func() {
		res, _ := h.HandleExtensionMethod(context.Background(), cursor.MethodTask, json.RawMessage(paramsFull))
		answered <- res
	}()
	select {
	case res := <-answered:
		if res != (struct{}{}) {
			t.Fatalf("result %v, want {}", res)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("cursor/task waited for the event callback")
	}
	close(release)
	tr.Flush()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Kind != adapter.EventToolCall || got[1].Kind != adapter.EventToolUpdate {
		t.Fatalf("events %+v: want the card, then the enriched update", got)
	}
	if st := got[1].Payload.SubagentTask; st.Description != "desc" || st.Model != "composer-2.5-fast" {
		t.Fatalf("update does not carry the cursor/task metadata: %+v", st)
	}
}

// Scenarios 49 and 50 at the handler: other agents and other methods get
// exactly acp.NewMethodNotFound(method), and the Tracker is not touched.
func TestHandlerMethodNotFound(t *testing.T) {
	for _, agent := range []string{"opencode", "claude-code-acp", "codex-acp", "gemini", ""} {
		c := newConn(t, adapter.Config{})
		if agent != "" { // "" = no initialize yet: not known to be Cursor
			c.tracker.Initialize(nil, &acp.InitializeResponse{AgentInfo: &acp.Implementation{Name: agent}})
		}
		before := c.tracker.Counters()
		_, err := c.task(t, paramsFull)
		assertMethodNotFound(t, err, cursor.MethodTask)
		if c.handler.Accepts(cursor.MethodTask) {
			t.Errorf("%s: Accepts(cursor/task)", agent)
		}
		if after := c.tracker.Counters(); fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("%s: counters changed %v -> %v", agent, before, after)
		}
		if c.handler.Rejected() != 1 {
			t.Errorf("%s: rejected %d", agent, c.handler.Rejected())
		}
		if len(c.snapshot()) != 0 {
			t.Errorf("%s: events emitted", agent)
		}
	}
	c := cursorConn(t)
	for _, m := range []string{"foo/bar", "_x", "cursor/other", "Cursor/task", "cursor/task ", ""} {
		_, err := c.handler.HandleExtensionMethod(context.Background(), m, json.RawMessage(paramsFull))
		assertMethodNotFound(t, err, m)
	}
	if !c.handler.Accepts(cursor.MethodTask) || c.handler.Rejected() != 0 {
		t.Error("Cursor connection does not accept cursor/task")
	}
}

func assertMethodNotFound(t *testing.T, err error, method string) {
	t.Helper()
	var re *acp.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("%q: want *acp.RequestError, got %v", method, err)
	}
	got, _ := json.Marshal(re)
	want, _ := json.Marshal(acp.NewMethodNotFound(method))
	if string(got) != string(want) {
		t.Errorf("%q: error %s, want %s", method, got, want)
	}
}

// A Cursor dialect chosen explicitly works without initialize, and its
// limits are configurable.
func TestExplicitDialectAndLimits(t *testing.T) {
	c := newConn(t, adapter.Config{Dialect: cursor.NewDialect(cursor.Options{Limits: cursor.Limits{MaxPending: 2}})})
	c.tracker.SessionStarted("s1")
	for i := 0; i < 5; i++ {
		if _, err := c.task(t, fmt.Sprintf(`{"toolCallId":"t%d","prompt":"p"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	st, ok := cursor.StatsOf(c.tracker)
	if !ok || st.PendingStored != 5 || st.PendingEvictedCount != 3 || st.Requests != 5 {
		t.Fatalf("stats %+v %v", st, ok)
	}
	c.tracker.SessionClosed("s1")
	st, _ = cursor.StatsOf(c.tracker)
	if st.PendingSwept != 2 {
		t.Fatalf("swept %d, want 2", st.PendingSwept)
	}
	if _, ok := cursor.StatsOf(newConn(t, adapter.Config{DialectName: adapter.DialectOpenCode}).tracker); ok {
		t.Error("StatsOf on an OpenCode connection")
	}
}

// Session load and reset clear the pending store like close does.
func TestLoadAndResetClearPending(t *testing.T) {
	for name, clear := range map[string]func(*adapter.Tracker){
		"load":       func(tr *adapter.Tracker) { tr.SessionLoaded("s1") },
		"new":        func(tr *adapter.Tracker) { tr.SessionStarted("s2") },
		"reset":      func(tr *adapter.Tracker) { tr.Reset() },
		"close":      func(tr *adapter.Tracker) { tr.SessionClosed("s1") },
		"prompt end": func(tr *adapter.Tracker) { tr.PromptEnded("s1") },
	} {
		t.Run(name, func(t *testing.T) {
			c := cursorConn(t)
			_, _ = c.task(t, paramsFull)
			clear(c.tracker)
			c.tracker.PromptStarted("s1")
			c.update(t, "s1", frameToolCall)
			wantPayload(t, c.snapshot()[0], emptyTask)
			if st, _ := cursor.StatsOf(c.tracker); st.PendingSwept != 1 {
				t.Errorf("swept %d", st.PendingSwept)
			}
		})
	}
}

// Nothing a cursor/task carries may panic out of the handler, and a
// matched card only ever gains the four Cursor fields.
func FuzzHandleTask(f *testing.F) {
	f.Add([]byte(paramsFull), true)
	f.Add([]byte(`{"toolCallId":"tc","description":42,"prompt":"ok","model":null}`), false)
	f.Add([]byte(`{"toolCallId":"tc","prompt":"\u0000\ud800"}`), true)
	f.Add([]byte(`null`), false)
	f.Fuzz(func(t *testing.T, params []byte, cardFirst bool) {
		c := cursorConn(t)
		if cardFirst {
			c.update(t, "s1", frameToolCall)
		}
		res, err := c.handler.HandleExtensionMethod(context.Background(), cursor.MethodTask, params)
		if err != nil || res != (struct{}{}) {
			t.Fatalf("answered %v, %v", res, err)
		}
		if !cardFirst {
			c.update(t, "s1", frameToolCall)
		}
		c.update(t, "s1", frameCompletion)
		if n := c.tracker.Counters()[adapter.CounterRecoveredPanics]; n != 0 {
			t.Fatalf("%d panics recovered", n)
		}
		evs := c.snapshot()
		assertMonotonic(t, evs)
		last := evs[len(evs)-1].Payload.SubagentTask
		if last.SubagentType != "" || last.DurationMs != 41235 || !last.IsAsync || last.Status != "" {
			t.Fatalf("cursor/task touched a field it does not own: %+v", last)
		}
		want, _ := cursor.ParseTaskParams(params)
		if want.ToolCallID == "tc" && (last.Prompt != want.Prompt || last.Model != want.Model ||
			last.Description != want.Description || last.AgentID != want.AgentID) {
			t.Fatalf("merged %+v, parsed %+v", last, want)
		}
	})
}

// Concurrent duplicate requests on one card: exactly one enrichment event,
// the first prompt to take the lock wins, nothing races.
func TestHandlerConcurrentDuplicates(t *testing.T) {
	c := cursorConn(t)
	c.update(t, "s1", frameToolCall)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				res, err := c.handler.HandleExtensionMethod(context.Background(), cursor.MethodTask,
					json.RawMessage(fmt.Sprintf(`{"toolCallId":"tc","prompt":"p%d-%d"}`, i, j)))
				if err != nil || res != (struct{}{}) {
					t.Errorf("answered %v, %v", res, err)
				}
			}
		}(i)
	}
	c.update(t, "s1", frameUpdate)
	wg.Wait()
	c.update(t, "s1", frameCompletion)
	evs := c.snapshot()
	if len(evs) != 4 {
		t.Fatalf("events %d, want tool_call, one enrichment, update, completion", len(evs))
	}
	assertMonotonic(t, evs)
	if st, _ := cursor.StatsOf(c.tracker); st.Applied != 1 || st.Unchanged != 399 {
		t.Errorf("stats %+v", st)
	}
}

// Oversized strings: kept verbatim up to their cap, and the byte budget
// evicts the oldest pending entries.
func TestOversizedStrings(t *testing.T) {
	c := cursorConn(t)
	big := strings.Repeat("x", cursor.MaxPromptBytes+1000)
	for i := 0; i < 40; i++ {
		_, _ = c.task(t, fmt.Sprintf(`{"toolCallId":"t%d","prompt":%q,"description":%q}`, i, big, "d"))
	}
	st, _ := cursor.StatsOf(c.tracker)
	resident := st.PendingStored - st.PendingEvictedBytes
	if st.Truncated != 40 || st.PendingEvictedBytes == 0 || resident*cursor.MaxPromptBytes > cursor.DefaultMaxPendingBytes+cursor.MaxPromptBytes {
		t.Fatalf("stats %+v", st)
	}
	c.update(t, "s1", strings.Replace(frameToolCall, `"tc"`, `"t39"`, 1))
	task := c.snapshot()[0].Payload.SubagentTask
	if len(task.Prompt) != cursor.MaxPromptBytes || task.Prompt != big[:cursor.MaxPromptBytes] || task.Description != "d" {
		t.Fatalf("prompt %d bytes, description %q", len(task.Prompt), task.Description)
	}
	c.update(t, "s1", strings.Replace(frameToolCall, `"tc"`, `"t0"`, 1))
	if p := c.snapshot()[1].Payload.SubagentTask.Prompt; p != "" {
		t.Fatal("the oldest entry survived the byte budget")
	}
}

// The age cap through the handler, with an injected clock.
func TestPendingAgeThroughHandler(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	d := cursor.NewDialect(cursor.Options{Limits: cursor.Limits{MaxPendingAge: time.Minute}, Now: func() time.Time { return now }})
	c := newConn(t, adapter.Config{Dialect: d})
	c.tracker.SessionStarted("s1")
	c.tracker.PromptStarted("s1")
	_, _ = c.task(t, paramsFull)
	now = now.Add(2 * time.Minute)
	c.update(t, "s1", frameToolCall)
	wantPayload(t, c.snapshot()[0], emptyTask)
	if st, _ := cursor.StatsOf(c.tracker); st.PendingEvictedAge != 1 || st.PendingMatched != 0 {
		t.Fatalf("stats %+v", st)
	}
}
