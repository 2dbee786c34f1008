package agents

import (
	"testing"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// Qwen Code in ACP mode (`qwen --acp`), offline with its OpenAI-compatible
// provider pointed at the model server's chat completions. Its subagent
// tool is `agent` {description, prompt, subagent_type, run_in_background};
// a foreground child's messages, thoughts and tool calls arrive on the
// parent's session, tagged _meta.parentToolCallId (the launch),
// subagentType and provenance "subagent".
func init() {
	// The child lists the workspace's Markdown files before it answers:
	// its tool call arrives on the parent's session, under its card.
	globbing := withTool(childA, modelserver.ToolCall{ID: "call_child_glob_alpha", Name: "glob",
		Input: modelserver.Input(map[string]any{"pattern": "*.md"})})
	cancel := qwenScenario("cancel", hanging(childA))
	cancel.Interrupt = true
	cancel.Want[0].Result, cancel.Want[0].Status = "", "cancelled|error"
	// Left to itself Qwen runs a top-level child in the background: the
	// launch completes at once with a receipt, and the child's answer is
	// for a later turn (a completion notification).
	background := Scenario{Name: "background", Prompt: UserPrompt, Script: Fanout(qwenLaunchMode(nil), childA),
		Want: []WantCard{{Description: childA.Description, Type: "general-purpose", Async: ptr(true)}}}
	register(Agent{
		Name: "qwen-0.24.4",
		Setup: func(t *testing.T, env *Env) {
			env.Set("OPENAI_API_KEY", "conformance")
			env.Set("OPENAI_BASE_URL", env.Server.URL+"/v1")
			env.Set("OPENAI_MODEL", "scripted")
			// The bundled skills are switched off: their bodies (about
			// 550 kB) would fill every capture's available_commands_update.
			env.WriteFile(t, ".qwen/settings.json", `{
  "security": {"auth": {"selectedType": "openai"}},
  "skills": {"disabled": ["batch", "browser-use", "computer-use", "coordinate", "dataviz", "extension-creator",
    "goal-draft", "loop", "new-app", "qc-helper", "review", "simplify", "stuck", "workflow-authoring",
    "workflow-creator", "zvec-grep-install"]},
  "model": {"name": "scripted"},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "telemetry": {"enabled": false},
  "privacy": {"usageStatisticsEnabled": false}
}`)
		},
		Command: func(env *Env) []string {
			return []string{"node", env.NodeBin("@qwen-code/qwen-code/cli-entry.js"), "--acp",
				"--auth-type", "openai", "--openai-base-url", env.Server.URL + "/v1", "--openai-api-key", "conformance",
				"--model", "scripted", "--approval-mode", "yolo"}
		},
		Scenarios: []Scenario{
			thinking(qwenScenario("one", globbing)),
			qwenScenario("parallel", childA, childB),
			cancel,
			background,
		},
	})
}

// qwenLaunch is the parent's agent call, in the foreground (Qwen runs a
// top-level child in the background unless told otherwise).
var qwenLaunch = qwenLaunchMode(ptr(false))

// qwenLaunchMode returns the parent's agent call with run_in_background
// set to *background, or left out when nil.
func qwenLaunchMode(background *bool) func(req *modelserver.Request, c Child) modelserver.ToolCall {
	return func(req *modelserver.Request, c Child) modelserver.ToolCall {
		in := map[string]any{"description": c.Description, "prompt": c.Prompt(), "subagent_type": "general-purpose"}
		if background != nil {
			in["run_in_background"] = *background
		}
		return modelserver.ToolCall{ID: "call_launch_" + c.Marker, Name: "agent", Input: modelserver.Input(in)}
	}
}

func qwenScenario(name string, children ...Child) Scenario {
	sc := Scenario{Name: name, Prompt: UserPrompt, Script: Fanout(qwenLaunch, children...)}
	for _, c := range children {
		sc.Want = append(sc.Want, WantCard{Description: c.Description, Type: "general-purpose", Result: c.Answer()})
	}
	return sc
}

// thinking makes every reply of sc that carries text or tool calls reason
// first: the parent's thoughts are its own, the children's arrive on the
// parent's session as agent_thought_chunk tagged with their launch.
func thinking(sc Scenario) Scenario {
	script := sc.Script
	sc.Script = func(req *modelserver.Request) modelserver.Reply {
		r := script(req)
		if len(req.Tools) > 0 && !r.Hold {
			r.Thought = "Thinking it over."
		}
		return r
	}
	return sc
}
