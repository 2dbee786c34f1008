package main

import (
	"context"
	"fmt"

	acp "github.com/coder/acp-go-sdk"
)

// burst writes total session/update notifications to sid as fast as the
// connection takes them: total/per Claude-style subagents in a row, each
// opened by a tool call, followed by per-2 progress updates of that tool
// call and closed by its result and completed status. The last card takes
// whatever total leaves over. It serves -mode burst on session/prompt and
// session/load alike.
func burst(ctx context.Context, conn *acp.AgentSideConnection, sid acp.SessionId, total, per int) error {
	if per < 2 {
		per = 2
	}
	send := func(u acp.SessionUpdate) error {
		return conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u})
	}
	agentMeta := map[string]any{"claudeCode": map[string]any{"toolName": "Agent"}}
	for card, sent := 0, 0; sent < total; card++ {
		n := min(per, total-sent)
		if total-sent-n < 2 { // never leave a remainder too small for a card
			n = total - sent
		}
		id := acp.ToolCallId(fmt.Sprintf("toolu_burst_%06d", card))
		title := fmt.Sprintf("Subtask %d", card)
		if err := send(acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{
			ToolCallId: id, Title: title, Kind: acp.ToolKindThink, Status: acp.ToolCallStatusPending,
			RawInput: map[string]any{"description": title, "prompt": "work on it", "subagent_type": "general-purpose"},
			Meta:     agentMeta,
		}}); err != nil {
			return err
		}
		for i := 0; i < n-2; i++ {
			if err := send(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
				ToolCallId: id, Status: acp.Ptr(acp.ToolCallStatusInProgress),
				Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(fmt.Sprintf("step %d", i)))},
				Meta:    agentMeta,
			}}); err != nil {
				return err
			}
		}
		if err := send(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
			ToolCallId: id, Status: acp.Ptr(acp.ToolCallStatusCompleted),
			Meta: map[string]any{"claudeCode": map[string]any{"toolName": "Agent", "toolResponse": map[string]any{
				"agentId": fmt.Sprintf("burst%06d", card), "agentType": "general-purpose", "status": "completed",
				"totalDurationMs": 10, "totalTokens": 100, "totalToolUseCount": n - 2,
				"content": []any{map[string]any{"type": "text", "text": "done " + title}},
			}}},
		}}); err != nil {
			return err
		}
		sent += n
	}
	return nil
}
