package adapter_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// airInit is an initialize request declaring the JetBrains AIR extension
// with the given capabilities (the `_meta.jetbrains.air` object).
func airInit(t *testing.T, air string) *acp.InitializeRequest {
	t.Helper()
	var req acp.InitializeRequest
	js := `{"protocolVersion":1,"clientCapabilities":{"_meta":{"jetbrains":{"air":` + air + `}}}}`
	if err := json.Unmarshal([]byte(js), &req); err != nil {
		t.Fatal(err)
	}
	return &req
}

// airTracker is a Tracker of dialect whose client declared AIR with native
// subagent sessions and background subagents, and opened session s1.
func airTracker(t *testing.T, dialect string) (*adapter.Tracker, *collector) {
	t.Helper()
	tr, c := newTracker(t, adapter.Config{DialectName: dialect})
	tr.Initialize(airInit(t, `{"version":1,"capabilities":["nativeSubagentSessions","backgroundSubagents","asyncTasks"]}`), nil)
	tr.SessionStarted("s1")
	return tr, c
}

// air feeds one update (a JSON object's members) on session sid.
func air(t *testing.T, tr *adapter.Tracker, sid, members string) {
	t.Helper()
	tr.SessionUpdate(notif(t, `{"sessionId":"`+sid+`","update":{`+members+`}}`))
}

func spawned(t *testing.T, tr *adapter.Tracker, child, name, task, prompt string) {
	t.Helper()
	p := ""
	if prompt != "" {
		p = fmt.Sprintf(`,"prompt":%q`, prompt)
	}
	air(t, tr, "s1", fmt.Sprintf(`"sessionUpdate":"subagent_spawned","subagentSessionId":%q,"name":%q,"task":%q%s,"capabilities":{}`, child, name, task, p))
}

func settled(t *testing.T, tr *adapter.Tracker, child, state string) {
	t.Helper()
	air(t, tr, "s1", fmt.Sprintf(`"sessionUpdate":"subagent_state_update","subagentSessionId":%q,"state":%q`, child, state))
}

func chunkOn(t *testing.T, tr *adapter.Tracker, sid, messageID, text string) {
	t.Helper()
	air(t, tr, sid, fmt.Sprintf(`"sessionUpdate":"agent_message_chunk","messageId":%q,"content":{"type":"text","text":%q}`, messageID, text))
}

// The AIR declaration counts only as an object with an integer version of
// at least 1; a capability only when the array holds its exact name.
func TestAIRDeclaration(t *testing.T) {
	for air, want := range map[string][]string{
		`{"version":1,"capabilities":["nativeSubagentSessions","backgroundSubagents"]}`: {"backgroundSubagents", "nativeSubagentSessions"},
		`{"version":2,"capabilities":["asyncTasks",7,"NativeSubagentSessions"]}`:        {"NativeSubagentSessions", "asyncTasks"},
		`{"version":1}`: {},
		`{"version":0,"capabilities":["asyncTasks"]}`:   nil,
		`{"version":1.5,"capabilities":["asyncTasks"]}`: nil,
		`{"version":"1","capabilities":["asyncTasks"]}`: nil,
		`{"capabilities":["asyncTasks"]}`:               nil,
		`[]`:                                            nil,
		`null`:                                          nil,
	} {
		tr, _ := newTracker(t, adapter.Config{})
		tr.Initialize(airInit(t, air), nil)
		ci := tr.Connection()
		got := slices.Sorted(slices.Values(ci.AIRCapabilities))
		if ci.AIRDeclared != (want != nil) || !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("%s: declared %v %v, want %v", air, ci.AIRDeclared, got, want)
		}
	}
}

