package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude" // registers the claude dialect
	"github.com/kdlbs/acp-go-sdk/adapter/cursor"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
)

// Request is one client Request of a session, as the session driver
// sends it after initialize.
type Request struct {
	// Method is session/new, session/load, session/resume,
	// session/prompt, or MethodReopen (run --resume and --reload: the
	// method Config.ReopenWith names, or the first of session/load and
	// session/resume the agent offers).
	Method string
	// SessionID names the session of load, resume, reopen and prompt
	// ("" for a prompt or a reopen: the session opened last).
	SessionID string
	// Cwd is the working directory of new, load and resume ("" =
	// Config.cwd).
	Cwd string
	// Text is a prompt's text.
	Text string
	// Cancel sends session/cancel once the prompt is under way (a replay
	// of a capture whose client cancelled that turn).
	Cancel bool
	// Queue are prompts sent right after this one, in order, without
	// waiting for its answer (an agent that queues prompts works them
	// after it, as Claude's promptQueueing does). Each is a turn of its
	// own, with its own answer; its --timeout runs from the answer of the
	// turn before it. Together they are one turn span: see
	// Config.TurnStarted.
	Queue []Request
}

// MethodReopen asks for the method Config.ReopenWith names, or, when it
// names none, the first of session/load and session/resume the agent
// offers.
const MethodReopen = "reopen"

// ParseReopenMethod reads how a run reopens sessions (run --resume-with):
// "load" is session/load, "resume" session/resume, and "auto" or ""
// leave the choice to the agent's capabilities ("").
func ParseReopenMethod(s string) (string, error) {
	switch s {
	case "", "auto":
		return "", nil
	case "load":
		return acp.AgentMethodSessionLoad, nil
	case "resume":
		return acp.AgentMethodSessionResume, nil
	}
	return "", fmt.Errorf("%q is none of load, resume and auto", s)
}

// Config is everything one session against one agent needs.
type Config struct {
	// Dialect is the explicit dialect name; "" chooses it from the agent's
	// initialize answer.
	Dialect string
	Cwd     string
	Policy  string
	// Requests are the client's requests after initialize, in order; the
	// driver sends each (a prompt with those queued behind it) and waits
	// for its answers before it asks for the next (so an interactive
	// source reads the next prompt only then).
	Requests iter.Seq[Request]
	// Term renders the session's text, notes and progress line. Sink
	// receives every tracker event, with the connection's dialect and its
	// wire time: the one fan-out (the view, the store) the command built;
	// nil hands them to Term alone.
	Term *view.Terminal
	Sink sink.Sink
	// Clock, when set, is the events' wire time (a replay's is the
	// capture's own); nil is the time the client stack handles them.
	Clock func() time.Time
	// TurnStarted, when set, is called before each prompt is sent that
	// opens a turn span, and OnUpdate before each session/update is
	// handed to the tracker. Prompts queued behind a prompt
	// (Request.Queue) share its span: ACP updates do not say which open
	// prompt they answer, so what arrives while any of them is open
	// belongs to the span.
	TurnStarted func(sessionID string)
	OnUpdate    func()
	// TurnEnded, when set, is told how each turn ended (err nil: stop).
	TurnEnded func(n int, stop acp.StopReason, err error)
	// TurnContext, when set, derives each prompt turn's context from the
	// session's (an interactive run's Ctrl-C cancels that one turn); the
	// returned func releases it.
	TurnContext func(ctx context.Context) (context.Context, func())
	// Timeout bounds each step: initialize with the session's opening,
	// then each prompt turn; when it passes, or ctx ends (a signal, a
	// closed standard output), the turn is cancelled.
	Timeout time.Duration
	// Grace is how long a cancelled turn waits for the agent's answer to
	// session/cancel before abort is called.
	Grace time.Duration
	// Abort ends the agent for good (its whole process group, or the
	// scripted agent) so that every blocked write to it ends; nil if none.
	Abort func()
	// Log receives the SDK's connection log.
	Log *slog.Logger
	// Subagents declares clientCapabilities.subagents, opting in to the
	// ACP subagent-session form.
	Subagents bool
	// ClientCapabilities, when set, is a JSON object merged over the
	// clientCapabilities acpscope declares (fs.readTextFile, and
	// subagents under Subagents): an editor's declaration (run --as,
	// --client-capabilities). With ExactCapabilities it is the whole
	// declaration (replay sends what the capture declared).
	ClientCapabilities json.RawMessage
	ExactCapabilities  bool
	// AwaitChildren keeps the session open after its last answer while a
	// child that outlives its turn still runs (Tracker.LiveBackground;
	// bounded by Timeout), so its updates and requests after the answer
	// are seen (run sets it; a replay plays what was recorded).
	AwaitChildren bool
	// changed, when set, is signalled after each event (without
	// blocking).
	changed chan struct{}
	// held is the connection's held agent text (NewClientStack makes it),
	// released at each turn's end and at the connection's end.
	held *heldText
	// ClientVersion is sent as clientInfo.version.
	ClientVersion string
	// ReopenWith is the method a MethodReopen request uses
	// (session/load or session/resume); "" picks the first of them the
	// agent offers.
	ReopenWith string
	// Traces, when set, exports the session as traces (turns, permission
	// requests); events reach it through Sink. NoTraceparent keeps the
	// turn's traceparent out of the prompts' _meta.
	Traces        *traces.Exporter
	NoTraceparent bool
	// Connected, when set, is handed what may cancel a child session on
	// the connection once it is up, and nil once the session ended (run
	// --web's Stop).
	Connected func(*ChildCanceller)
	// Turns, when set, is told what Traces is told of turns, the agent
	// and permissions (the store keeps them for an export).
	Turns traces.TurnObserver
}

