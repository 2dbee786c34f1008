package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/storesink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/tap"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// cmdTap implements `acpscope tap [flags] -- <agent command…>`: configured
// in an editor as its agent command, it starts the agent and passes the
// connection through unchanged, observing it into the same tracker, view
// and store as run (see package tap). Standard output carries the agent's
// bytes only; every message of the tap goes to standard error or --log.
//
// Only a bad command line fails before the agent starts (exit 2): it fails
// the same way at every start, and the editor shows it at once. Nothing
// that depends on the moment (a --web port another window holds, a
// database that is down, a directory that is missing) costs the editor
// its agent: the agent and the pass-through start first, and the log, the
// capture, the store and the web pages each start after them or not at
// all (see tapParts). The tap then exits as the agent did (see tapEnding).
func cmdTap(ctx context.Context, e env, args []string) (tapErr error) {
	fs := newFlagSet("tap", e.stderr)
	var o outputFlags
	fs.StringVar(&o.agent, "agent", "", "agent dialect (default: from the agent's initialize answer)")
	fs.StringVar(&o.db, "db", "", "database for subagent contexts: a SQLite path or postgres://… (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	fs.BoolVar(&o.noDB, "no-db", false, "do not persist subagent contexts")
	record := fs.String("record", "", "record the connection to this capture file (acpscope replay FILE shows its cards)")
	allow := allowHostFlag(fs)
	webAddr := fs.String("web", "", "serve the store's read-only pages on this address while the tap runs (e.g. 127.0.0.1:8765; a non-loopback address exposes the store)")
	allowStop := fs.Bool("allow-stop", false, "with --web, the session page's Stop sends session/cancel for a child that holds the cancel capability: the one message the tap ever originates (written into the agent's input between the editor's lines)")
	logPath := fs.String("log", "", "write the tap's messages (cards, web address, the closing report) to this file, appended, instead of standard error")
	o.otel.register(fs, false)
	grace := fs.Duration("grace", 3*time.Second, "how long the agent may take to exit once the editor closed its side before it is stopped (SIGTERM, SIGHUP or SIGQUIT stop it at once)")
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, tapUsage, tap.DefaultSignalWait, tapSignalFlushWait)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkDSN(o.db); err != nil {
		return err
	}
	if o.agent != "" && !validDialect(o.agent) {
		return fmt.Errorf("--agent %q is not a dialect (%s)", o.agent, strings.Join(adapter.Registered(), ", "))
	}
	if *grace <= 0 {
		return fmt.Errorf("--grace must be positive")
	}
	if *allowStop && *webAddr == "" {
		return fmt.Errorf("--allow-stop is the web page's Stop: it needs --web")
	}
	if *webAddr != "" && o.noDB {
		return fmt.Errorf("--web serves the tap's store: it cannot go with --no-db")
	}
	command := fs.Args()
	if len(command) == 0 {
		return fmt.Errorf("tap needs the agent command after --")
	}
	parts := &tapParts{stderr: e.stderr}
	logw := e.stderr
	if *logPath != "" {
		if f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			parts.fail("no log", fmt.Errorf("--log: %v", err), "the tap's messages go to standard error")
		} else {
			defer f.Close()
			logw, parts.log = f, f
		}
	}
	// The agent's bytes go to standard output as they are: a write that
	// fails there (the editor stopped reading) is the pass-through's to
	// pass on, not main's end of acpscope (which watchedOutput would
	// call, and whose dropped writes would count as passed).
	editorOut := e.stdout
	if w, ok := editorOut.(*watchedOutput); ok {
		editorOut = w.w
	}

	// The tap forwards these to the agent (main leaves them to the tap:
	// watchSignals is not running). SIGPIPE is taken too, so that a write
	// to a standard output whose reader is gone fails with EPIPE instead
	// of killing the tap: the pass-through then closes the agent's output,
	// and the agent's own write fails the same way (package tap).
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)

	agent, err := session.StartAgent(command, "", e.stderr)
	if err != nil {
		return fmt.Errorf("%w: starting the agent: %v", session.ErrTurn, err)
	}
	proc := agent.Process()
	defer proc.Terminate()
	defer agent.Stdout.Close() // read to its end by then, or given up on

	var rec *capture.Writer
	if *record != "" {
		w, f, err := createRecord(*record, o.agent)
		if err != nil {
			parts.fail("no capture", err, "the tap goes on without recording")
		} else {
			rec = w
			defer func() { tapErr = recordResult(e, *record, rec, f, tapErr) }()
		}
	}
	// A trace export that cannot be set up (a refused OTEL_* setting) is
	// a part the tap goes on without, as the store is.
	if x, err := o.otel.open(ctx); err != nil {
		parts.fail("no traces", err, "the tap goes on without exporting traces")
	} else {
		o.traces = x
	}
	// With --allow-stop the agent's input has one writer shared by the
	// pass-through and the Stop's session/cancel, which goes between the
	// editor's lines; without it the pass-through writes alone.
	var agentIn io.WriteCloser = agent.Stdin
	var tv trafficView
	var stopper *tapStop
	if *webAddr != "" {
		tv = liveTraffic("the tap's connection")
		if *allowStop {
			shared := tap.NewAgentInput(agent.Stdin)
			agentIn = shared
			stopper = &tapStop{input: shared, log: tv.log}
			tv.stop = stopper
		}
	}
	store := openTapStore(ctx, o, *webAddr, *allow, tv, logw, parts)
	defer store.close()
	// The collector's headroom stays inside the tap's documented bound, which
	// the traffic log (--web) raises by its own, as more queue would.
	tap.LimitMemory(tap.DefaultQueueBytes+tv.memory(), 0)
	term := view.NewTerminal(logw, false)
	obs, err := tap.NewObserver(tap.ObserverConfig{
		Dialect: o.agent, View: term, Record: rec,
		Sink:        sink.Fanout{term, sink.Func(func(e sink.Event) { store.wait().Sink.Record(e) }), o.traces},
		Traces:      o.traces,
		Traffic:     tv.log,
		TurnStarted: func(sessionID string) { store.wait().BeginTurn(sessionID) },
		Turns:       waitedTurns{store},
		Incomplete: func(sessionID string, unobserved int64) {
			if err := store.wait().MarkIncomplete(sessionID, unobserved); err != nil && !errors.Is(err, persistence.ErrNoGapStore) {
				fmt.Fprintf(logw, "acpscope tap: session %s: the mark of its incomplete observation was not stored: %v\n", safetext.Text(sessionID), err)
			}
		},
	})
	if err != nil {
		return err
	}
	if stopper != nil {
		stopper.mu.Lock()
		stopper.obs = obs
		stopper.mu.Unlock()
	}

	// Once the observation is complete, and before the tap waits for the
	// agent to be gone, the cards are stored and then the report is
	// written: an editor that kills the tap soon after its SIGTERM, while
	// the agent is slow to exit, loses neither.
	var passErr, stored error
	observed := func(st tap.Stats, runErr error) {
		if st.Unobserved == 0 {
			term.Summary()
		}
		if runErr != nil {
			passErr = fmt.Errorf("%w: %v", session.ErrTurn, runErr)
		}
		flush := o
		if st.Signal != 0 {
			flush.timeout = tapSignalFlushWait // the tap's turn time: the editor is ending it
		}
		// The observed cards are flushed to the store and accounted for
		// (exit code 4 when some could not be stored), as after run's turns.
		stored = store.wait().endTurn(context.WithoutCancel(ctx), logw, flush, nil)
		// The writer confirms its cards now, not once the agent is gone:
		// an editor that kills the tap meanwhile leaves a store whose
		// health is true (a kill before this point leaves the writer
		// unconfirmed, which health reports).
		store.wait().Sink.Close()
		closeTraces(o.traces, logw)
		fmt.Fprintf(logw, "acpscope tap: %s%s\n", st, parts.report())
	}
	ended := func(stop syscall.Signal) {
		// A store still opening has the flush's time to finish: then the
		// observer stops waiting for it.
		wait := storesink.FlushWait
		if stop != 0 {
			wait = tapSignalFlushWait
		}
		store.giveUpAfter(wait)
	}
	st, _ := tap.Run(context.WithoutCancel(ctx), tap.Config{
		EditorIn: e.stdin, EditorOut: editorOut, Observer: obs, Signals: sigs, Grace: *grace, Observed: observed, Ended: ended,
	}, tap.Agent{
		Stdin: agentIn, Stdout: agent.Stdout, Exited: proc.Exited(),
		Signal: proc.Signal, Stop: proc.Terminate,
	}, func() bool { return interruptRead(e.stdin) })

	agentCode, signaled, waitErr := proc.ExitCode()
	code, msg := tapEnding(st, *grace, agentCode, signaled, waitErr)
	if msg != "" && logw != e.stderr {
		fmt.Fprintf(logw, "acpscope tap: %s\n", msg)
	}
	var ending error
	if code != exitOK {
		ending = &exitStatus{code: code, msg: msg}
	} else if msg != "" {
		fmt.Fprintf(e.stderr, "acpscope tap: %s\n", msg)
	}
	// The agent's ending first, then the tap's own failures: the
	// pass-through's (1), a part that did not start (2), cards that were
	// not stored (4). The first decides the exit code; the others are
	// said on standard error.
	return firstError(e.stderr, ending, passErr, parts.err(), stored)
}