// Each AIR child is one card: name → description, prompt (else task) →
// prompt, the child session id; its own last message the result once it
// completed; each end state its tool status, disconnected the ACP
// unknown (neither live nor an outcome). For every dialect.
func TestAIRChildIsOneCard(t *testing.T) {
	for _, tc := range []struct {
		state      string
		status     adapter.ToolStatus
		withResult bool
	}{
		{"completed", adapter.ToolStatusComplete, true},
		{"failed", adapter.ToolStatusError, false},
		{"cancelled", adapter.ToolStatusCancelled, false},
		{"disconnected", adapter.ToolStatusUnknown, false},
		{"_vendor_paused", adapter.ToolStatusInProgress, false},
	} {
		for _, dialect := range []string{adapter.DialectGeneric, adapter.DialectCodex, "claude"} {
			t.Run(tc.state+"/"+dialect, func(t *testing.T) {
				tr, c := airTracker(t, dialect)
				spawned(t, tr, "c1", "Explore the repo", "Delegated task", "List the files")
				e := lastCard(t, c)
				task := e.Payload.SubagentTask
				if e.SessionID != "s1" || task.Description != "Explore the repo" || task.Prompt != "List the files" || task.ChildSessionID != "c1" {
					t.Fatalf("spawned card %+v %+v", e, task)
				}
				if e.Status != adapter.ToolStatusInProgress || !task.Live || e.Child == nil || !e.Child.Live {
					t.Errorf("a spawned child runs: %q live %v", e.Status, task.Live)
				}
				chunkOn(t, tr, "c1", "m1", "three files")
				settled(t, tr, "c1", tc.state)
				e = lastCard(t, c)
				task = e.Payload.SubagentTask
				if e.Status != tc.status {
					t.Errorf("tool status %q, want %q", e.Status, tc.status)
				}
				if task.Live || e.Child.Live || e.Child.CanCancel {
					t.Errorf("a settled child is not live: %+v", e.Child)
				}
				if task.Status != tc.state {
					t.Errorf("payload status %q, want the agent's word %q", task.Status, tc.state)
				}
				if got := task.ResultText == "three files"; got != tc.withResult {
					t.Errorf("result %q (want one: %v)", task.ResultText, tc.withResult)
				}
				n := 0
				for _, ev := range c.all() {
					if ev.Payload != nil {
						n++
						if ev.ToolCallID != "c1" {
							t.Errorf("a second card %q", ev.ToolCallID)
						}
					}
				}
				if n == 0 {
					t.Fatal("no card")
				}
			})
		}
	}
}

// Without a prompt, the task is the prompt; the child's tool calls are its
// nested cards (in its own session, under the parent), and a late chunk
// after completion still updates the result.
func TestAIRTaskIsThePromptAndChildToolsNest(t *testing.T) {
	tr, c := airTracker(t, adapter.DialectGeneric)
	spawned(t, tr, "c1", "Review", "Review the diff", "")
	air(t, tr, "c1", `"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read file","status":"in_progress"`)
	settled(t, tr, "c1", "completed")
	chunkOn(t, tr, "c1", "m1", "looks good")
	e := lastCard(t, c)
	if p := e.Payload.SubagentTask.Prompt; p != "Review the diff" {
		t.Errorf("prompt %q, want the task", p)
	}
	if r := e.Payload.SubagentTask.ResultText; r != "looks good" {
		t.Errorf("result %q", r)
	}
	var nested *adapter.Event
	for _, ev := range c.all() {
		if ev.ToolCallID == "t1" {
			nested = &ev
		}
	}
	if nested == nil || nested.SessionID != "c1" || nested.ParentSessionID != "s1" {
		t.Errorf("the child's tool call is not attributed to it: %+v", nested)
	}
	if tr.ParentSession("c1") != "s1" {
		t.Errorf("c1's parent %q: its permission requests would not be the child's", tr.ParentSession("c1"))
	}
}

// `<id>:generation:<n>` is the same child run again: one card, the new run
// live again, the earlier result kept, the first outcome kept as the tool
// status (it never moves back), the latest session id on the card.
func TestAIRGenerationIsTheSameCard(t *testing.T) {
	tr, c := airTracker(t, "claude")
	spawned(t, tr, "a1", "Explore", "find x", "find x")
	chunkOn(t, tr, "a1", "m1", "first answer")
	settled(t, tr, "a1", "completed")
	spawned(t, tr, "a1:generation:2", "Explore", "find x", "and y")
	e := lastCard2(t, c, "a1")
	if e.ToolCallID != "a1" || !e.Payload.SubagentTask.Live || e.Payload.SubagentTask.ChildSessionID != "a1:generation:2" {
		t.Fatalf("generation 2: %+v %+v", e, e.Payload.SubagentTask)
	}
	chunkOn(t, tr, "a1:generation:2", "m2", "second answer")
	settled(t, tr, "a1:generation:2", "completed")
	e = lastCard2(t, c, "a1")
	task := e.Payload.SubagentTask
	if task.ResultText != "second answer" || !slices.Equal(task.EarlierResults, []string{"first answer"}) {
		t.Errorf("results %q earlier %q", task.ResultText, task.EarlierResults)
	}
	if task.Prompt != "find x" || task.AgentID != "a1" || e.Status != adapter.ToolStatusComplete {
		t.Errorf("card %+v status %q", task, e.Status)
	}
	for _, ev := range c.all() {
		if ev.Payload != nil && ev.ToolCallID != "a1" {
			t.Errorf("a second card %q", ev.ToolCallID)
		}
	}
	// A restored child first seen as a generation is keyed by its task id.
	spawned(t, tr, "b7:generation:1760000000000", "Plan", "plan it", "")
	if e := lastCard2(t, c, "b7"); e.Payload.SubagentTask.ChildSessionID != "b7:generation:1760000000000" {
		t.Errorf("restored child %+v", e.Payload.SubagentTask)
	}
}

