package agents

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// Codex through @agentclientprotocol/codex-acp 2.6.0 (codex app-server of
// @openai/codex 0.166.0), against the Responses API of a custom model
// provider. Unlike 0.16.0 it reports subagents, in four shapes: the
// multi-agent tools v1 (features.multi_agent: spawn_agent(message),
// wait_agent(targets)) or v2 (features.multi_agent_v2: spawn_agent(task_name,
// message), wait_agent(timeout_ms)), each either as tool calls (a client
// without clientCapabilities.subagents) or as child sessions (--subagents).
// Every shape runs one child, two in parallel, a cancelled turn, and one
// child followed by a reload of the session on the same connection and a
// second turn.
func init() {
	var scenarios []Scenario
	for _, multi := range []codexMulti{codexV1, codexV2} {
		for _, form := range []struct {
			suffix string
			flags  []string
		}{{"", nil}, {"-sessions", []string{"--subagents"}}} {
			name := multi.name + form.suffix
			scenarios = append(scenarios,
				codex26Scenario(multi, name+"-one", form.flags, childA),
				codex26Scenario(multi, name+"-parallel", form.flags, childA, childB),
				codex26Cancel(multi, name+"-cancel", form.flags),
				codex26Reload(multi, name+"-reload", form.flags),
			)
		}
		// As a JetBrains AIR client (acpscope run --as): native subagent
		// sessions with backgroundSubagents (v2: AIR's subagent_spawned; v1:
		// tool calls), and without native sessions,
		// where codex-acp sends the tool calls of a client without
		// clientCapabilities.subagents.
		one, parallel := codex26Scenario(multi, multi.name+"-air-one", air, childA), codex26Scenario(multi, multi.name+"-air-parallel", air, childA, childB)
		if !multi.v2 {
			parallel.Gap = codexV1AIRGap
		}
		scenarios = append(scenarios, one, parallel,
			codex26Scenario(multi, multi.name+"-air-nonnative", []string{"--as", "jetbrains-air-nonnative"}, childA))
	}
	register(Agent{
		Name: "codex-acp-2.6.0",
		Setup: func(t *testing.T, env *Env) {
			env.Set("CODEX_HOME", env.Home+"/.codex")
			env.Set("CONFORMANCE_API_KEY", "conformance")
		},
		Command: func(env *Env) []string {
			return []string{"node", env.NodeBin("@agentclientprotocol/codex-acp/dist/index.js")}
		},
		Scenarios: scenarios,
	})
}

// codexMulti is one of Codex's multi-agent tool sets.
type codexMulti struct {
	name    string // scenario prefix: "v1" or "v2"
	feature string // the [features] key that turns it on
	v2      bool   // spawn_agent takes a task name; wait_agent a timeout only
}

var (
	codexV1 = codexMulti{name: "v1", feature: "multi_agent"}
	codexV2 = codexMulti{name: "v2", feature: "multi_agent_v2", v2: true}
)

// codex26Config writes the configuration of a 2.6.0 run with the tool
// set's feature. 0.166 refuses approval_policy "untrusted"; nothing here
// needs approval.
func codex26Config(multi codexMulti) func(t *testing.T, env *Env) {
	return func(t *testing.T, env *Env) { writeCodexConfig(t, env, "never", multi.feature) }
}

// writeCodexConfig writes $CODEX_HOME/config.toml for every Codex the
// harness runs: the scripted provider, a model slug Codex has no metadata
// for (a catalogued one hides the multi-agent tools behind tool_search),
// the approval policy and the multi-agent feature to turn on.
func writeCodexConfig(t *testing.T, env *Env, approval, feature string) {
	env.WriteFile(t, ".codex/config.toml", fmt.Sprintf(`model = "scripted"
model_provider = "scripted"
approval_policy = %q
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
wire_api = "responses"
env_key = "CONFORMANCE_API_KEY"

[features]
%s = true

[analytics]
enabled = false
`, approval, env.Server.URL, feature))
}

// codexTaskName is the v2 task name of a child.
func codexTaskName(c Child) string { return "find_" + c.Marker }