// exitStatus is an ending of the tap that has its own exit code (the
// agent's status, or the editor's stop signal), and says why.
type exitStatus struct {
	code int
	msg  string
}

// Error says how the tap ended.
func (s *exitStatus) Error() string { return s.msg }

// tapEnding is the tap's exit code on its agent's account, and what to say
// about it (msg, even with code 0 when the tap stopped the agent):
//   - a stop signal from the editor (SIGTERM, SIGHUP, SIGQUIT): 128 + that
//     signal, as a shell reports a command it ended, whatever the agent
//     the tap then stopped did;
//   - else the agent's own status, whichever side ended first: its exit
//     code, or 128 + N when signal N killed it. That holds for an agent
//     the tap had to stop because it outlived --grace after the end of its
//     input (143 when the tap's SIGTERM ended it, 137 when SIGKILL had
//     to), which msg says.
//
// code, signaled and err are the agent's procguard.Process.ExitCode.
func tapEnding(st tap.Stats, grace time.Duration, code int, signaled bool, err error) (int, string) {
	if st.Signal != 0 {
		return 128 + int(st.Signal), fmt.Sprintf("ended by signal %d (%v) from the editor; the agent was stopped", int(st.Signal), st.Signal)
	}
	if code < 0 {
		return exitTurn, fmt.Sprintf("the agent's exit status is unknown (%v)", err)
	}
	how := fmt.Sprintf("exited with code %d", code)
	if signaled {
		how = fmt.Sprintf("was killed by signal %d (%v)", code-128, syscall.Signal(code-128))
	}
	switch {
	case st.GraceStopped:
		return code, fmt.Sprintf("the agent did not exit within --grace %v of the end of its input; the tap stopped it: it %s", grace, how)
	case code == 0:
		return exitOK, ""
	case st.OutputClosed:
		return code, "the editor stopped reading the agent's output; the agent then " + how
	default:
		return code, "the agent " + how
	}
}

