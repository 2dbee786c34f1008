// Command fakeagent is a small ACP agent used by acpscope's end-to-end
// tests: it speaks ACP over stdio through the SDK's agent side and answers
// every prompt with a Claude-style (legacy form) subagent fan-out: one
// foreground subagent with a nested tool call, a permission request and a
// result, and one background launch.
//
// Flags change the behaviour for failure tests:
//
//	-mode ok       the fan-out above, then end_turn (default)
//	-mode error    the prompt fails with a JSON-RPC error
//	-mode exit     the process exits in the middle of the turn
//	-mode burst    sends -updates session/update notifications in one
//	               burst (-per of them for each Claude-style subagent, see
//	               burst.go), on session/prompt and on session/load, then
//	               answers
//	-mode air      an AIR child that outlives its turn (see air.go)
//	-mode air-open an AIR child that outlives its turn and never ends
//	-mode stop     two ACP child sessions, one granted cancel; the turn
//	               ends once session/cancel for that one arrived (see
//	               stop.go; each cancel's session id goes to -state FILE)
//	-mode turns    one subagent per prompt, remembered in -state FILE and
//	               replayed as history by session/load or session/resume
//	               (-reopen load, resume, both or none: what the agent offers;
//	               see turns.go); with -hold N it queues prompts: none is
//	               answered until N arrived, then they are worked in wire
//	               order (see queue.go)
//	-mode traced   per prompt, a subagent with a child tool call that asks
//	               for permission; the second prompt's subagent fails; the
//	               answer reports token usage; every prompt's
//	               _meta.traceparent is appended to -state FILE, and -sid
//	               names the session (see traced.go)
//
// Hostile modes, for the cancel and timeout tests. Each opens a subagent
// card and then:
//
//	-mode cancel   waits for session/cancel and answers cancelled
//	-mode hang     ignores session/cancel and never answers
//	-mode mute     reads its input but never answers anything, not even
//	               initialize
//	-mode junk     writes 20,000 "{}" lines (not JSON-RPC) and exits
//	-mode deaf     stops reading its standard input for good after asking
//	               the client to read -file many times, so the client's
//	               writes block on a full pipe (see deaf.go)
//
// With -load-error MSG, session/load fails with that message (an agent that
// does not know the session it is asked to reopen).
//
// With -ready FILE, the agent creates FILE once the card is open, so a test
// knows the turn is under way before it interrupts it.
//
// With -linger, the agent is slow to exit, as codex-acp is while its codex
// app-server stops: it ignores SIGTERM and SIGHUP (with -termed FILE it
// creates FILE when a SIGTERM arrives), and once its input ended it stays
// until it is killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

func main() {
	mode := flag.String("mode", "ok", "ok, error, exit, burst, turns, traced, cancel, hang, mute, junk, deaf or foreign")
	updates := flag.Int("updates", 20000, "how many updates the burst mode sends")
	per := flag.Int("per", 100, "how many of the burst's updates go to each subagent")
	ready := flag.String("ready", "", "create this file once the turn's card is open (burst: once the prompt arrived)")
	start := flag.String("go", "", "burst: wait until this file exists before sending")
	file := flag.String("file", "", "the file the deaf mode asks the client to read")
	state := flag.String("state", "", "the turns mode's session state file")
	reopen := flag.String("reopen", "load", "how the turns mode reopens a session: load, resume, both or none")
	linger := flag.Bool("linger", false, "ignore SIGTERM and SIGHUP, and stay after the input ended until killed")
	termed := flag.String("termed", "", "-linger: create this file when a SIGTERM arrives")
	loadError := flag.String("load-error", "", "session/load fails with this message")
	hold := flag.Int("hold", 0, "turns mode: answer no prompt until this many arrived, then work them one at a time in wire order (see queue.go)")
	sid := flag.String("sid", "", "traced mode: the session id session/new answers")
	flag.Parse()
	if *linger {
		lingerThroughSignals(*termed)
	}
	switch *mode {
	case "deaf":
		deaf(*file, *ready)
		return
	case "mute":
		markReady(*ready)
		_, _ = io.Copy(io.Discard, os.Stdin)
		for { // input closed: still never answers, until killed
			time.Sleep(time.Hour)
		}
	case "junk":
		junk := strings.Repeat("{}\n", 20000)
		_, _ = os.Stdout.WriteString(junk)
		return
	}
	a := &agent{mode: *mode, ready: *ready, start: *start, updates: *updates, per: *per, state: *state, reopen: *reopen, loadError: *loadError, sid: *sid, cancelled: make(chan struct{}), stop: childStop{cancelled: make(chan struct{})}}
	in := io.Reader(os.Stdin)
	out := io.Writer(os.Stdout)
	if *hold > 0 {
		a.queue, in = newWireQueue(in, *hold)
		out = a.queue.output(out)
	}
	conn := acp.NewAgentSideConnection(a, out, in)
	a.conn = conn
	<-conn.Done()
	for *linger { // input closed: only a kill ends it
		time.Sleep(time.Hour)
	}
}

