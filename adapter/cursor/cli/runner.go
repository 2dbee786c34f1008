package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli/stream"
	"github.com/kdlbs/acp-go-sdk/internal/procguard"
)

// PromptTransport says how the envelope reaches the CLI.
type PromptTransport int

// Prompt transports.
const (
	// TransportArgv passes the envelope as the last, positional argument:
	// the transport verified on the compatible CLI build. Local users can
	// read it in the process table; the envelope is bounded by
	// Limits.MaxArgvPromptBytes.
	TransportArgv PromptTransport = iota
	// TransportStdin writes the envelope to the CLI's stdin and closes it.
	// Use it only for builds where it has been verified.
	TransportStdin
)

// Runner runs turns of one admitted Cursor CLI. A Runner holds no per-turn
// state; Run may be called concurrently for different sessions.
type Runner struct {
	// Executable is the admitted CLI (from Discoverer.Discover or Catalog).
	Executable *Executable
	Timeouts   Timeouts
	Limits     Limits
	Transport  PromptTransport
	// Env entries are appended to the CLI's environment (CURSOR_API_KEY,
	// CURSOR_CONFIG_DIR, …). The environment is never logged.
	Env []string
	// KnownModels, when set, restricts Turn.Model to these ids.
	KnownModels []Model
	// Guard tunes the process guard (descendant scan interval; Mode, whose
	// default runs the CLI under a guard process once the host called
	// EnableGuardProcess).
	Guard procguard.Options
	// Logger receives redacted diagnostics; nil discards them.
	Logger *slog.Logger
}

// Turn is one turn to run.
type Turn struct {
	// Plan comes from SessionState.PlanTurn.
	Plan TurnPlan
	// Dir is the session workspace, the CLI's working directory.
	Dir string
	// Model is passed to --model when non-empty.
	Model string
	// OnEvent receives events in order, on the runner's goroutine; it must
	// not block for long (timers wait for it).
	OnEvent func(Event)
	// OnSessionID is called as soon as a valid init arrives, before the
	// turn ends, so the id can be persisted even if the turn fails.
	OnSessionID func(id string)
}

// Command returns the argv the turn would spawn (without the executable)
// and the redacted form safe to persist. It refuses invalid resume ids and
// models, empty prompts, and envelopes too large for argv.
func (r *Runner) Command(t Turn) (args, redacted []string, err error) {
	if r.Executable == nil || r.Executable.path == "" {
		return nil, nil, &RefusedError{Reason: "no admitted Cursor CLI"}
	}
	lim := r.Limits.withDefaults()
	if t.Plan.Envelope == "" {
		return nil, nil, &RefusedError{Reason: "empty prompt; build it with SessionState.PlanTurn"}
	}
	args = []string{"-p", "--output-format", "stream-json"}
	if t.Plan.ResumeID != "" {
		if !ValidSessionID(t.Plan.ResumeID) {
			return nil, nil, &RefusedError{Reason: "invalid provider session id for --resume"}
		}
		args = append(args, "--resume", t.Plan.ResumeID)
	}
	if t.Model != "" {
		if err := ValidateModel(t.Model, r.KnownModels); err != nil {
			return nil, nil, err
		}
		args = append(args, "--model", t.Model)
	}
	args = append(args, t.Plan.Mode.Flags()...)
	redacted = append([]string{r.Executable.Name}, args...)
	if r.Transport == TransportArgv {
		if len(t.Plan.Envelope) > lim.MaxArgvPromptBytes {
			return nil, nil, &RefusedError{Reason: fmt.Sprintf("prompt of %d bytes exceeds the %d-byte argv limit", len(t.Plan.Envelope), lim.MaxArgvPromptBytes)}
		}
		args = append(args, t.Plan.Envelope)
	}
	redacted = append(redacted, PromptPlaceholder(len(t.Plan.Envelope)))
	return args, redacted, nil
}

