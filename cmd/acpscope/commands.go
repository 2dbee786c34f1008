package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"golang.org/x/term"
)

// demoFS holds the bundled demo captures replayed by `acpscope replay`
// without a CAPTURE: a Cursor fan-out and a Claude fan-out.
//
//go:embed demo/*.jsonl
var demoFS embed.FS

// demoCaptures are the bundled captures, in the order they are replayed.
var demoCaptures = []string{"demo/cursor.jsonl", "demo/claude.jsonl"}

// maxPromptBytes bounds a prompt read from standard input; a longer one is
// refused rather than cut.
const maxPromptBytes = 16 << 20

// outputFlags are the flags shared by run and replay.
type outputFlags struct {
	json       bool
	plain      bool
	agent      string
	db         string
	noDB       bool
	permission string
	timeout    time.Duration
	grace      time.Duration
	verbose    bool
	subagents  bool
	otel       otelFlags
	traces     *traces.Exporter // the export the otel flags opened; nil: none
	// as names an editor's declaration (session.Profiles) and clientCaps
	// is a JSON object, both merged over what acpscope declares.
	as         string
	clientCaps string
}

func (o *outputFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "after the session (its last turn), print one JSON line per subagent card (and nothing else on stdout)")
	fs.BoolVar(&o.plain, "plain", false, "plain output: no spinner or control characters even on a terminal")
	fs.StringVar(&o.agent, "agent", "", "agent dialect: "+strings.Join(adapter.Registered(), ", ")+" (default: from the capture or the agent's initialize answer)")
	fs.StringVar(&o.db, "db", "", "database for subagent contexts: a SQLite path or postgres://… (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	fs.BoolVar(&o.noDB, "no-db", false, "do not persist subagent contexts")
	fs.StringVar(&o.permission, "permission", session.PolicyReject, "answer to permission requests: allow, reject or cancel")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "limit for each turn (and for initialize with the session's opening); then the turn is cancelled (session/cancel, exit code 3)")
	fs.DurationVar(&o.grace, "cancel-grace", 3*time.Second, "how long a cancelled turn (--timeout, a signal, a closed standard output) waits for the agent to answer session/cancel before the agent is killed")
	fs.BoolVar(&o.subagents, "subagents", false, "declare clientCapabilities.subagents: agents that support ACP subagent sessions then report children as child sessions instead of legacy tool calls (replay: default from the capture's initialize)")
	fs.StringVar(&o.as, "as", "", "declare an editor's client capabilities: "+strings.Join(profileNames(), ", ")+" (merged over what acpscope declares; replay: over what the capture declared)")
	fs.StringVar(&o.clientCaps, "client-capabilities", "", "a JSON object merged over the declared clientCapabilities (after --as): objects member by member, other values replace, null removes")
	fs.BoolVar(&o.verbose, "verbose", false, "log the connection's informational messages to standard error (default: warnings only)")
	o.otel.register(fs, fs.Name() == "acpscope run")
}

// logger returns the connection logger: warnings and errors on stderr, and
// informational messages too under --verbose, with repeats of one message
// throttled (see throttle). Call flush at the end to print the count of
// repeats still held back.
func (o *outputFlags) logger(stderr io.Writer) (log *slog.Logger, flush func()) {
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	h := newThrottle(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}), time.Now)
	return slog.New(h), h.flush
}

// dsn is the database the flags name: --db, else the default ("" under
// --no-db or when there is none).
func (o *outputFlags) dsn() string {
	if o.noDB {
		return ""
	}
	if o.db != "" {
		return o.db
	}
	dsn, _ := defaultDSN(false)
	return dsn
}

