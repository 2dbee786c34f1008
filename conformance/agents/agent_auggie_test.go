package agents

import (
	"os"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// Auggie in ACP mode (`auggie --acp`) against a scripted Augment backend.
// Its sub-agents are the tools sub-agent-<type> ({action: "run", name,
// instruction}), offered once get-models turns the sub-agent feature flag
// on. On its first prompt it asks the client whether to index the
// workspace (answered by the --permission policy like any other request).
func init() {
	register(Agent{
		Name: "auggie-0.36.0",
		Setup: func(t *testing.T, env *Env) {
			env.Set("AUGMENT_SESSION_AUTH", `{"accessToken":"conformance","tenantURL":"`+env.Server.URL+`/","scopes":["email"]}`)
			env.Set("AUGMENT_DISABLE_AUTO_UPDATE", "1")
			// Processes ask the user first (by default every tool runs
			// unasked); only child-tool-denied launches one.
			env.WriteFile(t, ".augment/settings.json", `{"toolPermissions":[{"toolName":"launch-process","permission":{"type":"ask-user"}}]}`)
		},
		Command: func(env *Env) []string {
			return []string{"node", env.NodeBin("@augmentcode/auggie/augment.mjs"), "--acp"}
		},
		Scenarios: []Scenario{
			auggieScenario("one", "explore", nil, childA),
			auggieScenario("parallel", "explore", nil, childA, childB),
			auggieChildToolDenied(),
			auggieCancel(),
			auggieOutput(),
		},
	})
}

// auggieLaunch runs c as a sub-agent of the given type, named after its
// marker.
func auggieLaunch(kind string) func(*modelserver.Request, Child) modelserver.ToolCall {
	return func(_ *modelserver.Request, c Child) modelserver.ToolCall {
		return modelserver.ToolCall{ID: "toolu_launch_" + c.Marker, Name: "sub-agent-" + kind,
			Input: modelserver.Input(map[string]any{"action": "run", "name": c.Marker, "instruction": c.Prompt()})}
	}
}

func auggieScenario(name, kind string, flags []string, children ...Child) Scenario {
	sc := Scenario{Name: name, Prompt: UserPrompt, Flags: flags, Script: Fanout(auggieLaunch(kind), children...)}
	for _, c := range children {
		sc.Want = append(sc.Want, WantCard{Type: kind, Result: c.Answer()})
	}
	return sc
}

// auggieChildToolDenied: the child launches a process, which the settings
// mark "ask-user". Auggie 0.36.0 does not ask the client for a sub-agent's
// tool: it denies the call inside the child, even under --permission allow,
// so no allow/reject scenario exists for its sub-agents. The only
// permission request of the turn is the workspace-indexing question.
func auggieChildToolDenied() Scenario {
	c := withTool(childA, modelserver.ToolCall{ID: "toolu_child_process", Name: "launch-process",
		Input: modelserver.Input(map[string]any{"command": "echo conformance > note.txt", "wait": true, "max_wait_seconds": 10})})
	sc := auggieScenario("child-tool-denied", "general-purpose", []string{"--permission", "allow"}, c)
	sc.Check = func(t *testing.T, r *Run) {
		denied := false
		for _, e := range r.Server.Log() {
			if e.Request == nil {
				continue
			}
			for _, res := range e.Request.ToolResults() {
				if res.CallID == c.Tool.ID {
					denied = res.IsError && strings.Contains(res.Text, "denied")
					t.Logf("the child's %s result (error %v): %s", c.Tool.Name, res.IsError, res.Text)
				}
			}
		}
		if !denied {
			t.Errorf("the child's %s was not denied inside the child", c.Tool.Name)
		}
		data, err := os.ReadFile(r.Capture)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), `"session/request_permission"`); n != 1 {
			t.Errorf("%d permission requests, want only the workspace-indexing one", n)
		}
	}
	return sc
}

// auggieCancel interrupts the turn while the sub-agent's model call is held
// open. Auggie then reports the sub-agent call "completed" with no content,
// and answers the prompt "cancelled": the card should not read complete.
func auggieCancel() Scenario {
	sc := auggieScenario("cancel", "explore", nil, hanging(childA))
	sc.Gap = "auggie cancel: the cancelled sub-agent's update says completed (no content); the card reads complete"
	sc.Interrupt = true
	sc.Want[0].Result, sc.Want[0].Status = "", "cancelled|error"
	return sc
}

// auggieOutput: after the child finished, the parent asks the same tool for
// the child's stored output ({action: "output", name}); that second call
// is a review of the same sub-agent, not a new one.
func auggieOutput() Scenario {
	launch := auggieLaunch("explore")
	run := Fanout(launch, childA)
	review := modelserver.ToolCall{ID: "toolu_output_" + childA.Marker, Name: "sub-agent-explore",
		Input: modelserver.Input(map[string]any{"action": "output", "name": childA.Marker})}
	return Scenario{Name: "output", Prompt: UserPrompt,
		Script: func(req *modelserver.Request) modelserver.Reply {
			if len(req.Tools) > 0 && !strings.Contains(req.FirstUserText(), childA.Marker) && len(req.ToolResults()) == 1 {
				return modelserver.Reply{ToolCalls: []modelserver.ToolCall{review}}
			}
			return run(req)
		},
		Want: []WantCard{{Type: "explore", Result: childA.Answer()}}}
}
