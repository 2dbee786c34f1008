// Package peeragent is the Go ACP agent the independent peers drive: the
// sourcegraph/jsonrpc2 client and the official TypeScript SDK's client
// talk to it over stdio (cmd/peeragent) or pipes. One prompt is one
// scripted turn that exercises every agent→client direction a real agent
// uses: message chunks, a tool call with a permission request, a file read
// through the client, a subagent announced with subagent_update, and the
// tool call's completion.
package peeragent

import (
	"context"
	"fmt"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// Name is the agentInfo.name the agent reports.
const Name = "acp-go-peer-agent"

// SessionID is the id session/new returns.
const SessionID = "peer-session-1"

// ChildSessionID is the subagent session the turn announces.
const ChildSessionID = "peer-child-1"

// Agent implements acp.Agent. Call SetConn right after creating the
// connection that serves it.
type Agent struct {
	mu        sync.Mutex
	conn      *acp.AgentSideConnection
	caps      acp.ClientCapabilities
	cancelled []string
}

// SetConn gives the agent the connection it calls back on.
func (a *Agent) SetConn(c *acp.AgentSideConnection) {
	a.mu.Lock()
	a.conn = c
	a.mu.Unlock()
}

func (a *Agent) connection() *acp.AgentSideConnection {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conn
}

var _ acp.Agent = (*Agent)(nil)

// Cancelled returns the session ids session/cancel named so far.
func (a *Agent) Cancelled() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.cancelled...)
}

// Initialize remembers the client's capabilities and reports the agent.
func (a *Agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.caps = p.ClientCapabilities
	a.mu.Unlock()
	return acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{PromptCapabilities: acp.PromptCapabilities{EmbeddedContext: true}},
		AgentInfo:         &acp.Implementation{Name: Name, Version: "1.0.0"},
		AuthMethods:       []acp.AuthMethod{},
	}, nil
}

// Authenticate accepts any method.
func (a *Agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

// Logout does nothing.
func (a *Agent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}

// Cancel records the cancelled session.
func (a *Agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	a.mu.Lock()
	a.cancelled = append(a.cancelled, string(p.SessionId))
	a.mu.Unlock()
	return nil
}

// CloseSession does nothing.
func (a *Agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

// ListSessions lists no sessions.
func (a *Agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}, nil
}

// NewSession returns SessionID.
func (a *Agent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return acp.NewSessionResponse{SessionId: SessionID}, nil
}

// ResumeSession does nothing.
func (a *Agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, nil
}

// SetSessionConfigOption does nothing.
func (a *Agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

// SetSessionMode does nothing.
func (a *Agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

// Prompt plays the scripted turn. A denied permission fails the tool call
// and the turn still ends normally; a cancelled context ends the turn with
// stopReason cancelled.
func (a *Agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	sid := p.SessionId
	conn := a.connection()
	send := func(u acp.SessionUpdate) error {
		return conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u})
	}
	steps := []func() error{
		func() error { return send(acp.UpdateAgentMessageText("Looking at the repository.")) },
		func() error {
			return send(acp.StartToolCall("tool-1", "Explore the repository",
				acp.WithStartKind(acp.ToolKindRead), acp.WithStartStatus(acp.ToolCallStatusPending),
				acp.WithStartRawInput(map[string]any{"path": "/README.md"})))
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return acp.PromptResponse{}, err
		}
	}

	perm, err := conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: sid,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: "tool-1", Title: acp.Ptr("Explore the repository")},
		Options: []acp.PermissionOption{
			{OptionId: "allow", Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
		return acp.PromptResponse{}, err
	}
	if perm.Outcome.Selected == nil || perm.Outcome.Selected.OptionId != "allow" {
		if err := send(acp.UpdateToolCall("tool-1", acp.WithUpdateStatus(acp.ToolCallStatusFailed))); err != nil {
			return acp.PromptResponse{}, err
		}
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	}

	if err := send(acp.UpdateToolCall("tool-1", acp.WithUpdateStatus(acp.ToolCallStatusInProgress))); err != nil {
		return acp.PromptResponse{}, err
	}
	// The subagent doing the work, in the ACP subagent-session form.
	if err := send(acp.SessionUpdate{SubagentUpdate: &acp.SessionSubagentUpdate{
		SessionId: ChildSessionID,
		Title:     acp.NewNullable("Explore"),
		State:     acp.NewNullable(acp.StateUpdate{Running: &acp.StateUpdateRunning{}}),
	}}); err != nil {
		return acp.PromptResponse{}, err
	}

	content := "(file system not offered)"
	a.mu.Lock()
	canRead := a.caps.Fs.ReadTextFile
	a.mu.Unlock()
	if canRead {
		f, err := conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: "/README.md"})
		if err != nil {
			return acp.PromptResponse{}, fmt.Errorf("read /README.md: %w", err)
		}
		content = f.Content
	}
	finish := []acp.SessionUpdate{
		{SubagentUpdate: &acp.SessionSubagentUpdate{
			SessionId: ChildSessionID,
			State:     acp.NewNullable(acp.StateUpdate{Idle: &acp.StateUpdateIdle{StopReason: acp.Ptr("end_turn")}}),
		}},
		acp.UpdateToolCall("tool-1", acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(content))}),
			acp.WithUpdateRawOutput(map[string]any{"bytes": len(content)})),
		acp.UpdateAgentMessageText("Done."),
	}
	for _, u := range finish {
		if err := send(u); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