// lingerThroughSignals ignores SIGTERM and SIGHUP from now on, noting a
// SIGTERM in the file termed ("" notes nothing).
func lingerThroughSignals(termed string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGTERM {
				markReady(termed)
			}
		}
	}()
}

type agent struct {
	mode      string
	ready     string
	start     string     // -go
	updates   int        // -updates, for the burst mode
	per       int        // -per, for the burst mode
	state     string     // -state, for the turns mode
	reopen    string     // -reopen, for the turns mode
	loadError string     // -load-error
	queue     *wireQueue // -hold, for the turns mode (nil: prompts run as they come)
	conn      *acp.AgentSideConnection
	cancelled chan struct{}
	sessions  atomic.Int64 // sessions opened so far
	sid       string       // -sid, for the traced mode
	tracedN   atomic.Int64 // the traced mode's prompts so far
	stop      childStop    // the stop mode's
}

// openCard sends a subagent card that stays in progress, then marks the
// turn as under way (-ready).
func openCard(ctx context.Context, conn *acp.AgentSideConnection, sid acp.SessionId, ready string) error {
	err := conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{
		ToolCallId: "toolu_LONG", Title: "Long task", Kind: acp.ToolKindThink, Status: acp.ToolCallStatusInProgress,
		RawInput: map[string]any{"description": "Long task", "prompt": "never ends", "subagent_type": "general-purpose"},
		Meta:     map[string]any{"claudeCode": map[string]any{"toolName": "Agent"}},
	}}})
	if err != nil {
		return err
	}
	markReady(ready)
	return nil
}

