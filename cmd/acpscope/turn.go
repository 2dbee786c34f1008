package main

import (
	"context"
	"encoding/json"
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
	// timeout bounds the whole turn (initialize to prompt response); when it
	// passes, or ctx ends (SIGINT, SIGTERM), the turn is cancelled.
	timeout time.Duration
	// grace is how long a cancelled turn waits for the agent's answer to
	// session/cancel before abort is called.
	grace time.Duration
	// abort ends the agent for good (its whole process group, or the
	// scripted agent) so that every blocked write to it ends; nil if none.
	abort func()
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
	// foreign counts the session updates for sessions the client never
	// opened and the agent never announced (adapter
	// CounterForeignSessionUpdates): dropped, never shown or stored.
	foreign int64
}

// errTurn marks failures of the agent or the turn (exit code 1), as opposed
// to usage and input errors (exit code 2).
var errTurn = errors.New("agent or turn failure")

// errCancelled marks a turn that acpscope cancelled: --timeout passed, or
// SIGINT or SIGTERM arrived (exit code 3).
var errCancelled = errors.New("turn cancelled")

// closeWait bounds the wait for the connection's handlers once the turn is
// over (the agent is gone or answered by then).
const closeWait = 2 * time.Second

// runTurn drives one turn as an ACP client over the agent's stdio: it
// initializes, opens a session, sends the prompt and waits for the answer,
// feeding every update to the tracker and the view on the way.
//
// When cfg.timeout passes or ctx ends, the turn is cancelled: during the
// prompt, session/cancel is sent and the agent has cfg.grace to answer;
// after that (or at once, before there is a session) cfg.abort ends it.
// Either way the cards still open end cancelled and the error wraps
// errCancelled.
func runTurn(ctx context.Context, cfg turnConfig, toAgent io.Writer, fromAgent io.Reader) (res turnResult, err error) {
	stop, cancelStop := context.WithTimeout(ctx, cfg.timeout)
	defer cancelStop()
	// The requests themselves end only when the agent is aborted: a
	// cancelled turn still waits (for the grace period) for the answer.
	rpcCtx, abortRPC := context.WithCancel(context.WithoutCancel(ctx))
	defer abortRPC()
	aborted := false
	abort := func() {
		if !aborted {
			aborted = true
			if cfg.abort != nil {
				cfg.abort()
			}
			abortRPC()
		}
	}

	tracker, conn, err := newClientStack(cfg, toAgent, fromAgent)
	if err != nil {
		return res, err
	}
	stopTicker := startTicker(cfg.term)
	defer func() {
		stopTicker()
		// Nothing may reach the view after the turn: end the connection and
		// wait for its handlers (queued updates still drain into the view).
		_ = conn.Close()
		wctx, cancel := context.WithTimeout(context.Background(), closeWait)
		defer cancel()
		_ = conn.Wait(wctx)
		tracker.Flush()
		res.foreign = tracker.Counters()[adapter.CounterForeignSessionUpdates]
		if errors.Is(err, errCancelled) || (err == nil && res.stopReason == acp.StopReasonCancelled) {
			// The turn is over, cancelled by acpscope or answered
			// "cancelled" by the agent: whatever the agent left open ends
			// cancelled, in the view and in the store alike, so a replay
			// of the capture shows what the live run showed.
			for _, ev := range cfg.term.CancelOpen() {
				if cfg.sink != nil {
					cfg.sink(tracker.Dialect(), ev)
				}
			}
		}
	}()

	// call runs one request to the agent; when the turn is cancelled
	// before it answers, the agent is aborted at once.
	call := func(what string, fn func(context.Context) error) error {
		done := make(chan error, 1)
		go func() { done <- fn(rpcCtx) }()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("%w: %s: %s", errTurn, what, describeRPC(err))
			}
			return nil
		case <-stop.Done():
			abort()
			select { // the aborted request ends with the agent's pipes
			case <-done:
			case <-time.After(closeWait):
			}
			return fmt.Errorf("%w: %s during %s; the agent was stopped", errCancelled, stopCause(ctx, cfg.timeout), what)
		}
	}

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
	var initResp acp.InitializeResponse
	if err := call("initialize", func(ctx context.Context) (err error) {
		initResp, err = conn.Initialize(ctx, initReq)
		return err
	}); err != nil {
		return res, err
	}
	tracker.Initialize(&initReq, &initResp)
	res.dialect = tracker.Dialect()

	var sess acp.NewSessionResponse
	if err := call("session/new", func(ctx context.Context) (err error) {
		sess, err = conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cfg.cwd, McpServers: []acp.McpServer{}})
		return err
	}); err != nil {
		return res, err
	}
	res.sessionID = string(sess.SessionId)
	tracker.SessionStarted(res.sessionID)

	tracker.PromptStarted(res.sessionID)
	done := make(chan promptAnswer, 1)
	go func() {
		resp, err := conn.Prompt(rpcCtx, acp.PromptRequest{
			SessionId: sess.SessionId,
			Prompt:    []acp.ContentBlock{acp.TextBlock(cfg.prompt)},
		})
		done <- promptAnswer{resp, err}
	}()
	var ans promptAnswer
	cancelled := ""
	select {
	case ans = <-done:
	case <-stop.Done():
		ans, cancelled = cancelPrompt(conn, sess.SessionId, cfg.grace, done, abort)
		cancelled = stopCause(ctx, cfg.timeout) + "; " + cancelled
	}
	// The SDK's response barrier has delivered every update sent before the
	// answer, so the turn's cards are complete here.
	tracker.PromptEnded(res.sessionID)
	tracker.Flush() // cursor/task was answered before its events were delivered
	res.dialect = tracker.Dialect()
	if cancelled != "" {
		res.stopReason = acp.StopReasonCancelled
		return res, fmt.Errorf("%w: %s", errCancelled, cancelled)
	}
	if ans.err != nil {
		return res, fmt.Errorf("%w: session/prompt: %s", errTurn, describeRPC(ans.err))
	}
	res.stopReason = ans.resp.StopReason
	return res, nil
}

