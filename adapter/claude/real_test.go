package claude_test

import (
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/claude"
	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
)

// TestRealSubagentSessions replays what claude-agent-acp 0.101.0 sent to a
// client declaring clientCapabilities.subagents (recorded by
// conformance/agents; testdata/real/ keeps copies without the command and
// usage updates). The child session id is Claude's agent id, and a
// child's result is its own final answer, also when it ran in the
// background and no reply reached the parent.
func TestRealSubagentSessions(t *testing.T) {
	const alphaPrompt = "You are subagent alpha. Reply with the single word ANSWER-ALPHA."
	payload := func(child, desc, prompt, answer string) string {
		return `{"kind":"subagent_task","subagent_task":{"description":"` + desc + `","prompt":"` + prompt +
			`","subagent_type":"general-purpose","status":"idle","agent_id":"` + child + `","model":"default","child_session_id":"` + child +
			`","result_text":"` + answer + `"},"background_work":{"kind":"subagent","work_id":"` + child + `","ended":true}}`
	}
	for _, tt := range []struct {
		capture string
		want    map[string]string // child → payload
	}{
		{"real/sessions", map[string]string{
			"a59489f5c1756d809": payload("a59489f5c1756d809", "Inspect alpha", alphaPrompt, "ANSWER-ALPHA"),
		}},
		{"real/sessions-background", map[string]string{
			"a1d234e6e6de24f27": payload("a1d234e6e6de24f27", "Inspect alpha", alphaPrompt, "ANSWER-ALPHA"),
		}},
		{"real/sessions-parallel", map[string]string{
			"a94c3353fa7ea69ca": payload("a94c3353fa7ea69ca", "Inspect alpha", alphaPrompt, "ANSWER-ALPHA"),
			"a2a6ef417a134d908": payload("a2a6ef417a134d908", "Inspect bravo", "You are subagent bravo. Reply with the single word ANSWER-BRAVO.", "ANSWER-BRAVO"),
		}},
		// The background capture with the launch receipt added as the
		// child's reply in the parent's transcript, the way the agent
		// reports a background launch: a receipt is never a result, and
		// it marks the child as running detached.
		{"launch_receipt_reply", map[string]string{
			"a1d234e6e6de24f27": strings.NewReplacer(`"result_text":"ANSWER-ALPHA"}`, `"result_text":"ANSWER-ALPHA","is_async":true}`,
				`"ended":true`, `"detached":true,"ended":true`).Replace(payload("a1d234e6e6de24f27", "Inspect alpha", alphaPrompt, "ANSWER-ALPHA")),
		}},
	} {
		t.Run(tt.capture, func(t *testing.T) {
			res := goldentest.Replay(t, tt.capture, adapter.Config{})
			for child, want := range tt.want {
				if got := goldentest.PayloadJSON(t, goldentest.Last(t, res, child)); got != want {
					t.Errorf("%s payload\n got %s\nwant %s", child, got, want)
				}
			}
			for _, e := range res.Events {
				if p := e.Payload; p != nil && strings.HasPrefix(p.SubagentTask.ResultText, "Async agent launched") {
					t.Errorf("%s: a launch receipt became the result: %.60q", e.ToolCallID, p.SubagentTask.ResultText)
				}
			}
		})
	}
}

// TestRealLegacyForm replays what claude-agent-acp sent to a client that
// does not opt in to subagent sessions (0.101.0 and the older 0.23.1
// package): the card comes from rawInput and the hook's toolResponse; a
// background launch's rawOutput is the launch receipt, never the result.
func TestRealLegacyForm(t *testing.T) {
	for capture, want := range map[string]string{
		"real/legacy-one":        `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","status":"completed","agent_id":"af09cd398e1a6fad5","model":"claude-opus-5-5","duration_ms":1374,"total_tokens":120,"tool_use_count":0,"result_text":"ANSWER-ALPHA"},"background_work":{"kind":"subagent","work_id":"af09cd398e1a6fad5","ended":true}}`,
		"real/legacy-0.23.1-one": `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","status":"completed","agent_id":"ad22422da1ad654d8","duration_ms":281,"total_tokens":120,"tool_use_count":0,"result_text":"ANSWER-ALPHA"},"background_work":{"kind":"subagent","work_id":"ad22422da1ad654d8","ended":true}}`,
	} {
		t.Run(capture, func(t *testing.T) {
			res := goldentest.Replay(t, capture, adapter.Config{})
			if got := goldentest.PayloadJSON(t, goldentest.Last(t, res, "toolu_launch_alpha")); got != want {
				t.Errorf("payload\n got %s\nwant %s", got, want)
			}
		})
	}
	// A subagent that used a tool: 0.101.0 puts a
	// <tools-used-before-summary> block before the answer in the hook's
	// content; it names the tools, it is not the answer.
	t.Run("real/legacy-permission-allow", func(t *testing.T) {
		res := goldentest.Replay(t, "real/legacy-permission-allow", adapter.Config{})
		task := goldentest.Last(t, res, "toolu_launch_alpha").Payload.SubagentTask
		if task.ResultText != "ANSWER-ALPHA" || task.ToolUseCount == nil || *task.ToolUseCount != 1 {
			t.Errorf("result %q, tool uses %v; want ANSWER-ALPHA after 1 tool use", task.ResultText, task.ToolUseCount)
		}
		if child := goldentest.Last(t, res, "toolu_child_bash"); child.ParentToolCallID != "toolu_launch_alpha" {
			t.Errorf("child tool call parent %q", child.ParentToolCallID)
		}
	})
	t.Run("real/legacy-background", func(t *testing.T) {
		res := goldentest.Replay(t, "real/legacy-background", adapter.Config{})
		task := goldentest.Last(t, res, "toolu_launch_alpha").Payload.SubagentTask
		if task.ResultText != "" || !task.IsAsync || task.Status != claude.StatusAsyncLaunched || task.AgentID != "ab902a5d6e79311d0" {
			t.Errorf("background card %+v", task)
		}
	})
}

// The unknown state on real frames: claude-agent-acp 0.101.0 predates the
// RFD clarification that sends it (a child it stops tracking at /clear),
// so the capture is the recorded sessions-background run with its child's
// final subagent_update edited to {"state":"unknown"} with
// capabilities:null. The card is then neither running, finished nor
// failed: tool status unknown, not live, not cancellable, and the answer
// the child sent before stays its own (never the parent's).
func TestRealUnknownStateEdited(t *testing.T) {
	res := goldentest.Replay(t, "real/sessions-background-unknown", adapter.Config{})
	e := goldentest.Last(t, res, "a1d234e6e6de24f27")
	if e.Status != adapter.ToolStatusUnknown || e.Child.Live || e.Child.CanCancel || e.Payload.SubagentTask.Live {
		t.Errorf("unknown child: status %s child %+v", e.Status, e.Child)
	}
	if task := e.Payload.SubagentTask; task.Status != "unknown" || task.ResultText != "" {
		t.Errorf("payload %+v", task)
	}
}