// waitGo waits until the -go file exists ("" waits for nothing).
func waitGo(path string) {
	for path != "" {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// markReady creates the -ready file, if one was asked for.
func markReady(path string) {
	if path != "" {
		_ = os.WriteFile(path, nil, 0o644)
	}
}

func (a *agent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	caps := acp.AgentCapabilities{LoadSession: a.mode == "burst" || (a.mode == "turns" && (a.reopen == "load" || a.reopen == "both"))}
	if a.mode == "turns" && (a.reopen == "resume" || a.reopen == "both") {
		caps.SessionCapabilities.Resume = &acp.SessionResumeCapabilities{}
	}
	return acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentInfo:         &acp.Implementation{Name: "@agentclientprotocol/claude-agent-acp", Version: "0.101.0"},
		AgentCapabilities: caps,
	}, nil
}

// NewSession names the first session fake-session and each later one
// fake-session-N, so a client can hold several at once.
func (a *agent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if a.sid != "" {
		return acp.NewSessionResponse{SessionId: acp.SessionId(a.sid)}, nil
	}
	if n := a.sessions.Add(1); n > 1 {
		return acp.NewSessionResponse{SessionId: acp.SessionId(fmt.Sprintf("fake-session-%d", n))}, nil
	}
	return acp.NewSessionResponse{SessionId: "fake-session"}, nil
}

func (a *agent) Prompt(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	switch a.mode {
	case "error":
		return acp.PromptResponse{}, acp.NewInternalError(map[string]any{"error": "the model is unavailable"})
	case "cancel", "hang":
		if err := openCard(ctx, a.conn, req.SessionId, a.ready); err != nil {
			return acp.PromptResponse{}, err
		}
		if a.mode == "hang" {
			select {} // answers nothing, ever; only a kill ends it
		}
		<-a.cancelled
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case "burst":
		markReady(a.ready)
		waitGo(a.start)
		if err := burst(ctx, a.conn, req.SessionId, a.updates, a.per); err != nil {
			return acp.PromptResponse{}, err
		}
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	case "turns":
		return a.promptTurn(ctx, req)
	case "traced":
		return a.tracedTurn(ctx, req)
	case "foreign":
		return foreign(ctx, a.conn, req.SessionId)
	case "air", "air-open":
		return a.airPrompt(ctx, req.SessionId, a.mode == "air")
	case "stop":
		return a.stopPrompt(ctx, req.SessionId)
	}
	sid := req.SessionId
	claude := func(tool string, extra map[string]any) map[string]any {
		cc := map[string]any{"toolName": tool}
		for k, v := range extra {
			cc[k] = v
		}
		return map[string]any{"claudeCode": cc}
	}
	updates := []acp.SessionUpdate{
		acp.UpdateAgentMessageText("Fanning out.\n"),
		{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "toolu_A", Title: "Task", Kind: acp.ToolKindThink, Status: acp.ToolCallStatusPending,
			RawInput: map[string]any{}, Meta: claude("Agent", nil)}},
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_A", Title: acp.Ptr("Investigate flaky test"),
			RawInput: map[string]any{"description": "Investigate flaky test", "prompt": "Find the root cause", "subagent_type": "general-purpose"},
			Meta:     claude("Agent", nil)}},
		{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "toolu_B", Title: "Read retry_test.go", Kind: acp.ToolKindRead, Status: acp.ToolCallStatusCompleted,
			Meta: claude("Read", map[string]any{"parentToolUseId": "toolu_A"})}},
	}
	for _, u := range updates {
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	if a.mode == "exit" {
		os.Exit(3)
	}
	perm, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: sid,
		ToolCall:  acp.ToolCallUpdate{ToolCallId: "toolu_D", Title: acp.Ptr("go test ./...")},
		Options: []acp.PermissionOption{
			{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		return acp.PromptResponse{}, err
	}
	answer := "cancelled"
	if perm.Outcome.Selected != nil {
		answer = string(perm.Outcome.Selected.OptionId)
	}
	late := []acp.SessionUpdate{
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_A", Meta: claude("Agent", map[string]any{"toolResponse": map[string]any{
			"agentId": "a1b2", "agentType": "general-purpose", "status": "completed", "resolvedModel": "claude-opus-4-8",
			"totalDurationMs": 12345, "totalTokens": 6789, "totalToolUseCount": 2,
			"content": []any{map[string]any{"type": "text", "text": "permission answer: " + answer}},
		}})}},
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_A", Status: acp.Ptr(acp.ToolCallStatusCompleted), Meta: claude("Agent", nil)}},
		{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "toolu_C", Title: "Audit the docs", Kind: acp.ToolKindThink, Status: acp.ToolCallStatusPending,
			RawInput: map[string]any{"description": "Audit the docs", "prompt": "Check links", "subagent_type": "docs-auditor"}, Meta: claude("Agent", nil)}},
		{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "toolu_C", Meta: claude("Agent", map[string]any{"toolResponse": map[string]any{
			"agentId": "b7c8", "isAsync": true, "status": "async_launched", "outputFile": "/tmp/b7c8.output", "canReadOutputFile": true,
		}})}},
		acp.UpdateAgentMessageText("Done."),
	}
	for _, u := range late {
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: u}); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// LoadSession replays the burst as the session's history (-mode burst);
// other modes have no history to replay.
func (a *agent) LoadSession(ctx context.Context, req acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	if a.loadError != "" {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": a.loadError})
	}
	switch a.mode {
	case "burst":
		if err := burst(ctx, a.conn, req.SessionId, a.updates, a.per); err != nil {
			return acp.LoadSessionResponse{}, err
		}
	case "turns":
		if err := a.replayTurns(ctx, req.SessionId); err != nil {
			return acp.LoadSessionResponse{}, err
		}
	}
	return acp.LoadSessionResponse{}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) Cancel(_ context.Context, n acp.CancelNotification) error {
	if a.mode == "stop" {
		a.stopCancel(n)
		return nil
	}
	select {
	case <-a.cancelled:
	default:
		close(a.cancelled)
	}
	return nil
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, nil
}

func (a *agent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}

func (a *agent) ResumeSession(ctx context.Context, req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	if a.mode == "turns" && (a.reopen == "resume" || a.reopen == "both") {
		return acp.ResumeSessionResponse{}, a.replayTurns(ctx, req.SessionId)
	}
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, nil
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}

var (
	_ acp.Agent       = (*agent)(nil)
	_ acp.AgentLoader = (*agent)(nil)
)

func init() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: fakeagent [-mode ok|error|exit|burst|turns|cancel|hang|mute|junk|deaf] [-updates N] [-per N] [-ready FILE] [-file FILE] [-state FILE] [-reopen load|resume|both|none] [-linger [-termed FILE]]")
		flag.PrintDefaults()
	}
}

// foreign completes one card in the client's session, and sends a card
// for a session the client never opened (nor the agent announced): a
// hostile or confused agent's traffic, which must never be stored.
func foreign(ctx context.Context, conn *acp.AgentSideConnection, sid acp.SessionId) (acp.PromptResponse, error) {
	card := func(session acp.SessionId, id acp.ToolCallId, title string) error {
		return conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: session, Update: acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{
			ToolCallId: id, Title: title, Kind: acp.ToolKindThink, Status: acp.ToolCallStatusCompleted,
			RawInput: map[string]any{"description": title, "prompt": "p", "subagent_type": "general-purpose"},
			Meta:     map[string]any{"claudeCode": map[string]any{"toolName": "Agent"}},
		}}})
	}
	if err := card(sid, "toolu_OWN", "Own task"); err != nil {
		return acp.PromptResponse{}, err
	}
	for _, ghost := range []acp.SessionId{"never-opened", "never-opened"} {
		if err := card(ghost, "toolu_GHOST", "Ghost task"); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}