// turnObservers are the observers of the session's turns: the export,
// then the store.
func (cfg Config) turnObservers() traces.TurnObservers {
	return traces.TurnObservers{cfg.Traces, cfg.Turns}
}

// ChildCanceller sends session/cancel for a child session on one
// connection, which only a child holding the cancel capability may get
// (adapter.Tracker.CanCancelChild).
type ChildCanceller struct {
	tracker *adapter.Tracker
	conn    *acp.ClientSideConnection
}

// CanCancel reports whether the child session holds the ACP cancel
// capability now.
func (c *ChildCanceller) CanCancel(child string) bool { return c.tracker.CanCancelChild(child) }

// Cancel sends session/cancel for the child session, whether or not it
// holds the capability: the caller checks CanCancel first.
func (c *ChildCanceller) Cancel(ctx context.Context, child string) error {
	return c.conn.Cancel(ctx, acp.CancelNotification{SessionId: acp.SessionId(child)})
}

// Result is what a finished session reports.
type Result struct {
	Dialect   string
	SessionID string
	// StopReason is the last turn's; turns counts the prompts answered or
	// cancelled.
	StopReason acp.StopReason
	Turns      int
	// Foreign counts the session updates for sessions the client never
	// opened and the agent never announced (adapter
	// CounterForeignSessionUpdates): dropped, never shown or stored.
	Foreign int64
}

// ErrTurn marks failures of the agent or the turn (exit code 1), as opposed
// to usage and input errors (exit code 2).
var ErrTurn = errors.New("agent or turn failure")

// ErrCancelled marks a turn that acpscope cancelled: --timeout passed, or
// a signal arrived or standard output closed (exit code 3, or the
// Ending's own code).
var ErrCancelled = errors.New("turn cancelled")

// ErrCannotReopen marks a --resume the agent cannot serve: it offers
// neither session/load nor session/resume (exit code 2).
var ErrCannotReopen = errors.New("the agent cannot reopen a session")

// Ending is why a session ended from outside: a signal, or a closed
// standard output. It is the cause of the session's context (see
// context.WithCancelCause), and Code is the exit code it calls for.
type Ending struct {
	What string
	Code int
}

// Error says what ended the session.
func (e *Ending) Error() string { return e.What }

// closeWait bounds the wait for the connection's handlers once the turn is
// over (the agent is gone or answered by then).
const closeWait = 2 * time.Second

// severity orders turn outcomes for the session's exit code: a failure is
// worse than a cancelled turn, which is worse than success.
func severity(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrTurn):
		return 2
	default:
		return 1
	}
}

