package agents

import (
	"fmt"
	"strings"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// Child is one subagent of a scripted turn.
type Child struct {
	// Marker is a word unique to this child's prompt: the script tells the
	// child's conversation from the parent's (and its siblings') by it.
	Marker string
	// Description is the launch's description.
	Description string
	// Tool, when set, is a tool call the child makes before answering
	// (the permission scenarios); the child answers after its result.
	Tool *modelserver.ToolCall
	// Hang holds the child's model call open (the cancel scenarios).
	Hang bool
}

// Prompt is the task the parent hands the child: it carries the marker.
func (c Child) Prompt() string {
	return fmt.Sprintf("You are subagent %s. Reply with the single word %s.", c.Marker, c.Answer())
}

// Answer is the child's final text.
func (c Child) Answer() string { return "ANSWER-" + strings.ToUpper(c.Marker) }

// Reply is the child's answer to one of its model calls: held open when
// it hangs, else its Tool call until the conversation holds a tool result,
// then Answer.
func (c Child) Reply(req *modelserver.Request) modelserver.Reply {
	if c.Hang {
		return modelserver.Reply{Hold: true}
	}
	if c.Tool != nil && len(req.ToolResults()) == 0 {
		return modelserver.Reply{ToolCalls: []modelserver.ToolCall{*c.Tool}}
	}
	return modelserver.Reply{Text: c.Answer()}
}

// Final is the parent's last text in every scripted turn.
const Final = "All subagents reported."

// Fanout scripts a turn: the parent's first model call launches every child
// with launch(req, child) (one assistant message, so several children run in
// parallel); each child's conversation makes its Tool call, if any, then
// answers; the parent answers Final once it holds tool results. Calls that
// offer no tools (titles, summaries) get a short text.
func Fanout(launch func(req *modelserver.Request, c Child) modelserver.ToolCall, children ...Child) modelserver.Script {
	return func(req *modelserver.Request) modelserver.Reply {
		if len(req.Tools) == 0 {
			return modelserver.Reply{Text: "Scripted title"}
		}
		first := req.FirstUserText()
		for _, c := range children {
			if strings.Contains(first, c.Marker) {
				return c.Reply(req)
			}
		}
		if len(req.ToolResults()) == 0 {
			var calls []modelserver.ToolCall
			for _, c := range children {
				calls = append(calls, launch(req, c))
			}
			return modelserver.Reply{ToolCalls: calls}
		}
		return modelserver.Reply{Text: Final}
	}
}

// Two children used across agents.
var (
	childA = Child{Marker: "alpha", Description: "Inspect alpha"}
	childB = Child{Marker: "bravo", Description: "Inspect bravo"}
)

// withTool returns c making call before it answers.
func withTool(c Child, call modelserver.ToolCall) Child {
	c.Tool = &call
	return c
}

// hanging returns c with its model call held open until the turn is
// cancelled.
func hanging(c Child) Child {
	c.Hang = true
	return c
}

func ptr[T any](v T) *T { return &v }

// UserPrompt is the user's prompt of every scenario.
const UserPrompt = "Delegate the inspection to subagents and report what they say."
