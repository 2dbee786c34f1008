package acp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
)

// ClientSideConnection is the client's end of an ACP connection: it sends the
// agent methods (Initialize, NewSession, Prompt, …) and hands what the agent
// sends to a Client.
//
// Inbound routing:
//   - one of the client methods (fs/*, session/update, session/request_permission,
//     terminal/*, elicitation/*, mcp/connect, mcp/disconnect) goes to the Client,
//     or answers -32601 when it is an optional method the Client lacks;
//   - any other request, "_"-prefixed or not (e.g. Cursor's "cursor/task"),
//     goes to the Client's ExtensionMethodHandler when it implements one: its
//     result is sent as the result (struct{}{} gives "result":{}), a
//     *RequestError it returns (also wrapped) is sent as that error, any other
//     error becomes -32603. Without a handler the answer is -32601 with data
//     {"method": …};
//   - any other notification is handed to the ExtensionMethodHandler too; its
//     error is only logged (a notification never gets a reply), and without a
//     handler a non-"_" notification is logged as unhandled while a "_" one is
//     ignored silently.
type ClientSideConnection struct {
	conn   *Connection
	client Client
}

// NewClientSideConnection connects client to an agent: it writes to
// peerInput (the agent's stdin) and reads from peerOutput (the agent's stdout).
func NewClientSideConnection(client Client, peerInput io.Writer, peerOutput io.Reader, opts ...ConnectionOption) *ClientSideConnection {
	c := &ClientSideConnection{client: client}
	c.conn = NewConnection(c.handle, peerInput, peerOutput, opts...)
	return c
}

// Done is closed when the connection ends (the agent's output hit EOF or failed).
func (c *ClientSideConnection) Done() <-chan struct{} { return c.conn.Done() }

// SetLogger sets the logger for the connection's diagnostics.
func (c *ClientSideConnection) SetLogger(l *slog.Logger) { c.conn.SetLogger(l) }

// Err returns why the connection ended, or nil while it is open.
func (c *ClientSideConnection) Err() error { return c.conn.Err() }

// Close ends the connection.
func (c *ClientSideConnection) Close() error { return c.conn.Close() }

// Wait blocks until the connection has ended and its goroutines are done, or ctx ends.
func (c *ClientSideConnection) Wait(ctx context.Context) error { return c.conn.Wait(ctx) }

// handle routes one inbound message (see the type's documentation).
func (c *ClientSideConnection) handle(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
	if !strings.HasPrefix(method, "_") {
		if result, rerr, known := dispatchClientMethod(ctx, c.client, method, params); known {
			return result, rerr
		}
	}
	return handleExtension(ctx, c.client, method, params)
}

// Prompt sends "session/prompt" and waits for the turn to end. Every
// session/update the agent sent before its reply has been handed to
// Client.SessionUpdate when Prompt returns. When ctx ends first, Prompt also
// sends "session/cancel" for the session (besides $/cancel_request), so the
// agent stops the turn.
func (c *ClientSideConnection) Prompt(ctx context.Context, params PromptRequest) (PromptResponse, error) {
	resp, err := SendRequest[PromptResponse](c.conn, ctx, AgentMethodSessionPrompt, params)
	if err != nil {
		if ctx.Err() != nil {
			_ = c.conn.SendNotification(context.Background(), AgentMethodSessionCancel, CancelNotification{SessionId: params.SessionId})
		}
		return PromptResponse{}, err
	}
	return resp, nil
}

// UnstableSetSessionModel sends the legacy "session/set_model" request. An
// agent without it answers -32601, which means model selection is unsupported.
func (c *ClientSideConnection) UnstableSetSessionModel(ctx context.Context, params UnstableSetSessionModelRequest) (UnstableSetSessionModelResponse, error) {
	resp, err := SendRequest[UnstableSetSessionModelResponse](c.conn, ctx, LegacyAgentMethodSessionSetModel, params)
	if err != nil {
		return UnstableSetSessionModelResponse{}, err
	}
	return resp, nil
}
