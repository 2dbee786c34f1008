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
	if err := send(agentText("Looking at the repository.")); err != nil {
		return acp.PromptResponse{}, err
	}
	if err := send(acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{
		ToolCallId: "tool-1",
		Title:      "Explore the repository",
		Kind:       acp.ToolKindRead,
		Status:     acp.ToolCallStatusPending,
		RawInput:   map[string]any{"path": "/README.md"},
	}}); err != nil {
		return acp.PromptResponse{}, err
	}

	perm, err := conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: sid,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: "tool-1", Title: ptr("Explore the repository")},
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
		if err := send(toolStatus(acp.ToolCallStatusFailed, nil, nil)); err != nil {
			return acp.PromptResponse{}, err
		}
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	}

	if err := send(toolStatus(acp.ToolCallStatusInProgress, nil, nil)); err != nil {
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
			State:     acp.NewNullable(acp.StateUpdate{Idle: &acp.StateUpdateIdle{StopReason: ptr("end_turn")}}),
		}},
		toolStatus(acp.ToolCallStatusCompleted,
			[]acp.ToolCallContent{{Content: &acp.ToolCallContentContent{Content: acp.ContentBlock{Text: &acp.ContentBlockText{Text: content}}}}},
			map[string]any{"bytes": len(content)}),
		agentText("Done."),
	}
	for _, u := range finish {
		if err := send(u); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func ptr[T any](v T) *T { return &v }

// agentText is an agent_message_chunk with one text block.
func agentText(text string) acp.SessionUpdate {
	return acp.SessionUpdate{AgentMessageChunk: &acp.SessionUpdateAgentMessageChunk{
		Content: acp.ContentBlock{Text: &acp.ContentBlockText{Text: text}},
	}}
}

// toolStatus is a tool_call_update of tool-1.
func toolStatus(status acp.ToolCallStatus, content []acp.ToolCallContent, rawOutput any) acp.SessionUpdate {
	return acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{
		ToolCallId: "tool-1",
		Status:     &status,
		Content:    content,
		RawOutput:  rawOutput,
	}}
}