func lastCard2(t *testing.T, c *collector, id string) adapter.Event {
	t.Helper()
	var last *adapter.Event
	for _, e := range c.all() {
		if e.ToolCallID == id {
			last = &e
		}
	}
	if last == nil {
		t.Fatalf("no event for %s", id)
	}
	return *last
}

// A child that outlives its turn (backgroundSubagents): the card stays
// live across the prompt's end, its later updates are still its own, and
// it settles after the answer.
func TestAIRChildOutlivesItsTurn(t *testing.T) {
	tr, c := airTracker(t, "claude")
	tr.PromptStarted("s1")
	spawned(t, tr, "c1", "Background", "watch", "watch")
	tr.PromptEnded("s1")
	air(t, tr, "c1", `"sessionUpdate":"tool_call","toolCallId":"t9","title":"Bash","status":"in_progress"`)
	chunkOn(t, tr, "c1", "m1", "done watching")
	settled(t, tr, "c1", "completed")
	tr.Flush()
	e := lastCard(t, c)
	if e.Status != adapter.ToolStatusComplete || e.Payload.SubagentTask.ResultText != "done watching" {
		t.Errorf("after its turn: %q %q", e.Status, e.Payload.SubagentTask.ResultText)
	}
	if n := tr.Counters()[adapter.CounterForeignSessionUpdates]; n != 0 {
		t.Errorf("%d of the child's updates after the answer dropped as foreign", n)
	}
}

// Without the AIR declaration the AIR kinds are dropped and counted; the
// legacy tool call AIR gets without native sessions is recognised as
// before, marker or not.
func TestAIRUndeclaredAndLegacyMarker(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{DialectName: "claude"})
	tr.Initialize(&acp.InitializeRequest{}, nil)
	tr.SessionStarted("s1")
	spawned(t, tr, "c1", "x", "y", "")
	settled(t, tr, "c1", "completed")
	if n := tr.Counters()[adapter.CounterSubagentFramesOff]; n != 2 {
		t.Errorf("dropped %d, want 2", n)
	}
	if len(c.all()) != 0 {
		t.Errorf("events without the declaration: %+v", c.all())
	}
	tr2, c2 := newTracker(t, adapter.Config{DialectName: adapter.DialectGeneric})
	tr2.Initialize(airInit(t, `{"version":1,"capabilities":[]}`), nil)
	tr2.SessionStarted("s1")
	air(t, tr2, "s1", `"sessionUpdate":"tool_call","toolCallId":"toolu_1","title":"Explore","rawInput":{"description":"Explore","prompt":"look"},"_meta":{"claudeCode":{"toolName":"Agent"},"jetbrains":{"air":{"version":1,"subagent":true}}}`)
	air(t, tr2, "s1", `"sessionUpdate":"tool_call","toolCallId":"x2","title":"Delegate","_meta":{"jetbrains":{"air":{"version":1,"subagent":true}}}`)
	air(t, tr2, "s1", `"sessionUpdate":"tool_call","toolCallId":"x3","title":"Delegate","_meta":{"jetbrains":{"air":{"version":1,"subagent":"true"}}}`)
	got := map[string]bool{}
	for _, e := range c2.all() {
		got[e.ToolCallID] = e.Payload != nil
	}
	if !got["toolu_1"] || !got["x2"] || got["x3"] {
		t.Errorf("recognised %v, want toolu_1 and x2 (a JSON true marker)", got)
	}
}

