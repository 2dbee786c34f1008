//go:build !withcursor

package main

import (
	"context"
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// cursorInstalled: this build does not link the Cursor adapter.
const cursorInstalled = false

func newExtensionHandler(*adapter.Tracker) acp.ExtensionMethodHandler { return noExtensions{} }

// noExtensions is a client without extension methods: -32601 for all.
type noExtensions struct{}

func (noExtensions) HandleExtensionMethod(_ context.Context, method string, _ json.RawMessage) (any, error) {
	return nil, acp.NewMethodNotFound(method)
}
