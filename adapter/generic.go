package adapter

import "strings"

// The generic dialect serves agents without agent-specific code; the
// opencode, auggie and copilot names are generic under their own name. The
// rules here apply to every dialect.

// recognizeTaskTitle is rule R2: the trimmed title equals "task", any case
// (OpenCode's subagent tool). Any tool titled "task" becomes a subagent
// card, a known false positive kept so that no agent's output changes.
func recognizeTaskTitle(c *Card, f *ToolFrame) bool {
	return strings.EqualFold(strings.TrimSpace(frameTitle(c, f)), "task")
}

// recognizeTaskToolName is rule R3: rawInput._toolName equals "task", any
// case (Cursor's subagent tool).
func recognizeTaskToolName(_ *Card, f *ToolFrame) bool {
	if in := f.RawInputMap(); in != nil {
		if name, _ := in["_toolName"].(string); strings.EqualFold(name, "task") {
			return true
		}
	}
	return false
}

// genericDialect is the dialect of agents without agent-specific code; the
// opencode, auggie and copilot names are generic under their own name.
type genericDialect struct {
	Base
	name string
}

// Name returns the registry name the dialect was made for.
func (d genericDialect) Name() string {
	if d.name == "" {
		return DialectGeneric
	}
	return d.name
}

// registerGeneric registers name as the generic dialect under that name.
func registerGeneric(name string) {
	Register(name, func() Dialect { return genericDialect{name: name} })
}

func init() { registerGeneric(DialectGeneric) }