func (o *outputFlags) validate() error {
	switch o.permission {
	case session.PolicyAllow, session.PolicyReject, session.PolicyCancel:
	default:
		return fmt.Errorf("--permission must be allow, reject or cancel, got %q", o.permission)
	}
	if err := checkDSN(o.db); err != nil {
		return err
	}
	if o.agent != "" && !validDialect(o.agent) {
		return fmt.Errorf("--agent %q is not a dialect (%s)", o.agent, strings.Join(adapter.Registered(), ", "))
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	if o.grace < 0 {
		return fmt.Errorf("--cancel-grace must not be negative")
	}
	if _, err := o.declaration(); err != nil {
		return err
	}
	return nil
}

// profileNames are the --as profiles, sorted.
func profileNames() []string {
	return slices.Sorted(maps.Keys(session.Profiles))
}

// declaration is what --as and --client-capabilities add to the declared
// clientCapabilities, merged in that order (nil when neither is given).
func (o *outputFlags) declaration() (json.RawMessage, error) {
	if o.as == "" && o.clientCaps == "" {
		return nil, nil
	}
	var raw json.RawMessage
	if o.as != "" {
		p, ok := session.Profiles[o.as]
		if !ok {
			return nil, fmt.Errorf("--as %q is not a profile (%s)", o.as, strings.Join(profileNames(), ", "))
		}
		raw = p
	}
	merged, err := session.MergeCapabilities(raw, json.RawMessage(o.clientCaps))
	if err != nil {
		return nil, fmt.Errorf("--client-capabilities: %v", err)
	}
	return merged, nil
}

// sessionConfig is the client stack's configuration for these flags, with
// the view and the store sink; the caller adds what is its own (requests,
// working directory, abort).
func (o *outputFlags) sessionConfig(term *view.Terminal, store *storeSink, log *slog.Logger) session.Config {
	return session.Config{
		Dialect: o.agent, Policy: o.permission, Term: term, Sink: sinks(term, store, o.traces), Traces: o.traces, NoTraceparent: o.otel.noTraceparent,
		TurnStarted: store.BeginTurn, Turns: store.Sink, TurnEnded: func(_ int, _ acp.StopReason, err error) { store.flushTurn(*o, err) },
		Timeout: o.timeout, Grace: o.grace, Log: log, Subagents: o.subagents, ClientVersion: version,
		ClientCapabilities: o.mustDeclaration(),
	}
}

// sinks is the one fan-out of a command's events: the terminal view,
// then the store (which the web view reads), then the trace export (nil:
// none).
func sinks(term *view.Terminal, store *storeSink, export *traces.Exporter) sink.Fanout {
	return sink.Fanout{term, store.Sink, export}
}

// mustDeclaration is declaration, already checked by validate.
func (o *outputFlags) mustDeclaration() json.RawMessage {
	d, _ := o.declaration()
	return d
}

// terminal returns the live view for these flags: discarded under --json,
// animated only on a terminal without --plain.
func (o *outputFlags) terminal(stdout io.Writer) *view.Terminal {
	if o.json {
		return view.NewTerminal(io.Discard, false)
	}
	return view.NewTerminal(stdout, !o.plain && isTerminal(stdout))
}

// isTerminal reports whether the stream v (a reader or writer, or the
// watched standard output around one) is a terminal. A character device
// that is no terminal (/dev/null) is not one: it is read and written as a
// file.
func isTerminal(v any) bool {
	if o, ok := v.(*watchedOutput); ok {
		v = o.w
	}
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	// Through the raw connection, so that the file keeps its mode (Fd
	// would make it blocking).
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	is := false
	if rc.Control(func(fd uintptr) { is = term.IsTerminal(int(fd)) }) != nil {
		return false
	}
	return is
}

// cmdRun implements `acpscope run [flags] -- <agent command…>`.
func cmdRun(ctx context.Context, e env, args []string) (runErr error) {
	fs := newFlagSet("run", e.stderr)
	var o outputFlags
	o.register(fs)
	var steps stepList
	fs.Var(promptFlag{&steps}, "prompt", "a prompt, one turn each, sent in order on one session (repeatable; default: standard input, or one prompt line per turn on a terminal)")
	fs.Var(queueFlag{&steps}, "queue", "a prompt sent right after the --prompt before it, without waiting for its answer, for agents that queue prompts (Claude's promptQueueing); its own turn, answered after it (repeatable)")
	fs.Var(reopenFlag{&steps}, "reload", "reopen the session on the same connection at this point among the --prompt flags, so the agent replays its history (repeatable)")
	resume := fs.String("resume", "", "reopen this session (see --resume-with) instead of opening a new one")
	reopenWith := fs.String("resume-with", "auto", "how --resume and --reload reopen a session: load (session/load), resume (session/resume) or auto (load when the agent offers it, else resume)")
	cwd := fs.String("cwd", "", "the session's working directory (default: the current directory)")
	record := fs.String("record", "", "record the wire to this capture file")
	var webFlags runWebFlags
	webFlags.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "Usage: acpscope run [flags] -- <agent command…>")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	if err := checkResume(fs, *resume); err != nil {
		return err
	}
	command := fs.Args()
	if len(command) == 0 {
		return fmt.Errorf("run needs the agent command after --")
	}
	reopen, err := session.ParseReopenMethod(*reopenWith)
	if err != nil {
		return fmt.Errorf("--resume-with: %v", err)
	}
	turns, interactive, err := promptSource(ctx, e, steps, *resume != "")
	if err != nil {
		return err
	}
	dir, err := workDir(*cwd)
	if err != nil {
		return err
	}
	sink, err := openSink(ctx, o, e.stderr)
	if err != nil {
		return explainDBError(o.dsn(), err)
	}
	defer sink.close()
	var tv trafficView
	stopper := &runStop{}
	if *webFlags.addr != "" {
		tv = liveTraffic("run's connection")
		tv.stop = stopper
	}
	stopWeb, err := startRunWeb(ctx, webFlags, sink.store, tv, e.stderr)
	if err != nil {
		return err
	}
	defer stopWeb()
	if o.traces, err = o.otel.open(ctx); err != nil {
		return err
	}
	defer closeTraces(o.traces, e.stderr)

	agent, err := session.StartAgent(command, dir, e.stderr)
	if err != nil {
		return fmt.Errorf("%w: starting the agent: %v", session.ErrTurn, err)
	}
	defer agent.Stop()
	toAgent, fromAgent := io.Writer(agent.Stdin), io.Reader(agent.Stdout)
	if *record != "" {
		w, f, err := createRecord(*record, o.agent)
		if err != nil {
			return err
		}
		defer func() { runErr = recordResult(e, *record, w, f, runErr) }()
		// The tap records a client message before the agent can see it, so
		// the capture never shows an answer ahead of its request.
		// Both keep the pipes' Close, so ending the connection still
		// unblocks its reader.
		toAgent = struct {
			io.Writer
			io.Closer
		}{io.MultiWriter(w.Tap(capture.FromClient), agent.Stdin), agent.Stdin}
		fromAgent = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(agent.Stdout, w.Tap(capture.FromAgent)), agent.Stdout}
	}
	toAgent, fromAgent = tv.tapped(toAgent, fromAgent, agent.Stdin, agent.Stdout)
	term := o.terminal(e.stdout)
	log, flushLog := o.logger(e.stderr)
	open := session.Request{Method: acp.AgentMethodSessionNew}
	if *resume != "" {
		open = session.Request{Method: session.MethodReopen, SessionID: *resume}
	}
	cfg := o.sessionConfig(term, sink, log)
	cfg.Requests, cfg.Cwd, cfg.Abort, cfg.ReopenWith = session.Turns(open, turns), dir, agent.Kill, reopen
	cfg.AwaitChildren = true
	cfg.Connected = stopper.connected
	stored := cfg.TurnEnded // the store's flush of the turn's cards
	switch {
	case interactive:
		cfg.TurnEnded = func(n int, stop acp.StopReason, err error) {
			stored(n, stop, err)
			reportTurn(e, term, n, stop, err)
		}
		cfg.TurnContext = e.interrupts.turnContext
	case steps.prompts() > 1:
		// The exit reports the worst turn; each failed turn is named as
		// it ends, so none goes unsaid.
		cfg.TurnEnded = func(n int, stop acp.StopReason, err error) {
			stored(n, stop, err)
			markTurnEnd(term, n, stop, err)
			if err != nil {
				fmt.Fprintf(e.stderr, "acpscope: turn %d: %v\n", n, err)
			}
		}
	}
	res, err := session.Run(ctx, cfg, toAgent, fromAgent)
	flushLog()
	err = finishTurn(e, o, term, res, err)
	return sink.endTurn(ctx, e.stderr, o, err)
}

