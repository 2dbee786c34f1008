package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude" // registers the claude dialect
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
)

// turnConfig is everything one turn against one agent needs.
type turnConfig struct {
	// dialect is the explicit dialect name; "" chooses it from the agent's
	// initialize answer.
	dialect string
	prompt  string
	cwd     string
	policy  string
	// term renders the turn; sink, when set, receives every event too
	// (persistence), with the connection's dialect.
	term *view.Terminal
	sink func(dialect string, ev adapter.Event)
	// timeout bounds the whole turn (initialize to prompt response).
	timeout time.Duration
	// log receives the SDK's connection log.
	log *slog.Logger
	// subagents declares clientCapabilities.subagents, opting in to the
	// ACP subagent-session form.
	subagents bool
}

// turnResult is what a finished turn reports.
type turnResult struct {
	dialect    string
	sessionID  string
	stopReason acp.StopReason
}

// errTurn marks failures of the agent or the turn (exit code 1), as opposed
// to usage and input errors (exit code 2).
var errTurn = errors.New("agent or turn failure")

// runTurn drives one turn as an ACP client over the agent's stdio: it
// initializes, opens a session, sends the prompt and waits for the answer,
// feeding every update to the tracker and the view on the way.
func runTurn(ctx context.Context, cfg turnConfig, toAgent io.Writer, fromAgent io.Reader) (turnResult, error) {
	var res turnResult
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	var tracker *adapter.Tracker
	tracker, err := adapter.NewTracker(adapter.Config{
		DialectName: cfg.dialect,
		OnEvent: func(ev adapter.Event) {
			cfg.term.Event(ev)
			if cfg.sink != nil {
				cfg.sink(tracker.Dialect(), ev)
			}
		},
	})
	if err != nil {
		return res, err
	}
	client := &scopeClient{
		tracker:   tracker,
		out:       cfg.term,
		policy:    cfg.policy,
		root:      cfg.cwd,
		extension: cursor.NewHandler(tracker),
	}
	// Ordered requests: an agent request (cursor/task, a permission) is
	// handled after the updates the agent sent before it, so cards and the
	// live log follow the wire order.
	conn := acp.NewClientSideConnection(client, toAgent, fromAgent, acp.WithOrderedRequests())
	conn.SetLogger(cfg.log)
	defer func() {
		// Nothing may reach the view after the turn: end the connection and
		// wait for its handlers (queued updates still drain into the view).
		_ = conn.Close()
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = conn.Wait(wctx)
		tracker.Flush()
	}()

	stopTicker := startTicker(cfg.term)
	defer stopTicker()

	initReq := acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{
			Fs: acp.FileSystemCapabilities{ReadTextFile: true},
		},
		ClientInfo: &acp.Implementation{Name: "acpscope", Version: version},
	}
	if cfg.subagents {
		initReq.ClientCapabilities.Subagents = &acp.SubagentCapabilities{}
	}
	initResp, err := conn.Initialize(ctx, initReq)
	if err != nil {
		return res, fmt.Errorf("%w: initialize: %v", errTurn, err)
	}
	tracker.Initialize(&initReq, &initResp)
	res.dialect = tracker.Dialect()

	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cfg.cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		return res, fmt.Errorf("%w: session/new: %v", errTurn, err)
	}
	res.sessionID = string(sess.SessionId)
	tracker.SessionStarted(res.sessionID)

	tracker.PromptStarted(res.sessionID)
	resp, err := conn.Prompt(ctx, acp.PromptRequest{
		SessionId: sess.SessionId,
		Prompt:    []acp.ContentBlock{acp.TextBlock(cfg.prompt)},
	})
	// The SDK's response barrier has delivered every update sent before the
	// answer, so the turn's cards are complete here.
	tracker.PromptEnded(res.sessionID)
	tracker.Flush() // cursor/task was answered before its events were delivered
	res.dialect = tracker.Dialect()
	if err != nil {
		return res, fmt.Errorf("%w: session/prompt: %v", errTurn, err)
	}
	res.stopReason = resp.StopReason
	return res, nil
}

// startTicker animates the view's spinner until the returned stop is called.
func startTicker(term *view.Terminal) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				term.Tick()
			}
		}
	}()
	return func() { close(done); <-finished }
}
