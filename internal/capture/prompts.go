package capture

import (
	"encoding/json"
	"strings"
)

// PromptStep is one step of a capture's prompt exchange: a session/prompt
// the client sent, or the agent's answer to one.
type PromptStep struct {
	// Answer is false for the prompt, true for its answer.
	Answer bool
	// Text is the prompt's text blocks, joined with newlines.
	Text string
}

// String renders the step as "sent TEXT" or "answered TEXT".
func (s PromptStep) String() string {
	if s.Answer {
		return "answered " + s.Text
	}
	return "sent " + s.Text
}

// PromptSteps lists the client's session/prompt requests and the agent's
// answers to them (results and errors), in wire order: whether a prompt
// was sent while another was open shows as its step before the other's
// answer.
func (c *Capture) PromptSteps() []PromptStep {
	var out []PromptStep
	open := map[string]string{} // prompt id → text, until answered
	for _, e := range c.Entries {
		m, err := ParseMessage(e.Msg)
		if err != nil {
			continue
		}
		switch {
		case e.From == FromClient && m.IsRequest() && m.Method == "session/prompt":
			var p struct {
				Prompt []struct {
					Text string `json:"text"`
				} `json:"prompt"`
			}
			_ = json.Unmarshal(m.Params, &p)
			var parts []string
			for _, b := range p.Prompt {
				if b.Text != "" {
					parts = append(parts, b.Text)
				}
			}
			text := strings.Join(parts, "\n")
			open[IDKey(m.ID)] = text
			out = append(out, PromptStep{Text: text})
		case e.From == FromAgent && m.IsResponse():
			if text, ok := open[IDKey(m.ID)]; ok {
				delete(open, IDKey(m.ID))
				out = append(out, PromptStep{Answer: true, Text: text})
			}
		}
	}
	return out
}
