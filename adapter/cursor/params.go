package cursor

import (
	"bytes"
	"encoding/json"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// Size caps applied while reading cursor/task params. They bound what one
// request can make the adapter keep; the connection's line limit bounds the
// request itself.
const (
	// MaxToolCallIDBytes is the longest toolCallId accepted. A longer id is
	// not truncated (a cut id would correlate with the wrong tool call): the
	// request is dropped, still answered {}.
	MaxToolCallIDBytes = 1024
	// MaxPromptBytes caps the prompt, the only field that is legitimately
	// long. Longer prompts keep their first MaxPromptBytes bytes, cut on a
	// UTF-8 boundary.
	MaxPromptBytes = 256 << 10
	// MaxFieldBytes caps description, model and agentId, cut the same way.
	MaxFieldBytes = 4 << 10
)

// TaskParams is what the adapter reads from one cursor/task request. Every
// field is optional; an empty string means "not reported". Cursor also sends
// durationMs (the launch duration, not the run time) and subagentType (an
// opaque object): both are deliberately not read.
type TaskParams struct {
	// ToolCallID correlates the request with the standard tool_call.
	ToolCallID string
	// AgentID is Cursor's id for the subagent (a UUID on the wire).
	AgentID string
	// Description is the short task title shown on the card header.
	Description string
	// Prompt is the full prompt handed to the subagent.
	Prompt string
	// Model is the model name, verbatim (a "-fast" suffix is informational).
	Model string
	// Truncated counts the fields that were cut to their cap.
	Truncated int
}

// size is the number of string bytes p keeps resident.
func (p TaskParams) size() int {
	return len(p.ToolCallID) + len(p.AgentID) + len(p.Description) + len(p.Prompt) + len(p.Model)
}

// ParseTaskParams reads cursor/task params field by field. It never fails:
// invalid JSON, null, an array, a string or an object without a usable
// toolCallId give ok == false. Inside an object each field is read on its
// own: a field of the wrong JSON type is ignored and the others still apply.
// subagentType is never read, whatever its type, so an object is never
// coerced into a string. Strings keep their bytes verbatim up to the caps
// above.
func ParseTaskParams(raw json.RawMessage) (p TaskParams, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return TaskParams{}, false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return TaskParams{}, false
	}
	id, isString := stringField(fields, "toolCallId")
	if !isString || id == "" || len(id) > MaxToolCallIDBytes {
		return TaskParams{}, false
	}
	p.ToolCallID = id
	p.AgentID = p.capped(fields, "agentId", MaxFieldBytes)
	p.Description = p.capped(fields, "description", MaxFieldBytes)
	p.Prompt = p.capped(fields, "prompt", MaxPromptBytes)
	p.Model = p.capped(fields, "model", MaxFieldBytes)
	return p, true
}

// capped reads a string field and cuts it to limit bytes.
func (p *TaskParams) capped(fields map[string]json.RawMessage, key string, limit int) string {
	s, _ := stringField(fields, key)
	if len(s) <= limit {
		return s
	}
	p.Truncated++
	return adapter.TruncateUTF8(s, limit)
}

// stringField returns fields[key] when it is a JSON string. Any other JSON
// type (number, null, object, array, bool) reports isString == false.
func stringField(fields map[string]json.RawMessage, key string) (s string, isString bool) {
	v, present := fields[key]
	if !present {
		return "", false
	}
	v = bytes.TrimSpace(v)
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}
