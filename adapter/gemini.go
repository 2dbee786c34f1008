package adapter

import (
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// Gemini CLI (gemini --acp): a subagent is the invoke_agent tool. Its tool
// call id is "invoke_agent__<call id>", its title "Delegating to agent
// 'NAME'", its kind "think"; it carries no rawInput and no _meta (the
// model's prompt for the subagent is not forwarded). On success the
// completion's content is empty: the subagent's answer is not on the wire,
// and neither are the subagent's own tool calls. A subagent the policy
// denies is a lone failed update with no title, named only by its id.

// geminiToolIDPrefix starts the tool call id of every invoke_agent call.
const geminiToolIDPrefix = "invoke_agent__"

// geminiDialect is the Gemini CLI dialect.
type geminiDialect struct{ Base }

// Name returns "gemini".
func (geminiDialect) Name() string { return DialectGemini }

// Recognize makes an invoke_agent call a subagent, by its id or its title.
func (geminiDialect) Recognize(_ *Tx, c *Card, f *ToolFrame) bool {
	if strings.HasPrefix(f.WireToolCallID, geminiToolIDPrefix) {
		return true
	}
	_, ok := ParseGeminiTitle(frameTitle(c, f))
	return ok
}

// Apply takes the agent name from the title as the subagent type and, when
// a completion carries text content, that text as the result (a failure's
// text is an error message, never a result).
func (geminiDialect) Apply(_ *Tx, c *Card, f *ToolFrame) {
	task := c.Task()
	if name, ok := ParseGeminiTitle(c.Title()); ok {
		FillString(&task.SubagentType, name)
	}
	if f.Status == string(acp.ToolCallStatusCompleted) {
		FillString(&task.ResultText, ContentText(f.Content))
	}
}

// ParseGeminiTitle returns NAME from a Gemini CLI invoke_agent title
// "Delegating to agent 'NAME'": the prefix is exact, the title ends with
// the closing quote, and the trimmed name is non-empty.
func ParseGeminiTitle(title string) (name string, ok bool) {
	rest, found := strings.CutPrefix(title, "Delegating to agent '")
	if !found {
		return "", false
	}
	rest, found = strings.CutSuffix(rest, "'")
	name = strings.TrimSpace(rest)
	if !found || name == "" {
		return "", false
	}
	return name, true
}

// ContentText joins, with "\n", the text of a tool call's text content
// blocks, skipping blank and non-text ones.
func ContentText(content []acp.ToolCallContent) string {
	var parts []string
	for _, c := range content {
		if c.Content == nil || c.Content.Content.Text == nil {
			continue
		}
		if text := c.Content.Content.Text.Text; strings.TrimSpace(text) != "" {
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, "\n")
}

func init() { Register(DialectGemini, func() Dialect { return geminiDialect{} }) }
