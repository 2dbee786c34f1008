package agents

import (
	"encoding/json"
	"fmt"
	"os"
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
			// "untrusted": commands need approval (only
			// child-approval-unasked runs one). A model slug Codex has
			// no metadata for: its multi-agent tools are then offered
			// directly, not behind tool_search.
			writeCodexConfig(t, env, "untrusted", "multi_agent")
		},
		Command: func(env *Env) []string {
			return []string{"node", env.NodeBin("@zed-industries/codex-acp/bin/codex-acp.js")}
		},
		Scenarios: []Scenario{
			codexScenario("one", childA),
			codexScenario("parallel", childA, childB),
			codexChildApproval(),
			codexCancel(),
		},
	})
}

// codexScript: the parent spawns every child in one model message, then
// waits on the spawned agents (at most maxWaits wait_agent calls of
// timeoutMs each) until each has completed, then answers Final. A child (a
// conversation not offered spawn_agent) makes its Tool call, if any, then
// answers with its Answer.
func codexScript(maxWaits, timeoutMs int, children ...Child) modelserver.Script {
	return func(req *modelserver.Request) modelserver.Reply {
		if len(req.Tools) == 0 {
			return modelserver.Reply{Text: "Scripted title"}
		}
		if !req.HasTool("spawn_agent") {
			all := req.AllText()
			for _, c := range children {
				if strings.Contains(all, c.Marker) {
					return c.Reply(req)
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
		if len(pending) > 0 && waits < maxWaits {
			return modelserver.Reply{ToolCalls: []modelserver.ToolCall{{ID: fmt.Sprintf("call_wait_%d", waits+1), Name: "wait_agent",
				Input: modelserver.Input(map[string]any{"targets": pending, "timeout_ms": timeoutMs})}}}
		}
		return modelserver.Reply{Text: Final}
	}
}

// codexScenario wants no card, and checks that every child was spawned and
// answered and that the parent saw every answer through wait_agent.
func codexScenario(name string, children ...Child) Scenario {
	return Scenario{Name: name, Prompt: UserPrompt, Script: codexScript(2*len(children)+2, 60000, children...),
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

// codexChildApproval: the child runs a command that writes a file, which
// the "untrusted" approval policy must approve first. codex-acp 0.16.0 never
// forwards a child's approval to the client: no permission request reaches
// acpscope, the child blocks, and the parent's one wait_agent (its shortest
// timeout) ends without the child's answer. So no allow/reject scenario is
// possible for Codex children; this one proves the request stays unasked
// and that no card appears.
func codexChildApproval() Scenario {
	c := withTool(childA, modelserver.ToolCall{ID: "call_child_exec", Name: "exec_command",
		Input: modelserver.Input(map[string]any{"cmd": "echo conformance > note.txt"})})
	return Scenario{Name: "child-approval-unasked", Prompt: UserPrompt, Flags: []string{"--permission", "allow"},
		Script: codexScript(1, 10000, c),
		Check: func(t *testing.T, r *Run) {
			asked, answered := false, false
			for _, e := range r.Server.Log() {
				if e.Request == nil || e.Reply == nil {
					continue
				}
				for _, call := range e.Reply.ToolCalls {
					asked = asked || call.ID == c.Tool.ID
				}
				for _, res := range e.Request.ToolResults() {
					answered = answered || res.CallID == c.Tool.ID
				}
			}
			if !asked {
				t.Errorf("the child never made its %s call", c.Tool.Name)
			}
			if answered {
				t.Errorf("the child's %s got a result: its approval was settled after all", c.Tool.Name)
			}
			data, err := os.ReadFile(r.Capture)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), `"session/request_permission"`) {
				t.Errorf("a permission request reached the client")
			}
		}}
}

// codexCancel interrupts the turn while the spawned child's model call is
// held open: still no frame about the child, so still no card.
func codexCancel() Scenario {
	return Scenario{Name: "cancel", Prompt: UserPrompt, Interrupt: true, Script: codexScript(1, 10000, hanging(childA))}
}