// codex26Script: the parent spawns every child in one model message, then
// calls wait_agent (at most maxWaits times, timeoutMs each) until every
// child's answer came back in a wait result (v1) or once per child (v2),
// then answers Final. A child's conversation (one not offered spawn_agent)
// makes its Tool call, if any, then answers its Answer.
func codex26Script(multi codexMulti, maxWaits, timeoutMs int, children ...Child) modelserver.Script {
	return func(req *modelserver.Request) modelserver.Reply {
		if len(req.Tools) == 0 {
			return modelserver.Reply{Text: "Scripted title"}
		}
		// A child is not offered spawn_agent; its task is the latest
		// message naming one (a v2 child's conversation starts with the
		// parent's history, the user's prompt included).
		if !req.HasTool("spawn_agent") {
			if c, ok := latestTask(req, children); ok {
				return c.Reply(req)
			}
			return modelserver.Reply{Text: "No task."}
		}
		var agentIDs []string
		var waited strings.Builder
		spawns, waits := 0, 0
		for _, res := range req.ToolResults() {
			switch {
			case strings.HasPrefix(res.CallID, "call_spawn_"):
				spawns++
				if id := jsonString(res.Text, "agent_id"); id != "" {
					agentIDs = append(agentIDs, id)
				}
			case strings.HasPrefix(res.CallID, "call_wait_"):
				waits++
				waited.WriteString(res.Text)
			}
		}
		if spawns == 0 {
			var calls []modelserver.ToolCall
			for _, c := range children {
				in := map[string]any{"message": c.Prompt()}
				if multi.v2 {
					in["task_name"] = codexTaskName(c)
				}
				calls = append(calls, modelserver.ToolCall{ID: "call_spawn_" + c.Marker, Name: "spawn_agent", Input: modelserver.Input(in)})
			}
			return modelserver.Reply{ToolCalls: calls}
		}
		// v1 reports each answer in a wait result; a v2 wait returns once
		// a child finished (or at its timeout), so one wait per child.
		pending := waits < len(children)
		if !multi.v2 {
			pending = false
			for _, c := range children {
				pending = pending || !strings.Contains(waited.String(), c.Answer())
			}
		}
		if pending && waits < maxWaits {
			in := map[string]any{"timeout_ms": timeoutMs}
			if !multi.v2 {
				in["targets"] = agentIDs
			}
			return modelserver.Reply{ToolCalls: []modelserver.ToolCall{{ID: fmt.Sprintf("call_wait_%d", waits+1), Name: "wait_agent",
				Input: modelserver.Input(in)}}}
		}
		return modelserver.Reply{Text: Final}
	}
}

// codex26Scenario wants one completed card per child, with its answer as
// the result (v1 reports it in the wait result or, as a child session, as
// the child's own message; v2's tool calls carry no answer).
func codex26Scenario(multi codexMulti, name string, flags []string, children ...Child) Scenario {
	sc := Scenario{Name: name, Prompt: UserPrompt, Flags: flags, Setup: codex26Config(multi),
		Script: codex26Script(multi, 2*len(children)+2, codexWaitMs(multi), children...)}
	// Child sessions: --subagents, or AIR's native subagent sessions.
	sessions := slices.Contains(flags, "--subagents") || slices.Contains(flags, "jetbrains-air")
	for _, c := range children {
		w := WantCard{Status: "complete", AgentID: true}
		if !multi.v2 || sessions {
			w.Result = c.Answer()
		}
		if multi.v2 && !sessions {
			w.Type = codexTaskName(c) // a v2 child session has a title only
		}
		sc.Want = append(sc.Want, w)
	}
	return sc
}

// codexV1AIRGap: to an AIR client codex-acp 2.6.0 sends multi_agent v1
// children as tool calls but never the spawnAgent completion that names
// the child thread. With one child the wait's one unknown thread is
// certainly its; with several, which thread is which card would be a
// guess (nothing on the wire pairs them: docs/subagents.md#air-legacy),
// so the wait results have no card to go to: the cards keep their prompts
// without answers and end unknown with the connection.
const codexV1AIRGap = "codex-acp 2.6.0 v1 to an AIR client: no spawnAgent completion names the child threads"

// codex26Cancel interrupts the turn while the spawned child's model call is
// held open: its card ends cancelled.
func codex26Cancel(multi codexMulti, name string, flags []string) Scenario {
	return Scenario{Name: name, Prompt: UserPrompt, Flags: flags, Setup: codex26Config(multi), Interrupt: true,
		Script: codex26Script(multi, 1, 60000, hanging(childA)),
		Want:   []WantCard{{Status: "cancelled"}}}
}

// codex26Reload: one child, then acpscope reopens the session on the same
// connection (--reload: session/load, which codex-acp answers by replaying
// the conversation) and runs a second turn (the parent, seeing its
// children's answers in its history, answers Final). The card comes out
// of the replay as it went in: complete, with its answer where the shape
// has one, and stored once.
func codex26Reload(multi codexMulti, name string, flags []string) Scenario {
	sc := codex26Scenario(multi, name, flags, childA)
	sc.Turns = []string{Reload, nextPrompt}
	return sc
}

// jsonString is the string value of key in the JSON object text ("" when
// text is not such an object).
func jsonString(text, key string) string {
	var m map[string]any
	if json.Unmarshal([]byte(text), &m) != nil {
		return ""
	}
	s, _ := m[key].(string)
	return s
}

// codexWaitMs is the parent's wait_agent timeout: v1 waits for its
// targets; a v2 wait returns what the mailbox holds, so it is kept short.
func codexWaitMs(multi codexMulti) int {
	if multi.v2 {
		return 5000
	}
	return 60000
}

// latestTask is the child whose task the latest message naming one holds.
func latestTask(req *modelserver.Request, children []Child) (Child, bool) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		for _, c := range children {
			if strings.Contains(req.Messages[i].Text, c.Prompt()) {
				return c, true
			}
		}
	}
	return Child{}, false
}
