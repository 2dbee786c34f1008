// Command fakeagent is a small ACP agent used by acpscope's end-to-end
// tests: it speaks ACP over stdio through the SDK's agent side and answers
// every prompt with a Claude-style (legacy form) subagent fan-out: one
// foreground subagent with a nested tool call, a permission request and a
// result, and one background launch.
//
// Flags change the behaviour for failure tests:
//
//	-mode ok       the fan-out above, then end_turn (default)
//	-mode error    the prompt fails with a JSON-RPC error
//	-mode exit     the process exits in the middle of the turn
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	acp "github.com/coder/acp-go-sdk"
)

func main() {
	mode := flag.String("mode", "ok", "ok, error or exit")
	flag.Parse()
	a := &agent{mode: *mode}
	conn := acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	a.conn = conn
	<-conn.Done()
}

type agent struct {
	mode string
	conn *acp.AgentSideConnection
}

func (a *agent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: "@agentclientprotocol/claude-agent-acp", Version: "0.101.0"},
	}, nil
}

func (a *agent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: "fake-session"}, nil
}

func (a *agent) Prompt(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	if a.mode == "error" {
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "the model is unavailable"})
	}
	sid := req.SessionId
	claude := func(tool string, extra map[string]any) map[string]any {
		cc := map[string]any{"toolName": tool}
		for k, v := range extra {
			cc[k] = v
		}
		return map[string]any{"claudeCode": cc}
	}
	updates := []acp.SessionUpdate{
		acp.UpdateAgentMessageText("Fanning out.\n"),
		{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "toolu_A", Title: "Task", Kind: acp.ToolKindThink, Status: acp.ToolCallStatusPending,
			RawInput: map[string]any{}, Meta: claude("Agent", nil)}},
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_A", Title: acp.Ptr("Investigate flaky test"),
			RawInput: map[string]any{"description": "Investigate flaky test", "prompt": "Find the root cause", "subagent_type": "general-purpose"},
			Meta:     claude("Agent", nil)}},
		{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "toolu_B", Title: "Read retry_test.go", Kind: acp.ToolKindRead, Status: acp.ToolCallStatusCompleted,
			Meta: claude("Read", map[string]any{"parentToolUseId": "toolu_A"})}},
	}
	for _, u := range updates {
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	if a.mode == "exit" {
		os.Exit(3)
	}
	perm, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: sid,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: "toolu_D", Title: acp.Ptr("go test ./...")},
		Options: []acp.PermissionOption{
			{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		return acp.PromptResponse{}, err
	}
	answer := "cancelled"
	if perm.Outcome.Selected != nil {
		answer = string(perm.Outcome.Selected.OptionId)
	}
	late := []acp.SessionUpdate{
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_A", Meta: claude("Agent", map[string]any{"toolResponse": map[string]any{
			"agentId": "a1b2", "agentType": "general-purpose", "status": "completed", "resolvedModel": "claude-opus-4-8",
			"totalDurationMs": 12345, "totalTokens": 6789, "totalToolUseCount": 2,
			"content": []any{map[string]any{"type": "text", "text": "permission answer: " + answer}},
		}})}},
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_A", Status: acp.Ptr(acp.ToolCallStatusCompleted), Meta: claude("Agent", nil)}},
		{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "toolu_C", Title: "Audit the docs", Kind: acp.ToolKindThink, Status: acp.ToolCallStatusPending,
			RawInput: map[string]any{"description": "Audit the docs", "prompt": "Check links", "subagent_type": "docs-auditor"}, Meta: claude("Agent", nil)}},
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_C", Meta: claude("Agent", map[string]any{"toolResponse": map[string]any{
			"agentId": "b7c8", "isAsync": true, "status": "async_launched", "outputFile": "/tmp/b7c8.output", "canReadOutputFile": true,
		}})}},
		acp.UpdateAgentMessageText("Done."),
	}
	for _, u := range late {
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) Cancel(context.Context, acp.CancelNotification) error { return nil }

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}

func (a *agent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}

func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

var _ acp.Agent = (*agent)(nil)

func init() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: fakeagent [-mode ok|error|exit]")
		flag.PrintDefaults()
	}
}
