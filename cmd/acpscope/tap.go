package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/tap"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// cmdTap implements `acpscope tap [flags] -- <agent command…>`: configured
// in an editor as its agent command, it starts the agent and passes the
// connection through unchanged, observing it into the same tracker, view
// and store as run (see package tap). Standard output carries the agent's
// bytes only; every message of the tap goes to standard error or --log.
func cmdTap(ctx context.Context, e env, args []string) (tapErr error) {
	fs := newFlagSet("tap", e.stderr)
	var o outputFlags
	fs.StringVar(&o.agent, "agent", "", "agent dialect (default: from the agent's initialize answer)")
	fs.StringVar(&o.db, "db", "", "database for subagent contexts: a SQLite path or postgres://… (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	fs.BoolVar(&o.noDB, "no-db", false, "do not persist subagent contexts")
	record := fs.String("record", "", "record the connection to this capture file (acpscope replay FILE shows its cards)")
	allow := allowHostFlag(fs)
	webAddr := fs.String("web", "", "serve the store's read-only pages on this address while the tap runs (e.g. 127.0.0.1:8765; a non-loopback address exposes the store)")
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
	if *webAddr != "" && o.noDB {
		return fmt.Errorf("--web serves the tap's store: it cannot go with --no-db")
	}
	command := fs.Args()
	if len(command) == 0 {
		return fmt.Errorf("tap needs the agent command after --")
	}
	logw := e.stderr
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--log: %v", err)
		}
		defer f.Close()
		logw = f
	}

	sink, err := openSink(ctx, o, logw)
	if err != nil {
		return explainDBError(o.dsn(), err)
	}
	defer sink.close()
	if o.traces, err = o.otel.open(ctx); err != nil {
		return err
	}
	if *webAddr != "" {
		ln, err := net.Listen("tcp", *webAddr)
		if err != nil {
			return fmt.Errorf("--web: %v", err)
		}
		wctx, stopWeb := context.WithCancel(context.WithoutCancel(ctx))
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := serveWeb(wctx, logw, "acpscope tap --web", "ends with the tap", sink.store, ln, *allow, 0); err != nil {
				fmt.Fprintf(logw, "acpscope tap --web: %v\n", err)
			}
		}()
		defer func() { stopWeb(); <-served }()
	}
	var rec *capture.Writer
	if *record != "" {
		var f *os.File
		if rec, f, err = createRecord(*record, o.agent); err != nil {
			return err
		}
		defer func() { tapErr = recordResult(e, *record, rec, f, tapErr) }()
	}
	term := view.NewTerminal(logw, false)
	obs, err := tap.NewObserver(tap.ObserverConfig{Dialect: o.agent, View: term, Sink: traces.Tee(sink.record, o.traces), Record: rec, TurnStarted: sink.beginTurn, Traces: o.traces})
	if err != nil {
		return err
	}

	// The tap forwards these to the agent (main leaves them to the tap:
	// watchSignals is not running); a broken standard output is then an
	// error of the write, not the end of acpscope.
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
	// Once the observation is complete, and before the tap waits for the
	// agent to be gone, the cards are stored and then the report is
	// written: an editor that kills the tap soon after its SIGTERM, while
	// the agent is slow to exit, loses neither.
	var result error
	observed := func(st tap.Stats, runErr error) {
		if st.Unobserved == 0 {
			term.Summary()
		}
		var err error
		if runErr != nil {
			err = fmt.Errorf("%w: %v", session.ErrTurn, runErr)
		} else if code, signaled, _ := proc.ExitCode(); st.AgentExited && st.Signal == 0 && code != 0 && !signaled && !proc.SignalledBeforeExit() {
			err = fmt.Errorf("%w: the agent exited with code %d", session.ErrTurn, code)
		}
		flush := o
		if st.Signal != 0 {
			flush.timeout = tapSignalFlushWait // the tap's turn time: the editor is ending it
		}
		// The observed cards are flushed to the store and accounted for
		// (exit code 4 when some could not be stored), as after run's turns.
		result = sink.endTurn(context.WithoutCancel(ctx), logw, flush, err)
		closeTraces(o.traces, logw)
		fmt.Fprintf(logw, "acpscope tap: %s\n", st)
	}
	_, _ = tap.Run(context.WithoutCancel(ctx), tap.Config{
		EditorIn: e.stdin, EditorOut: e.stdout, Observer: obs, Signals: sigs, Grace: *grace, Observed: observed,
	}, tap.Agent{
		Stdin: agent.Stdin, Stdout: agent.Stdout, Exited: proc.Exited(),
		Signal: proc.Signal, Stop: proc.Terminate,
	}, func() bool { return interruptRead(e.stdin) })
	return result
}

// tapUsage is the head of `acpscope tap -h`: what the tap does and the
// order in which it ends (formatted with tap.DefaultSignalWait and
// tapSignalFlushWait).
const tapUsage = `Usage: acpscope tap [flags] -- <agent command…>

Configured as an editor's agent command: starts the agent and passes every
byte both ways unchanged, observing the connection into cards (standard
error or --log), the store and --record. Standard output carries the
agent's bytes only.

How it ends:
  the editor closes standard input: the agent's input is closed, it has
    --grace to exit, then it is stopped; its output is forwarded to the end
  the agent exits: whatever it left running is stopped
  SIGTERM, SIGHUP or SIGQUIT (the editor ends the tap): forwarded, and the
    agent is stopped at once, without --grace; its output, then the
    observer, are awaited at most %[1]v each
then the observer finishes what is queued, the cards are flushed to the
store (at most %[2]v after a signal), the closing report is written, and
only then does the tap wait for the agent and everything it started to be
gone. Lines passing after a signal's wait are forwarded, not observed.
SIGINT is only forwarded.

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
