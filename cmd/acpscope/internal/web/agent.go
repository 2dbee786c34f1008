package web

import (
	"slices"
	"strings"
)

// The store has no agent column: acpscope records the agent dialect in the
// agent execution id of every row it writes, as "acpscope-<dialect>-<run>"
// where <run> is the process's random id. Rows written by older builds
// ("acpscope-<run>") or by a host carry no agent.

const executionPrefix = "acpscope-"

// ExecutionID is the agent execution id acpscope stores for a run of a
// dialect.
func ExecutionID(dialect, run string) string {
	if dialect == "" {
		return executionPrefix + run
	}
	return executionPrefix + dialect + "-" + run
}

// ExecutionPrefix is the prefix of every execution id of agent, for
// persistence.SessionFilter.ExecutionPrefix.
func ExecutionPrefix(agent string) string { return executionPrefix + agent + "-" }

// AgentOf returns the dialect recorded in an execution id, "" when it
// records none.
func AgentOf(execution string) string {
	rest, ok := strings.CutPrefix(execution, executionPrefix)
	if !ok {
		return ""
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 {
		return ""
	}
	return rest[:i]
}

// AgentOfAll returns the agents recorded in executions, each once, in the
// order first seen, joined by ",": a session holds one agent in practice.
func AgentOfAll(executions []string) string {
	var out []string
	for _, x := range executions {
		if a := AgentOf(x); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return strings.Join(out, ",")
}
