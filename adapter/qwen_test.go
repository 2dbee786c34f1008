package adapter_test

import (
	"encoding/json"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// Frames in the shapes qwen-code 0.24.4 sends (see
// conformance/agents/testdata/qwen-0.24.4/), for the session "s".
const (
	qwenPreparing = `{"sessionUpdate":"tool_call","toolCallId":"L","status":"pending","title":"Agent","content":[],"locations":[],"kind":"other","rawInput":{},"_meta":{"toolName":"agent","provenance":"builtin","phase":"preparing","subagentSessionReady":false}}`
	qwenExecuting = `{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"in_progress","title":"Agent: Inspect alpha","content":[],"locations":[],"kind":"other","rawInput":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","run_in_background":false,"subagent_type":"general-purpose"},"_meta":{"toolName":"agent","provenance":"builtin","subagentSessionReady":false}}`
	qwenReady     = `{"sessionUpdate":"tool_call_update","toolCallId":"L","_meta":{"toolName":"agent","subagentSessionReady":true}}`
	qwenProgress  = `{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"Glob: '*.md'"}}],"_meta":{"subagentType":"general-purpose","provenance":"subagent","subagentProgress":true}}`
	qwenChildTool = `{"sessionUpdate":"tool_call","toolCallId":"G","status":"pending","title":"Glob: '*.md'","kind":"search","rawInput":{"pattern":"*.md"},"_meta":{"toolName":"glob","provenance":"subagent","parentToolCallId":"L","subagentType":"general-purpose"}}`
	qwenChildDone = `{"sessionUpdate":"tool_call_update","toolCallId":"G","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Found 1 file"}}],"_meta":{"toolName":"glob","provenance":"subagent","parentToolCallId":"L","subagentType":"general-purpose"},"rawOutput":"Found 1 matching file(s)"}`
	qwenChildText = `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ANSWER-ALPHA"},"_meta":{"parentToolCallId":"L","subagentType":"general-purpose"}}`
	qwenCompleted = `{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ANSWER-ALPHA"}}],"_meta":{"toolName":"agent","provenance":"builtin"},"rawOutput":{"type":"task_execution","subagentName":"general-purpose","taskDescription":"Inspect alpha","taskPrompt":"Reply ANSWER-ALPHA.","executionMode":"foreground","subagentSessionReady":true,"status":"completed","result":"ANSWER-ALPHA","executionSummary":{"rounds":2,"totalDurationMs":2531,"totalToolCalls":1,"totalTokens":240}}}`
)

// qwenFeed feeds updates of session "s" to a fresh Qwen tracker and returns
// it with the last event of each tool call, whose Status is the last one
// emitted (an event of a frame without status carries none).
func qwenFeed(t *testing.T, updates ...string) (*adapter.Tracker, map[string]adapter.Event) {
	t.Helper()
	last := map[string]adapter.Event{}
	tr, err := adapter.NewTracker(adapter.Config{DialectName: adapter.DialectQwen, OnEvent: func(e adapter.Event) {
		if e.Status == adapter.ToolStatusUnchanged {
			e.Status = last[e.ToolCallID].Status
		}
		last[e.ToolCallID] = e
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range updates {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+u+`}`), &n); err != nil {
			t.Fatalf("%v: %s", err, u)
		}
		tr.SessionUpdate(n)
	}
	return tr, last
}

// TestQwenFrames is a table over Qwen Code frames: which make a card, what
// it holds, and where a child's tool calls nest.
func TestQwenFrames(t *testing.T) {
	type want struct {
		payload string             // final payload of L ("null": no card)
		status  adapter.ToolStatus // final tool status of L
		parents map[string]string  // tool call id → parent id
	}
	for _, tt := range []struct {
		name    string
		updates []string
		want    want
	}{
		{
			// A call still streaming from the model may be discarded: no
			// card until it executes.
			name: "preparing only", updates: []string{qwenPreparing},
			want: want{payload: `null`, status: adapter.ToolStatusPending},
		},
		{
			name: "discarded preparation", updates: []string{qwenPreparing,
				`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"failed","content":[],"_meta":{"toolName":"agent","phase":"preparing","preparationDiscarded":true,"provenance":"builtin"}}`},
			want: want{payload: `null`, status: adapter.ToolStatusError},
		},
		{
			name: "executing", updates: []string{qwenPreparing, qwenExecuting, qwenReady},
			want: want{payload: `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","subagent_type":"general-purpose"}}`, status: adapter.ToolStatusInProgress},
		},
		{
			// Progress text is never the result; the child's tool call
			// nests under the launch; the child's text is not read as the
			// result, the completion's task_execution record is.
			name: "one child with a tool", updates: []string{qwenPreparing, qwenExecuting, qwenReady, qwenProgress, qwenChildTool, qwenChildDone, qwenChildText, qwenCompleted},
			want: want{
				payload: `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","subagent_type":"general-purpose","status":"completed","duration_ms":2531,"total_tokens":240,"tool_use_count":1,"result_text":"ANSWER-ALPHA"}}`,
				status:  adapter.ToolStatusComplete,
				parents: map[string]string{"G": "L", "L": ""},
			},
		},
		{
			name: "progress before the result", updates: []string{qwenExecuting, qwenProgress},
			want: want{payload: `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","subagent_type":"general-purpose"}}`, status: adapter.ToolStatusInProgress},
		},
		{
			// Without a task_execution record, the completion's content
			// is the child's final message.
			name: "content only", updates: []string{qwenExecuting,
				`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ANSWER"}}],"_meta":{"toolName":"agent"}}`},
			want: want{payload: `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","subagent_type":"general-purpose","result_text":"ANSWER"}}`, status: adapter.ToolStatusComplete},
		},
		{
			// A failed child: its text is an error, never a result.
			name: "failed", updates: []string{qwenExecuting,
				`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"failed","content":[{"type":"content","content":{"type":"text","text":"boom"}}],"_meta":{"toolName":"agent"},"rawOutput":{"type":"task_execution","status":"failed","result":"boom","executionMode":"foreground","terminateReason":"Failed to run subagent: Request was aborted."}}`},
			want: want{payload: `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","subagent_type":"general-purpose","status":"failed","error_message":"Failed to run subagent: Request was aborted."}}`, status: adapter.ToolStatusError},
		},
		{
			// A record that does not say completed keeps the content
			// (then an error's text) out of the result, whatever the
			// call's status.
			name: "completed call, failed record", updates: []string{qwenExecuting,
				`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Subagent failed: boom"}}],"_meta":{"toolName":"agent"},"rawOutput":{"type":"task_execution","status":"failed","executionMode":"foreground"}}`},
			want: want{payload: `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","subagent_type":"general-purpose","status":"failed"}}`, status: adapter.ToolStatusComplete},
		},
		{
			// A background launch (as 0.24.4 sends it): async, its
			// receipt names the task id and is no answer; the parent's
			// later notice (still the parent's text) gives the final
			// status.
			name: "background", updates: []string{
				`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"in_progress","title":"Agent: Inspect alpha","kind":"other","rawInput":{"description":"Inspect alpha","prompt":"p","subagent_type":"general-purpose"},"_meta":{"toolName":"agent","provenance":"builtin","subagentSessionReady":false}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Background agent launched successfully.\ntask_id: general-purpose-L (internal ID)\noutput_file: /x.jsonl"}}],"_meta":{"toolName":"agent","provenance":"builtin"},"rawOutput":{"type":"task_execution","subagentName":"general-purpose","executionMode":"background","subagentSessionReady":true,"status":"background"}}`,
				`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Background agent \"general-purpose: Inspect alpha\" completed."},"_meta":{"source":"background_task_completed","qwenDiscreteMessage":true,"backgroundTask":{"taskId":"general-purpose-L","status":"completed","kind":"agent","toolUseId":"L"}}}`},
			want: want{payload: `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"p","subagent_type":"general-purpose","status":"completed","agent_id":"general-purpose-L","is_async":true}}`, status: adapter.ToolStatusComplete},
		},
		{
			// A notice for another launch, or of another kind, or before
			// any card, changes nothing.
			name: "background notice elsewhere", updates: []string{
				`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"backgroundTask":{"taskId":"t","status":"completed","kind":"agent","toolUseId":"L"}}}`,
				qwenExecuting,
				`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"backgroundTask":{"taskId":"t","status":"completed","kind":"shell","toolUseId":"L"}}}`,
				`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"backgroundTask":{"taskId":"t","status":"completed","kind":"agent","toolUseId":"M"}}}`,
				`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"backgroundTask":"nope"}}`},
			want: want{payload: `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"Reply ANSWER-ALPHA.","subagent_type":"general-purpose"}}`, status: adapter.ToolStatusInProgress},
		},
		{
			// Wrong types are ignored field by field.
			name: "bad types", updates: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"L","status":"in_progress","title":"Agent","kind":"other","rawInput":{"description":7},"_meta":{"toolName":"agent","parentToolCallId":5}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","_meta":{"toolName":"agent"},"rawOutput":{"type":"task_execution","status":3,"result":["x"],"executionSummary":{"totalDurationMs":"9","totalTokens":-1,"totalToolCalls":0}}}`},
			want: want{payload: `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"","tool_use_count":0}}`, status: adapter.ToolStatusComplete, parents: map[string]string{"L": ""}},
		},
		{
			// Another tool is no card, even tagged by a child.
			name: "not the agent tool", updates: []string{qwenChildTool, qwenChildDone},
			want: want{payload: `null`, parents: map[string]string{"G": "L"}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, last := qwenFeed(t, tt.updates...)
			e, ok := last["L"]
			var payload []byte
			if ok && e.Payload != nil {
				payload, _ = json.Marshal(e.Payload)
			} else {
				payload = []byte("null")
			}
			if string(payload) != tt.want.payload {
				t.Errorf("payload\n got %s\nwant %s", payload, tt.want.payload)
			}
			if ok && e.Status != tt.want.status {
				t.Errorf("status %q, want %q", e.Status, tt.want.status)
			}
			for id, p := range tt.want.parents {
				if got := last[id].ParentToolCallID; got != p {
					t.Errorf("%s: parent %q, want %q", id, got, p)
				}
			}
		})
	}
}

// TestQwenChildMessage: a chunk naming its launch in
// _meta.parentToolCallId is the child's (message, thought, usage), every
// other chunk the parent's; the child's chunks change no card.
func TestQwenChildMessage(t *testing.T) {
	tr, last := qwenFeed(t, qwenExecuting)
	for _, tt := range []struct {
		update string
		id     string
		child  bool
	}{
		{qwenChildText, "L", true},
		{`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"},"_meta":{"parentToolCallId":"L","subagentType":"general-purpose"}}`, "L", true},
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"totalTokens":120},"parentToolCallId":"L"}}`, "L", true},
		// A child of a launch this tracker never saw is still a child.
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"parentToolCallId":"other"}}`, "other", true},
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"All subagents reported."}}`, "", false},
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"parentToolCallId":""}}`, "", false},
		{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},"_meta":{"parentToolCallId":7}}`, "", false},
	} {
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+tt.update+`}`), &n); err != nil {
			t.Fatal(err)
		}
		if id, child := tr.ChildMessage(n); id != tt.id || child != tt.child {
			t.Errorf("%s: (%q, %t), want (%q, %t)", tt.update, id, child, tt.id, tt.child)
		}
		before := len(last)
		tr.SessionUpdate(n)
		if len(last) != before {
			t.Errorf("%s made a card", tt.update)
		}
	}
	if got := tr.Counters()[adapter.CounterQwenChildText]; got != 4 {
		t.Errorf("%s = %d, want 4", adapter.CounterQwenChildText, got)
	}
}

// TestQwenBackgroundChildOutlivesItsTurn: a background child's launch
// completes at once with a receipt, so the card stays running past its
// turn's answer, and a later cancel of the session spares it (Qwen's
// cancel stops the prompt, not its background agents); the notice that
// it finished, arriving after the answer, outside any prompt, reaches the
// card and settles it.
func TestQwenBackgroundChildOutlivesItsTurn(t *testing.T) {
	tr, last := qwenFeed(t)
	feed := func(u string) {
		t.Helper()
		var n acp.SessionNotification
		if err := json.Unmarshal([]byte(`{"sessionId":"s","update":`+u+`}`), &n); err != nil {
			t.Fatal(err)
		}
		tr.SessionUpdate(n)
	}
	tr.PromptStarted("s")
	feed(`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"in_progress","title":"Agent: Inspect alpha","kind":"other","rawInput":{"description":"Inspect alpha","prompt":"p","subagent_type":"general-purpose"},"_meta":{"toolName":"agent","provenance":"builtin","subagentSessionReady":false}}`)
	feed(`{"sessionUpdate":"tool_call_update","toolCallId":"L","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Background agent launched successfully.\ntask_id: general-purpose-L (internal ID)"}}],"_meta":{"toolName":"agent","provenance":"builtin"},"rawOutput":{"type":"task_execution","subagentName":"general-purpose","executionMode":"background","subagentSessionReady":true,"status":"background"}}`)
	tr.PromptEnded("s")
	tr.Flush()
	if e := last["L"]; e.Status != adapter.ToolStatusInProgress || !e.Payload.SubagentTask.Live {
		t.Fatalf("after its turn: %q live=%t, want a running card", e.Status, e.Payload.SubagentTask.Live)
	}
	if n := tr.LiveBackground(); n != 1 {
		t.Errorf("LiveBackground after its turn = %d, want 1 (run waits for it)", n)
	}
	// A second turn, cancelled: the background child runs on.
	tr.PromptStarted("s")
	tr.CancelTurn("s")
	tr.PromptEnded("s")
	tr.Flush()
	if e := last["L"]; e.Status != adapter.ToolStatusInProgress {
		t.Fatalf("after a later cancel: %q, want in_progress", e.Status)
	}
	feed(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Background agent \"general-purpose: Inspect alpha\" failed."},"_meta":{"source":"background_task_completed","qwenDiscreteMessage":true,"backgroundTask":{"taskId":"general-purpose-L","status":"failed","kind":"agent","toolUseId":"L"}}}`)
	tr.Flush()
	e := last["L"]
	if e.Status != adapter.ToolStatusError || e.Payload.SubagentTask.Status != "failed" || e.Payload.SubagentTask.Live {
		t.Fatalf("after the late notice: %q %+v, want error, status failed, not live", e.Status, e.Payload.SubagentTask)
	}
	if n := tr.LiveBackground(); n != 0 {
		t.Errorf("LiveBackground once settled = %d, want 0", n)
	}
	// Settled, it is an ordinary finished card again: the next turn's end
	// sweeps it.
	tr.PromptStarted("s")
	tr.PromptEnded("s")
	tr.Flush()
	if got := tr.Counters()[adapter.CounterCompletedSwept]; got != 1 {
		t.Errorf("%s = %d, want 1", adapter.CounterCompletedSwept, got)
	}
}
