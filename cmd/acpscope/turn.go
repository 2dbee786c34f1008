package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude" // registers the claude dialect
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
)

// request is one client request of a session, as the session driver
// sends it after initialize.
type request struct {
	// method is session/new, session/load, session/resume,
	// session/prompt, or methodReopen (run --resume: session/load when
	// the agent offers it, else session/resume).
	method string
	// sessionID names the session of load, resume and prompt ("" for a
	// prompt: the session opened last).
	sessionID string
	// cwd is the working directory of new, load and resume ("" =
	// turnConfig.cwd).
	cwd string
	// text is a prompt's text.
	text string
	// cancel sends session/cancel once the prompt is under way (a replay
	// of a capture whose client cancelled that turn).
	cancel bool
}

// methodReopen asks for the first of session/load and session/resume the
// agent offers.
const methodReopen = "reopen"

// turnConfig is everything one session against one agent needs.
type turnConfig struct {
	// dialect is the explicit dialect name; "" chooses it from the agent's
	// initialize answer.
	dialect string
	cwd     string
	policy  string
	// requests are the client's requests after initialize, in order; the
	// driver sends each and waits for its answer before it asks for the
	// next (so an interactive source reads the next prompt only then).
	requests iter.Seq[request]
	// term renders the session; sink, when set, receives every event too
	// (persistence), with the connection's dialect.
	term *view.Terminal
	sink func(dialect string, ev adapter.Event)
	// turnStarted, when set, is called before each prompt is sent, and
	// onUpdate before each session/update is handed to the tracker.
	turnStarted func(sessionID string)
	onUpdate    func()
	// turnEnded, when set, is told how each turn ended (err nil: stop).
	turnEnded func(n int, stop acp.StopReason, err error)
	// turnContext, when set, derives each prompt turn's context from the
	// session's (an interactive run's Ctrl-C cancels that one turn); the
	// returned func releases it.
	turnContext func(ctx context.Context) (context.Context, func())
	// timeout bounds each step: initialize with the session's opening,
	// then each prompt turn; when it passes, or ctx ends (a signal, a
	// closed standard output), the turn is cancelled.
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

// turnResult is what a finished session reports.
type turnResult struct {
	dialect   string
	sessionID string
	// stopReason is the last turn's; turns counts the prompts answered or
	// cancelled.
	stopReason acp.StopReason
	turns      int
}

// errTurn marks failures of the agent or the turn (exit code 1), as opposed
// to usage and input errors (exit code 2).
var errTurn = errors.New("agent or turn failure")

// errCancelled marks a turn that acpscope cancelled: --timeout passed, or
// a signal arrived or standard output closed (exit code 3, or the
// stopSignal's own code).
var errCancelled = errors.New("turn cancelled")

// errCannotReopen marks a --resume the agent cannot serve: it offers
// neither session/load nor session/resume (exit code 2).
var errCannotReopen = errors.New("the agent cannot reopen a session")

// closeWait bounds the wait for the connection's handlers once the turn is
// over (the agent is gone or answered by then).
const closeWait = 2 * time.Second

// severity orders turn outcomes for the session's exit code: a failure is
// worse than a cancelled turn, which is worse than success.
func severity(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errTurn):
		return 2
	default:
		return 1
	}
}

