package claude_test

import (
	"slices"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude"
	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
)

// Table over the Claude legacy captures (the _meta.claudeCode form and its
// bad inputs). Each row replays testdata/<capture>.jsonl,
// compares every event with the golden file, then checks the final payloads.
func TestLegacyScenarios(t *testing.T) {
	tests := []struct {
		name     string
		capture  string
		payloads map[string]string // tool call id → final payload JSON ("null" = not a subagent)
		parents  map[string]string // tool call id → final parent id
		statuses map[string][]adapter.ToolStatus
	}{
		{
			name:    "22_24_25_26_28_Foreground",
			capture: "legacy_foreground",
			payloads: map[string]string{
				"toolu_A": `{"kind":"subagent_task","subagent_task":{"description":"Investigate flaky test","prompt":"Find the root cause","subagent_type":"general-purpose","status":"completed","agent_id":"a1b2","model":"claude-opus-4-8","duration_ms":12345,"total_tokens":6789,"tool_use_count":11,"result_text":"VERDICT: ok"},"background_work":{"kind":"subagent","work_id":"a1b2","ended":true}}`,
				"toolu_B": `null`,
			},
			parents:  map[string]string{"toolu_B": "toolu_A", "toolu_A": ""},
			statuses: map[string][]adapter.ToolStatus{"toolu_A": {"pending", "in_progress", "", "complete"}},
		},
		{
			name:    "23_TaskToolNameWhateverTheTitle",
			capture: "task_toolname",
			payloads: map[string]string{
				"toolu_T": `{"kind":"subagent_task","subagent_task":{"description":"Review the diff","prompt":"Review it","subagent_type":""},"background_work":{"kind":"subagent","work_id":""}}`,
			},
		},
		{
			name:    "24_31_FillIfEmpty",
			capture: "fill_if_empty",
			payloads: map[string]string{
				"toolu_A": `{"kind":"subagent_task","subagent_task":{"description":"First","prompt":"P1","subagent_type":"explore","status":"completed"},"background_work":{"kind":"subagent","work_id":"","ended":true}}`,
			},
		},
		{
			name:    "25_ParentToolUseID",
			capture: "parent_ids",
			parents: map[string]string{"c_ok": "toolu_A", "c_num": "", "c_empty": "", "c_late": "toolu_A", "c_toplevel": ""},
		},
		{
			name:    "26_HookEveryKeyAndZeroToolUses",
			capture: "hook_every_key",
			payloads: map[string]string{
				"toolu_A": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"general-purpose","status":"completed","agent_id":"a1b2","model":"claude-opus-4-8","duration_ms":12345,"total_tokens":6789,"tool_use_count":0,"result_text":"line one\nline two","output_file":"/tmp/o","can_read_output_file":true},"background_work":{"kind":"subagent","work_id":"a1b2","ended":true}}`,
				"toolu_C": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"general-purpose","status":"completed","agent_id":"a1b2","model":"claude-opus-4-8","duration_ms":12345,"total_tokens":6789,"result_text":"VERDICT: ok"},"background_work":{"kind":"subagent","work_id":"a1b2","ended":true}}`,
			},
		},
		{
			name:    "27_AsyncLaunch",
			capture: "async_launch",
			payloads: map[string]string{
				"toolu_A": `{"kind":"subagent_task","subagent_task":{"description":"Bg job","prompt":"Do it","subagent_type":"general-purpose","status":"async_launched","agent_id":"a1b2","is_async":true,"output_file":"/abs/a1b2.output","can_read_output_file":true},"background_work":{"kind":"subagent","work_id":"a1b2","detached":true}}`,
			},
			statuses: map[string][]adapter.ToolStatus{"toolu_A": {"pending", "in_progress", "complete", "complete"}},
		},
		{
			name:    "29_HookAfterTerminalFrame",
			capture: "hook_after_terminal",
			payloads: map[string]string{
				"toolu_A": `{"kind":"subagent_task","subagent_task":{"description":"Investigate flaky test","prompt":"Find the root cause","subagent_type":"general-purpose","status":"completed","agent_id":"a1b2","model":"claude-opus-4-8","duration_ms":12345,"total_tokens":6789,"tool_use_count":11,"result_text":"VERDICT: ok"},"background_work":{"kind":"subagent","work_id":"a1b2","ended":true}}`,
			},
			statuses: map[string][]adapter.ToolStatus{"toolu_A": {"pending", "in_progress", "complete", "complete"}},
		},
		{
			name:    "30_FailedAfterCompletedStatus",
			capture: "failed_after_completed",
			payloads: map[string]string{
				"toolu_A": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"","status":"completed","agent_id":"a9"},"background_work":{"kind":"subagent","work_id":"a9","ended":true}}`,
			},
			statuses: map[string][]adapter.ToolStatus{"toolu_A": {"pending", "", "error", "error", "error"}},
		},
		{
			name:    "52_53_BadNumbers",
			capture: "bad_numbers",
			payloads: map[string]string{
				"toolu_A": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"","duration_ms":100,"total_tokens":1,"tool_use_count":2},"background_work":{"kind":"subagent","work_id":"","ended":true}}`,
			},
		},
		{
			name:    "54_ContentWithoutText",
			capture: "bad_content",
			payloads: map[string]string{
				"t_absent":     `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"","status":"completed"},"background_work":{"kind":"subagent","work_id":"","ended":true}}`,
				"t_empty":      `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""},"background_work":{"kind":"subagent","work_id":"","ended":true}}`,
				"t_image":      `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""},"background_work":{"kind":"subagent","work_id":"","ended":true}}`,
				"t_blank":      `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""},"background_work":{"kind":"subagent","work_id":"","ended":true}}`,
				"t_wrong":      `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""},"background_work":{"kind":"subagent","work_id":"","ended":true}}`,
				"t_agent_only": `null`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := goldentest.Replay(t, tt.capture, adapter.Config{})
			if res.Dialect != adapter.DialectClaude {
				t.Fatalf("dialect %q, want claude", res.Dialect)
			}
			for id, want := range tt.payloads {
				if got := goldentest.PayloadJSON(t, goldentest.Last(t, res, id)); got != want {
					t.Errorf("%s payload\n got %s\nwant %s", id, got, want)
				}
			}
			for id, want := range tt.parents {
				if got := goldentest.Last(t, res, id).ParentToolCallID; got != want {
					t.Errorf("%s parent %q, want %q", id, got, want)
				}
			}
			for id, want := range tt.statuses {
				if got := goldentest.Statuses(res, id); !slices.Equal(got, want) {
					t.Errorf("%s statuses %q, want %q", id, got, want)
				}
			}
		})
	}
}

