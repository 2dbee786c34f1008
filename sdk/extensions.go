package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// ExtensionMethodHandler is implemented by a Client or Agent that handles
// methods outside ACP. On the agent side it receives "_"-prefixed methods; on
// the client side every request that is not a client method (e.g. Cursor's
// "cursor/task") and every such notification.
//
// The result is sent as the JSON-RPC result (return struct{}{} for "{}"). A
// returned *RequestError, also when wrapped, is sent as that error; any other
// error is sent as -32603 with data {"error": err.Error()}. Return
// NewMethodNotFound(method) for methods it does not know.
type ExtensionMethodHandler interface {
	HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// handleExtension hands an inbound method to impl's ExtensionMethodHandler.
func handleExtension(ctx context.Context, impl any, method string, params json.RawMessage) (any, *RequestError) {
	h, ok := impl.(ExtensionMethodHandler)
	if !ok {
		return nil, NewMethodNotFound(method)
	}
	result, err := h.HandleExtensionMethod(ctx, method, params)
	if err != nil {
		return nil, toRequestError(err)
	}
	return result, nil
}

// checkExtensionMethod enforces that outbound extension methods start with "_".
func checkExtensionMethod(method string) error {
	if !strings.HasPrefix(method, "_") || len(method) < 2 {
		return fmt.Errorf("acp: extension method %q must start with '_' and name a method", method)
	}
	return nil
}

// CallExtension sends the extension request method (which must start with
// "_") and returns its raw result.
func (c *ClientSideConnection) CallExtension(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := checkExtensionMethod(method); err != nil {
		return nil, err
	}
	return SendRequest[json.RawMessage](c.conn, ctx, method, params)
}

// NotifyExtension sends the extension notification method (which must start with "_").
func (c *ClientSideConnection) NotifyExtension(ctx context.Context, method string, params any) error {
	if err := checkExtensionMethod(method); err != nil {
		return err
	}
	return c.conn.SendNotification(ctx, method, params)
}

// CallExtension sends the extension request method (which must start with
// "_") and returns its raw result.
func (a *AgentSideConnection) CallExtension(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if err := checkExtensionMethod(method); err != nil {
		return nil, err
	}
	return SendRequest[json.RawMessage](a.conn, ctx, method, params)
}

// NotifyExtension sends the extension notification method (which must start with "_").
func (a *AgentSideConnection) NotifyExtension(ctx context.Context, method string, params any) error {
	if err := checkExtensionMethod(method); err != nil {
		return err
	}
	return a.conn.SendNotification(ctx, method, params)
}