// checkResume refuses a --resume that names no session: an empty id (which
// would open a new session instead) or one that is not valid UTF-8 (JSON
// would carry U+FFFD in its place, so the agent would reopen another
// session than the one asked for).
func checkResume(fs *flag.FlagSet, id string) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "resume" })
	switch {
	case !set:
		return nil
	case id == "":
		return errors.New("--resume needs a session id (it is empty)")
	case !utf8.ValidString(id):
		return fmt.Errorf("--resume %s: a session id must be valid UTF-8", safetext.Text(strings.ToValidUTF8(id, "\ufffd")))
	}
	return nil
}

// createRecord creates the --record capture at path, with a header naming
// the dialect when one was given.
func createRecord(path, dialect string) (*capture.Writer, *os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--record: %v", err)
	}
	var hdr *capture.Header
	if dialect != "" {
		hdr = &capture.Header{Agent: dialect, Explicit: true}
	}
	w, err := capture.NewWriter(f, hdr)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("--record: %v", err)
	}
	return w, f, nil
}

// recordResult reports what went wrong with the --record capture: the first
// write error, else the error closing the file. The run fails with it
// (exit code 2) when it succeeded otherwise; a failed run keeps its own
// error, and the recording's is printed as well.
func recordResult(e env, path string, w *capture.Writer, f *os.File, runErr error) error {
	werr := w.Err()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		return runErr
	}
	werr = fmt.Errorf("--record %s: the capture is incomplete: %v", path, werr)
	if runErr != nil {
		fmt.Fprintf(e.stderr, "acpscope: %v\n", werr)
		return runErr
	}
	return werr
}

