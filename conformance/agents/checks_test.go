package agents

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The permission check counts the agent's permission requests in a
// recorded capture: one in a permission scenario, none in a plain one.
func TestAgentRequests(t *testing.T) {
	for capture, want := range map[string]int{
		"claude-0.23.1/permission-allow.jsonl":    1,
		"copilot-1.0.102/permission-reject.jsonl": 1,
		"claude-0.23.1/one.jsonl":                 0,
	} {
		r := &Run{Capture: filepath.Join("testdata", capture)}
		if got := r.AgentRequests(t, "session/request_permission"); got != want {
			t.Errorf("%s: %d permission requests, want %d", capture, got, want)
		}
	}
}

// Every committed capture of several turns replays all of them: the
// replay's closing line counts as many turns as the capture holds
// session/prompt requests (its cards are TestAgentCaptures' golden ones
// in cmd/acpscope).
func TestMultiTurnCapturesReplayEveryTurn(t *testing.T) {
	captures, err := filepath.Glob(filepath.Join("testdata", "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	multi := 0
	for _, path := range captures {
		if strings.HasSuffix(path, ".cards.jsonl") {
			continue
		}
		r := &Run{Capture: path}
		prompts := r.ClientRequests(t, "session/prompt")
		if prompts < 2 {
			continue
		}
		multi++
		t.Run(strings.TrimSuffix(strings.TrimPrefix(path, "testdata/"), ".jsonl"), func(t *testing.T) {
			args := []string{"replay", "--no-db"}
			if flags, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".args"); err == nil {
				args = append(args, strings.Fields(string(flags))...)
			}
			out, err := exec.Command(acpscopeBin(t), append(args, path)...).CombinedOutput()
			if err != nil {
				t.Fatalf("acpscope replay: %v\n%s", err, out)
			}
			if want := fmt.Sprintf(", %d turns)", prompts); !strings.Contains(string(out), want) {
				t.Errorf("the replay does not end after %d turns:\n%s", prompts, tail(string(out), 2000))
			}
		})
	}
	if multi == 0 {
		t.Fatal("no multi-turn capture is committed")
	}
}
