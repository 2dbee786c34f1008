package agents

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// GitHub Copilot CLI in ACP mode (`copilot --acp --stdio`), offline with a
// bring-your-own-key provider (OpenAI chat completions) pointed at the
// model server. Its subagent tool is `task` {description, prompt,
// agent_type, name, mode: sync|background}.
func init() {
	bash := func(c Child) Child {
		return withTool(c, modelserver.ToolCall{ID: "call_child_bash_" + c.Marker, Name: "bash",
			Input: modelserver.Input(map[string]any{"command": "echo conformance > note.txt", "description": "Write a note"})})
	}
	// A rejected child tool ends the child without an answer: Copilot
	// fails the task ("Agent completed but produced no response.").
	rejected := copilotScenario("permission-reject", "", []string{"--permission", "reject"}, "", bash(childA))
	rejected.Want[0].Result, rejected.Want[0].Status = "", "error"
	rejected.Check = askedPermission
	allowed := copilotScenario("permission-allow", "", []string{"--permission", "allow"}, "", bash(childA))
	allowed.Check = askedPermission
	cancel := copilotScenario("cancel", "", nil, "", hanging(childA))
	cancel.Interrupt = true
	cancel.Want[0].Result, cancel.Want[0].Status = "", "cancelled|error"
	register(Agent{
		Name: "copilot-1.0.102",
		Setup: func(t *testing.T, env *Env) {
			env.Set("COPILOT_OFFLINE", "true")
			env.Set("COPILOT_PROVIDER_BASE_URL", env.Server.URL+"/v1")
			env.Set("COPILOT_PROVIDER_API_KEY", "conformance")
			env.Set("COPILOT_MODEL", "scripted")
			// Copilot unpacks itself (~235 MB) into ~/.cache/copilot/pkg on
			// first start; the unpacked package is shared between runs
			// beside node_modules, like the package itself.
			shared := filepath.Join(env.Modules, ".acp-cache", "copilot-pkg")
			cache := filepath.Join(env.Home, ".cache", "copilot")
			for _, d := range []string{shared, cache} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(shared, filepath.Join(cache, "pkg")); err != nil {
				t.Fatal(err)
			}
		},
		Command: func(env *Env) []string {
			return []string{"node", env.NodeBin("@github/copilot/npm-loader.js"), "--acp", "--stdio"}
		},
		Scenarios: []Scenario{
			copilotScenario("one", "", nil, "", childA),
			copilotScenario("parallel", "", nil, "", childA, childB),
			copilotScenario("background", "background", nil, "", childA),
			allowed,
			rejected,
			cancel,
		},
	})
}

// copilotLaunch returns the parent's task call; mode "" leaves the mode
// to Copilot (sync).
func copilotLaunch(mode string) func(req *modelserver.Request, c Child) modelserver.ToolCall {
	return func(req *modelserver.Request, c Child) modelserver.ToolCall {
		in := map[string]any{"description": c.Description, "prompt": c.Prompt(), "agent_type": "general-purpose", "name": c.Marker}
		if mode != "" {
			in["mode"] = mode
		}
		return modelserver.ToolCall{ID: "call_launch_" + c.Marker, Name: "task", Input: modelserver.Input(in)}
	}
}

func copilotScenario(name, mode string, flags []string, gap string, children ...Child) Scenario {
	sc := Scenario{Name: name, Prompt: UserPrompt, Flags: flags, Gap: gap, Script: Fanout(copilotLaunch(mode), children...)}
	for _, c := range children {
		w := WantCard{Description: c.Description, Type: "general-purpose", Result: c.Answer()}
		if mode == "background" {
			// The task's completion is the launch receipt; the answer
			// comes later, as the parent's untagged text and in the
			// read_agent call Copilot makes, which gives it to the card.
			w.Async = ptr(true)
		}
		sc.Want = append(sc.Want, w)
	}
	return sc
}
