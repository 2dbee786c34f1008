package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A capture where the agent asks a permission right after session/new,
// before the client sends session/prompt (as Auggie does), replays the
// same way every time: the prompt is answered by the recorded turn, never
// by a fallback, whichever of the permission answer and session/prompt
// reaches the scripted agent first.
func TestReplayRequestBeforePromptIsDeterministic(t *testing.T) {
	capture := filepath.Join("testdata", "request_before_prompt.jsonl")
	for i := range 12 {
		code, out, errOut := acpscope(t, "", "replay", "--plain", "--no-db", capture)
		if code != exitOK {
			t.Fatalf("run %d: exit %d: %s", i, code, errOut)
		}
		if !strings.Contains(out, "Subagents (1)") || !strings.Contains(out, "turn ended: max_tokens") {
			t.Fatalf("run %d: the recorded turn was not played:\n%s", i, out)
		}
	}
}

// A real Claude 0.101.0 capture whose agent sends frames after its last
// answer (usage updates and a message) replays the same way every time:
// the client closes the agent's input and reads its output to the end, and
// the scripted agent sends its tail before its output ends, never into a
// closed pipe.
func TestReplayKeepsFramesAfterTheLastAnswer(t *testing.T) {
	capture := filepath.Join("testdata", "claude-0.101.0-tail.jsonl")
	for i := range 100 {
		code, out, errOut := acpscope(t, "", "replay", "--plain", "--no-db", capture)
		if code != exitOK || errOut != "" {
			t.Fatalf("run %d: exit %d: %s", i, code, errOut)
		}
		if !strings.Contains(out, "Tail after the last answer.") {
			t.Fatalf("run %d: the frames after the last answer were lost:\n%s", i, out)
		}
	}
}