// Run drives a session as an ACP client over the agent's stdio: it
// initializes, then sends cfg.Requests in order (open the session, then
// each prompt turn), feeding every update to the tracker and the view on
// the way. It returns the worst turn's error.
//
// When cfg.Timeout passes for a step, the step is cancelled: during a
// prompt, session/cancel is sent and the agent has cfg.Grace to answer;
// after that (or at once, before there is a session) cfg.Abort ends it.
// The turn's open cards end cancelled and its error wraps ErrCancelled;
// the next turn still runs if the agent answered. When ctx ends (a
// signal), the running turn is cancelled the same way and no other runs.
func Run(ctx context.Context, cfg Config, toAgent io.Writer, fromAgent io.Reader) (res Result, err error) {
	// The requests themselves end only when the agent is aborted: a
	// cancelled turn still waits (for the grace period) for the answer.
	rpcCtx, abortRPC := context.WithCancel(context.WithoutCancel(ctx))
	defer abortRPC()
	aborted := false
	abort := func() {
		if !aborted {
			aborted = true
			if cfg.Abort != nil {
				cfg.Abort()
			}
			abortRPC()
		}
	}

	cfg.changed = make(chan struct{}, 1)
	tracker, conn, held, err := newClientStack(cfg, toAgent, fromAgent)
	cfg.held = held
	if err != nil {
		return res, err
	}
	if cfg.Connected != nil {
		cfg.Connected(&ChildCanceller{tracker: tracker, conn: conn})
		defer cfg.Connected(nil)
	}
	stopTicker := startTicker(cfg.Term)
	// cancelOpen are the sessions whose cancelled turn left cards open
	// the agent may still settle (the span's last answer ends them);
	// opening is the session a load or resume is reopening.
	cancelOpen := map[string]bool{}
	opening := ""
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
		res.Foreign = tracker.Counters()[adapter.CounterForeignSessionUpdates]
		// A turn the agent was aborted in (or a session stopped before its
		// first turn) leaves its cards open: they end cancelled here, once
		// nothing more can arrive.
		if res.Turns == 0 && errors.Is(err, ErrCancelled) {
			cancelOpen[sessionOr(opening, res.SessionID)] = true
		}
		for _, sid := range slices.Sorted(maps.Keys(cancelOpen)) {
			cancelCards(tracker, sid)
		}
		// What is still open (a background child past --timeout, a card
		// the agent left open after its last answer) ends unknown: the
		// agent is gone and never reported an outcome; the tap ends its
		// connection by the same rule (adapter.Tracker.EndConnection). No
		// prompt is open any more: a cut-short turn ended above.
		tracker.EndConnection(nil)
		tracker.Flush()
		held.releaseAll()
	}()

	// call runs one Request to the agent; when stop ends before it
	// answers, the agent is aborted at once.
	call := func(stop context.Context, what string, fn func(context.Context) error) error {
		done := make(chan error, 1)
		go func() { done <- fn(rpcCtx) }()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("%w: %s: %s", ErrTurn, what, describeRPC(err))
			}
			return nil
		case <-stop.Done():
			abort()
			select { // the aborted Request ends with the agent's pipes
			case <-done:
			case <-time.After(closeWait):
			}
			return fmt.Errorf("%w: %s during %s; the agent was stopped", ErrCancelled, stopCause(ctx, cfg.Timeout), what)
		}
	}

	initReq := acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{
			Fs: acp.FileSystemCapabilities{ReadTextFile: true},
		},
		ClientInfo: &acp.Implementation{Name: "acpscope", Version: cfg.ClientVersion},
	}
	if cfg.Subagents {
		initReq.ClientCapabilities.Subagents = &acp.SubagentCapabilities{}
	}
	if initReq.ClientCapabilities, err = declaredCapabilities(cfg, initReq.ClientCapabilities); err != nil {
		return res, err
	}
	// initialize and the session's opening share one --timeout.
	openStop, cancelOpenStop := context.WithTimeout(ctx, cfg.Timeout)
	defer cancelOpenStop()
	var initResp acp.InitializeResponse
	if err := call(openStop, "initialize", func(ctx context.Context) (err error) {
		initResp, err = conn.Initialize(ctx, initReq)
		return err
	}); err != nil {
		return res, err
	}
	tracker.Initialize(&initReq, &initResp)
	res.Dialect = tracker.Dialect()
	if info := initResp.AgentInfo; info != nil {
		cfg.turnObservers().Initialized(info.Name, info.Version)
	}

	var worst error
	opened := false
	for req := range cfg.Requests {
		if ctx.Err() != nil || aborted {
			break
		}
		if req.Cwd == "" {
			req.Cwd = cfg.Cwd
		}
		if req.Method != "session/prompt" {
			stop := openStop
			var cancelStop context.CancelFunc = func() {}
			if opened {
				stop, cancelStop = context.WithTimeout(ctx, cfg.Timeout)
			}
			opening = req.SessionID
			err := openSession(stop, conn, tracker, cfg, initResp.AgentCapabilities, req, call, &res)
			cancelStop()
			if err != nil {
				return res, err
			}
			opened = true
			continue
		}
		if cfg.TurnStarted != nil {
			cfg.TurnStarted(sessionOr(req.SessionID, res.SessionID))
		}
		cfg.turnObservers().TurnStarted(sessionOr(req.SessionID, res.SessionID), tracker.Dialect(), "", req.Text)
		// The prompt and those queued behind it are sent at once; their
		// answers are then awaited in order.
		// A queued prompt goes out once the one before it is on the wire;
		// when that write does not end within --timeout (an agent that
		// stopped reading) or ctx ends, the rest of the span is not sent.
		span := append([]Request{req}, req.Queue...)
		open := make([]openPrompt, 0, len(span))
		for i, p := range span {
			p.SessionID = sessionOr(p.SessionID, res.SessionID)
			res.Turns++
			last := i == len(span)-1
			if i > 0 && !open[i-1].onTheWire(ctx, cfg.Timeout) {
				open = append(open, openPrompt{req: p, n: res.Turns, last: last})
				continue
			}
			open = append(open, sendPrompt(ctx, conn, tracker, cfg, p, res.Turns, last))
		}
		stop := false
		for i, p := range open {
			var ans promptAnswer
			var err error
			// The span's first turn runs from its send, each queued one
			// from the answer before it.
			from := time.Now()
			if i == 0 {
				from = p.sent
			}
			switch {
			case p.done == nil:
				err = fmt.Errorf("%w: not sent: the prompt before it was not written to the agent", ErrCancelled)
			case stop:
				ans, err = abandonPrompt(tracker, p)
				cfg.held.release(p.req.SessionID)
			default:
				stop, ans, err = awaitPrompt(ctx, conn, tracker, cfg, p, from, abort)
			}
			res.Dialect = tracker.Dialect()
			if err == nil {
				res.StopReason = ans.resp.StopReason
			} else if errors.Is(err, ErrCancelled) {
				res.StopReason = acp.StopReasonCancelled
			}
			if res.StopReason == acp.StopReasonCancelled {
				cancelOpen[p.req.SessionID] = true
			}
			if p.last && !aborted {
				// The agent answered the span's last prompt: its cards are
				// all delivered, and when that turn was cancelled what it
				// left open ends cancelled now, before the next turn, in
				// the view and in the store alike (a replay of the capture
				// shows what the live run showed).
				if res.StopReason == acp.StopReasonCancelled {
					cancelCards(tracker, p.req.SessionID)
				}
				delete(cancelOpen, p.req.SessionID)
			}
			if cfg.TurnEnded != nil {
				cfg.TurnEnded(p.n, res.StopReason, err)
			}
			if p.last {
				cfg.turnObservers().TurnEnded(p.req.SessionID, string(res.StopReason), traces.UsageOf(ans.resp.Usage), err, errors.Is(err, ErrTurn))
			}
			if severity(err) > severity(worst) || (err != nil && stop) {
				worst = err
			}
		}
		if stop {
			break
		}
	}
	if res.SessionID == "" && worst == nil && ctx.Err() == nil {
		return res, fmt.Errorf("no session was opened")
	}
	if cfg.AwaitChildren && !aborted {
		awaitChildren(ctx, cfg, tracker, conn)
	}
	return res, worst
}

