package adapter_test

import (
	"testing"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// TestRealAgentCaptures replays frames the published agents sent
// (recorded by conformance/agents; testdata/real/<agent>/ keeps copies, so
// this runs without npm) and pins the cards each produces.
func TestRealAgentCaptures(t *testing.T) {
	runCaptureTable(t, []captureCase{
		{
			// gemini-cli 0.61.0: invoke_agent is titled "Delegating to
			// agent 'NAME'", kind think, no rawInput; on success the
			// subagent's answer is not on the wire.
			name: "GeminiOne", capture: "real/gemini/one", dialect: "gemini",
			payloads: map[string]string{
				"invoke_agent__call_invoke_alpha": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"codebase_investigator"}}`,
			},
			statuses: map[string][]adapter.ToolStatus{"invoke_agent__call_invoke_alpha": {"in_progress", "complete"}},
			cards:    []string{"invoke_agent__call_invoke_alpha"},
		},
		{
			name: "GeminiParallel", capture: "real/gemini/parallel", dialect: "gemini",
			payloads: map[string]string{
				"invoke_agent__call_invoke_alpha": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"codebase_investigator"}}`,
				"invoke_agent__call_invoke_bravo": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":"cli_help"}}`,
			},
			cards: []string{"invoke_agent__call_invoke_alpha", "invoke_agent__call_invoke_bravo"},
		},
		{
			// A subagent the policy denies: a lone failed update, no
			// title; the id names the tool. The denial is not a result.
			name: "GeminiPolicyDenied", capture: "real/gemini/policy-denied", dialect: "gemini",
			payloads: map[string]string{
				"invoke_agent__call_invoke_generalist": `{"kind":"subagent_task","subagent_task":{"description":"","prompt":"","subagent_type":""}}`,
			},
			statuses: map[string][]adapter.ToolStatus{"invoke_agent__call_invoke_generalist": {"error"}},
			cards:    []string{"invoke_agent__call_invoke_generalist"},
		},
		{
			// codex-acp 0.16.0 ran spawn_agent and wait_agent, yet sent no
			// tool call for them: no card is the right outcome.
			name: "CodexOneNoCard", capture: "real/codex/one", dialect: adapter.DialectCodex,
			cards: []string{},
		},
		{
			name: "CodexParallelNoCard", capture: "real/codex/parallel", dialect: adapter.DialectCodex,
			cards: []string{},
		},
	})
}
