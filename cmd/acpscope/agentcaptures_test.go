package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
)

// agentCaptures is where conformance/agents records what the published
// agents sent: testdata/<agent>/<scenario>.jsonl, with the replayed cards
// in .cards.jsonl and the replay flags (if any) in .args.
const agentCaptures = "../../conformance/agents/testdata"

// Every capture the published-agent harness recorded replays, offline, to
// its golden cards: the dialects are proven on real frames without npm.
// -update rewrites the golden cards.
func TestAgentCaptures(t *testing.T) {
	captures, err := filepath.Glob(filepath.Join(agentCaptures, "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, capture := range captures {
		if strings.HasSuffix(capture, ".cards.jsonl") {
			continue
		}
		n++
		base := strings.TrimSuffix(capture, ".jsonl")
		name := filepath.Base(filepath.Dir(capture)) + "/" + filepath.Base(base)
		t.Run(name, func(t *testing.T) {
			args := []string{"replay", "--json", "--no-db"}
			if flags, err := os.ReadFile(base + ".args"); err == nil {
				args = append(args, strings.Fields(string(flags))...)
			}
			code, out, errOut := acpscope(t, "", append(args, capture)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			goldentest.Compare(t, base+".cards.jsonl", []byte(out))
		})
	}
	if n == 0 {
		t.Skip("no agent captures recorded yet")
	}
}

// A turn the agent answers with stopReason "cancelled" is over: cards it
// left open end cancelled, on replay as in the live run that recorded the
// cancel (where acpscope itself cancelled the turn). Copilot and Claude
// 0.23.1 send no terminal frame for a subagent cut short by session/cancel.
func TestCancelledTurnEndsOpenCards(t *testing.T) {
	for _, agent := range []string{"copilot-1.0.102", "claude-0.23.1"} {
		t.Run(agent, func(t *testing.T) {
			capture := filepath.Join(agentCaptures, agent, "cancel.jsonl")
			code, out, errOut := acpscope(t, "", "replay", "--json", "--no-db", capture)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) == 0 || lines[0] == "" {
				t.Fatal("no card")
			}
			for _, line := range lines {
				if !strings.Contains(line, `"tool_status":"cancelled"`) {
					t.Errorf("card not ended cancelled: %s", line)
				}
			}
		})
	}
}

// Qwen Code 0.24.4 sends a child's messages on the parent's session,
// tagged _meta.parentToolCallId: replaying its captures shows the child's
// answer under its card and never as an "agent:" line of the parent's,
// while the parent's own text still is one.
func TestQwenChildTextStaysOnItsCard(t *testing.T) {
	for _, scenario := range []string{"one", "parallel"} {
		t.Run(scenario, func(t *testing.T) {
			capture := filepath.Join(agentCaptures, "qwen-0.24.4", scenario+".jsonl")
			code, out, errOut := acpscope(t, "", "replay", "--no-db", capture)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if strings.Contains(out, "agent: ANSWER-") {
				t.Errorf("a child's answer shown as the parent's text:\n%s", out)
			}
			if !strings.Contains(out, "agent: All subagents reported.") {
				t.Errorf("the parent's own text is missing:\n%s", out)
			}
			if !strings.Contains(out, "│ ANSWER-ALPHA") {
				t.Errorf("the child's answer is not on its card:\n%s", out)
			}
		})
	}
}

// No child's text is shown as the parent agent's message, in any form
// (issue 32): replaying every capture the published-agent harness
// recorded, no answer a stored card holds (the golden cards' result_text)
// is inside an "agent:" line of the plain output, and no --json line that
// is not that card's carries it (--json prints cards only: agent text is
// never an event of its own there).
func TestNoChildAnswerAsParentText(t *testing.T) {
	captures, err := filepath.Glob(filepath.Join(agentCaptures, "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, capture := range captures {
		if strings.HasSuffix(capture, ".cards.jsonl") {
			continue
		}
		base := strings.TrimSuffix(capture, ".jsonl")
		answers := goldenAnswers(t, base+".cards.jsonl")
		if len(answers) == 0 {
			continue
		}
		n++
		name := filepath.Base(filepath.Dir(capture)) + "/" + filepath.Base(base)
		t.Run(name, func(t *testing.T) {
			var flags []string
			if b, err := os.ReadFile(base + ".args"); err == nil {
				flags = strings.Fields(string(b))
			}
			code, out, errOut := acpscope(t, "", append(append([]string{"replay", "--no-db", "--plain"}, flags...), capture)...)
			if code != exitOK {
				t.Fatalf("plain: exit %d: %s", code, errOut)
			}
			for _, line := range strings.Split(out, "\n") {
				if !strings.HasPrefix(strings.TrimSpace(line), "agent:") {
					continue
				}
				for card, answer := range answers {
					if strings.Contains(line, answer) {
						t.Errorf("the answer of card %s is shown as the parent's text: %q", card, line)
					}
				}
			}
			code, out, errOut = acpscope(t, "", append(append([]string{"replay", "--no-db", "--json"}, flags...), capture)...)
			if code != exitOK {
				t.Fatalf("json: exit %d: %s", code, errOut)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var card struct {
					ToolCallID string `json:"tool_call_id"`
				}
				if err := json.Unmarshal([]byte(line), &card); err != nil || card.ToolCallID == "" {
					t.Errorf("a --json line that is not a card: %q", line)
					continue
				}
				for owner, answer := range answers {
					if owner != card.ToolCallID && strings.Contains(line, answer) && !strings.Contains(line, `"subagent_task"`) {
						t.Errorf("the answer of card %s is in another line: %q", owner, line)
					}
				}
			}
		})
	}
	if n == 0 {
		t.Skip("no agent capture with an answer recorded yet")
	}
}

// goldenAnswers returns the non-empty result_text of each card in a golden
// cards file, by tool call id.
func goldenAnswers(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var card struct {
			ToolCallID string `json:"tool_call_id"`
			Normalized struct {
				SubagentTask struct {
					ResultText string `json:"result_text"`
				} `json:"subagent_task"`
			} `json:"normalized"`
		}
		if err := json.Unmarshal([]byte(line), &card); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r := strings.TrimSpace(card.Normalized.SubagentTask.ResultText); r != "" {
			answers[card.ToolCallID] = r
		}
	}
	return answers
}