// PromptPlaceholder stands for the prompt wherever argv is persisted,
// logged or broadcast.
func PromptPlaceholder(n int) string { return "<prompt: " + strconv.Itoa(n) + " bytes>" }

// Run runs one turn to its end and classifies it. The error is non-nil only
// when the turn was refused before spawning (*RefusedError); every other
// failure is a Result with IsError set and an empty FinalText. Cancelling
// ctx stops the turn (ClassStopped unless a success result already
// arrived). When Run returns, the CLI and every process it started have
// been killed and reaped.
func (r *Runner) Run(ctx context.Context, t Turn) (Result, error) {
	args, redacted, err := r.Command(t)
	if err != nil {
		return Result{Class: ClassSpawnFailed, IsError: true, ExitCode: -1, Detail: err.Error()}, err
	}
	tr := &turnRun{
		r:       r,
		t:       t,
		to:      r.Timeouts.withDefaults(),
		lim:     r.Limits.withDefaults(),
		log:     r.Logger,
		calls:   map[string]*callState{},
		secrets: t.Plan.secrets,
	}
	if tr.log == nil {
		tr.log = discardLogger()
	}
	tr.res.Argv = redacted
	tr.res.ExitCode = -1
	if ctx.Err() != nil {
		// Stopped before anything was spawned.
		tr.res.Class, tr.res.IsError, tr.res.Detail = ClassStopped, true, "stop requested before spawn"
		return tr.res, nil
	}
	return tr.run(ctx, args), nil
}

type callState struct {
	open       bool
	background bool
	timeoutMs  int64
}

type turnRun struct {
	r   *Runner
	t   Turn
	to  Timeouts
	lim Limits
	log *slog.Logger

	res     Result
	failure Class
	detail  string

	initSeen     bool
	terminal     bool // a valid result arrived: nothing more is projected
	result       *stream.Result
	calls        map[string]*callState
	callOrder    []string
	interactions int // interaction requests without a response
	emitted      int
	capped       bool
	secrets      []string
}

// action tells the loop what to do after a message.
type action int

const (
	actContinue action = iota
	actKill            // stop projecting, kill the group, finish
)

func (tr *turnRun) fail(c Class, detail string) {
	if tr.failure == "" {
		tr.failure, tr.detail = c, detail
	}
}

func (tr *turnRun) emit(ev Event) {
	if tr.t.OnEvent == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			tr.log.Error("cursor event handler panicked", "panic", fmt.Sprint(p))
		}
	}()
	tr.t.OnEvent(ev)
}

// redact removes prompt parts from diagnostic text.
func (tr *turnRun) redact(s string) string {
	for _, sec := range tr.secrets {
		if len(sec) >= 8 && strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "[redacted prompt]")
		}
	}
	return s
}

// lineKind tags what the stdout reader delivers.
type lineKind int

const (
	lineData    lineKind = iota
	linePartial          // unterminated text before EOF
	lineTooLong          // a line exceeded the cap; the reader now discards
	lineEOF
)

type lineMsg struct {
	kind lineKind
	data []byte
}

// readLines splits r into lines of at most max bytes and delivers them.
// Once quit is closed, or after an oversized line, it keeps draining r
// without delivering, so the CLI never blocks on a full pipe.
func readLines(r io.Reader, max int, out chan<- lineMsg, quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	br := bufio.NewReaderSize(r, 64<<10)
	send := func(m lineMsg) bool {
		select {
		case out <- m:
			return true
		case <-quit:
			return false
		}
	}
	drain := func() { _, _ = io.Copy(io.Discard, br) }
	var acc []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			body := len(acc) + len(chunk)
			if err == nil {
				body-- // the newline
			}
			if body > max {
				send(lineMsg{kind: lineTooLong})
				drain()
				return
			}
			switch {
			case err == nil && len(acc) == 0:
				if !send(lineMsg{kind: lineData, data: append([]byte(nil), chunk[:len(chunk)-1]...)}) {
					drain()
					return
				}
			case err == nil:
				acc = append(acc, chunk[:len(chunk)-1]...)
				if !send(lineMsg{kind: lineData, data: acc}) {
					drain()
					return
				}
				acc = nil
			default:
				acc = append(acc, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if len(acc) > 0 && !send(lineMsg{kind: linePartial, data: acc}) {
				return
			}
			send(lineMsg{kind: lineEOF})
			return
		}
	}
}

