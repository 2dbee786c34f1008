package main

import (
	"context"
	"os"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// The stop mode's children.
const (
	stopChild = "child-stop" // granted cancel
	keepChild = "child-keep" // not granted cancel
)

// childStop is the stop mode's state: closed once session/cancel for
// stopChild arrived.
type childStop struct {
	once      sync.Once
	cancelled chan struct{}
}

// stopPrompt (-mode stop) announces two child sessions in the ACP
// subagent-session form (the client declares subagents): child-stop,
// whose capabilities grant cancel, and child-keep, whose do not; each
// says a message and runs a tool call. It waits for session/cancel for
// child-stop (each session/cancel's session id is appended to -state
// FILE), reports child-stop idle and cancelled, waits for the -go file,
// reports child-keep idle with end_turn, and answers the prompt.
func (a *agent) stopPrompt(ctx context.Context, sid acp.SessionId) (acp.PromptResponse, error) {
	send := func(session acp.SessionId, u acp.SessionUpdate) error {
		return a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: session, Update: u})
	}
	for _, c := range []struct{ id, caps, title string }{
		{stopChild, `{"cancel":{}}`, "Stoppable review"},
		{keepChild, `{}`, "Unstoppable scan"},
	} {
		if err := send(sid, airUpdate(`{"sessionUpdate":"subagent_update","sessionId":"`+c.id+`","title":"`+c.title+`","description":"reviewer","capabilities":`+c.caps+`,"state":{"state":"running"}}`)); err != nil {
			return acp.PromptResponse{}, err
		}
		if err := send(acp.SessionId(c.id), acp.UpdateAgentMessageText("Reading the diff of "+c.id)); err != nil {
			return acp.PromptResponse{}, err
		}
		if err := send(acp.SessionId(c.id), acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: acp.ToolCallId("tool-" + c.id),
			Title: "Read main.go", Kind: acp.ToolKindRead, Status: acp.ToolCallStatusInProgress}}); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	markReady(a.ready)
	select {
	case <-a.stop.cancelled:
	case <-ctx.Done():
		return acp.PromptResponse{}, ctx.Err()
	}
	if err := send(sid, airUpdate(`{"sessionUpdate":"subagent_update","sessionId":"`+stopChild+`","state":{"state":"idle","stopReason":"cancelled"}}`)); err != nil {
		return acp.PromptResponse{}, err
	}
	waitGo(a.start)
	if err := send(sid, airUpdate(`{"sessionUpdate":"subagent_update","sessionId":"`+keepChild+`","state":{"state":"idle","stopReason":"end_turn"}}`)); err != nil {
		return acp.PromptResponse{}, err
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// stopCancel notes a session/cancel of the stop mode: its session id is
// appended to -state FILE, and one for child-stop ends its wait.
func (a *agent) stopCancel(n acp.CancelNotification) {
	if a.state != "" {
		if f, err := os.OpenFile(a.state, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err == nil {
			_, _ = f.WriteString(string(n.SessionId) + "\n")
			f.Close()
		}
	}
	if n.SessionId == stopChild {
		a.stop.once.Do(func() { close(a.stop.cancelled) })
	}
}