// firstError returns the first of errs that is not nil, and says each of
// the others on stderr.
func firstError(stderr io.Writer, errs ...error) error {
	var first error
	for _, err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			fmt.Fprintf(stderr, "acpscope: %v\n", err)
		}
	}
	return first
}

// tapParts are the parts of the tap's observation that could not start
// (the log, the capture, the store, the web pages): the tap goes on
// without each, says so on standard error and in --log when it happens,
// names it in its closing report, and exits 2 for it at the end (when the
// agent's ending does not decide the code).
type tapParts struct {
	stderr io.Writer
	log    io.Writer // the --log file; nil when the log is stderr

	mu      sync.Mutex
	missing []string // "no store (database: …)"
	first   error
}

// fail reports that a part could not start, and how the tap goes on
// without it.
func (p *tapParts) fail(part string, err error, goesOn string) {
	line := fmt.Sprintf("acpscope tap: %v\n", err)
	if goesOn != "" {
		line = fmt.Sprintf("acpscope tap: %v; %s\n", err, goesOn)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = io.WriteString(p.stderr, line)
	if p.log != nil {
		_, _ = io.WriteString(p.log, line)
	}
	p.missing = append(p.missing, fmt.Sprintf("%s (%v)", part, err))
	if p.first == nil {
		p.first = err
	}
}

// report is the closing report's tail naming the missing parts ("" when
// none is).
func (p *tapParts) report() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.missing) == 0 {
		return ""
	}
	return "; incomplete: " + strings.Join(p.missing, ", ")
}

