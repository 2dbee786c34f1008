//lint:file-ignore SA1019 the harness is also built against upstream v0.13.5, which has only the Unstable… names (deprecated in sdk/).

package main

import (
	"context"
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"
)

// scriptedAgent implements acp.Agent: every method records its call and
// plays the scenario's behaviour for it.
type scriptedAgent struct{ r *runner }

// loaderAgent adds acp.AgentLoader.
type loaderAgent struct{ scriptedAgent }

// experimentalAgent adds acp.AgentExperimental.
type experimentalAgent struct{ loaderAgent }

// fullAgent adds acp.ExtensionMethodHandler.
type fullAgent struct{ experimentalAgent }

func newScriptedAgent(r *runner) acp.Agent {
	base := scriptedAgent{r: r}
	switch r.sc.Profile {
	case "minimal":
		return &base
	case "noext":
		return &experimentalAgent{loaderAgent{base}}
	default:
		return &fullAgent{experimentalAgent{loaderAgent{base}}}
	}
}

func (a *scriptedAgent) Authenticate(ctx context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return invoke[acp.AuthenticateResponse](a.r, ctx, "authenticate", p)
}

func (a *scriptedAgent) Initialize(ctx context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	return invoke[acp.InitializeResponse](a.r, ctx, "initialize", p)
}

func (a *scriptedAgent) Logout(ctx context.Context, p acp.LogoutRequest) (acp.LogoutResponse, error) {
	return invoke[acp.LogoutResponse](a.r, ctx, "logout", p)
}

func (a *scriptedAgent) Cancel(ctx context.Context, p acp.CancelNotification) error {
	_, err := invoke[struct{}](a.r, ctx, "session/cancel", p)
	return err
}

func (a *scriptedAgent) CloseSession(ctx context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return invoke[acp.CloseSessionResponse](a.r, ctx, "session/close", p)
}

func (a *scriptedAgent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return invoke[acp.ListSessionsResponse](a.r, ctx, "session/list", p)
}

func (a *scriptedAgent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return invoke[acp.NewSessionResponse](a.r, ctx, "session/new", p)
}

func (a *scriptedAgent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	return invoke[acp.PromptResponse](a.r, ctx, "session/prompt", p)
}

func (a *scriptedAgent) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return invoke[acp.ResumeSessionResponse](a.r, ctx, "session/resume", p)
}

func (a *scriptedAgent) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return invoke[acp.SetSessionConfigOptionResponse](a.r, ctx, "session/set_config_option", p)
}

func (a *scriptedAgent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return invoke[acp.SetSessionModeResponse](a.r, ctx, "session/set_mode", p)
}

func (a *loaderAgent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	return invoke[acp.LoadSessionResponse](a.r, ctx, "session/load", p)
}

func (a *experimentalAgent) UnstableDidChangeDocument(ctx context.Context, p acp.UnstableDidChangeDocumentNotification) error {
	_, err := invoke[struct{}](a.r, ctx, "document/didChange", p)
	return err
}

func (a *experimentalAgent) UnstableDidCloseDocument(ctx context.Context, p acp.UnstableDidCloseDocumentNotification) error {
	_, err := invoke[struct{}](a.r, ctx, "document/didClose", p)
	return err
}

func (a *experimentalAgent) UnstableDidFocusDocument(ctx context.Context, p acp.UnstableDidFocusDocumentNotification) error {
	_, err := invoke[struct{}](a.r, ctx, "document/didFocus", p)
	return err
}

func (a *experimentalAgent) UnstableDidOpenDocument(ctx context.Context, p acp.UnstableDidOpenDocumentNotification) error {
	_, err := invoke[struct{}](a.r, ctx, "document/didOpen", p)
	return err
}

func (a *experimentalAgent) UnstableDidSaveDocument(ctx context.Context, p acp.UnstableDidSaveDocumentNotification) error {
	_, err := invoke[struct{}](a.r, ctx, "document/didSave", p)
	return err
}

