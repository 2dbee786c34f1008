// Command nextagent serves, on stdin/stdout, a Go agent for the methods and
// updates that are newer than schema 0.13.5 (the TypeScript SDK 2.4.0
// protocol), for the TypeScript client peer (conformance/ts/client_next.mjs)
// to drive. It implements every optional handler of the newer protocol and
// checks each typed value it gets; on session/prompt it calls the client
// with every newer agent-to-client method and update. The prompt's reply
// carries, in _meta, the params it got (re-encoded), the client's typed
// results and every check that failed ("problems"), for the Go test.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// sessionID is the id session/new returns.
const sessionID = "go-next-1"

type agent struct {
	mu       sync.Mutex
	conn     *acp.AgentSideConnection
	seen     map[string]any
	problems []string
}

func (a *agent) keep(method string, params any) {
	a.mu.Lock()
	a.seen[method] = params
	a.mu.Unlock()
}

func (a *agent) check(ok bool, format string, args ...any) {
	if ok {
		return
	}
	a.mu.Lock()
	a.problems = append(a.problems, fmt.Sprintf(format, args...))
	a.mu.Unlock()
}

func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.keep("initialize", p)
	a.check(p.ClientCapabilities.PlanCapabilities != nil, "clientCapabilities.plan not decoded: %+v", p.ClientCapabilities)
	a.check(p.ClientCapabilities.Elicitation != nil && p.ClientCapabilities.Elicitation.Form != nil, "elicitation capability: %+v", p.ClientCapabilities.Elicitation)
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersionNumber,
		AgentInfo:       &acp.Implementation{Name: "go-next-agent", Version: "1"},
		AgentCapabilities: acp.AgentCapabilities{
			SessionCapabilities: acp.SessionCapabilities{
				Delete:  &acp.SessionDeleteCapabilities{},
				Archive: &acp.UnstableSessionArchiveCapabilities{},
				Status:  &acp.UnstableSessionStatusCapabilities{},
				Title:   &acp.UnstableSessionTitleCapabilities{},
			},
		},
	}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}
func (a *agent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}
func (a *agent) Cancel(context.Context, acp.CancelNotification) error { return nil }
func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}
func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}, nil
}
func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, nil
}
func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}
func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.keep("session/new", p)
	sp := p.SystemPrompt
	a.check(sp != nil && sp.Mode == acp.UnstableSystemPromptModeOverride && len(sp.Content) == 1 && sp.Content[0].Text != nil && sp.Content[0].Text.Text == "You are terse.",
		"systemPrompt = %+v", sp)
	return acp.NewSessionResponse{SessionId: sessionID}, nil
}

func (a *agent) DeleteSession(_ context.Context, p acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
	a.keep("session/delete", p)
	a.check(p.SessionId == "ts-old-1", "session/delete sessionId = %q", p.SessionId)
	return acp.DeleteSessionResponse{}, nil
}

func (a *agent) UnstableArchiveSession(_ context.Context, p acp.UnstableArchiveSessionRequest) (acp.UnstableArchiveSessionResponse, error) {
	a.keep("session/archive", p)
	a.check(p.SessionId == sessionID, "session/archive sessionId = %q", p.SessionId)
	return acp.UnstableArchiveSessionResponse{}, nil
}

func (a *agent) UnstableUnarchiveSession(_ context.Context, p acp.UnstableUnarchiveSessionRequest) (acp.UnstableUnarchiveSessionResponse, error) {
	a.keep("session/unarchive", p)
	a.check(p.SessionId == sessionID, "session/unarchive sessionId = %q", p.SessionId)
	return acp.UnstableUnarchiveSessionResponse{}, nil
}

func (a *agent) UnstableSessionStatus(_ context.Context, p acp.UnstableSessionStatusRequest) (acp.UnstableSessionStatusResponse, error) {
	a.keep("session/status", p)
	return acp.UnstableSessionStatusResponse{Status: acp.UnstableSessionStatusOpen}, nil
}

func (a *agent) UnstableSetSessionTitle(ctx context.Context, p acp.UnstableSetSessionTitleRequest) (acp.UnstableSetSessionTitleResponse, error) {
	if p.Title == "hold" {
		return acp.UnstableSetSessionTitleResponse{}, a.hold(ctx, p.SessionId)
	}
	a.keep("session/set_title", p)
	a.check(p.Title == "Refactor", "session/set_title title = %q", p.Title)
	return acp.UnstableSetSessionTitleResponse{}, nil
}