// err is the first part's failure (exit code 2), nil when none failed.
func (p *tapParts) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first
}

// tapStore is the tap's store sink, opened and migrated (and --web started
// on it) while the connection already passes: the observer waits for it
// (its queue holds what arrives meanwhile), the pass-through never does.
// A store that cannot open is a missing part, and then the sink stores
// nothing.
type tapStore struct {
	ready      chan struct{} // closed once sink is set
	sink       *storeSink
	cancelOpen context.CancelFunc
	stopWeb    context.CancelFunc
	done       chan struct{} // the opening and the web server are over
	giveUp     *time.Timer
}

// openTapStore starts opening the store named by o, and once it is open
// serving --web on it (with the traffic view of tv).
func openTapStore(ctx context.Context, o outputFlags, webAddr string, allow []string, tv trafficView, logw io.Writer, parts *tapParts) *tapStore {
	openCtx, cancelOpen := context.WithCancel(context.WithoutCancel(ctx))
	webCtx, stopWeb := context.WithCancel(context.WithoutCancel(ctx))
	t := &tapStore{ready: make(chan struct{}), cancelOpen: cancelOpen, stopWeb: stopWeb, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		sink, err := openSink(openCtx, o, logw)
		if err != nil {
			parts.fail("no store", explainDBError(o.dsn(), err), "the tap goes on without storing")
			sink = &storeSink{}
		}
		var ln net.Listener
		if webAddr != "" {
			if sink.store == nil {
				parts.fail("no web pages", errors.New("--web: not served: the store did not open"), "")
			} else if ln, err = net.Listen("tcp", webAddr); err != nil {
				parts.fail("no web pages", fmt.Errorf("--web: %v", err), "the tap goes on without its web pages")
			}
		}
		t.sink = sink
		close(t.ready)
		if ln != nil {
			if err := serveWeb(webCtx, logw, "acpscope tap --web", "ends with the tap", sink.store, ln, allow, 0, tv); err != nil {
				fmt.Fprintf(logw, "acpscope tap --web: %v\n", err)
			}
		}
	}()
	return t
}

// wait returns the sink once the store is open, or failed to.
func (t *tapStore) wait() *storeSink {
	<-t.ready
	return t.sink
}

// giveUpAfter ends an opening still under way after d (the open fails).
// Called once, on the goroutine that calls close.
func (t *tapStore) giveUpAfter(d time.Duration) {
	t.giveUp = time.AfterFunc(d, t.cancelOpen)
}

// close ends the opening if it is still under way, stops the web pages,
// and closes the store.
func (t *tapStore) close() {
	if t.giveUp != nil {
		t.giveUp.Stop()
	}
	t.cancelOpen()
	sink := t.wait()
	t.stopWeb()
	<-t.done
	sink.close()
}