// runTurn drives a session as an ACP client over the agent's stdio: it
// initializes, then sends cfg.requests in order (open the session, then
// each prompt turn), feeding every update to the tracker and the view on
// the way. It returns the worst turn's error.
//
// When cfg.timeout passes for a step, the step is cancelled: during a
// prompt, session/cancel is sent and the agent has cfg.grace to answer;
// after that (or at once, before there is a session) cfg.abort ends it.
// The turn's open cards end cancelled and its error wraps errCancelled;
// the next turn still runs if the agent answered. When ctx ends (a
// signal), the running turn is cancelled the same way and no other runs.
func runTurn(ctx context.Context, cfg turnConfig, toAgent io.Writer, fromAgent io.Reader) (res turnResult, err error) {
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
	cancelOpen := false
	defer func() {
		stopTicker()
		// Nothing may reach the view after the session. The agent's input
		// is closed first and its output read to the end (bounded by
		// closeWait), so frames it sends after its last answer still
		// reach the tracker, the view and the store; then the connection
		// ends and its handlers finish (queued updates drain into the
		// view).
		if !aborted {
			endInput(toAgent)
			select {
			case <-conn.Done():
			case <-time.After(closeWait):
			}
		}
		_ = conn.Close()
		wctx, cancel := context.WithTimeout(context.Background(), closeWait)
		defer cancel()
		_ = conn.Wait(wctx)
		tracker.Flush()
		// A turn the agent was aborted in (or a session stopped before its
		// first turn) leaves its cards open: they end cancelled here, once
		// nothing more can arrive.
		if cancelOpen || (res.turns == 0 && errors.Is(err, errCancelled)) {
			cancelCards(cfg, tracker)
		}
	}()

	// call runs one request to the agent; when stop ends before it
	// answers, the agent is aborted at once.
	call := func(stop context.Context, what string, fn func(context.Context) error) error {
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
	// initialize and the session's opening share one --timeout.
	openStop, cancelOpenStop := context.WithTimeout(ctx, cfg.timeout)
	defer cancelOpenStop()
	var initResp acp.InitializeResponse
	if err := call(openStop, "initialize", func(ctx context.Context) (err error) {
		initResp, err = conn.Initialize(ctx, initReq)
		return err
	}); err != nil {
		return res, err
	}
	tracker.Initialize(&initReq, &initResp)
	res.dialect = tracker.Dialect()

	var worst error
	opened := false
	for req := range cfg.requests {
		if ctx.Err() != nil || aborted {
			break
		}
		if req.cwd == "" {
			req.cwd = cfg.cwd
		}
		if req.method != "session/prompt" {
			stop := openStop
			var cancelStop context.CancelFunc = func() {}
			if opened {
				stop, cancelStop = context.WithTimeout(ctx, cfg.timeout)
			}
			err := openSession(stop, conn, tracker, cfg, initResp.AgentCapabilities, req, call, &res)
			cancelStop()
			if err != nil {
				return res, err
			}
			opened = true
			continue
		}
		if req.sessionID == "" {
			req.sessionID = res.sessionID
		}
		res.turns++
		stop, ans, err := promptTurn(ctx, conn, tracker, cfg, req, abort)
		res.dialect = tracker.Dialect()
		if err == nil {
			res.stopReason = ans.resp.StopReason
		} else if errors.Is(err, errCancelled) {
			res.stopReason = acp.StopReasonCancelled
		}
		if res.stopReason == acp.StopReasonCancelled {
			cancelOpen = true
			if !aborted {
				// The agent answered: its cards are all delivered, and
				// what it left open ends cancelled now, before the next
				// turn, in the view and in the store alike (a replay of
				// the capture shows what the live run showed).
				cancelCards(cfg, tracker)
				cancelOpen = false
			}
		}
		if cfg.turnEnded != nil {
			cfg.turnEnded(res.turns, res.stopReason, err)
		}
		if severity(err) > severity(worst) || (err != nil && stop) {
			worst = err
		}
		if stop {
			break
		}
	}
	if res.sessionID == "" && worst == nil && ctx.Err() == nil {
		return res, fmt.Errorf("no session was opened")
	}
	return res, worst
}

// cancelCards ends the cards the view still shows open as cancelled and
// hands those events to the sink.
func cancelCards(cfg turnConfig, tracker *adapter.Tracker) {
	for _, ev := range cfg.term.CancelOpen() {
		if cfg.sink != nil {
			cfg.sink(tracker.Dialect(), ev)
		}
	}
}

// openSession sends a session/new, session/load or session/resume request
// (methodReopen picks one from the agent's capabilities) and records the
// session in the tracker; history the agent replays during a load is
// marked in the view.
func openSession(stop context.Context, conn *acp.ClientSideConnection, tracker *adapter.Tracker, cfg turnConfig, caps acp.AgentCapabilities,
	req request, call func(context.Context, string, func(context.Context) error) error, res *turnResult) error {
	method := req.method
	if method == methodReopen {
		switch {
		case caps.LoadSession:
			method = acp.AgentMethodSessionLoad
		case caps.SessionCapabilities.Resume != nil:
			method = acp.AgentMethodSessionResume
		default:
			return fmt.Errorf("%w: --resume %s: the agent offers neither session/load (agentCapabilities.loadSession) nor session/resume (agentCapabilities.sessionCapabilities.resume)",
				errCannotReopen, req.sessionID)
		}
	}
	switch method {
	case acp.AgentMethodSessionNew:
		var sess acp.NewSessionResponse
		if err := call(stop, method, func(ctx context.Context) (err error) {
			sess, err = conn.NewSession(ctx, acp.NewSessionRequest{Cwd: req.cwd, McpServers: []acp.McpServer{}})
			return err
		}); err != nil {
			return err
		}
		res.sessionID = string(sess.SessionId)
		tracker.SessionStarted(res.sessionID)
		return nil
	case acp.AgentMethodSessionLoad, acp.AgentMethodSessionResume:
		sid := acp.SessionId(req.sessionID)
		tracker.SessionLoaded(req.sessionID)
		cfg.term.Note(fmt.Sprintf("── history of session %s (%s) ──", req.sessionID, method))
		err := call(stop, method, func(ctx context.Context) (err error) {
			if method == acp.AgentMethodSessionLoad {
				_, err = conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: sid, Cwd: req.cwd, McpServers: []acp.McpServer{}})
			} else {
				_, err = conn.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: sid, Cwd: req.cwd, McpServers: []acp.McpServer{}})
			}
			return err
		})
		tracker.SessionLoadFinished(req.sessionID, err == nil)
		tracker.Flush()
		cfg.term.Note("── end of history ──")
		if err != nil {
			return err
		}
		res.sessionID = req.sessionID
		return nil
	}
	return fmt.Errorf("unknown session request %q", method)
}