// awaitChildren waits, after the last answer, while a child that outlives
// its turn still runs (Tracker.LiveBackground: a live child of a client
// that declared AIR's backgroundSubagents, a Qwen Code background child):
// until none does, the agent's output ends, ctx ends or Timeout passes.
func awaitChildren(ctx context.Context, cfg Config, tracker *adapter.Tracker, conn *acp.ClientSideConnection) {
	tracker.Flush()
	n := tracker.LiveBackground()
	if n == 0 {
		return
	}
	cfg.Term.Note(fmt.Sprintf("── waiting for %d background subagent(s) ──", n))
	limit := time.NewTimer(cfg.Timeout)
	defer limit.Stop()
	for tracker.LiveBackground() > 0 {
		select {
		case <-cfg.changed:
		case <-conn.Done():
			return
		case <-ctx.Done():
			return
		case <-limit.C:
			cfg.Term.Note("── background subagents still running at --timeout ──")
			return
		}
	}
}

// Turns are a run's client requests: open (session/new, or the
// session --resume names) and then its steps (prompts, and reopenings of
// the session by --reload) in order.
func Turns(open Request, steps iter.Seq[Request]) iter.Seq[Request] {
	return func(yield func(Request) bool) {
		if !yield(open) {
			return
		}
		for req := range steps {
			if !yield(req) {
				return
			}
		}
	}
}

