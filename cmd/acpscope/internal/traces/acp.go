package traces

import (
	"encoding/json"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// UsageOf is the turn usage of a session/prompt answer (nil: none).
func UsageOf(u *acp.Usage) *Usage {
	if u == nil {
		return nil
	}
	return &Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens, CachedReadTokens: u.CachedReadTokens}
}

// OptionNames are a permission request's options as "name (kind)".
func OptionNames(opts []acp.PermissionOption) []string {
	out := make([]string, 0, len(opts))
	for _, o := range opts {
		out = append(out, o.Name+" ("+string(o.Kind)+")")
	}
	return out
}

// PromptMeta is the _meta of a session/prompt run sends: the W3C
// traceparent of the session's open turn, so an agent that traces itself
// joins the trace; nil without an export, without an open turn, or off.
func (x *Exporter) PromptMeta(sessionID string, off bool) map[string]any {
	if x == nil || off {
		return nil
	}
	sc := x.TurnContext(sessionID)
	if !sc.IsValid() {
		return nil
	}
	return map[string]any{"traceparent": FormatTraceparent(sc)}
}

// PromptText is the text of a session/prompt's params (its text blocks,
// joined with "\n"), "" when they do not decode.
func PromptText(params []byte) string {
	var p acp.PromptRequest
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	var parts []string
	for _, b := range p.Prompt {
		if b.Text != nil {
			parts = append(parts, b.Text.Text)
		}
	}
	return strings.Join(parts, "\n")
}