// cmdReplay implements `acpscope replay [flags] [CAPTURE]`.
func cmdReplay(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("replay", e.stderr)
	var o outputFlags
	o.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(e.stderr, "Usage: acpscope replay [flags] [CAPTURE]\n\nWithout CAPTURE, replays the bundled demo (a Cursor and a Claude subagent fan-out).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	type source struct {
		name string
		c    *capture.Capture
	}
	var sources []source
	switch fs.NArg() {
	case 0:
		for _, name := range demoCaptures {
			data, err := demoFS.ReadFile(name)
			if err != nil {
				return err
			}
			c, err := capture.Read(bytes.NewReader(data))
			if err != nil {
				return fmt.Errorf("bundled %s: %w", name, err)
			}
			sources = append(sources, source{strings.TrimSuffix(filepath.Base(name), ".jsonl") + " demo", c})
		}
	case 1:
		c, err := capture.ReadFile(fs.Arg(0))
		if err != nil {
			return err // a *capture.LineError names the line and the reason
		}
		if err := checkCapture(c); err != nil {
			return fmt.Errorf("%s: %w", fs.Arg(0), err)
		}
		sources = append(sources, source{fs.Arg(0), c})
	default:
		return fmt.Errorf("replay takes at most one capture file")
	}
	subagentsSet := false
	fs.Visit(func(f *flag.Flag) { subagentsSet = subagentsSet || f.Name == "subagents" })
	sink, err := openSink(ctx, o, e.stderr)
	if err != nil {
		return explainDBError(o.dsn(), err)
	}
	defer sink.close()
	if o.traces, err = o.otel.open(ctx); err != nil {
		return err
	}
	defer closeTraces(o.traces, e.stderr)
	for i, src := range sources {
		subagents := o.subagents
		if recorded, ok := recordedSubagents(src.c); ok {
			switch {
			case !subagentsSet:
				subagents = recorded
			case recorded != o.subagents:
				fmt.Fprintf(e.stderr, "acpscope: warning: %s was recorded %s clientCapabilities.subagents; replaying %s it (--subagents=%v), so the agent's answers may not match\n",
					src.name, declaring(recorded), declaring(o.subagents), o.subagents)
			}
		}
		dialect := replayDialect(o.agent, src.c)
		if dialect != "" && !validDialect(dialect) {
			return fmt.Errorf("%s: capture header names unknown agent %q", src.name, dialect)
		}
		if !o.json {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			fmt.Fprintf(e.stdout, "── replaying %s ──\n", safetext.Text(src.name))
		}
		term := o.terminal(e.stdout)
		log, flushLog := o.logger(e.stderr)
		cfg := o.sessionConfig(term, sink, log)
		cfg.Dialect, cfg.Cwd, cfg.Subagents = dialect, "/", subagents
		if prompts := countSeq(clientParams(src.c, acp.AgentMethodSessionPrompt)); prompts > 1 {
			stored := cfg.TurnEnded
			cfg.TurnEnded = func(n int, stop acp.StopReason, err error) {
				stored(n, stop, err)
				markTurnEnd(term, n, stop, err)
			}
		}
		if recorded, ok := recordedCapabilities(src.c); ok {
			// The capture's declaration, with the flags over it.
			declared, err := replayDeclaration(recorded, subagentsSet, subagents, cfg.ClientCapabilities)
			if err != nil {
				return fmt.Errorf("%s: %w", src.name, err)
			}
			if cfg.ClientCapabilities != nil && !sameJSON(declared, recorded) {
				fmt.Fprintf(e.stderr, "acpscope: warning: %s was recorded declaring clientCapabilities %s; replaying %s (--as, --client-capabilities), so the agent's answers may not match\n",
					src.name, safetext.Text(string(recorded)), safetext.Text(string(declared)))
			}
			cfg.ClientCapabilities, cfg.ExactCapabilities = declared, true
		}
		res, err := session.Replay(ctx, src.c, cfg)
		flushLog()
		err = finishTurn(e, o, term, res, err)
		if err := sink.endTurn(ctx, e.stderr, o, err); err != nil {
			return err
		}
	}
	return nil
}

