//lint:file-ignore SA1019 the harness is also built against upstream v0.13.5, which has only the Unstable… names (deprecated in sdk/).

package main

import (
	"context"
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"
)

// scriptedClient implements acp.Client: every method records its call and
// plays the scenario's behaviour for it.
type scriptedClient struct{ r *runner }

// experimentalClient adds acp.ClientExperimental.
type experimentalClient struct{ scriptedClient }

// fullClient adds acp.ExtensionMethodHandler.
type fullClient struct{ experimentalClient }

func newScriptedClient(r *runner) acp.Client {
	base := scriptedClient{r: r}
	switch r.sc.Profile {
	case "minimal":
		return &base
	case "noext":
		return &experimentalClient{base}
	default:
		return &fullClient{experimentalClient{base}}
	}
}

func (c *scriptedClient) ReadTextFile(ctx context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return invoke[acp.ReadTextFileResponse](c.r, ctx, "fs/read_text_file", p)
}

func (c *scriptedClient) WriteTextFile(ctx context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return invoke[acp.WriteTextFileResponse](c.r, ctx, "fs/write_text_file", p)
}

func (c *scriptedClient) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return invoke[acp.RequestPermissionResponse](c.r, ctx, "session/request_permission", p)
}

func (c *scriptedClient) SessionUpdate(ctx context.Context, p acp.SessionNotification) error {
	_, err := invoke[struct{}](c.r, ctx, "session/update", p)
	return err
}

func (c *scriptedClient) CreateTerminal(ctx context.Context, p acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return invoke[acp.CreateTerminalResponse](c.r, ctx, "terminal/create", p)
}

func (c *scriptedClient) KillTerminal(ctx context.Context, p acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return invoke[acp.KillTerminalResponse](c.r, ctx, "terminal/kill", p)
}

func (c *scriptedClient) TerminalOutput(ctx context.Context, p acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return invoke[acp.TerminalOutputResponse](c.r, ctx, "terminal/output", p)
}

func (c *scriptedClient) ReleaseTerminal(ctx context.Context, p acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return invoke[acp.ReleaseTerminalResponse](c.r, ctx, "terminal/release", p)
}

func (c *scriptedClient) WaitForTerminalExit(ctx context.Context, p acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return invoke[acp.WaitForTerminalExitResponse](c.r, ctx, "terminal/wait_for_exit", p)
}

func (c *experimentalClient) UnstableCompleteElicitation(ctx context.Context, p acp.UnstableCompleteElicitationNotification) error {
	_, err := invoke[struct{}](c.r, ctx, "elicitation/complete", p)
	return err
}

func (c *experimentalClient) UnstableCreateElicitation(ctx context.Context, p acp.UnstableCreateElicitationRequest) (acp.UnstableCreateElicitationResponse, error) {
	return invoke[acp.UnstableCreateElicitationResponse](c.r, ctx, "elicitation/create", p)
}

func (c *experimentalClient) UnstableConnectMcp(ctx context.Context, p acp.UnstableConnectMcpRequest) (acp.UnstableConnectMcpResponse, error) {
	return invoke[acp.UnstableConnectMcpResponse](c.r, ctx, "mcp/connect", p)
}

func (c *experimentalClient) UnstableDisconnectMcp(ctx context.Context, p acp.UnstableDisconnectMcpRequest) (acp.UnstableDisconnectMcpResponse, error) {
	return invoke[acp.UnstableDisconnectMcpResponse](c.r, ctx, "mcp/disconnect", p)
}

func (c *fullClient) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return invoke[json.RawMessage](c.r, ctx, method, params)
}

// clientCaller maps wire method names to the outbound methods of a
// ClientSideConnection (every client→agent method of v0.13.5).
func clientCaller(c *acp.ClientSideConnection) caller {
	return byName(map[string]caller{
		"initialize":                req(c.Initialize),
		"authenticate":              req(c.Authenticate),
		"logout":                    req(c.Logout),
		"session/new":               req(c.NewSession),
		"session/load":              req(c.LoadSession),
		"session/list":              req(c.ListSessions),
		"session/resume":            req(c.ResumeSession),
		"session/close":             req(c.CloseSession),
		"session/set_mode":          req(c.SetSessionMode),
		"session/set_config_option": req(c.SetSessionConfigOption),
		"session/prompt":            req(c.Prompt),
		"session/cancel":            notif(c.Cancel),
		"session/fork":              req(c.UnstableForkSession),
		"session/delete":            req(c.UnstableDeleteSession),
		"providers/list":            req(c.UnstableListProviders),
		"providers/set":             req(c.UnstableSetProvider),
		"providers/disable":         req(c.UnstableDisableProvider),
		"nes/start":                 req(c.UnstableStartNes),
		"nes/suggest":               req(c.UnstableSuggestNes),
		"nes/close":                 req(c.UnstableCloseNes),
		"nes/accept":                notif(c.UnstableAcceptNes),
		"nes/reject":                notif(c.UnstableRejectNes),
		"document/didOpen":          notif(c.UnstableDidOpenDocument),
		"document/didChange":        notif(c.UnstableDidChangeDocument),
		"document/didClose":         notif(c.UnstableDidCloseDocument),
		"document/didSave":          notif(c.UnstableDidSaveDocument),
		"document/didFocus":         notif(c.UnstableDidFocusDocument),
	}, c.CallExtension, c.NotifyExtension)
}
