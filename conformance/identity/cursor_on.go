//go:build withcursor

package main

import (
	"context"
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
)

// cursorInstalled: this build links the Cursor adapter, which registers
// its dialect, and answers extension requests with its handler.
const cursorInstalled = true

func newExtensionHandler(t *adapter.Tracker) acp.ExtensionMethodHandler {
	return cursorOnly{cursor.NewHandler(t)}
}

// cursorOnly is the handler a consumer installs: the Cursor adapter's, which
// answers -32601 for everything it does not accept.
type cursorOnly struct{ h *cursor.Handler }

func (c cursorOnly) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return c.h.HandleExtensionMethod(ctx, method, params)
}