// Bad AIR updates change nothing and are counted: no or a self-referencing
// child id, a state for a child never spawned, a non-string state.
func TestAIRBadUpdates(t *testing.T) {
	tr, c := airTracker(t, adapter.DialectGeneric)
	air(t, tr, "s1", `"sessionUpdate":"subagent_spawned","name":"x"`)
	air(t, tr, "s1", `"sessionUpdate":"subagent_spawned","subagentSessionId":"s1"`)
	air(t, tr, "s1", `"sessionUpdate":"subagent_spawned","subagentSessionId":7`)
	settled(t, tr, "ghost", "completed")
	spawned(t, tr, "c1", "n", "t", "")
	air(t, tr, "s1", `"sessionUpdate":"subagent_state_update","subagentSessionId":"c1","state":{"x":1}`)
	if n := tr.Counters()[adapter.CounterBadSubagentUpdate]; n != 5 {
		t.Errorf("bad updates %d, want 5", n)
	}
	if e := lastCard(t, c); e.Status != adapter.ToolStatusInProgress || !e.Payload.SubagentTask.Live {
		t.Errorf("a bad state moved the card: %q", e.Status)
	}
	for _, e := range c.all() {
		if e.ToolCallID != "c1" {
			t.Errorf("card %q from a bad update", e.ToolCallID)
		}
	}
}

// async_task_* is background work of the session, not a subagent: counted,
// never a card (docs/subagents.md#air).
func TestAIRAsyncTasksAreNoCards(t *testing.T) {
	tr, c := airTracker(t, "claude")
	air(t, tr, "s1", `"sessionUpdate":"async_task_spawned","asyncTaskId":"b1","name":"npm test","taskType":"shell","description":"run tests","showInTranscript":true,"canStop":true`)
	air(t, tr, "s1", `"sessionUpdate":"async_task_progress","asyncTaskId":"b1"`)
	air(t, tr, "s1", `"sessionUpdate":"async_task_state_update","asyncTaskId":"b1","state":"completed"`)
	if len(c.all()) != 0 {
		t.Errorf("async tasks made events: %+v", c.all())
	}
	if n := tr.Counters()[adapter.CounterAsyncTaskUpdates]; n != 3 {
		t.Errorf("async task updates %d, want 3", n)
	}
}