func (tr *turnRun) run(ctx context.Context, args []string) Result {
	exe := tr.r.Executable
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return tr.spawnFailed(err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return tr.spawnFailed(err)
	}
	cmd := exec.Command(exe.path, args...)
	cmd.Dir = tr.t.Dir
	cmd.Env = childEnv(tr.r.Env)
	cmd.Stdout = stdoutW
	cmd.Stderr = stderrW
	if tr.r.Transport == TransportStdin {
		cmd.Stdin = strings.NewReader(tr.t.Plan.Envelope)
	}
	gopt := tr.r.Guard
	gopt.TermGrace = tr.to.TermGrace
	gopt.WaitDelay = tr.to.Grace
	gopt.WatchFiles = []*os.File{stdoutR, stderrR}
	p, err := procguard.Start(cmd, gopt)
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		exe.discoverer().forget(exe.path)
		return tr.spawnFailed(err)
	}
	tr.log.Info("cursor turn started", "argv", tr.res.Argv, "pid", p.Pid())

	tail := &tailBuffer{limit: tr.lim.StderrTailBytes}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(tail, stderrR)
	}()
	lines := make(chan lineMsg, 64)
	quit := make(chan struct{})
	readerDone := make(chan struct{})
	src := &watchedReader{f: stdoutR}
	src.busy.Store(true)
	go func() {
		readLines(src, tr.lim.MaxLineBytes, lines, quit, readerDone)
		src.busy.Store(false)
	}()
	// pending reports output the runner has not judged yet: queued lines,
	// a reader between reads, or unread bytes in the pipe. A timer that
	// expires while output is pending was starved, not silent.
	pending := func() bool {
		return len(lines) > 0 || src.busy.Load() || unreadBytes(stdoutR) > 0
	}

	tr.loop(ctx, p, lines, pending)

	close(quit)
	p.Terminate()
	tr.res.KilledByRunner = p.SignalledBeforeExit()
	code, _, _ := p.ExitCode()
	tr.res.ExitCode = code
	// Every writer is gone, so both pipes reach EOF; if something outside
	// the guard's reach still holds one, close our end after the grace.
	closeAfter(readerDone, stdoutR, tr.to.Grace)
	closeAfter(stderrDone, stderrR, tr.to.Grace)

	tailBytes, total := tail.snapshot()
	tr.res.StderrBytes = total
	tr.res.StderrTail = tr.redact(strings.ToValidUTF8(StripANSI(string(tailBytes)), "\ufffd"))
	tr.res.Hint = stderrHint(tr.res.StderrTail, exe.Name)
	tr.classify()
	tr.log.Info("cursor turn ended", "class", string(tr.res.Class), "exit_code", tr.res.ExitCode,
		"killed_by_runner", tr.res.KilledByRunner, "detail", tr.res.Detail)
	return tr.res
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func closeAfter(done <-chan struct{}, f *os.File, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	f.Close()
	<-done
}

func (tr *turnRun) spawnFailed(err error) Result {
	msg := err.Error()
	if p := tr.r.Executable.path; p != "" {
		msg = strings.ReplaceAll(msg, p, tr.r.Executable.Name)
	}
	tr.res.Class, tr.res.IsError, tr.res.Detail = ClassSpawnFailed, true, tr.redact(msg)
	return tr.res
}