// A session loaded again on the same connection replays a finished
// background child without its launch receipt. The card was swept at the
// end of its turn; the replay must find what it learned then: it stays
// complete (no event moves it back to pending or in progress) and keeps
// its agent id, is_async and output file.
func TestReloadOnTheSameConnectionKeepsWhatTheCardLearned(t *testing.T) {
	res := goldentest.Replay(t, "reload_same_connection", adapter.Config{})
	want := `{"kind":"subagent_task","subagent_task":{"description":"Bg job","prompt":"Do it","subagent_type":"general-purpose","status":"async_launched","agent_id":"a1b2","is_async":true,"output_file":"/abs/a1b2.output","can_read_output_file":true},"background_work":{"kind":"subagent","work_id":"a1b2","detached":true}}`
	if got := goldentest.PayloadJSON(t, goldentest.Last(t, res, "toolu_A")); got != want {
		t.Errorf("after the load\n got %s\nwant %s", got, want)
	}
	complete := false
	for _, e := range res.Events {
		if e.ToolCallID != "toolu_A" {
			continue
		}
		if complete && e.Status != adapter.ToolStatusComplete {
			t.Errorf("the replayed history moved the card back to %q", e.Status)
		}
		complete = complete || e.Status == adapter.ToolStatusComplete
	}
}