// cancelCards ends the cards a cancelled turn of sessionID left open,
// in that session and its child sessions, as cancelled: the tracker's
// events, handed to every sink the same way; a live background child
// (AIR backgroundSubagents) goes on (adapter.Tracker.CancelTurn).
func cancelCards(tracker *adapter.Tracker, sessionID string) {
	tracker.CancelTurn(sessionID)
	tracker.Flush()
}

// wireTime is the time of the event being handled: cfg.Clock's, else now.
func wireTime(cfg Config) time.Time {
	if cfg.Clock != nil {
		return cfg.Clock()
	}
	return time.Now()
}

// openSession sends a session/new, session/load or session/resume request
// (MethodReopen picks one from the agent's capabilities) and records the
// session in the tracker; history the agent replays during a load is
// marked in the view.
func openSession(stop context.Context, conn *acp.ClientSideConnection, tracker *adapter.Tracker, cfg Config, caps acp.AgentCapabilities,
	req Request, call func(context.Context, string, func(context.Context) error) error, res *Result) error {
	method := req.Method
	if method == MethodReopen {
		if req.SessionID == "" {
			req.SessionID = res.SessionID
		}
		var err error
		if method, err = reopenMethod(cfg.ReopenWith, caps, req.SessionID); err != nil {
			return err
		}
	}
	switch method {
	case acp.AgentMethodSessionNew:
		var sess acp.NewSessionResponse
		if err := call(stop, method, func(ctx context.Context) (err error) {
			sess, err = conn.NewSession(ctx, acp.NewSessionRequest{Cwd: req.Cwd, McpServers: []acp.McpServer{}})
			return err
		}); err != nil {
			return err
		}
		res.SessionID = string(sess.SessionId)
		tracker.SessionStarted(res.SessionID)
		return nil
	case acp.AgentMethodSessionLoad, acp.AgentMethodSessionResume:
		sid := acp.SessionId(req.SessionID)
		tracker.SessionLoaded(req.SessionID)
		cfg.Term.Note(fmt.Sprintf("── history of session %s (%s) ──", req.SessionID, method))
		// The load ends where its response is on the wire, as replay
		// sees it: the SDK's in-order hook runs before any frame the
		// agent sent after the response is handled (the code after the
		// call runs alongside those handlers). A load that got no
		// response ends, failed, once the call returned.
		var ended sync.Once
		end := func(ok bool) {
			ended.Do(func() {
				tracker.SessionLoadFinished(req.SessionID, ok)
				tracker.Flush()
				cfg.Term.Note("── end of history ──")
			})
		}
		traced := func(ctx context.Context) context.Context {
			return acp.WithRequestTrace(ctx, &acp.RequestTrace{ResponseInOrder: func(err error) { end(err == nil) }})
		}
		err := call(stop, method, func(ctx context.Context) (err error) {
			if method == acp.AgentMethodSessionLoad {
				_, err = conn.LoadSession(traced(ctx), acp.LoadSessionRequest{SessionId: sid, Cwd: req.Cwd, McpServers: []acp.McpServer{}})
			} else {
				_, err = conn.ResumeSession(traced(ctx), acp.ResumeSessionRequest{SessionId: sid, Cwd: req.Cwd, McpServers: []acp.McpServer{}})
			}
			return err
		})
		end(false)
		if err != nil {
			return err
		}
		res.SessionID = req.SessionID
		return nil
	}
	return fmt.Errorf("unknown session Request %q", method)
}