// tapUsage is the head of `acpscope tap -h`: what the tap does and the
// order in which it ends (formatted with tap.DefaultSignalWait and
// tapSignalFlushWait).
const tapUsage = `Usage: acpscope tap [flags] -- <agent command…>

Configured as an editor's agent command: starts the agent and passes every
byte both ways unchanged, observing the connection into cards (standard
error or --log), the store and --record. Standard output carries the
agent's bytes only.

Only a bad command line (a flag, --agent, --db's scheme) stops the tap
before the agent starts (exit 2). The agent and the pass-through start
first; a --log, --record, store or --web that cannot start (a port
another window holds, a database that is down or whose directory is
missing) is said on standard error and in --log, named in the closing
report ("incomplete: …"), and the tap goes on without it.

How it ends:
  the editor closes standard input: the agent's input is closed, it has
    --grace to exit, then it is stopped; its output is forwarded to the end
  the editor stops reading standard output: the agent's output is closed,
    so its writes fail as without the tap (SIGPIPE, EPIPE); the bytes the
    editor did not take are not counted as passed
  the agent exits: whatever it left running is stopped
  SIGTERM, SIGHUP or SIGQUIT (the editor ends the tap): forwarded, and the
    agent is stopped at once, without --grace; its output, then the
    observer, are awaited at most %[1]v each
then the observer finishes what is queued, the cards are flushed to the
store (at most %[2]v after a signal), the closing report is written, and
only then does the tap wait for the agent and everything it started to be
gone. Lines passing after a signal's wait are forwarded, not observed.
SIGINT is only forwarded.

Exit status: the agent's, whichever side ended first: its exit code, or
128+N when signal N killed it (139 SIGSEGV, 137 SIGKILL, 141 SIGPIPE),
also when the tap stopped it after --grace (then said so: 143 when its
SIGTERM ended it); 128+N after the editor's stop signal N (143, 129,
131); when the agent exited 0, the tap's own failures: 1 the
pass-through failed, 2 a part did not start or --record is incomplete,
4 cards were not stored.

Flags:
`

// tapSignalFlushWait bounds the store's flush at the end of a tap that a
// stop signal ended: the editor that sent it kills soon after.
const tapSignalFlushWait = time.Second

// interruptRead ends a read blocked on r when r is a file that takes a
// deadline, and reports whether it did; otherwise the read is left to end
// with the process.
func interruptRead(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && f.SetReadDeadline(time.Now()) == nil
}

// waitedTurns tells the tap's store sink of turns, the agent and
// permissions (traces.TurnObserver) once the store is open, as the
// observer's events reach it.
type waitedTurns struct{ store *tapStore }

// Initialized implements traces.TurnObserver.
func (w waitedTurns) Initialized(name, version string) { w.store.wait().Initialized(name, version) }

// TurnStarted implements traces.TurnObserver.
func (w waitedTurns) TurnStarted(sessionID, dialect, traceparent, prompt string) {
	w.store.wait().TurnStarted(sessionID, dialect, traceparent, prompt)
}

// TurnEnded implements traces.TurnObserver.
func (w waitedTurns) TurnEnded(sessionID, stop string, usage *traces.Usage, err error, failed bool) {
	w.store.wait().TurnEnded(sessionID, stop, usage, err, failed)
}

// PermissionAsked implements traces.TurnObserver.
func (w waitedTurns) PermissionAsked(sessionID, toolCallID, title string, options []string) {
	w.store.wait().PermissionAsked(sessionID, toolCallID, title, options)
}

// PermissionAnswered implements traces.TurnObserver.
func (w waitedTurns) PermissionAnswered(sessionID, toolCallID, title, answer string) {
	w.store.wait().PermissionAnswered(sessionID, toolCallID, title, answer)
}
