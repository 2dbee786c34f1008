package cursor_test

import (
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

const (
	fullID      = "tool_2494c23d-1"
	fullPayload = `{"kind":"subagent_task","subagent_task":{"description":"Summarize src JS files","prompt":"Read every .js file under src/ and summarize","subagent_type":"","agent_id":"eaa12f70-7c1e-4f0b-9a55-60506ebd5c78","model":"composer-2.5-fast"`
	emptyTask   = `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""}}`
	okReply     = `{"id":%s,"jsonrpc":"2.0","result":{}}`
)

func wantPayload(t *testing.T, e adapter.Event, want string) {
	t.Helper()
	if got := payloadJSON(t, e); got != want {
		t.Errorf("%s payload\n got %s\nwant %s", e.ToolCallID, got, want)
	}
}

func wantReplies(t *testing.T, r run, want ...string) {
	t.Helper()
	if strings.Join(r.replies, "\n") != strings.Join(want, "\n") {
		t.Errorf("replies\n got %q\nwant %q", r.replies, want)
	}
}

func ok(id string) string { return strings.Replace(okReply, "%s", id, 1) }

// Each test replays testdata/<capture>.jsonl with the handler installed,
// compares testdata/<capture>.golden, then checks the scenario's claims.
var scenarios = []struct {
	name    string
	capture string
	check   func(t *testing.T, r run)
}{
	{"Scenario01_RecognitionByToolName", "s01_recognition", func(t *testing.T, r run) {
		for _, id := range []string{"tool_a", "tool_b"} {
			e := lastEvent(t, r, id)
			wantPayload(t, e, emptyTask) // no background_work for Cursor
		}
		for _, id := range []string{"tool_plain", "tool_read"} {
			if e := lastEvent(t, r, id); e.Payload != nil {
				t.Errorf("%s: title alone made a subagent: %s", id, payloadJSON(t, e))
			}
		}
	}},
	{"Scenario02_03_TaskBeforeToolCall", "s03_task_before_call", func(t *testing.T, r run) {
		wantReplies(t, r, ok("7"))
		evs := eventsFor(r, fullID)
		if len(evs) != 2 || evs[0].Kind != adapter.EventToolCall {
			t.Fatalf("events %+v", evs)
		}
		wantPayload(t, evs[0], fullPayload+`}}`)
		if n := pendingLeft(r); n != 0 {
			t.Errorf("pending left %d", n)
		}
		if counter(r, "cursor_pending_matched") != 1 {
			t.Errorf("counters %v", r.res.Counters)
		}
	}},
	{"Scenario04_ToolCallThenTask", "s04_call_then_task", func(t *testing.T, r run) {
		wantReplies(t, r, ok(`"a"`))
		evs := eventsFor(r, fullID)
		if len(evs) != 3 {
			t.Fatalf("want tool_call, one enrichment update, completion; got %d events", len(evs))
		}
		e := evs[1]
		if e.Kind != adapter.EventToolUpdate || e.Status != adapter.ToolStatusInProgress ||
			e.Title != "Task: Subagent task" || e.ParentToolCallID != "" || e.SessionID != "s1" {
			t.Errorf("enrichment event %+v", e)
		}
		wantPayload(t, e, fullPayload+`}}`)
		wantPayload(t, evs[2], fullPayload+`,"duration_ms":41235}}`)
	}},
	{"Scenario05_SubagentTypeObjectIgnored", "s05_subagent_type_object", func(t *testing.T, r run) {
		wantPayload(t, lastEvent(t, r, fullID), `{"kind":"subagent_task","subagent_task":{"description":"d","prompt":"p","subagent_type":""}}`)
		wantPayload(t, lastEvent(t, r, "tool_2"), `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"p2","subagent_type":""}}`)
	}},
	{"Scenario06_FastModelInformational", "s06_fast_model", func(t *testing.T, r run) {
		wantPayload(t, lastEvent(t, r, fullID), `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"p","subagent_type":"","model":"composer-2.5-fast","duration_ms":5}}`)
		got := payloadJSON(t, lastEvent(t, r, "tool_nomodel"))
		if strings.Contains(got, `"model"`) || !strings.Contains(got, `"prompt":"only a prompt"`) {
			t.Errorf("no-model payload %s", got)
		}
	}},
	{"Scenario07_DurationFromCompletion", "s07_duration", func(t *testing.T, r run) {
		wantPayload(t, lastEvent(t, r, fullID), fullPayload+`,"duration_ms":41235}}`)
	}},
	{"Scenario08_NoBlanking", "s08_no_blanking", func(t *testing.T, r run) {
		wantPayload(t, lastEvent(t, r, fullID), `{"kind":"subagent_task","subagent_task":{"description":"X","prompt":"P1","subagent_type":"","model":"m"}}`)
		// tool_call, request 1 (prompt), request 2 (model); request 3 changes nothing.
		if n := len(eventsFor(r, fullID)); n != 3 {
			t.Errorf("events %d, want 3", n)
		}
	}},
	{"Scenario09_PendingDuplicatesFirstNonEmpty", "s09_pending_duplicates", func(t *testing.T, r run) {
		evs := eventsFor(r, fullID)
		if len(evs) != 1 {
			t.Fatalf("events %d", len(evs))
		}
		wantPayload(t, evs[0], `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"A","subagent_type":"","model":"m"}}`)
	}},
	{"Scenario10_Background", "s10_background", func(t *testing.T, r run) {
		e := lastEvent(t, r, fullID)
		if e.Status != adapter.ToolStatusComplete {
			t.Errorf("status %s", e.Status)
		}
		wantPayload(t, e, fullPayload+`,"duration_ms":41235,"is_async":true}}`)
	}},
	{"Scenario11_BackgroundVariants", "s11_background_variants", func(t *testing.T, r run) {
		base := `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""`
		want := map[string]string{
			"t_dur":        base + `,"duration_ms":100}}`,
			"t_false":      base + `,"duration_ms":100}}`,
			"t_bgonly":     base + `,"is_async":true}}`,
			"t_string":     base + `}}`,
			"t_string_dur": base + `,"duration_ms":5}}`,
			"t_dur_string": base + `}}`,
		}
		for id, payload := range want {
			wantPayload(t, lastEvent(t, r, id), payload)
		}
	}},
	{"Scenario12_BackgroundSticky", "s12_sticky_background", func(t *testing.T, r run) {
		wantPayload(t, lastEvent(t, r, fullID), `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"","duration_ms":9,"is_async":true}}`)
	}},
	{"Scenario13_LateTaskAfterCompletion", "s13_late_after_completion", func(t *testing.T, r run) {
		evs := eventsFor(r, fullID)
		// tool_call, completion, exactly one enrichment; the duplicate adds none.
		if len(evs) != 3 {
			t.Fatalf("events %d, want 3", len(evs))
		}
		e := evs[2]
		if e.Kind != adapter.EventToolUpdate || e.Status != adapter.ToolStatusComplete || e.Title != "Task: Subagent task" {
			t.Errorf("late event %+v", e)
		}
		wantPayload(t, e, fullPayload+`,"duration_ms":41235,"is_async":true}}`)
		if counter(r, "cursor_task_late_applied") != 1 || counter(r, "cursor_task_unchanged") != 1 {
			t.Errorf("counters %v", r.res.Counters)
		}
		assertMonotonic(t, r.res.Events)
	}},
	{"Scenario14_SweptAtPromptEnd", "s14_sweep_at_prompt_end", func(t *testing.T, r run) {
		wantPayload(t, lastEvent(t, r, fullID), emptyTask)
		if counter(r, "cursor_pending_swept") != 1 || pendingLeft(r) != 0 {
			t.Errorf("counters %v", r.res.Counters)
		}
	}},
	{"Scenario15_SessionsIsolated", "s15_sessions_isolated", func(t *testing.T, r run) {
		// s1's turn ended first: its entry is swept, s2's survives.
		wantPayload(t, lastEvent(t, r, "t2"), `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"for s2","subagent_type":""}}`)
		wantPayload(t, lastEvent(t, r, "t1"), emptyTask)
		// session/close cleared the rest of the connection's pending state.
		wantPayload(t, lastEvent(t, r, "t1b"), emptyTask)
		if pendingLeft(r) != 0 || counter(r, "cursor_pending_swept") != 2 {
			t.Errorf("counters %v", r.res.Counters)
		}
	}},
	{"Scenario16_EvictionAt256", "s16_eviction", func(t *testing.T, r run) {
		if counter(r, "cursor_pending_evicted_count") != 1 {
			t.Errorf("evicted %d, want 1", counter(r, "cursor_pending_evicted_count"))
		}
		wantPayload(t, lastEvent(t, r, "t000"), emptyTask) // the oldest was evicted
		if got := payloadJSON(t, lastEvent(t, r, "t001")); !strings.Contains(got, `"prompt":"p1"`) {
			t.Errorf("t001 %s", got)
		}
		if got := payloadJSON(t, lastEvent(t, r, "t256")); !strings.Contains(got, `"prompt":"p256"`) {
			t.Errorf("t256 %s", got)
		}
		// 256 remained; two matched; the other 254 were swept at prompt end.
		if counter(r, "cursor_pending_swept") != 254 || pendingLeft(r) != 0 {
			t.Errorf("counters %v", r.res.Counters)
		}
	}},
	{"Scenario17_NonSubagentToolUntouched", "s17_non_subagent_tool", func(t *testing.T, r run) {
		evs := eventsFor(r, "tool_read")
		if len(evs) != 2 {
			t.Fatalf("events %d, want the tool's own 2", len(evs))
		}
		for _, e := range evs {
			if e.Payload != nil {
				t.Errorf("non-subagent payload %s", payloadJSON(t, e))
			}
		}
		if counter(r, "cursor_task_non_subagent") != 1 || counter(r, "cursor_pending_swept") != 1 {
			t.Errorf("counters %v", r.res.Counters)
		}
	}},
	{"Scenario19_SecondToolCallKeepsMetadata", "s19_second_tool_call", func(t *testing.T, r run) {
		wantPayload(t, lastEvent(t, r, fullID), fullPayload+`}}`)
	}},
	{"Scenario20_NotificationProcessedNoReply", "s20_notification", func(t *testing.T, r run) {
		wantReplies(t, r)
		wantPayload(t, lastEvent(t, r, fullID), fullPayload+`}}`)
	}},
	{"Scenario21_DuplicateNoEvent", "s21_duplicate_no_event", func(t *testing.T, r run) {
		evs := eventsFor(r, fullID)
		if len(evs) != 2 {
			t.Fatalf("events %d, want tool_call and one enrichment", len(evs))
		}
		wantPayload(t, evs[1], fullPayload+`}}`)
	}},
	{"Scenario51_BadParamsAnsweredEmpty", "s51_bad_params", func(t *testing.T, r run) {
		var want []string
		for _, id := range []string{"1", "2", "3", "4", "5", "6", "7", "8", "20", "21", "30"} {
			want = append(want, ok(id))
		}
		wantReplies(t, r, want...)
		wantPayload(t, lastEvent(t, r, "t6"), `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"ok","subagent_type":""}}`)
		if counter(r, "cursor_task_dropped") != 10 || counter(r, "cursor_pending_stored") != 1 {
			t.Errorf("counters %v", r.res.Counters)
		}
	}},
	{"NoCurrentSessionDropped", "no_session", func(t *testing.T, r run) {
		wantReplies(t, r, ok("1"))
		wantPayload(t, lastEvent(t, r, fullID), emptyTask)
		if counter(r, "cursor_task_dropped") != 1 || counter(r, "cursor_pending_stored") != 0 {
			t.Errorf("counters %v", r.res.Counters)
		}
	}},
	{"Scenario50_OtherMethodsFromCursor", "cursor_unknown_methods", func(t *testing.T, r run) {
		wantReplies(t, r,
			`{"error":{"code":-32601,"message":"Method not found","data":{"method":"foo/bar"}},"id":2,"jsonrpc":"2.0"}`,
			`{"error":{"code":-32601,"message":"Method not found","data":{"method":"_x"}},"id":3,"jsonrpc":"2.0"}`,
			`{"error":{"code":-32601,"message":"Method not found","data":{"method":"cursor/other"}},"id":4,"jsonrpc":"2.0"}`)
		if counter(r, "cursor_task_requests") != 0 {
			t.Errorf("counters %v", r.res.Counters)
		}
	}},
	{"Scenario48_49_NonCursorAgent", "opencode_adversarial", func(t *testing.T, r run) {
		wantReplies(t, r,
			`{"error":{"code":-32601,"message":"Method not found","data":{"method":"cursor/task"}},"id":1,"jsonrpc":"2.0"}`,
			`{"error":{"code":-32601,"message":"Method not found","data":{"method":"foo/bar"}},"id":2,"jsonrpc":"2.0"}`,
			`{"error":{"code":-32601,"message":"Method not found","data":{"method":"_x"}},"id":3,"jsonrpc":"2.0"}`)
		wantPayload(t, lastEvent(t, r, "call_1"), `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"","duration_ms":10}}`)
		if r.rejected != 2 {
			t.Errorf("rejected %d, want 2 (request and notification)", r.rejected)
		}
		for name := range r.res.Counters {
			if strings.HasPrefix(name, "cursor_") {
				t.Errorf("non-Cursor connection touched Cursor state: %s", name)
			}
		}
	}},
}

func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := replayGolden(t, sc.capture)
			if len(r.res.Errors) > 0 {
				t.Fatalf("replay errors: %v", r.res.Errors)
			}
			assertMonotonic(t, r.res.Events)
			sc.check(t, r)
		})
	}
}