// reopenMethod is the method that reopens sessionID: want (session/load
// or session/resume) when the agent offers it, or with want "" the first
// of them the agent offers. An agent that offers none of what is asked
// gives ErrCannotReopen, naming what it lacks.
func reopenMethod(want string, caps acp.AgentCapabilities, sessionID string) (string, error) {
	load, resume := caps.LoadSession, caps.SessionCapabilities.Resume != nil
	switch {
	case want == acp.AgentMethodSessionLoad && !load:
		return "", fmt.Errorf("%w: reopening %s with session/load: the agent does not offer it (agentCapabilities.loadSession)", ErrCannotReopen, sessionID)
	case want == acp.AgentMethodSessionResume && !resume:
		return "", fmt.Errorf("%w: reopening %s with session/resume: the agent does not offer it (agentCapabilities.sessionCapabilities.resume)", ErrCannotReopen, sessionID)
	case want != "":
		return want, nil
	case load:
		return acp.AgentMethodSessionLoad, nil
	case resume:
		return acp.AgentMethodSessionResume, nil
	}
	return "", fmt.Errorf("%w: reopening %s: the agent offers neither session/load (agentCapabilities.loadSession) nor session/resume (agentCapabilities.sessionCapabilities.resume)",
		ErrCannotReopen, sessionID)
}

// sessionOr is id, or the session opened last when id is "".
func sessionOr(id, opened string) string {
	if id == "" {
		return opened
	}
	return id
}

// openPrompt is a session/prompt of the run: turn n, its answer to come
// on done (nil: the prompt was not sent), wrote closed once it is on the
// wire (or its write failed).
type openPrompt struct {
	req   Request
	n     int
	last  bool // the last prompt of its turn span
	done  chan promptAnswer
	wrote chan struct{}
	sent  time.Time
}

// onTheWire waits until p's line is written, at most d and while ctx
// lasts, and reports whether it was. A prompt not sent never is.
func (p openPrompt) onTheWire(ctx context.Context, d time.Duration) bool {
	if p.wrote == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.wrote:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// sendPrompt sends req's prompt without waiting for the answer (and,
// when req.Cancel, session/cancel once the prompt is on the wire). The
// request is not bound to ctx: a cancelled turn still waits (for the
// grace period) for its answer.
func sendPrompt(ctx context.Context, conn *acp.ClientSideConnection, tracker *adapter.Tracker, cfg Config, req Request, n int, last bool) openPrompt {
	p := openPrompt{req: req, n: n, last: last, done: make(chan promptAnswer, 1), wrote: make(chan struct{}), sent: time.Now()}
	tracker.PromptStarted(req.SessionID)
	sid := acp.SessionId(req.SessionID)
	rpcCtx := context.WithoutCancel(ctx)
	// What follows this prompt (a queued one, or the cancel) goes out
	// only once it is on the wire, so the agent reads them in order.
	traced := acp.WithRequestTrace(rpcCtx, &acp.RequestTrace{WroteRequest: func(error) { close(p.wrote) }})
	go func() {
		resp, err := conn.Prompt(traced, acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock(req.Text)}, Meta: cfg.Traces.PromptMeta(req.SessionID, cfg.NoTraceparent)})
		p.done <- promptAnswer{resp, err}
	}()
	if req.Cancel && p.onTheWire(ctx, cfg.Timeout) {
		cctx, cancel := context.WithTimeout(rpcCtx, cfg.Timeout)
		_ = conn.Cancel(cctx, acp.CancelNotification{SessionId: sid})
		cancel()
	}
	return p
}

