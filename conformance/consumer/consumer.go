// Package acpconsumer is a minimal ACP client written the way a consumer
// of github.com/coder/acp-go-sdk writes one, plus the extension handler a
// Cursor-aware consumer adds for cursor/task. Its test proves that our SDK,
// swapped in with a go.mod replace, builds and routes cursor/task to it.
package acpconsumer

import (
	"context"
	"encoding/json"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// CursorTask is what the client remembers of one cursor/task request.
type CursorTask struct {
	Method string
	Params json.RawMessage
}

// Client implements acp.Client with no-op file and terminal methods and
// keeps every cursor/task and extension notification it receives.
type Client struct {
	mu      sync.Mutex
	tasks   []CursorTask
	notices []string
}

var _ acp.Client = (*Client)(nil)
var _ acp.ExtensionMethodHandler = (*Client)(nil)

// Tasks returns the cursor/task requests seen so far.
func (c *Client) Tasks() []CursorTask {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]CursorTask(nil), c.tasks...)
}

// Notices returns the methods of the extension notifications seen so far.
func (c *Client) Notices() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.notices...)
}

// HandleExtensionMethod accepts cursor/task (answering {}) and _-prefixed
// notifications; everything else is refused with -32601, as Kandev does.
func (c *Client) HandleExtensionMethod(_ context.Context, method string, params json.RawMessage) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case method == "cursor/task":
		c.tasks = append(c.tasks, CursorTask{Method: method, Params: append(json.RawMessage(nil), params...)})
		return struct{}{}, nil
	case len(method) > 0 && method[0] == '_':
		c.notices = append(c.notices, method)
		return nil, nil
	}
	return nil, acp.NewMethodNotFound(method)
}

// ReadTextFile returns empty content.
func (c *Client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, nil
}

// WriteTextFile accepts every write.
func (c *Client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, nil
}

// RequestPermission always cancels.
func (c *Client) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

// SessionUpdate ignores updates.
func (c *Client) SessionUpdate(context.Context, acp.SessionNotification) error { return nil }

// CreateTerminal returns a fixed terminal id, via the TerminalId alias consumers use.
func (c *Client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{TerminalId: acp.TerminalId("term-1")}, nil
}

// KillTerminal does nothing.
func (c *Client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, nil
}

// TerminalOutput returns no output.
func (c *Client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, nil
}

// ReleaseTerminal does nothing.
func (c *Client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, nil
}

// WaitForTerminalExit reports exit code 0.
func (c *Client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{ExitCode: new(int)}, nil
}