// hold serves the client's $/cancel_request check: it tells the client it
// holds the request (a "holding" notice) and waits for the cancellation to
// end the handler's context, which the SDK answers with -32800.
func (a *agent) hold(ctx context.Context, sid acp.SessionId) error {
	a.mu.Lock()
	c := a.conn
	a.mu.Unlock()
	if err := c.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid,
		Update: acp.SessionUpdate{Notice: &acp.SessionUpdateNotice{Severity: acp.NoticeSeverityInfo, Title: "holding"}}}); err != nil {
		return err
	}
	<-ctx.Done()
	a.keep("$/cancel_request", map[string]any{"err": ctx.Err().Error()})
	return ctx.Err()
}

func (a *agent) UnstableAuthStatus(_ context.Context, p acp.UnstableAuthStatusRequest) (acp.UnstableAuthStatusResponse, error) {
	a.keep("auth/status", p)
	name := "Dev"
	return acp.UnstableAuthStatusResponse{State: acp.UnstableAuthStateAuthenticated, Accounts: []acp.UnstableAuthAccount{{Label: "personal", Name: &name}}}, nil
}

func (a *agent) UnstableMessageMcp(_ context.Context, p acp.UnstableMessageMcpNotification) error {
	a.keep("mcp/message", p)
	a.check(p.ServerId == "ts-mcp" && p.RequestId == "ts-req-9" && p.Method == "notifications/progress" && p.Params["progress"] == float64(1),
		"mcp/message = %+v", p)
	return nil
}

func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	a.mu.Lock()
	c := a.conn
	a.mu.Unlock()
	results := map[string]any{}
	req := acp.NewCreateElicitationRequestForm(acp.ElicitationSchema{
		Properties: map[string]any{"color": map[string]any{"type": "string", "title": "Color"}},
		Required:   []string{"color"},
	})
	req.Form.Message = "Favourite color?"
	req.Form.SessionId = p.SessionId
	el, err := c.CreateElicitation(ctx, req)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	a.check(el.Accept != nil && el.Accept.Content["color"] == "teal", "elicitation/create result = %+v", el)
	results["elicitation/create"] = el
	if err := c.CompleteElicitation(ctx, acp.CompleteElicitationNotification{ElicitationId: "go-elicit-1"}); err != nil {
		return acp.PromptResponse{}, err
	}
	label := "work"
	if err := c.UnstableAuthStatusUpdate(ctx, acp.UnstableAuthStatusUpdateNotification{State: acp.UnstableAuthStateAuthenticated,
		Accounts: []acp.UnstableAuthAccount{{Label: label}}}); err != nil {
		return acp.PromptResponse{}, err
	}
	mr, err := c.UnstableMessageMcp(ctx, acp.UnstableMessageMcpRequest{ServerId: "go-mcp", RequestId: "go-req-1", Method: "tools/call",
		Params: map[string]any{"name": "grep"}})
	if err != nil {
		return acp.PromptResponse{}, err
	}
	m, _ := mr.(map[string]any)
	a.check(m["isError"] == false, "mcp/message result = %#v", mr)
	results["mcp/message"] = mr

	desc := "rate limited"
	for _, u := range []acp.SessionUpdate{
		{Notice: &acp.SessionUpdateNotice{Severity: acp.NoticeSeverityInfo, Title: "Slow down", Description: &desc}},
		{CompactionUpdate: &acp.SessionCompactionUpdate{CompactionId: "go-comp-1", Status: acp.CompactionStatusInProgress}},
		{CompactionSummaryChunk: &acp.SessionUpdateCompactionSummaryChunk{CompactionId: "go-comp-1", Content: acp.TextBlock("so far")}},
		{CompactionUpdate: &acp.SessionCompactionUpdate{CompactionId: "go-comp-1", Status: acp.CompactionStatusCompleted, Summary: []acp.ContentBlock{acp.TextBlock("done")}}},
		{UsageUpdate: &acp.SessionUsageUpdate{Used: 42, Size: 1000}},
	} {
		if err := c.SessionUpdate(ctx, acp.SessionNotification{SessionId: p.SessionId, Update: u}); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	problems := append([]string{}, a.problems...)
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Meta: map[string]any{"seen": a.seen, "results": results, "problems": problems}}, nil
}

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	a := &agent{seen: map[string]any{}}
	conn := acp.NewAgentSideConnection(a, os.Stdout, os.Stdin)
	a.mu.Lock()
	a.conn = conn
	a.mu.Unlock()
	<-conn.Done()
}
