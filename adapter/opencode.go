package adapter

import "strings"

// OpenCode (opencode acp): a subagent is a tool call titled "task" (rule
// R2, generic.go) whose rawInput carries description, prompt and
// subagent_type; the completion's rawOutput.metadata names the child
// session and the model, and rawOutput.output holds the answer wrapped as
// <task id="…" state="…"><task_result>…</task_result></task>. The child's
// own tool calls live in a session of their own, so there is no nesting.

// openCodeDialect is the OpenCode dialect.
type openCodeDialect struct{ Base }

// Name returns "opencode".
func (openCodeDialect) Name() string { return DialectOpenCode }

// Apply reads the answer and the task state from rawOutput.output.
func (openCodeDialect) Apply(_ *Tx, c *Card, f *ToolFrame) {
	out := f.RawOutputMap()
	if out == nil {
		return
	}
	result, state := UnwrapOpenCodeResult(f.Read.String(out, "output"))
	task := c.Task()
	FillString(&task.ResultText, result)
	OverwriteString(&task.Status, state)
}

// UnwrapOpenCodeResult reads OpenCode's task output
// `<task id="…" state="…"><task_result>ANSWER</task_result></task>`: the
// trimmed ANSWER and the state attribute. It tolerates what is missing:
// without a <task …> wrapper the trimmed output is the answer; without
// <task_result> the wrapper's body is; an unclosed element runs to the end
// (a trailing </task> dropped).
func UnwrapOpenCodeResult(output string) (result, state string) {
	s := strings.TrimSpace(output)
	if rest, ok := strings.CutPrefix(s, "<task"); ok && (rest == "" || rest[0] == '>' || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n') {
		tag, body, closed := strings.Cut(rest, ">")
		if !closed {
			return "", attr(tag, "state")
		}
		state = attr(tag, "state")
		body = strings.TrimSpace(body)
		body = strings.TrimSpace(strings.TrimSuffix(body, "</task>"))
		s = body
	}
	if _, inner, ok := strings.Cut(s, "<task_result>"); ok {
		if i := strings.LastIndex(inner, "</task_result>"); i >= 0 {
			inner = inner[:i]
		}
		s = inner
	}
	return strings.TrimSpace(s), state
}

// attr returns the value of name="value" in an element's attribute text
// ("" when absent or unquoted).
func attr(tag, name string) string {
	for rest := tag; ; {
		i := strings.Index(rest, name+`="`)
		if i < 0 {
			return ""
		}
		if i > 0 && rest[i-1] != ' ' && rest[i-1] != '\t' && rest[i-1] != '\n' {
			rest = rest[i+len(name):]
			continue
		}
		v := rest[i+len(name)+2:]
		if j := strings.IndexByte(v, '"'); j >= 0 {
			return v[:j]
		}
		return ""
	}
}

// mergeOpenCodeMetadata reads rawOutput.metadata: sessionId is the child
// session, model the "providerID/modelID" the child ran on. Every dialect
// reads it.
func mergeOpenCodeMetadata(task *SubagentTask, r *FieldReader, out map[string]any) {
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

func init() { Register(DialectOpenCode, func() Dialect { return openCodeDialect{} }) }
