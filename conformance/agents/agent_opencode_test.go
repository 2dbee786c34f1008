package agents

import (
	"fmt"
	"testing"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// OpenCode (`opencode acp`) with a custom provider on
// @ai-sdk/openai-compatible (bundled in the binary) pointed at the model
// server's chat completions. Its subagent tool is `task` {description,
// prompt, subagent_type}; each child runs in its own OpenCode session.
func init() {
	bash := withTool(childA, modelserver.ToolCall{ID: "call_child_bash_alpha", Name: "bash",
		Input: modelserver.Input(map[string]any{"command": "echo conformance > note.txt", "description": "Write a note"})})
	// OpenCode 1.18.33 does not forward a child session's permission
	// request over ACP (it asks only for the ACP session itself), so a
	// child tool set to "ask" hangs the turn: no allow/reject scenario.
	// A tool denied by configuration is refused inside the child, which
	// then answers.
	denied := opencodeScenario("child-tool-denied", nil, "", bash)
	denied.Setup = func(t *testing.T, env *Env) { env.Set("OPENCODE_PERMISSION", `{"bash":"deny"}`) }
	cancel := opencodeScenario("cancel", nil, "", hanging(childA))
	cancel.Interrupt = true
	cancel.Want[0].Result, cancel.Want[0].Status = "", "cancelled|error"
	register(Agent{
		Name: "opencode-1.18.33",
		Setup: func(t *testing.T, env *Env) {
			for _, v := range []string{"OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH",
				"OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_LSP_DOWNLOAD", "OPENCODE_DISABLE_SHARE",
				"OPENCODE_DISABLE_AUTOCOMPACT"} {
				env.Set(v, "1")
			}
			env.Set("OPENCODE_MODELS_URL", env.Server.URL+"/models.dev")
			// Without rg on PATH OpenCode downloads ripgrep.
			env.Stub(t, "rg", `[ "$1" = "--version" ] && echo "ripgrep 14.1.1" && exit 0; exit 1`)
			env.WriteFile(t, ".config/opencode/opencode.json", fmt.Sprintf(`{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "model": "scripted/scripted",
  "small_model": "scripted/scripted",
  "provider": {
    "scripted": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Scripted",
      "options": {"baseURL": %q, "apiKey": "conformance"},
      "models": {"scripted": {"name": "Scripted", "tool_call": true, "limit": {"context": 128000, "output": 8192}}}
    }
  }
}`, env.Server.URL+"/v1"))
		},
		Command: func(env *Env) []string {
			return []string{env.NodeBin(".bin/opencode"), "acp"}
		},
		Scenarios: []Scenario{
			opencodeScenario("one", nil, "", childA),
			opencodeScenario("parallel", nil, "", childA, childB),
			denied,
			cancel,
		},
	})
}

// opencodeLaunch is the parent's task call.
func opencodeLaunch(req *modelserver.Request, c Child) modelserver.ToolCall {
	return modelserver.ToolCall{ID: "call_launch_" + c.Marker, Name: "task", Input: modelserver.Input(map[string]any{
		"description": c.Description, "prompt": c.Prompt(), "subagent_type": "general",
	})}
}

func opencodeScenario(name string, flags []string, gap string, children ...Child) Scenario {
	sc := Scenario{Name: name, Prompt: UserPrompt, Flags: flags, Gap: gap, Script: Fanout(opencodeLaunch, children...)}
	for _, c := range children {
		sc.Want = append(sc.Want, WantCard{Description: c.Description, Type: "general", Result: c.Answer()})
	}
	return sc
}