// loop is the turn's state machine: one goroutine selecting over stdout
// lines, the process exit, the four timers and the stop request.
func (tr *turnRun) loop(ctx context.Context, p *procguard.Process, lines <-chan lineMsg, pending func() bool) {
	start := time.Now()
	startup := time.NewTimer(tr.to.Startup)
	defer startup.Stop()
	wall := time.NewTimer(tr.to.WallClock)
	defer wall.Stop()
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	grace := time.NewTimer(time.Hour)
	grace.Stop()
	defer grace.Stop()

	startupC, wallC := startup.C, wall.C
	var idleC, graceC <-chan time.Time
	exitC := p.Exited()
	stopC := ctx.Done()
	stdoutEOF, exited := false, false

	var lastActivity time.Time
	idleWarned := false
	armIdle := func() {
		lastActivity = time.Now()
		idleWarned = false
		warnAt := tr.idleLimit() - (tr.to.Idle - tr.to.IdleWarning)
		idle.Reset(warnAt)
		idleC = idle.C
	}
	armGrace := func() {
		if graceC == nil {
			grace.Reset(tr.to.Grace)
			graceC = grace.C
		}
	}
	becomeTerminal := func() {
		tr.terminal = true
		startupC, idleC, wallC = nil, nil, nil
		armGrace()
	}

	for {
		select {
		case m := <-lines:
			switch m.kind {
			case lineEOF:
				stdoutEOF, lines = true, nil
				if exited {
					return
				}
				armGrace()
				continue
			case lineTooLong:
				if tr.terminal {
					continue // post-result output is drained, not judged
				}
				tr.fail(ClassLineTooLong, fmt.Sprintf("stdout line longer than %d bytes", tr.lim.MaxLineBytes))
				return
			case linePartial:
				// An unterminated last line is an event only if it is
				// complete JSON; a killed process's fragment is not.
				if _, err := stream.Parse(m.data); err != nil {
					tr.log.Warn("cursor stdout ended inside a line; fragment dropped", "bytes", len(m.data))
					continue
				}
			}
			if exited && !tr.terminal {
				// The CLI is gone but its output is still being drained:
				// the post-exit grace measures silence, not drain time.
				grace.Reset(tr.to.Grace)
			}
			if tr.terminal || stream.IsBlank(m.data) {
				if !tr.terminal && tr.initSeen {
					armIdle()
				}
				continue
			}
			if tr.handleLine(m.data) == actKill {
				return
			}
			if tr.terminal {
				becomeTerminal()
				continue
			}
			if tr.initSeen {
				if startupC != nil {
					startup.Stop()
					startupC = nil
				}
				armIdle()
			}
		case <-exitC:
			exited, exitC = true, nil
			if stdoutEOF {
				return
			}
			armGrace()
		case <-startupC:
			if tr.stopWins(ctx) {
				return
			}
			if pending() {
				startup.Reset(recheckStarved)
				continue
			}
			tr.fail(ClassNoInit, fmt.Sprintf("no valid init within %s", tr.to.Startup))
			return
		case <-idleC:
			if tr.stopWins(ctx) {
				return
			}
			if pending() {
				idle.Reset(recheckStarved)
				continue
			}
			if !idleWarned {
				idleWarned = true
				tr.res.IdleWarnings++
				tr.log.Warn("cursor turn idle", "silent_for", time.Since(lastActivity).Round(time.Millisecond).String())
				tr.emit(Event{Kind: EventIdleWarning, SessionID: tr.res.SessionID})
				idle.Reset(time.Until(lastActivity.Add(tr.idleLimit())))
				continue
			}
			switch {
			case time.Since(start) >= tr.to.WallClock:
				// Absolute beats idle when both are due.
				tr.fail(ClassWallClockTimeout, fmt.Sprintf("turn exceeded %s", tr.to.WallClock))
			case tr.interactions > 0:
				tr.fail(ClassApprovalRequired, "idle while an interaction request was unanswered")
			default:
				tr.fail(ClassIdleTimeout, fmt.Sprintf("no output for %s", tr.idleLimit()))
			}
			return
		case <-wallC:
			if tr.stopWins(ctx) {
				return
			}
			tr.fail(ClassWallClockTimeout, fmt.Sprintf("turn exceeded %s", time.Since(start).Round(time.Millisecond)))
			return
		case <-stopC:
			if !tr.terminal {
				tr.fail(ClassStopped, "stop requested")
			}
			return
		case <-graceC:
			if exited && !tr.terminal && pending() && ctx.Err() == nil {
				// After exit the grace measures silence; output still
				// waiting to be judged is not silence.
				grace.Reset(recheckStarved)
				continue
			}
			return
		}
	}
}

