package adapter_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
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
			// copilot 1.0.102: the task tool call is titled with the
			// description, kind other, rawInput {description, prompt,
			// agent_type, name}, no _meta; the answer is rawOutput.content.
			name: "CopilotOne", capture: "real/copilot/one", dialect: adapter.DialectCopilot,
			payloads: map[string]string{
				"call_launch_alpha": `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","result_text":"ANSWER-ALPHA"}}`,
			},
			cards: []string{"call_launch_alpha"},
		},
		{
			name: "CopilotParallel", capture: "real/copilot/parallel", dialect: adapter.DialectCopilot,
			cards:   []string{"call_launch_alpha", "call_launch_bravo"},
			results: map[string]string{"call_launch_alpha": "ANSWER-ALPHA", "call_launch_bravo": "ANSWER-BRAVO"},
		},
		{
			// A background launch (rawInput.mode "background") completes at
			// once with a receipt naming the agent id: async; the parent's
			// read_agent call naming that id reads the answer (its last
			// "[Turn N]") and the agent's status word.
			name: "CopilotBackground", capture: "real/copilot/background", dialect: adapter.DialectCopilot,
			payloads: map[string]string{
				"call_launch_alpha": `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","status":"idle","agent_id":"c0399ce9-60df-4713-8b1f-8ac4654beeb1","result_text":"ANSWER-ALPHA","is_async":true}}`,
			},
			cards: []string{"call_launch_alpha"},
		},
		{
			// The child's own tool call arrives in the parent's session
			// tagged _meta["github.com/copilot"].agentId: nested under the
			// one running task, whose agent id it is.
			name: "CopilotChildToolCall", capture: "real/copilot/permission-allow", dialect: adapter.DialectCopilot,
			payloads: map[string]string{
				"call_launch_alpha":     `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","agent_id":"88ad8f03-9166-45d3-8852-22e50292c043","result_text":"ANSWER-ALPHA"}}`,
				"call_child_bash_alpha": `null`,
			},
			parents: map[string]string{"call_child_bash_alpha": "call_launch_alpha"},
			cards:   []string{"call_launch_alpha"},
		},
		{
			// auggie 0.36.0: title "sub-agent-<type>: <instruction>", kind
			// other, no rawInput; the answer is rawOutput.output.
			name: "AuggieOne", capture: "real/auggie/one", dialect: adapter.DialectAuggie,
			payloads: map[string]string{
				"toolu_launch_alpha": `{"kind":"subagent_task","subagent_task":{"description":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","prompt":"","subagent_type":"explore","result_text":"ANSWER-ALPHA"}}`,
			},
			cards: []string{"toolu_launch_alpha"},
		},
		{
			name: "AuggieParallel", capture: "real/auggie/parallel", dialect: adapter.DialectAuggie,
			cards:   []string{"toolu_launch_alpha", "toolu_launch_bravo"},
			results: map[string]string{"toolu_launch_alpha": "ANSWER-ALPHA", "toolu_launch_bravo": "ANSWER-BRAVO"},
		},
		{
			// Asking for a finished child's output again is a second
			// sub-agent call titled "sub-agent-explore: " (no instruction)
			// whose completion repeats the answer: a review, not a launch.
			name: "AuggieOutputReview", capture: "real/auggie/output", dialect: adapter.DialectAuggie,
			cards:   []string{"toolu_launch_alpha"},
			results: map[string]string{"toolu_launch_alpha": "ANSWER-ALPHA"},
		},
		{
			// A rejected child tool fails the child's call, then the task,
			// whose rawOutput has a message but no content: no result.
			name: "CopilotChildToolRejected", capture: "real/copilot/permission-reject", dialect: adapter.DialectCopilot,
			payloads: map[string]string{
				"call_launch_alpha": `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","agent_id":"3698d9e2-eaa0-4b45-88d0-ac9a6319af7a"}}`,
			},
			parents: map[string]string{"call_child_bash_alpha": "call_launch_alpha"},
			cards:   []string{"call_launch_alpha"},
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
		{
			// codex-acp 2.6.0, multi_agent v1 tool calls: one card per spawnAgent; the launch call's completion is a receipt, each wait result's message is that child's result.
			name: "Codex26V1Parallel", capture: "real/codex-2.6.0/v1-parallel", dialect: adapter.DialectCodex,
			payloads: map[string]string{
				"call_spawn_alpha": `{"kind":"subagent_task","subagent_task":{"description":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"","status":"completed","agent_id":"01a2339a-164d-7503-9593-6e2df3f0522b","model":"scripted","child_session_id":"01a2339a-164d-7503-9593-6e2df3f0522b","result_text":"ANSWER-ALPHA"}}`,
				"call_spawn_bravo": `{"kind":"subagent_task","subagent_task":{"description":"You are subagent bravo. Reply with the single word ANSWER-BRAVO.","prompt":"You are subagent bravo. Reply with the single word ANSWER-BRAVO.","subagent_type":"","status":"completed","agent_id":"01a2339a-167c-77f0-ac42-a2377f19f1bf","model":"scripted","child_session_id":"01a2339a-167c-77f0-ac42-a2377f19f1bf","result_text":"ANSWER-BRAVO"}}`,
			},
			cards: []string{"call_spawn_alpha", "call_spawn_bravo"},
		},
		{
			// codex-acp 2.6.0, a cancelled v1 turn: the wait gets no update, so the card stays open for the client's cancel path (acpscope ends it cancelled).
			name: "Codex26V1Cancel", capture: "real/codex-2.6.0/v1-cancel", dialect: adapter.DialectCodex,
			payloads: map[string]string{
				"call_spawn_alpha": `{"kind":"subagent_task","subagent_task":{"description":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"","status":"pendingInit","agent_id":"01a2339a-30d7-7341-ba18-bbb016de1af9","model":"scripted","child_session_id":"01a2339a-30d7-7341-ba18-bbb016de1af9"}}`,
			},
			cards: []string{"call_spawn_alpha"},
		},
		{
			// codex-acp 2.6.0, multi_agent v2: "Start subagent NAME" and the later "Complete subagent NAME" call are one card, typed by the task name; no prompt or answer on the wire.
			name: "Codex26V2Parallel", capture: "real/codex-2.6.0/v2-parallel", dialect: adapter.DialectCodex,
			payloads: map[string]string{
				"call_spawn_alpha": `{"kind":"subagent_task","subagent_task":{"description":"find_alpha","prompt":"","subagent_type":"find_alpha","status":"completed","agent_id":"01a2339a-bd90-70c2-82fa-5b1bc29f055a","child_session_id":"01a2339a-bd90-70c2-82fa-5b1bc29f055a"}}`,
				"call_spawn_bravo": `{"kind":"subagent_task","subagent_task":{"description":"find_bravo","prompt":"","subagent_type":"find_bravo","status":"completed","agent_id":"01a2339a-be08-7f50-939a-62a7169ea14e","child_session_id":"01a2339a-be08-7f50-939a-62a7169ea14e"}}`,
			},
			cards: []string{"call_spawn_alpha", "call_spawn_bravo"},
		},
		{
			// codex-acp 2.6.0, a cancelled v2 turn: no completion call, the card stays open.
			name: "Codex26V2Cancel", capture: "real/codex-2.6.0/v2-cancel", dialect: adapter.DialectCodex,
			payloads: map[string]string{
				"call_spawn_alpha": `{"kind":"subagent_task","subagent_task":{"description":"find_alpha","prompt":"","subagent_type":"find_alpha","status":"started","agent_id":"01a2339a-e162-7640-9e56-047b610bd8f6","child_session_id":"01a2339a-e162-7640-9e56-047b610bd8f6"}}`,
			},
			cards: []string{"call_spawn_alpha"},
		},
		{
			// codex-acp 2.6.0, --subagents: a child session <root>:subagent:<thread>, read by the core; the agent id is the thread.
			name: "Codex26V2SessionsOne", capture: "real/codex-2.6.0/v2-sessions-one", dialect: adapter.DialectCodex,
			payloads: map[string]string{
				"01a2339a-fa68-7f62-9c48-287ea058337b:subagent:01a2339a-fb76-7f12-ae17-f24f5abb6002": `{"kind":"subagent_task","subagent_task":{"description":"Find alpha","prompt":"","subagent_type":"","status":"idle","agent_id":"01a2339a-fb76-7f12-ae17-f24f5abb6002","model":"scripted","child_session_id":"01a2339a-fa68-7f62-9c48-287ea058337b:subagent:01a2339a-fb76-7f12-ae17-f24f5abb6002","result_text":"ANSWER-ALPHA"}}`,
			},
			cards: []string{"01a2339a-fa68-7f62-9c48-287ea058337b:subagent:01a2339a-fb76-7f12-ae17-f24f5abb6002"},
		},
		{
			// qwen-code 0.24.4: the executed agent call is the card (not
			// the "preparing" frame); the child's glob call, on the
			// parent's session, nests by _meta.parentToolCallId; the
			// task_execution record gives the result and the numbers;
			// the child's own chunks (two thoughts, its message, two
			// usage chunks) are consumed, the parent's thoughts not.
			name: "QwenOne", capture: "real/qwen/one", dialect: adapter.DialectQwen,
			payloads: map[string]string{
				"call_launch_alpha":     `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","status":"completed","duration_ms":4442,"total_tokens":240,"tool_use_count":1,"result_text":"ANSWER-ALPHA"}}`,
				"call_child_glob_alpha": `null`,
			},
			parents:  map[string]string{"call_child_glob_alpha": "call_launch_alpha"},
			cards:    []string{"call_launch_alpha"},
			counters: map[string]int64{adapter.CounterQwenChildText: 5},
		},
		{
			name: "QwenParallel", capture: "real/qwen/parallel", dialect: adapter.DialectQwen,
			cards:   []string{"call_launch_alpha", "call_launch_bravo"},
			results: map[string]string{"call_launch_alpha": "ANSWER-ALPHA", "call_launch_bravo": "ANSWER-BRAVO"},
		},
		{
			// A child cut short by session/cancel ends failed: no result,
			// the record's terminateReason its error.
			name: "QwenCancel", capture: "real/qwen/cancel", dialect: adapter.DialectQwen,
			payloads: map[string]string{
				"call_launch_alpha": `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","status":"failed","error_message":"Failed to run subagent: Request was aborted."}}`,
			},
			cards: []string{"call_launch_alpha"},
		},
		{
			// A background launch: async, the receipt's task id the agent
			// id, never a result; the parent's notice that the child
			// finished gives the status.
			name: "QwenBackground", capture: "real/qwen/background", dialect: adapter.DialectQwen,
			payloads: map[string]string{
				"call_launch_alpha": `{"kind":"subagent_task","subagent_task":{"description":"Inspect alpha","prompt":"You are subagent alpha. Reply with the single word ANSWER-ALPHA.","subagent_type":"general-purpose","status":"completed","agent_id":"general-purpose-call_launch_alpha","is_async":true}}`,
			},
			cards: []string{"call_launch_alpha"},
		},
	})
}

