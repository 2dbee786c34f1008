package adapter

// Claude Code's legacy form (claude-agent-acp without the subagent-session
// opt-in) as every dialect reads it: rule R1 and parentToolUseId nesting.
// The rest of the Claude dialect (the post-tool-use hook's toolResponse, the
// subagent-session form) is in adapter/claude.

// recognizeClaudeToolName is rule R1: _meta.claudeCode.toolName is exactly
// "Agent" or "Task" (the two names claude-agent-acp uses for a subagent
// launch).
func recognizeClaudeToolName(_ *Card, f *ToolFrame) bool {
	if cc := AsMap(f.Meta["claudeCode"]); cc != nil {
		if name, _ := cc["toolName"].(string); name == "Agent" || name == "Task" {
			return true
		}
	}
	return false
}

// claudeParent reads _meta.claudeCode.parentToolUseId (a non-empty string).
func claudeParent(f *ToolFrame) string {
	cc := f.Read.Map(f.Meta, "claudeCode")
	return f.Read.String(cc, "parentToolUseId")
}