// newClientStack builds acpscope's client side of one connection: the
// tracker, whose events go to cfg.term and cfg.sink, and the client
// connection over the agent's stdio that feeds it.
func newClientStack(cfg turnConfig, toAgent io.Writer, fromAgent io.Reader) (*adapter.Tracker, *acp.ClientSideConnection, error) {
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
		return nil, nil, err
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
	return tracker, conn, nil
}

// promptAnswer is the outcome of session/prompt.
type promptAnswer struct {
	resp acp.PromptResponse
	err  error
}

// stopCause says why a turn is being cancelled: ctx ended (SIGINT or
// SIGTERM) or the timeout passed.
func stopCause(ctx context.Context, timeout time.Duration) string {
	if ctx.Err() != nil {
		return "interrupted (SIGINT or SIGTERM)"
	}
	return fmt.Sprintf("--timeout %v reached", timeout)
}

// cancelPrompt cancels a running prompt: it sends session/cancel and waits
// up to grace for the agent's answer; without one it aborts the agent. It
// returns the answer (if any) and what happened, for the message.
func cancelPrompt(conn *acp.ClientSideConnection, session acp.SessionId, grace time.Duration, done <-chan promptAnswer, abort func()) (promptAnswer, string) {
	gctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// The notification may block behind a write to an agent that stopped
	// reading; the grace period bounds it all the same.
	go func() { _ = conn.Cancel(gctx, acp.CancelNotification{SessionId: session}) }()
	select {
	case ans := <-done:
		if ans.err != nil {
			return ans, fmt.Sprintf("sent session/cancel; the prompt then failed: %s", describeRPC(ans.err))
		}
		return ans, fmt.Sprintf("sent session/cancel; the agent stopped the turn (%s)", ans.resp.StopReason)
	case <-gctx.Done():
		abort()
		select {
		case <-done:
		case <-time.After(closeWait):
		}
		return promptAnswer{}, fmt.Sprintf("sent session/cancel; the agent did not answer within %v and was stopped", grace)
	}
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

// describeRPC renders an error of a request to the agent for a person: a
// JSON-RPC error as its detail followed by its code and message ("the
// model is unavailable (JSON-RPC -32603 Internal error)") instead of its
// wire JSON; any other error as it is.
func describeRPC(err error) string {
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return err.Error()
	}
	detail := ""
	switch d := re.Data.(type) {
	case nil:
	case string:
		detail = d
	case map[string]any:
		if s, ok := d["error"].(string); ok && len(d) == 1 {
			detail = s
		}
	}
	if detail == "" && re.Data != nil {
		if b, jerr := json.Marshal(re.Data); jerr == nil {
			detail = string(b)
		}
	}
	if detail == "" {
		return fmt.Sprintf("JSON-RPC %d %s", re.Code, re.Message)
	}
	return fmt.Sprintf("%s (JSON-RPC %d %s)", detail, re.Code, re.Message)
}