// Ten thousand AIR children on one connection stay within the tracker's
// bounds: at most MaxChildren children remembered, the card bytes within
// the budget, and the newest child still a card.
func TestAIRTenThousandChildrenStayBounded(t *testing.T) {
	tr, err := adapter.NewTracker(adapter.Config{DialectName: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	tr.Initialize(airInit(t, `{"version":1,"capabilities":["nativeSubagentSessions","backgroundSubagents"]}`), nil)
	tr.SessionStarted("s1")
	for i := range 10000 {
		id := fmt.Sprintf("agent-%05d", i)
		spawned(t, tr, id, "child", "a task for the child", "")
		chunkOn(t, tr, id, "m", "an answer of the child")
		air(t, tr, id, `"sessionUpdate":"tool_call","toolCallId":"t","title":"Read","status":"completed"`)
		if i%2 == 0 {
			settled(t, tr, id, "completed")
		}
	}
	cnt := tr.Counters()
	if n := cnt[adapter.CounterChildrenEvicted] + cnt[adapter.CounterSessionsEvicted]; n < 10000-adapter.MaxChildren {
		t.Errorf("evicted %d children, want at least %d", n, 10000-adapter.MaxChildren)
	}
	held, sessions := 0, 0
	tr.Do(func(tx *adapter.Tx) {
		for i := range 10000 {
			if _, ok := tx.Card("s1", fmt.Sprintf("agent-%05d", i)); ok {
				held++
			}
			if tx.ParentSession(fmt.Sprintf("agent-%05d", i)) != "" {
				sessions++
			}
		}
	})
	if held > adapter.MaxChildren || sessions > adapter.DefaultMaxSessions {
		t.Errorf("%d child cards and %d child sessions held, bounds %d and %d", held, sessions, adapter.MaxChildren, adapter.DefaultMaxSessions)
	}
	tr.Do(func(tx *adapter.Tx) {
		if _, ok := tx.Card("s1", "agent-09999"); !ok {
			t.Error("the newest child is not held")
		}
	})
}

// FuzzAIR feeds an arbitrary AIR declaration and session/update params to
// a Tracker of every dialect that read the declaration, as the parent's
// update, then a child's, twice, across a prompt end. Nothing may panic
// and every event must encode.
func FuzzAIR(f *testing.F) {
	f.Add([]byte(`{"version":1,"capabilities":["nativeSubagentSessions"]}`), []byte(`{"sessionId":"s1","update":{"sessionUpdate":"subagent_spawned","subagentSessionId":"c:generation:2","name":"n","task":"t","prompt":"p","capabilities":{"cancel":{}}}}`))
	f.Add([]byte(`{"version":1e0,"capabilities":"x"}`), []byte(`{"sessionId":"s1","update":{"sessionUpdate":"subagent_state_update","subagentSessionId":"c","state":"disconnected"}}`))
	f.Add([]byte(`{"version":1}`), []byte(`{"sessionId":"s1","update":{"sessionUpdate":"async_task_spawned","asyncTaskId":"b","taskType":"shell"}}`))
	f.Add([]byte(`{"version":1}`), []byte(`{"sessionId":"s1","update":{"sessionUpdate":"subagent_spawned","subagentSessionId":["c"],"name":{},"capabilities":[]}}`))
	f.Add([]byte(`{"version":1}`), []byte(`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"x","_meta":{"jetbrains":{"air":{"subagent":true}}}}}`))
	f.Fuzz(func(t *testing.T, decl, params []byte) {
		var req acp.InitializeRequest
		if json.Unmarshal([]byte(`{"protocolVersion":1,"clientCapabilities":{"_meta":{"jetbrains":{"air":`+string(decl)+`}}}}`), &req) != nil {
			req = acp.InitializeRequest{}
		}
		var n acp.SessionNotification
		if json.Unmarshal(params, &n) != nil {
			return
		}
		for _, name := range []string{"generic", "claude", "codex"} {
			tr, err := adapter.NewTracker(adapter.Config{DialectName: name, OnEvent: func(e adapter.Event) {
				if _, err := json.Marshal(e); err != nil {
					t.Fatalf("%s: event does not encode: %v", name, err)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			tr.Initialize(&req, nil)
			tr.SessionStarted("s1")
			feedThrice(t, tr, n, name+"+air", params)
			child := n
			child.SessionId = "c"
			feedThrice(t, tr, child, name+"+air child", params)
		}
	})
}

// An AIR client without native sessions gets claude-agent-acp 0.101.0's
// legacy tool calls marked _meta.jetbrains.air.subagent, whose
// toolResponse keeps only the status: the child's answer is the text
// content of the completing update (frames as recorded in
// conformance/agents/testdata/claude-0.101.0/air-nonnative.jsonl).
func TestAIRMarkedLegacyCallResultIsItsContent(t *testing.T) {
	tr, c := newTracker(t, adapter.Config{DialectName: "claude"})
	tr.Initialize(airInit(t, `{"version":1,"capabilities":["backgroundSubagents","asyncTasks"]}`), nil)
	tr.SessionStarted("s1")
	air(t, tr, "s1", `"_meta":{"claudeCode":{"toolName":"Agent"},"jetbrains":{"air":{"version":1,"subagent":true}}},"toolCallId":"toolu_launch_alpha","sessionUpdate":"tool_call","status":"pending","title":"Task","kind":"think","content":[]`)
	air(t, tr, "s1", `"toolCallId":"toolu_launch_alpha","sessionUpdate":"tool_call_update","rawInput":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","run_in_background":false,"subagent_type":"general-purpose"},"title":"Inspect alpha"`)
	air(t, tr, "s1", `"_meta":{"claudeCode":{"toolResponse":{"status":"completed"}}},"toolCallId":"toolu_launch_alpha","sessionUpdate":"tool_call_update"`)
	air(t, tr, "s1", `"toolCallId":"toolu_launch_alpha","sessionUpdate":"tool_call_update","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ANSWER-ALPHA"}}]`)
	e := lastCard2(t, c, "toolu_launch_alpha")
	if e.Status != adapter.ToolStatusComplete || e.Payload.SubagentTask.ResultText != "ANSWER-ALPHA" {
		t.Errorf("card %q %+v", e.Status, e.Payload.SubagentTask)
	}
	// Without the marker (plain legacy form) the content is not read.
	tr2, c2 := newTracker(t, adapter.Config{DialectName: "claude"})
	tr2.SessionStarted("s1")
	air(t, tr2, "s1", `"_meta":{"claudeCode":{"toolName":"Agent"}},"toolCallId":"x","sessionUpdate":"tool_call","status":"pending","title":"Task"`)
	air(t, tr2, "s1", `"toolCallId":"x","sessionUpdate":"tool_call_update","status":"completed","content":[{"type":"content","content":{"type":"text","text":"raw output"}}]`)
	if r := lastCard2(t, c2, "x").Payload.SubagentTask.ResultText; r != "" {
		t.Errorf("legacy content read as the result: %q", r)
	}
}

// codex-acp 2.6.0's multi_agent v1 to an AIR client: the spawnAgent call
// (marked as a subagent) never completes with the child thread, so the
// wait is the first frame naming it. With one spawn card without a thread
// and one thread without a card the pairing is certain and the wait's
// answer is the card's; with several it is not made (frames as recorded
// in conformance/agents/testdata/codex-acp-2.6.0/v1-air-*.jsonl).
func TestCodexV1AIRWaitNamesTheOnlyUnnamedSpawn(t *testing.T) {
	spawn := func(tr *adapter.Tracker, id, marker string) {
		air(t, tr, "s1", fmt.Sprintf(`"sessionUpdate":"tool_call","toolCallId":"call_spawn_%s","kind":"other","title":"spawnAgent","status":"in_progress","rawInput":{"prompt":"You are subagent %s.","senderThreadId":"s1","receiverThreadIds":[],"agentsStates":{},"model":"","reasoningEffort":"medium"},"_meta":{"jetbrains":{"air":{"version":1,"subagent":true}}}`, id, marker))
	}
	wait := func(tr *adapter.Tracker, n int, states string, threads ...string) {
		js, _ := json.Marshal(threads)
		air(t, tr, "s1", fmt.Sprintf(`"sessionUpdate":"tool_call_update","toolCallId":"call_wait_%d","title":"wait","status":"completed","rawInput":{"prompt":null,"senderThreadId":"s1","receiverThreadIds":%s,"agentsStates":{%s}}`, n, js, states))
	}
	tr, c := airTracker(t, adapter.DialectCodex)
	spawn(tr, "alpha", "alpha")
	wait(tr, 1, `"th-a":{"status":"completed","message":"ANSWER-ALPHA"}`, "th-a")
	e := lastCard2(t, c, "call_spawn_alpha")
	if task := e.Payload.SubagentTask; e.Status != adapter.ToolStatusComplete || task.ResultText != "ANSWER-ALPHA" || task.AgentID != "th-a" {
		t.Errorf("one child: %q %+v", e.Status, task)
	}
	tr, c = airTracker(t, adapter.DialectCodex)
	spawn(tr, "alpha", "alpha")
	spawn(tr, "bravo", "bravo")
	wait(tr, 1, `"th-a":{"status":"completed","message":"ANSWER-ALPHA"}`, "th-a", "th-b")
	// The recorded second wait names both threads finished, in the
	// model's order: still two cards and two threads, no certainty.
	wait(tr, 2, `"th-b":{"status":"completed","message":"ANSWER-BRAVO"},"th-a":{"status":"completed","message":"ANSWER-ALPHA"}`, "th-b", "th-a")
	for _, id := range []string{"call_spawn_alpha", "call_spawn_bravo"} {
		if e := lastCard2(t, c, id); e.Payload.SubagentTask.ResultText != "" || e.Payload.SubagentTask.AgentID != "" {
			t.Errorf("%s: an uncertain pairing was made: %+v", id, e.Payload.SubagentTask)
		}
	}
	// The connection ends: nothing will pair them any more, and the
	// agent never reported an outcome.
	tr.EndConnection(nil)
	tr.Flush()
	for _, id := range []string{"call_spawn_alpha", "call_spawn_bravo"} {
		if e := lastCard2(t, c, id); e.Status != adapter.ToolStatusUnknown {
			t.Errorf("%s at the connection's end: %q, want unknown", id, e.Status)
		}
	}
}