// recheckStarved is how soon a timer that expired while output was pending
// looks again.
const recheckStarved = 10 * time.Millisecond

// watchedReader records whether its reader is blocked in Read (idle) or
// busy handling what it read.
type watchedReader struct {
	f    *os.File
	busy atomic.Bool
}

func (w *watchedReader) Read(p []byte) (int, error) {
	w.busy.Store(false)
	n, err := w.f.Read(p)
	w.busy.Store(true)
	return n, err
}

// stopWins classifies the turn as stopped when a stop request is pending
// at the moment a timer fires: stop beats every timer.
func (tr *turnRun) stopWins(ctx context.Context) bool {
	if ctx.Err() == nil {
		return false
	}
	if !tr.terminal {
		tr.fail(ClassStopped, "stop requested")
	}
	return true
}

// idleLimit is the idle limit in force: Idle, extended while non-background
// shell calls with a timeout are open.
func (tr *turnRun) idleLimit() time.Duration {
	limit := tr.to.Idle
	for _, c := range tr.calls {
		if c.open && !c.background && c.timeoutMs > 0 {
			if d := time.Duration(c.timeoutMs)*time.Millisecond + tr.to.ToolSlack; d > limit {
				limit = d
			}
		}
	}
	return limit
}

func (tr *turnRun) handleLine(line []byte) action {
	ev, err := stream.Parse(line)
	if err != nil {
		tr.fail(ClassSchemaError, tr.redact(err.Error()))
		return actKill
	}
	switch ev.Kind {
	case stream.KindInit:
		return tr.handleInit(ev.Init)
	case stream.KindUserEcho, stream.KindInteractionRequest, stream.KindInteractionResponse:
		// The echo holds the envelope; interaction payloads may hold
		// prompts, commands or URLs. Neither is projected nor logged.
		switch ev.Kind {
		case stream.KindInteractionRequest:
			tr.interactions++
		case stream.KindInteractionResponse:
			if tr.interactions > 0 {
				tr.interactions--
			}
		}
	case stream.KindIgnored:
		tr.res.IgnoredEvents++
	case stream.KindSystemNote, stream.KindRetry, stream.KindConnection:
		tr.emit(Event{Kind: EventStatus, SessionID: tr.res.SessionID, Status: ev.Type + "/" + ev.Subtype, Attempt: ev.Attempt})
	case stream.KindThinkingDelta:
		tr.emitText(EventThinkingDelta, ev.Text)
	case stream.KindThinkingCompleted:
		tr.emit(Event{Kind: EventThinkingCompleted, SessionID: tr.res.SessionID})
	case stream.KindAssistant:
		tr.emitText(EventAssistantText, ev.Text)
	case stream.KindToolStarted:
		return tr.handleToolStarted(ev.Tool)
	case stream.KindToolCompleted:
		return tr.handleToolCompleted(ev.Tool)
	case stream.KindResult:
		return tr.handleResult(ev.Result)
	}
	return actContinue
}

