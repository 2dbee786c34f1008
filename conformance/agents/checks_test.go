package agents

import (
	"path/filepath"
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
