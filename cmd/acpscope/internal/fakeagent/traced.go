package main

import (
	"context"
	"fmt"
	"os"

	acp "github.com/coder/acp-go-sdk"
)

// The traced mode (-mode traced) is the trace export's agent: prompt n
// launches one Claude-style subagent toolu_S<n> (a "reviewer" for odd n, a
// "tester" for even n) whose child tool call toolu_R<n> asks for
// permission; the first subagent completes (agent id, model, tokens), the
// second fails; each answer reports token usage. The _meta.traceparent of
// every prompt (or "-" without one) is appended to -state FILE.
func (a *agent) tracedTurn(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	n := a.tracedN.Add(1)
	if a.state != "" {
		tp, _ := req.Meta["traceparent"].(string)
		if tp == "" {
			tp = "-"
		}
		f, err := os.OpenFile(a.state, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return acp.PromptResponse{}, err
		}
		fmt.Fprintln(f, tp)
		f.Close()
	}
	sid := req.SessionId
	send := func(u acp.SessionUpdate) error {
		return a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u})
	}
	claude := func(tool string, extra map[string]any) map[string]any {
		cc := map[string]any{"toolName": tool}
		for k, v := range extra {
			cc[k] = v
		}
		return map[string]any{"claudeCode": cc}
	}
	kind := "reviewer"
	if n%2 == 0 {
		kind = "tester"
	}
	task := acp.ToolCallId(fmt.Sprintf("toolu_S%d", n))
	read := acp.ToolCallId(fmt.Sprintf("toolu_R%d", n))
	desc := fmt.Sprintf("Subtask %d", n)
	if err := send(acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: task, Title: desc, Kind: acp.ToolKindThink, Status: acp.ToolCallStatusInProgress,
		RawInput: map[string]any{"description": desc, "prompt": fmt.Sprintf("secret prompt %d", n), "subagent_type": kind}, Meta: claude("Agent", nil)}}); err != nil {
		return acp.PromptResponse{}, err
	}
	if err := send(acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: read, Title: fmt.Sprintf("Read file%d.go", n), Kind: acp.ToolKindRead, Status: acp.ToolCallStatusInProgress,
		Meta: claude("Read", map[string]any{"parentToolUseId": string(task)})}}); err != nil {
		return acp.PromptResponse{}, err
	}
	perm, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: sid,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: read, Title: acp.Ptr(fmt.Sprintf("Read file%d.go", n))},
		Options: []acp.PermissionOption{
			{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		return acp.PromptResponse{}, err
	}
	readStatus := acp.ToolCallStatusCompleted
	if perm.Outcome.Selected == nil || perm.Outcome.Selected.OptionId != "allow" {
		readStatus = acp.ToolCallStatusFailed
	}
	if err := send(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: read, Status: acp.Ptr(readStatus),
		Meta: claude("Read", map[string]any{"parentToolUseId": string(task)})}}); err != nil {
		return acp.PromptResponse{}, err
	}
	final := []acp.SessionUpdate{
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: task, Meta: claude("Agent", map[string]any{"toolResponse": map[string]any{
			"agentId": fmt.Sprintf("agent%d", n), "agentType": kind, "status": "completed", "resolvedModel": "claude-opus-4-8",
			"totalDurationMs": 1000 * n, "totalTokens": 500 * n, "totalToolUseCount": 1,
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("secret answer %d", n)}},
		}})}},
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: task, Status: acp.Ptr(acp.ToolCallStatusCompleted), Meta: claude("Agent", nil)}},
	}
	if n%2 == 0 {
		final = []acp.SessionUpdate{{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: task, Status: acp.Ptr(acp.ToolCallStatusFailed),
			Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock("the tester crashed"))}, Meta: claude("Agent", nil)}}}
	}
	final = append(final, acp.UpdateAgentMessageText(fmt.Sprintf("Turn %d done.", n)))
	for _, u := range final {
		if err := send(u); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Usage: &acp.Usage{InputTokens: 100 * int(n), OutputTokens: 10 * int(n), TotalTokens: 110 * int(n)}}, nil
}
