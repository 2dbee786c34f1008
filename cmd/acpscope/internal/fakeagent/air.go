package main

import (
	"context"
	"encoding/json"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// airChild is the child session of the air mode.
const airChild = "air-child-1"

// airUpdate is an AIR session update, which the SDK carries as an unknown
// kind with its raw bytes.
func airUpdate(js string) acp.SessionUpdate {
	var u acp.SessionUpdate
	if err := json.Unmarshal([]byte(js), &u); err != nil {
		panic(err)
	}
	return u
}

// airPrompt (-mode air) behaves as claude-agent-acp does for a client
// declaring AIR with backgroundSubagents: it announces a child
// (subagent_spawned) and answers the prompt while the child runs; after
// the answer the child asks a permission, and once answered it sends its
// answer and settles (subagent_state_update completed). A client that
// closes the agent's input at the answer never sees the child finish.
// With settle false (-mode air-open) the child never ends: it is still
// open when the client ends the connection.
func (a *agent) airPrompt(ctx context.Context, sid acp.SessionId, settle bool) (acp.PromptResponse, error) {
	send := func(session acp.SessionId, u acp.SessionUpdate) error {
		return a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: session, Update: u})
	}
	if err := send(sid, airUpdate(`{"sessionUpdate":"subagent_spawned","subagentSessionId":"`+airChild+`","name":"Background review","task":"Review the diff","capabilities":{}}`)); err != nil {
		return acp.PromptResponse{}, err
	}
	if err := send(airChild, acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "toolu_AIR", Title: "Read main.go", Kind: acp.ToolKindRead, Status: acp.ToolCallStatusInProgress}}); err != nil {
		return acp.PromptResponse{}, err
	}
	if err := send(sid, acp.UpdateAgentMessageText("The review runs in the background.\n")); err != nil {
		return acp.PromptResponse{}, err
	}
	if !settle {
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	}
	go func() {
		bg := context.WithoutCancel(ctx)
		time.Sleep(50 * time.Millisecond) // after the prompt's answer
		perm, err := a.conn.RequestPermission(bg, acp.RequestPermissionRequest{
			SessionId: airChild,
			ToolCall:  acp.ToolCallUpdate{ToolCallId: "toolu_AIRW", Title: acp.Ptr("Write notes.md")},
			Options:   []acp.PermissionOption{{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce}},
		})
		if err != nil || perm.Outcome.Selected == nil {
			return
		}
		_ = a.conn.SessionUpdate(bg, acp.SessionNotification{SessionId: airChild, Update: acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_AIR", Status: acp.Ptr(acp.ToolCallStatusCompleted)}}})
		_ = a.conn.SessionUpdate(bg, acp.SessionNotification{SessionId: airChild, Update: acp.UpdateAgentMessageText("no bugs found")})
		_ = a.conn.SessionUpdate(bg, acp.SessionNotification{SessionId: sid, Update: airUpdate(`{"sessionUpdate":"subagent_state_update","subagentSessionId":"` + airChild + `","state":"completed"}`)})
		_ = a.conn.SessionUpdate(bg, acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentMessageText("The review finished.\n")})
	}()
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