// awaitPrompt waits for p's answer under its own --timeout, which runs
// from from (the prompt's send; for a queued prompt, the answer of the
// one before it). When the timeout passes or ctx ends, the turn is
// cancelled (see cancelPrompt). stop reports that no further turn may
// run: ctx ended, or the agent was aborted.
func awaitPrompt(ctx context.Context, conn *acp.ClientSideConnection, tracker *adapter.Tracker, cfg Config, p openPrompt, from time.Time, abort func()) (stop bool, ans promptAnswer, err error) {
	turnCtx := ctx
	if cfg.TurnContext != nil {
		var release func()
		turnCtx, release = cfg.TurnContext(ctx)
		defer release()
	}
	turnStop, cancelTurn := context.WithDeadline(turnCtx, from.Add(cfg.Timeout))
	defer cancelTurn()
	aborted := false
	cancelled := ""
	select {
	case ans = <-p.done:
	case <-turnStop.Done():
		ans, cancelled = cancelPrompt(conn, acp.SessionId(p.req.SessionID), cfg.Grace, p.done, func() { aborted = true; abort() })
		cancelled = stopCause(turnCtx, cfg.Timeout) + "; " + cancelled
	}
	// The SDK's response barrier has delivered every update sent before the
	// answer, so the turn's cards are complete here.
	tracker.PromptEnded(p.req.SessionID)
	tracker.Flush() // cursor/task was answered before its events were delivered
	cfg.held.release(p.req.SessionID)
	stop = ctx.Err() != nil || aborted
	if cancelled != "" {
		return stop, ans, fmt.Errorf("%w: %s", ErrCancelled, cancelled)
	}
	if ans.err != nil {
		// An error answer leaves the session usable; a connection that
		// ended does not.
		stop = stop || conn.Err() != nil
		return stop, ans, fmt.Errorf("%w: session/prompt: %s", ErrTurn, describeRPC(ans.err))
	}
	return stop, ans, nil
}

// abandonPrompt ends a queued prompt whose turn span was stopped (ctx
// ended, or the agent was aborted) before its turn came: its answer, if
// the agent still gives one, is awaited for closeWait at most, and the
// turn counts as cancelled.
func abandonPrompt(tracker *adapter.Tracker, p openPrompt) (promptAnswer, error) {
	var ans promptAnswer
	select {
	case ans = <-p.done:
	case <-time.After(closeWait):
	}
	tracker.PromptEnded(p.req.SessionID)
	return ans, fmt.Errorf("%w: the turn before it was stopped", ErrCancelled)
}

// NewClientStack builds acpscope's client side of one connection: the
// tracker, whose events go to cfg.Sink (else cfg.Term), and the client
// connection over the agent's stdio that feeds it.
func NewClientStack(cfg Config, toAgent io.Writer, fromAgent io.Reader) (*adapter.Tracker, *acp.ClientSideConnection, error) {
	tracker, conn, _, err := newClientStack(cfg, toAgent, fromAgent)
	return tracker, conn, err
}

// newClientStack is NewClientStack, with the connection's held agent text
// (released by the caller at each turn's end and at the connection's).
func newClientStack(cfg Config, toAgent io.Writer, fromAgent io.Reader) (*adapter.Tracker, *acp.ClientSideConnection, *heldText, error) {
	out := cfg.Sink
	if out == nil {
		out = cfg.Term
	}
	var tracker *adapter.Tracker
	tracker, err := adapter.NewTracker(adapter.Config{
		DialectName: cfg.Dialect,
		OnEvent: func(ev adapter.Event) {
			out.Record(sink.Event{Event: ev, Dialect: tracker.Dialect(), At: wireTime(cfg)})
			if cfg.changed != nil {
				select {
				case cfg.changed <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	held := newHeldText(tracker, cfg.Term, cfg.Clock)
	client := &scopeClient{
		tracker:   tracker,
		out:       cfg.Term,
		held:      held,
		policy:    cfg.Policy,
		root:      cfg.Cwd,
		extension: cursor.NewHandler(tracker),
		onUpdate:  cfg.OnUpdate,
		traces:    cfg.turnObservers(),
	}
	// Ordered requests: an agent Request (cursor/task, a permission) is
	// handled after the updates the agent sent before it, so cards and the
	// live log follow the wire order.
	conn := acp.NewClientSideConnection(client, toAgent, fromAgent, acp.WithOrderedRequests())
	conn.SetLogger(cfg.Log)
	return tracker, conn, held, nil
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
// closed standard output, see Ending) or the timeout passed.
func stopCause(ctx context.Context, timeout time.Duration) string {
	if ctx.Err() != nil {
		var s *Ending
		if errors.As(context.Cause(ctx), &s) {
			return s.What
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

// describeRPC renders an error of a Request to the agent for a person: a
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
