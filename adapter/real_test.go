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
			// opencode 1.18.33: the answer is rawOutput.output, wrapped in
			// <task id=… state=…><task_result>…</task_result></task>.
			name: "OpenCodeOne", capture: "real/opencode/one", dialect: adapter.DialectOpenCode,
			payloads: map[string]string{
				"call_launch_alpha": `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general","status":"completed","model":"scripted/scripted","child_session_id":"ses_dcdd4a33effeQXNB6ScdkfEgzF","result_text":"ANSWER-ALPHA"}}`,
			},
			cards: []string{"call_launch_alpha"},
		},
		{
			name: "OpenCodeParallel", capture: "real/opencode/parallel", dialect: adapter.DialectOpenCode,
			cards:   []string{"call_launch_alpha", "call_launch_bravo"},
			results: map[string]string{"call_launch_alpha": "ANSWER-ALPHA", "call_launch_bravo": "ANSWER-BRAVO"},
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