// replayDialect is the dialect a capture replays with: --agent, else the
// one its header records, except the generic fallback recorded without
// --agent (a capture made before its agent had a dialect), which is
// detected again from the capture's own initialize ("").
func replayDialect(flag string, c *capture.Capture) string {
	switch {
	case flag != "":
		return flag
	case c.Header == nil:
		return ""
	case c.Header.Agent == "generic" && !c.Header.Explicit:
		return ""
	}
	return c.Header.Agent
}

// clientParams yields the params of the capture's client messages whose
// method is method, in recorded order; a message that does not parse is
// passed over.
func clientParams(c *capture.Capture, method string) iter.Seq[json.RawMessage] {
	return func(yield func(json.RawMessage) bool) {
		for _, e := range c.Entries {
			if e.From != capture.FromClient {
				continue
			}
			var m struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(e.Msg, &m) != nil || m.Method != method {
				continue
			}
			if !yield(m.Params) {
				return
			}
		}
	}
}

// recordedSubagents reports whether the capture's first initialize request
// declared clientCapabilities.subagents; ok is false when the capture holds
// no readable initialize request.
func recordedSubagents(c *capture.Capture) (declared, ok bool) {
	for params := range clientParams(c, "initialize") {
		var p struct {
			ClientCapabilities map[string]json.RawMessage `json:"clientCapabilities"`
		}
		if json.Unmarshal(params, &p) != nil {
			continue
		}
		v, has := p.ClientCapabilities["subagents"]
		return has && string(v) != "null", true
	}
	return false, false
}