func (a *experimentalAgent) UnstableAcceptNes(ctx context.Context, p acp.UnstableAcceptNesNotification) error {
	_, err := invoke[struct{}](a.r, ctx, "nes/accept", p)
	return err
}

func (a *experimentalAgent) UnstableCloseNes(ctx context.Context, p acp.UnstableCloseNesRequest) (acp.UnstableCloseNesResponse, error) {
	return invoke[acp.UnstableCloseNesResponse](a.r, ctx, "nes/close", p)
}

func (a *experimentalAgent) UnstableRejectNes(ctx context.Context, p acp.UnstableRejectNesNotification) error {
	_, err := invoke[struct{}](a.r, ctx, "nes/reject", p)
	return err
}

func (a *experimentalAgent) UnstableStartNes(ctx context.Context, p acp.UnstableStartNesRequest) (acp.UnstableStartNesResponse, error) {
	return invoke[acp.UnstableStartNesResponse](a.r, ctx, "nes/start", p)
}

func (a *experimentalAgent) UnstableSuggestNes(ctx context.Context, p acp.UnstableSuggestNesRequest) (acp.UnstableSuggestNesResponse, error) {
	return invoke[acp.UnstableSuggestNesResponse](a.r, ctx, "nes/suggest", p)
}

func (a *experimentalAgent) UnstableDisableProvider(ctx context.Context, p acp.UnstableDisableProviderRequest) (acp.UnstableDisableProviderResponse, error) {
	return invoke[acp.UnstableDisableProviderResponse](a.r, ctx, "providers/disable", p)
}

func (a *experimentalAgent) UnstableListProviders(ctx context.Context, p acp.UnstableListProvidersRequest) (acp.UnstableListProvidersResponse, error) {
	return invoke[acp.UnstableListProvidersResponse](a.r, ctx, "providers/list", p)
}

func (a *experimentalAgent) UnstableSetProvider(ctx context.Context, p acp.UnstableSetProviderRequest) (acp.UnstableSetProviderResponse, error) {
	return invoke[acp.UnstableSetProviderResponse](a.r, ctx, "providers/set", p)
}

func (a *experimentalAgent) UnstableDeleteSession(ctx context.Context, p acp.UnstableDeleteSessionRequest) (acp.UnstableDeleteSessionResponse, error) {
	return invoke[acp.UnstableDeleteSessionResponse](a.r, ctx, "session/delete", p)
}

func (a *experimentalAgent) UnstableForkSession(ctx context.Context, p acp.UnstableForkSessionRequest) (acp.UnstableForkSessionResponse, error) {
	return invoke[acp.UnstableForkSessionResponse](a.r, ctx, "session/fork", p)
}

func (a *fullAgent) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return invoke[json.RawMessage](a.r, ctx, method, params)
}

// agentCaller maps wire method names to the outbound methods of an
// AgentSideConnection (every agent→client method of v0.13.5).
func agentCaller(c *acp.AgentSideConnection) caller {
	return byName(map[string]caller{
		"session/update":             notif(c.SessionUpdate),
		"fs/read_text_file":          req(c.ReadTextFile),
		"fs/write_text_file":         req(c.WriteTextFile),
		"session/request_permission": req(c.RequestPermission),
		"terminal/create":            req(c.CreateTerminal),
		"terminal/kill":              req(c.KillTerminal),
		"terminal/output":            req(c.TerminalOutput),
		"terminal/release":           req(c.ReleaseTerminal),
		"terminal/wait_for_exit":     req(c.WaitForTerminalExit),
		"elicitation/create":         req(c.UnstableCreateElicitation),
		"elicitation/complete":       notif(c.UnstableCompleteElicitation),
		"mcp/connect":                req(c.UnstableConnectMcp),
		"mcp/disconnect":             req(c.UnstableDisconnectMcp),
	}, c.CallExtension, c.NotifyExtension)
}
