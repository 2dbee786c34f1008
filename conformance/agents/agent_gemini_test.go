package agents

import (
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// Gemini CLI in ACP mode (`gemini --acp`) against the Gemini API. Its
// subagents are the built-in agents it offers through the invoke_agent tool
// ({agent_name, prompt}); a subagent ends its own loop by calling
// complete_task with its agent's output field. The ACP side shows an
// invoke_agent call titled "Delegating to agent 'NAME'", kind think, with
// neither the prompt nor the answer; several calls of one model turn run one
// after the other.
func init() {
	register(Agent{
		Name: "gemini-0.61.0",
		Setup: func(t *testing.T, env *Env) {
			env.Set("GEMINI_API_KEY", "conformance")
			env.Set("GOOGLE_GEMINI_BASE_URL", env.Server.URL)
			// The CLI otherwise re-executes itself with a larger heap.
			env.Set("GEMINI_CLI_NO_RELAUNCH", "true")
			// A fixed model skips the classifier that routes "auto".
			env.WriteFile(t, ".gemini/settings.json", `{
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "telemetry": {"enabled": false},
  "privacy": {"usageStatisticsEnabled": false},
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "model": {"name": "gemini-2.5-pro"},
  "tools": {"useRipgrep": false}
}`)
		},
		Command: func(env *Env) []string {
			return []string{"node", env.NodeBin("@google/gemini-cli/bundle/gemini.js"), "--acp"}
		},
		Scenarios: []Scenario{
			geminiScenario("one", childA),
			geminiScenario("parallel", childA, childB),
			geminiDenied(),
			geminiCancel(),
		},
	})
}

// geminiAgents maps the scripted children onto built-in Gemini subagents:
// two read-only ones, which run without asking.
var geminiAgents = map[string]string{
	childA.Marker: "codebase_investigator",
	childB.Marker: "cli_help",
}

// geminiLaunch is the parent's invoke_agent call for c.
func geminiLaunch(_ *modelserver.Request, c Child) modelserver.ToolCall {
	name := geminiAgents[c.Marker]
	if name == "" {
		name = c.Marker
	}
	return modelserver.ToolCall{ID: "call_invoke_" + c.Marker, Name: "invoke_agent",
		Input: modelserver.Input(map[string]any{"agent_name": name, "prompt": c.Prompt()})}
}

// geminiScript is Fanout with the children answering the way a Gemini
// subagent must: through complete_task, with the output field its agent
// declares (the codebase investigator's and the CLI helper's "report"
// objects, else the generalist's "result").
func geminiScript(children ...Child) modelserver.Script {
	inner := Fanout(geminiLaunch, children...)
	return func(req *modelserver.Request) modelserver.Reply {
		rep := inner(req)
		if !req.HasTool("complete_task") || rep.Text == "" || len(rep.ToolCalls) > 0 {
			return rep
		}
		var out map[string]any
		switch {
		case strings.Contains(req.System, "Codebase Investigator"):
			out = map[string]any{"report": map[string]any{
				"SummaryOfFindings": rep.Text, "ExplorationTrace": []string{}, "RelevantLocations": []any{}}}
		case strings.Contains(req.System, "CLI Help Agent"):
			out = map[string]any{"report": map[string]any{"answer": rep.Text, "sources": []string{}}}
		default:
			out = map[string]any{"result": map[string]any{"response": rep.Text}}
		}
		return modelserver.Reply{ToolCalls: []modelserver.ToolCall{{ID: "call_complete", Name: "complete_task", Input: modelserver.Input(out)}}}
	}
}

func geminiScenario(name string, children ...Child) Scenario {
	sc := Scenario{Name: name, Prompt: UserPrompt, Script: geminiScript(children...)}
	for _, c := range children {
		// The answer never reaches the client: no Result is wanted.
		sc.Want = append(sc.Want, WantCard{Type: geminiAgents[c.Marker]})
	}
	return sc
}

// geminiDenied launches the generalist, whose tools may write: in ACP mode
// the CLI's policy denies it without asking the client, and the client sees
// only a failed update of a call it was never shown (no title, so no agent
// name: only the failure can be wanted).
func geminiDenied() Scenario {
	c := Child{Marker: "generalist", Description: "Inspect generalist"}
	return Scenario{Name: "policy-denied", Prompt: UserPrompt, Script: geminiScript(c),
		Want: []WantCard{{Status: "error"}}}
}

// geminiCancel interrupts the turn while the investigator's model call is
// held open: the CLI fails the invoke_agent call ("Aborted").
func geminiCancel() Scenario {
	sc := geminiScenario("cancel", hanging(childA))
	sc.Interrupt = true
	sc.Want[0].Status = "cancelled|error"
	return sc
}
