package web

import "testing"

func TestExecutionAgent(t *testing.T) {
	for _, tc := range []struct{ execution, agent string }{
		{ExecutionID("cursor", "0123abcd"), "cursor"},
		{ExecutionID("", "0123abcd"), ""},
		{"acpscope-0123abcd", ""}, // written before the agent was recorded
		{"acpscope-", ""},
		{"unknown", ""},
		{"3f2a-uuid-of-a-host", ""},
		{ExecutionID("my-agent", "r"), "my-agent"},
	} {
		if got := AgentOf(tc.execution); got != tc.agent {
			t.Errorf("AgentOf(%q) = %q, want %q", tc.execution, got, tc.agent)
		}
	}
	if got := AgentOfAll([]string{"acpscope-claude-1", "acpscope-2", "acpscope-claude-3", "acpscope-codex-4"}); got != "claude,codex" {
		t.Errorf("AgentOfAll = %q", got)
	}
	if p := ExecutionPrefix("claude"); ExecutionID("claude", "x")[:len(p)] != p {
		t.Errorf("prefix %q does not prefix the execution id", p)
	}
}