// promptTurn runs one prompt turn under its own --timeout. stop reports
// that no further turn may run: ctx ended, or the agent was aborted.
func promptTurn(ctx context.Context, conn *acp.ClientSideConnection, tracker *adapter.Tracker, cfg turnConfig, req request, abort func()) (stop bool, ans promptAnswer, err error) {
	turnCtx := ctx
	if cfg.turnContext != nil {
		var release func()
		turnCtx, release = cfg.turnContext(ctx)
		defer release()
	}
	turnStop, cancelTurn := context.WithTimeout(turnCtx, cfg.timeout)
	defer cancelTurn()
	if cfg.turnStarted != nil {
		cfg.turnStarted(req.sessionID)
	}
	tracker.PromptStarted(req.sessionID)
	sid := acp.SessionId(req.sessionID)
	done := make(chan promptAnswer, 1)
	rpcCtx := context.WithoutCancel(ctx)
	go func() {
		resp, err := conn.Prompt(rpcCtx, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(req.text)}})
		done <- promptAnswer{resp, err}
	}()
	if req.cancel {
		_ = conn.Cancel(rpcCtx, acp.CancelNotification{SessionId: sid})
	}
	aborted := false
	cancelled := ""
	select {
	case ans = <-done:
	case <-turnStop.Done():
		ans, cancelled = cancelPrompt(conn, sid, cfg.grace, done, func() { aborted = true; abort() })
		cancelled = stopCause(turnCtx, cfg.timeout) + "; " + cancelled
	}
	// The SDK's response barrier has delivered every update sent before the
	// answer, so the turn's cards are complete here.
	tracker.PromptEnded(req.sessionID)
	tracker.Flush() // cursor/task was answered before its events were delivered
	stop = ctx.Err() != nil || aborted
	if cancelled != "" {
		return stop, ans, fmt.Errorf("%w: %s", errCancelled, cancelled)
	}
	if ans.err != nil {
		// An error answer leaves the session usable; a connection that
		// ended does not.
		stop = stop || conn.Err() != nil
		return stop, ans, fmt.Errorf("%w: session/prompt: %s", errTurn, describeRPC(ans.err))
	}
	return stop, ans, nil
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
		onUpdate:  cfg.onUpdate,
	}
	// Ordered requests: an agent request (cursor/task, a permission) is
	// handled after the updates the agent sent before it, so cards and the
	// live log follow the wire order.
	conn := acp.NewClientSideConnection(client, toAgent, fromAgent, acp.WithOrderedRequests())
	conn.SetLogger(cfg.log)
	return tracker, conn, nil
}

// endInput closes the agent's input, if it can be closed: an ACP agent ends
// at end of input, which ends its output.
func endInput(toAgent io.Writer) {
	if c, ok := toAgent.(io.Closer); ok {
		_ = c.Close()
	}
}

// promptAnswer is the outcome of session/prompt.
type promptAnswer struct {
	resp acp.PromptResponse
	err  error
}

// stopCause says why a turn is being cancelled: ctx ended (a signal or a
// closed standard output, see stopSignal) or the timeout passed.
func stopCause(ctx context.Context, timeout time.Duration) string {
	if ctx.Err() != nil {
		var s *stopSignal
		if errors.As(context.Cause(ctx), &s) {
			return s.what
		}
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
