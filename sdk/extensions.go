package acp

import (
	"context"
	"encoding/json"
	"errors"
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

// checkExtensionMethod enforces that outbound extension methods start with
// "_". Its error texts are upstream v0.13.5's, byte for byte (callers may
// forward them as strings), and like upstream it accepts the bare name "_".
func checkExtensionMethod(method string) error {
	switch {
	case method == "":
		return errors.New("extension method name must be non-empty")
	case !strings.HasPrefix(method, "_"):
		return fmt.Errorf("extension method name must start with '_' (got %q)", method)
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
