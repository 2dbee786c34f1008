package adapter

import "strings"

// Auggie (auggie --acp): a subagent is a tool call of kind "other" titled
// "sub-agent-<type>: <description>", with no _meta and no rawInput; its
// answer is the completion's rawOutput.output. Auggie sends no child tool
// calls and no metrics.

// valueAuggie marks a card recognised by rule R4; only such cards read
// rawOutput.output as their result.
const valueAuggie = "adapter.auggie"

// recognizeAuggieTitle is rule R4: the Auggie title shape (see
// ParseAuggieTitle) with an instruction after the colon. A title with
// none ("sub-agent-explore: ") is the parent asking for a finished
// child's stored output again ({action: "output", name}): its completion
// repeats that child's answer, so it is a review, not a new subagent.
func recognizeAuggieTitle(c *Card, f *ToolFrame) bool {
	if typ, desc, ok := ParseAuggieTitle(frameTitle(c, f)); ok && typ != "" && desc != "" {
		c.SetValue(valueAuggie, true)
		return true
	}
	return false
}

// ParseAuggieTitle splits an Auggie subagent title "sub-agent-<type>: <text>"
// (rule R4): the prefix is case-sensitive, a colon is required, and the
// trimmed type before it must be non-empty.
func ParseAuggieTitle(title string) (subagentType, description string, ok bool) {
	const prefix = "sub-agent-"
	rest, found := strings.CutPrefix(title, prefix)
	if !found {
		return "", "", false
	}
	typ, desc, found := strings.Cut(rest, ":")
	typ = strings.TrimSpace(typ)
	if !found || typ == "" {
		return "", "", false
	}
	return typ, strings.TrimSpace(desc), true
}

// mergeAuggieTitle fills what rawInput left empty from an R4 card's
// title: the type before the colon, the description after it.
func mergeAuggieTitle(c *Card) {
	if c.Value(valueAuggie) != true {
		return
	}
	if typ, desc, ok := ParseAuggieTitle(c.title); ok {
		FillString(&c.task.SubagentType, typ)
		FillString(&c.task.Description, desc)
	}
}

// mergeAuggieOutput fills an R4 card's result from rawOutput.output.
func mergeAuggieOutput(c *Card, r *FieldReader, out map[string]any) {
	if c.Value(valueAuggie) == true {
		FillString(&c.task.ResultText, r.String(out, "output"))
	}
}

func init() { registerGeneric(DialectAuggie) }
