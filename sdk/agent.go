package acp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// AgentSideConnection is the agent's end of an ACP connection: it hands what
// the client sends to an Agent and sends the client methods (SessionUpdate,
// RequestPermission, ReadTextFile, …).
//
// Inbound "_"-prefixed methods go to the Agent's ExtensionMethodHandler
// (-32601 without one); other unknown methods answer -32601. Each
// session/prompt runs with a context that a session/cancel for the same
// session cancels (before Agent.Cancel is called); a new prompt for a session
// cancels the one still running.
type AgentSideConnection struct {
	conn  *Connection
	agent Agent

	mu      sync.Mutex
	prompts map[SessionId]*runningPrompt
}

// runningPrompt is the cancel func of one session's running prompt.
type runningPrompt struct {
	cancel context.CancelFunc
}

// NewAgentSideConnection connects agent to a client: it writes to peerInput
// (the client's input, usually the agent's stdout) and reads from peerOutput.
func NewAgentSideConnection(agent Agent, peerInput io.Writer, peerOutput io.Reader, opts ...ConnectionOption) *AgentSideConnection {
	a := &AgentSideConnection{agent: agent, prompts: map[SessionId]*runningPrompt{}}
	a.conn = NewConnection(a.handle, peerInput, peerOutput, opts...)
	return a
}

// Done is closed when the connection ends.
func (a *AgentSideConnection) Done() <-chan struct{} { return a.conn.Done() }

// SetLogger sets the logger for the connection's diagnostics.
func (a *AgentSideConnection) SetLogger(l *slog.Logger) { a.conn.SetLogger(l) }

// Err returns why the connection ended, or nil while it is open.
func (a *AgentSideConnection) Err() error { return a.conn.Err() }

// Close ends the connection.
func (a *AgentSideConnection) Close() error { return a.conn.Close() }

// Wait blocks until the connection has ended and its goroutines are done, or ctx ends.
func (a *AgentSideConnection) Wait(ctx context.Context) error { return a.conn.Wait(ctx) }

// handle routes one inbound message.
func (a *AgentSideConnection) handle(ctx context.Context, method string, params json.RawMessage) (any, *RequestError) {
	if strings.HasPrefix(method, "_") {
		return handleExtension(ctx, a.agent, method, params)
	}
	if result, rerr, known := a.dispatchAgentMethod(ctx, method, params); known {
		return result, rerr
	}
	return nil, NewMethodNotFound(method)
}

// promptContext registers a prompt for sessionID, cancelling one still
// running for it, and returns its context and the func to call when it ends.
func (a *AgentSideConnection) promptContext(ctx context.Context, sessionID SessionId) (context.Context, func()) {
	pctx, cancel := context.WithCancel(ctx)
	entry := &runningPrompt{cancel: cancel}
	a.mu.Lock()
	if prev := a.prompts[sessionID]; prev != nil {
		prev.cancel()
	}
	a.prompts[sessionID] = entry
	a.mu.Unlock()
	return pctx, func() {
		a.mu.Lock()
		if a.prompts[sessionID] == entry {
			delete(a.prompts, sessionID)
		}
		a.mu.Unlock()
		cancel()
	}
}

// cancelPrompt cancels the running prompt of sessionID, if any.
func (a *AgentSideConnection) cancelPrompt(sessionID SessionId) {
	a.mu.Lock()
	entry := a.prompts[sessionID]
	delete(a.prompts, sessionID)
	a.mu.Unlock()
	if entry != nil {
		entry.cancel()
	}
}