// TestCopilotChildTextIsTheChilds checks Tracker.ChildText on real Copilot
// frames: while a foreground task runs, the parent's agent_message_chunk
// is the child's final text (the parent waits on the task); one running
// task names its card, several cannot be told apart; text while only a
// background child runs is the parent's own.
func TestCopilotChildTextIsTheChilds(t *testing.T) {
	type owner struct {
		id    string
		child bool
	}
	for _, tt := range []struct {
		capture string
		want    map[string]owner // chunk text → owner
	}{
		{"one", map[string]owner{"ANSWER-ALPHA": {"call_launch_alpha", true}, "All subagents reported.": {}}},
		{"parallel", map[string]owner{"ANSWER-ALPHA": {"", true}, "ANSWER-BRAVO": {"", true}, "All subagents reported.": {}}},
		{"background", map[string]owner{"ANSWER-ALPHA": {}, "All subagents reported.": {}}},
	} {
		t.Run(tt.capture, func(t *testing.T) {
			c, err := capture.ReadFile(filepath.Join("testdata", "real", "copilot", tt.capture+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := adapter.NewTracker(adapter.Config{})
			if err != nil {
				t.Fatal(err)
			}
			r := adapter.NewReplayer(tr)
			seen := 0
			for _, e := range c.Entries {
				if m, err := capture.ParseMessage(e.Msg); err == nil && m.Method == acp.ClientMethodSessionUpdate {
					var n acp.SessionNotification
					if json.Unmarshal(m.Params, &n) == nil && n.Update.AgentMessageChunk != nil {
						text := n.Update.AgentMessageChunk.Content.Text.Text
						id, child := tr.ChildText(string(n.SessionId))
						if want, ok := tt.want[text]; !ok || (owner{id, child}) != want {
							t.Errorf("%q: owner %q child %t, want %+v", text, id, child, want)
						}
						seen++
					}
				}
				if err := r.Feed(string(e.From), e.Msg); err != nil {
					t.Fatal(err)
				}
			}
			if seen == 0 {
				t.Fatal("no agent text in the capture")
			}
		})
	}
}
