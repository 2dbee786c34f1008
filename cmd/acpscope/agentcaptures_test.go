package main

import (
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