// recordedCapabilities is the clientCapabilities object of the capture's
// first readable initialize request; ok is false without one.
func recordedCapabilities(c *capture.Capture) (json.RawMessage, bool) {
	for params := range clientParams(c, "initialize") {
		var p struct {
			ClientCapabilities json.RawMessage `json:"clientCapabilities"`
		}
		if json.Unmarshal(params, &p) != nil {
			continue
		}
		if len(p.ClientCapabilities) == 0 || string(p.ClientCapabilities) == "null" {
			return json.RawMessage(`{}`), true
		}
		if _, err := session.MergeCapabilities(p.ClientCapabilities, nil); err != nil {
			continue
		}
		return p.ClientCapabilities, true
	}
	return nil, false
}

// replayDeclaration is the recorded declaration with --subagents (when
// given) and the --as / --client-capabilities object over it.
func replayDeclaration(recorded json.RawMessage, subagentsSet, subagents bool, over json.RawMessage) (json.RawMessage, error) {
	out := recorded
	var err error
	if subagentsSet {
		patch := `{"subagents":null}`
		if subagents {
			patch = `{"subagents":{}}`
		}
		if out, err = session.MergeCapabilities(out, json.RawMessage(patch)); err != nil {
			return nil, err
		}
	}
	return session.MergeCapabilities(out, over)
}

// sameJSON reports whether two JSON values are equal as values.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// declaring words a declaration for the replay warning.
func declaring(declared bool) string {
	if declared {
		return "declaring"
	}
	return "without"
}

// markTurnEnd shows in the view, where it happened, how turn n of a
// session of several turns ended: its stop reason, or that it failed or
// was cancelled (standard error says why). The final line (finishTurn)
// alone would say nothing of the turns before the last.
func markTurnEnd(term *view.Terminal, n int, stop acp.StopReason, err error) {
	switch {
	case err == nil:
		term.Note(fmt.Sprintf("turn %d ended: %s", n, stop))
	case errors.Is(err, session.ErrCancelled):
		term.Note(fmt.Sprintf("turn %d cancelled", n))
	default:
		term.Note(fmt.Sprintf("turn %d failed", n))
	}
}

// countSeq counts the values of seq.
func countSeq[T any](seq iter.Seq[T]) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

// finishTurn prints the turn's outcome: the cards (or the JSON lines) and
// the stop reason.
func finishTurn(e env, o outputFlags, term *view.Terminal, res session.Result, err error) error {
	term.Flush()
	if res.Foreign > 0 {
		// The same with and without --json: the updates were dropped, so
		// neither the cards, the store nor the web view has them.
		fmt.Fprintf(e.stderr, "acpscope: warning: ignored %d session update(s) for a session the client never opened and the agent never announced as a child; nothing of them was shown or stored\n", res.Foreign)
	}
	if o.json {
		if werr := term.WriteJSON(e.stdout, res.Dialect); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	term.Summary()
	if err == nil {
		turns := ""
		if res.Turns > 1 {
			turns = fmt.Sprintf(", %d turns", res.Turns)
		}
		fmt.Fprintf(e.stdout, "\nturn ended: %s (agent dialect %s, session %s%s)\n",
			safetext.Text(string(res.StopReason)), safetext.Text(res.Dialect), safetext.Text(res.SessionID), turns)
	}
	return err
}

// workDir resolves the session's working directory to an absolute path.
func workDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--cwd: %v", err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", fmt.Errorf("--cwd %s is not a directory", abs)
	}
	return abs, nil
}

// validDialect reports whether name is a registered adapter dialect.
func validDialect(name string) bool {
	return slices.Contains(adapter.Registered(), name)
}
