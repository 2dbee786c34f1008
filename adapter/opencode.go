package adapter

// OpenCode (opencode acp): a subagent is a tool call titled "task" (rule
// R2, generic.go) whose rawInput carries description, prompt and
// subagent_type; the completion's rawOutput.metadata names the child
// session and the model. The child's own tool calls live in a session of
// their own, so there is no nesting.

// mergeOpenCodeMetadata reads rawOutput.metadata: sessionId is the child
// session, model the "providerID/modelID" the child ran on. Every dialect
// reads it.
func mergeOpenCodeMetadata(task *SubagentTask, r *Reader, out map[string]any) {
	md := r.Map(out, "metadata")
	if md == nil {
		return
	}
	OverwriteString(&task.ChildSessionID, r.String(md, "sessionId"))
	if m := r.Map(md, "model"); m != nil {
		OverwriteString(&task.Model, joinModel(r.String(m, "providerID"), r.String(m, "modelID")))
	}
}

// joinModel renders an OpenCode model as "provider/model", or whichever
// half is non-empty.
func joinModel(provider, model string) string {
	switch {
	case provider != "" && model != "":
		return provider + "/" + model
	case provider != "":
		return provider
	}
	return model
}

func init() { registerGeneric(DialectOpenCode) }
