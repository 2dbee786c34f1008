package agents

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// Codex through Zed's ACP adapter, against the Responses API of a custom
// model provider. The model spawns children with spawn_agent and collects
// them with wait_agent (its multi_agent feature); codex-acp 0.16.0 sends the
// client nothing for either call, so no card is the right outcome. The
// scenarios prove that: the children really run (the model server log) and
// the turn ends with no card.
func init() {
	register(Agent{
		Name: "codex-acp-0.16.0",
		Setup: func(t *testing.T, env *Env) {
			env.Set("CODEX_HOME", env.Home+"/.codex")
			env.Set("CONFORMANCE_API_KEY", "conformance")
			// A model slug Codex has no metadata for: its multi-agent
			// tools are then offered directly, not behind tool_search.
			env.WriteFile(t, ".codex/config.toml", fmt.Sprintf(`model = "scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
wire_api = "responses"
env_key = "CONFORMANCE_API_KEY"

[features]
multi_agent = true

[analytics]
enabled = false
`, env.Server.URL))
		},
		Command: func(env *Env) []string {
			return []string{"node", env.NodeBin("@zed-industries/codex-acp/bin/codex-acp.js")}
		},
		Scenarios: []Scenario{
			codexScenario("one", childA),
			codexScenario("parallel", childA, childB),
		},
	})
}

// codexScript: the parent spawns every child in one model message, then
// waits on the spawned agents until each has completed, then answers
// Final. A child (a conversation not offered spawn_agent) answers with its
// Answer.
func codexScript(children ...Child) modelserver.Script {
	return func(req *modelserver.Request) modelserver.Reply {
		if len(req.Tools) == 0 {
			return modelserver.Reply{Text: "Scripted title"}
		}
		if !req.HasTool("spawn_agent") {
			all := req.AllText()
			for _, c := range children {
				if strings.Contains(all, c.Marker) {
					return modelserver.Reply{Text: c.Answer()}
				}
			}
			return modelserver.Reply{Text: "No task."}
		}
		var spawned []string
		done := map[string]bool{}
		waits := 0
		for _, res := range req.ToolResults() {
			switch {
			case strings.HasPrefix(res.CallID, "call_spawn_"):
				var out struct {
					AgentID string `json:"agent_id"`
				}
				if json.Unmarshal([]byte(res.Text), &out) == nil && out.AgentID != "" {
					spawned = append(spawned, out.AgentID)
				}
			case strings.HasPrefix(res.CallID, "call_wait_"):
				waits++
				var out struct {
					Status map[string]map[string]any `json:"status"`
				}
				_ = json.Unmarshal([]byte(res.Text), &out)
				for id, st := range out.Status {
					if _, ok := st["completed"]; ok {
						done[id] = true
					}
				}
			}
		}
		if len(spawned) == 0 {
			var calls []modelserver.ToolCall
			for _, c := range children {
				calls = append(calls, modelserver.ToolCall{ID: "call_spawn_" + c.Marker, Name: "spawn_agent",
					Input: modelserver.Input(map[string]any{"message": c.Prompt()})})
			}
			return modelserver.Reply{ToolCalls: calls}
		}
		var pending []string
		for _, id := range spawned {
			if !done[id] {
				pending = append(pending, id)
			}
		}
		// A bounded number of waits: a child that never completes ends
		// the turn instead of looping.
		if len(pending) > 0 && waits < 2*len(children)+2 {
			return modelserver.Reply{ToolCalls: []modelserver.ToolCall{{ID: fmt.Sprintf("call_wait_%d", waits+1), Name: "wait_agent",
				Input: modelserver.Input(map[string]any{"targets": pending, "timeout_ms": 60000})}}}
		}
		return modelserver.Reply{Text: Final}
	}
}

// codexScenario wants no card, and checks that every child was spawned and
// answered and that the parent saw every answer through wait_agent.
func codexScenario(name string, children ...Child) Scenario {
	return Scenario{Name: name, Prompt: UserPrompt, Script: codexScript(children...),
		Check: func(t *testing.T, r *Run) {
			answered := map[string]bool{}
			var waited []string
			for _, e := range r.Server.Log() {
				if e.Request == nil || e.Reply == nil {
					continue
				}
				for _, c := range children {
					if e.Reply.Text == c.Answer() {
						answered[c.Marker] = true
					}
				}
				for _, res := range e.Request.ToolResults() {
					if strings.HasPrefix(res.CallID, "call_wait_") {
						waited = append(waited, res.Text)
					}
				}
			}
			for _, c := range children {
				if !answered[c.Marker] {
					t.Errorf("child %s never answered: the model server never saw its conversation", c.Marker)
				}
				if !strings.Contains(strings.Join(waited, "\n"), c.Answer()) {
					t.Errorf("no wait_agent result carried %s's answer %q", c.Marker, c.Answer())
				}
			}
		}}
}
