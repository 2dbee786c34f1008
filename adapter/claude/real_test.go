package claude_test

import (
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
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