func (tr *turnRun) handleInit(in *stream.Init) action {
	if tr.initSeen {
		tr.res.IgnoredEvents++
		return actContinue
	}
	if !ValidSessionID(in.SessionID) {
		tr.fail(ClassInvalidSessionID, fmt.Sprintf("init session_id of %d bytes fails validation", len(in.SessionID)))
		return actKill
	}
	tr.initSeen = true
	tr.res.SessionID, tr.res.Model = in.SessionID, in.Model
	if rid := tr.t.Plan.ResumeID; rid != "" && rid != in.SessionID {
		tr.res.SessionIDChanged = true
		tr.log.Warn("cursor resumed turn reported a different session id; storing the new one")
	}
	if tr.t.OnSessionID != nil {
		func() {
			defer func() {
				if p := recover(); p != nil {
					tr.log.Error("cursor OnSessionID panicked", "panic", fmt.Sprint(p))
				}
			}()
			tr.t.OnSessionID(in.SessionID)
		}()
	}
	tr.emit(Event{Kind: EventSessionStarted, SessionID: in.SessionID})
	return actContinue
}

// spend charges n bytes against the aggregate cap; false means the cap is
// reached and the payload must be dropped (one EventTruncated is sent).
func (tr *turnRun) spend(n int) bool {
	if tr.capped {
		return false
	}
	if tr.emitted+n > tr.lim.MaxAggregateBytes {
		tr.capped, tr.res.Truncated = true, true
		tr.log.Warn("cursor turn reached the aggregate payload cap; further payloads dropped", "cap", tr.lim.MaxAggregateBytes)
		tr.emit(Event{Kind: EventTruncated, SessionID: tr.res.SessionID,
			Text: fmt.Sprintf("output beyond %d bytes was not retained", tr.lim.MaxAggregateBytes)})
		return false
	}
	tr.emitted += n
	return true
}

func (tr *turnRun) emitText(kind EventKind, text string) {
	text = boundText(text, tr.lim.MaxSegmentBytes)
	if text == "" || !tr.spend(len(text)) {
		return
	}
	tr.emit(Event{Kind: kind, SessionID: tr.res.SessionID, Text: text})
}

type argsSummary struct {
	Path    json.RawMessage `json:"path"`
	Command json.RawMessage `json:"command"`
}

func (tr *turnRun) toolEvent(tc *stream.ToolCall, status ToolStatus) *ToolEvent {
	te := &ToolEvent{CallID: tc.CallID, Name: tc.Name, Key: tc.Key, Status: status, Outcome: tc.Outcome, Background: tc.Background}
	if len(tc.Args) > 0 && tc.Args[0] == '{' {
		var a argsSummary
		if json.Unmarshal(tc.Args, &a) == nil {
			te.Path = boundText(jsonString(a.Path), 4096)
			te.Command = boundText(jsonString(a.Command), 4096)
		}
	}
	args := boundJSON(tc.Args, tr.lim.MaxToolPayloadBytes)
	out := boundJSON(tc.OutcomePayload, tr.lim.MaxToolPayloadBytes)
	var diff string
	if tc.Key == "editToolCall" && tc.OutcomeClass == stream.OutcomeSuccess {
		var d struct {
			DiffString json.RawMessage `json:"diffString"`
		}
		if json.Unmarshal(tc.OutcomePayload, &d) == nil {
			diff = boundText(jsonString(d.DiffString), tr.lim.MaxDiffBytes)
		}
	}
	if tr.spend(len(args) + len(out) + len(diff)) {
		te.Args, te.Output, te.Diff = args, out, diff
	}
	return te
}

func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

func (tr *turnRun) handleToolStarted(tc *stream.ToolCall) action {
	if c, ok := tr.calls[tc.CallID]; ok && c.open {
		c.background, c.timeoutMs = tc.Background, tc.ShellTimeoutMs
	} else {
		if !ok && len(tr.calls) >= tr.lim.MaxCallIDs && !tr.evictCompleted() {
			tr.fail(ClassSchemaError, fmt.Sprintf("more than %d tool calls open at once", tr.lim.MaxCallIDs))
			return actKill
		}
		if !ok {
			tr.callOrder = append(tr.callOrder, tc.CallID)
		}
		tr.calls[tc.CallID] = &callState{open: true, background: tc.Background, timeoutMs: tc.ShellTimeoutMs}
	}
	tr.emit(Event{Kind: EventToolStarted, SessionID: tr.res.SessionID, Tool: tr.toolEvent(tc, ToolRunning)})
	return actContinue
}

