package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	acp "github.com/coder/acp-go-sdk"
)

// The turns mode (-mode turns -state FILE) is a multi-turn agent whose
// session outlives the process: each prompt launches one Claude-style
// subagent, toolu_T<n> for the session's n-th prompt, described by the
// prompt's text, and appends the prompt to FILE. session/load (or
// session/resume, see -reopen) replays every earlier turn's card from
// FILE as history, as an agent that stores its sessions does.

// turnCard sends the card of the session's n-th turn, complete.
func turnCard(ctx context.Context, conn *acp.AgentSideConnection, sid acp.SessionId, n int, text string) error {
	id := acp.ToolCallId(fmt.Sprintf("toolu_T%d", n))
	meta := map[string]any{"claudeCode": map[string]any{"toolName": "Agent"}}
	updates := []acp.SessionUpdate{
		{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: id, Title: text, Kind: acp.ToolKindThink, Status: acp.ToolCallStatusInProgress,
			RawInput: map[string]any{"description": text, "prompt": "turn " + fmt.Sprint(n), "subagent_type": "general-purpose"}, Meta: meta}},
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: id, Status: acp.Ptr(acp.ToolCallStatusCompleted), Meta: meta}},
		acp.UpdateAgentMessageText(fmt.Sprintf("Turn %d done.\n", n)),
	}
	for _, u := range updates {
		if err := conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
			return err
		}
	}
	return nil
}

// storedTurns reads the prompts of the earlier turns from the state file.
func storedTurns(state string) []string {
	data, err := os.ReadFile(state)
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// promptTurn answers one prompt of the turns mode.
func (a *agent) promptTurn(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	text := ""
	for _, b := range req.Prompt {
		if b.Text != nil {
			text += b.Text.Text
		}
	}
	if a.queue != nil {
		defer a.queue.take(text)()
		// The SDK cancels a session's running prompt when the next one
		// arrives; an agent that queues prompts works each to its end.
		ctx = context.WithoutCancel(ctx)
	}
	n := len(storedTurns(a.state)) + 1
	f, err := os.OpenFile(a.state, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	_, err = fmt.Fprintln(f, strings.ReplaceAll(text, "\n", " "))
	f.Close()
	if err != nil {
		return acp.PromptResponse{}, err
	}
	if err := turnCard(ctx, a.conn, req.SessionId, n, text); err != nil {
		return acp.PromptResponse{}, err
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// replayTurns sends every stored turn's card as the session's history.
func (a *agent) replayTurns(ctx context.Context, sid acp.SessionId) error {
	for i, text := range storedTurns(a.state) {
		if err := turnCard(ctx, a.conn, sid, i+1, text); err != nil {
			return err
		}
	}
	return nil
}