// evictCompleted forgets the oldest completed call; false if all are open.
func (tr *turnRun) evictCompleted() bool {
	for i, id := range tr.callOrder {
		if c := tr.calls[id]; c != nil && !c.open {
			delete(tr.calls, id)
			tr.callOrder = append(tr.callOrder[:i], tr.callOrder[i+1:]...)
			return true
		}
	}
	return false
}

func (tr *turnRun) handleToolCompleted(tc *stream.ToolCall) action {
	if c, ok := tr.calls[tc.CallID]; ok {
		c.open = false
	}
	var status ToolStatus
	switch tc.OutcomeClass {
	case stream.OutcomeNeedsConfirmation:
		// No approval bridge exists: fail closed.
		tr.fail(ClassApprovalRequired, quoteClip(tc.Name)+" call asked for confirmation")
		return actKill
	case stream.OutcomeSuccess:
		status = ToolSucceeded
	case stream.OutcomeDeclined:
		status = ToolDeclined
	case stream.OutcomeFailure:
		status = ToolFailed
	default:
		status = ToolClosed
	}
	tr.emit(Event{Kind: EventToolCompleted, SessionID: tr.res.SessionID, Tool: tr.toolEvent(tc, status)})
	return actContinue
}

func (tr *turnRun) handleResult(r *stream.Result) action {
	if !tr.initSeen {
		tr.fail(ClassSchemaError, "result before init")
		return actKill
	}
	tr.result = r
	tr.terminal = true
	tr.res.Usage, tr.res.DurationMs, tr.res.DurationAPIMs, tr.res.RequestID = r.Usage, r.DurationMs, r.DurationAPIMs, clipString(r.RequestID, 256)
	if r.IsError {
		// Let it exit on its own within the grace.
		tr.fail(ClassLogicalError, "the CLI reported an error result")
	}
	return actContinue
}

// classify settles the outcome once the process is gone.
func (tr *turnRun) classify() {
	res := &tr.res
	ownExitFailed := !res.KilledByRunner && res.ExitCode != 0
	switch {
	case tr.failure != "":
		res.Class, res.Detail = tr.failure, tr.detail
	case !tr.initSeen:
		res.Class, res.Detail = ClassNoInit, fmt.Sprintf("the CLI ended before a valid init (exit status %d)", res.ExitCode)
	case ownExitFailed:
		res.Class, res.Detail = ClassExitNonzero, fmt.Sprintf("exit status %d", res.ExitCode)
	case tr.result == nil:
		res.Class, res.Detail = ClassNoResult, "the CLI ended without a result event"
	default:
		res.Class = ClassSuccess
	}
	if res.Class == ClassSuccess {
		res.IsError = false
		res.FinalText = boundText(tr.result.Text, tr.lim.MaxFinalBytes)
	} else {
		res.IsError = true
		res.FinalText = ""
	}
}

// stderrHint maps known stderr texts to advice naming the executable.
func stderrHint(tail, name string) string {
	low := strings.ToLower(tail)
	switch {
	case strings.Contains(low, "not logged in") || strings.Contains(low, "not authenticated") || strings.Contains(low, "please log in"):
		return "the Cursor CLI is not logged in: run `" + name + " login`"
	case strings.Contains(low, "trust"):
		return "the CLI asks for the workspace to be trusted"
	case strings.Contains(low, "plan limit") || strings.HasPrefix(strings.TrimSpace(tail), "T:") || strings.Contains(tail, "\nT:"):
		return "Cursor plan limit reached"
	}
	return ""
}

// ErrRefused matches every *RefusedError with errors.Is.
var ErrRefused = errors.New("cursor turn refused")

// Is makes errors.Is(err, ErrRefused) true for refusals.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }
