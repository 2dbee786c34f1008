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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/view"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/internal/procguard"
	"github.com/kdlbs/acp-go-sdk/internal/replay"
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
}

func (o *outputFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "after the turn, print one JSON line per subagent card (and nothing else on stdout)")
	fs.BoolVar(&o.plain, "plain", false, "plain output: no spinner or control characters even on a terminal")
	fs.StringVar(&o.agent, "agent", "", "agent dialect: "+strings.Join(adapter.Registered(), ", ")+" (default: from the capture or the agent's initialize answer)")
	fs.StringVar(&o.db, "db", "", "database for subagent contexts: a SQLite path or postgres://… (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	fs.BoolVar(&o.noDB, "no-db", false, "do not persist subagent contexts")
	fs.StringVar(&o.permission, "permission", PolicyReject, "answer to permission requests: allow, reject or cancel")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "limit for the whole turn; then the turn is cancelled (session/cancel, exit code 3)")
	fs.DurationVar(&o.grace, "cancel-grace", 3*time.Second, "how long a cancelled turn (--timeout, SIGINT, SIGTERM) waits for the agent to answer session/cancel before the agent is killed")
	fs.BoolVar(&o.subagents, "subagents", false, "declare clientCapabilities.subagents: agents that support ACP subagent sessions then report children as child sessions instead of legacy tool calls (replay: default from the capture's initialize)")
	fs.BoolVar(&o.verbose, "verbose", false, "log the connection's informational messages to standard error (default: warnings only)")
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
	case PolicyAllow, PolicyReject, PolicyCancel:
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
	return nil
}

// terminal returns the live view for these flags: discarded under --json,
// animated only on a terminal without --plain.
func (o *outputFlags) terminal(stdout io.Writer) *view.Terminal {
	if o.json {
		return view.NewTerminal(io.Discard, false)
	}
	return view.NewTerminal(stdout, !o.plain && isTerminal(stdout))
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// cmdRun implements `acpscope run [flags] -- <agent command…>`.
func cmdRun(ctx context.Context, e env, args []string) (runErr error) {
	fs := newFlagSet("run", e.stderr)
	var o outputFlags
	o.register(fs)
	prompt := fs.String("prompt", "", "the prompt (default: read from standard input)")
	cwd := fs.String("cwd", "", "the session's working directory (default: the current directory)")
	record := fs.String("record", "", "record the wire to this capture file")
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
	command := fs.Args()
	if len(command) == 0 {
		return fmt.Errorf("run needs the agent command after --")
	}
	text := *prompt
	if text == "" {
		data, err := io.ReadAll(io.LimitReader(e.stdin, maxPromptBytes+1))
		if err != nil {
			return fmt.Errorf("reading the prompt from standard input: %v", err)
		}
		if len(data) > maxPromptBytes {
			return fmt.Errorf("the prompt on standard input is larger than %d bytes", maxPromptBytes)
		}
		text = strings.TrimSpace(string(data))
	}
	if text == "" {
		return fmt.Errorf("no prompt: pass --prompt or write it to standard input")
	}
	dir, err := workDir(*cwd)
	if err != nil {
		return err
	}
	sink, closeStore, err := openSink(ctx, o)
	if err != nil {
		return explainDBError(o.dsn(), err)
	}
	defer closeStore()

	agent, err := startAgent(command, dir, e.stderr)
	if err != nil {
		return fmt.Errorf("%w: starting the agent: %v", errTurn, err)
	}
	defer agent.stop()
	toAgent, fromAgent := io.Writer(agent.stdin), io.Reader(agent.stdout)
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
		}{io.MultiWriter(w.Tap(capture.FromClient), agent.stdin), agent.stdin}
		fromAgent = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(agent.stdout, w.Tap(capture.FromAgent)), agent.stdout}
	}
	term := o.terminal(e.stdout)
	log, flushLog := o.logger(e.stderr)
	res, err := runTurn(ctx, turnConfig{
		dialect: o.agent, prompt: text, cwd: dir, policy: o.permission,
		term: term, sink: sink.record, timeout: o.timeout, grace: o.grace, abort: agent.kill,
		log: log, subagents: o.subagents,
	}, toAgent, fromAgent)
	flushLog()
	return finishTurn(e, o, term, res, err)
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
		hdr = &capture.Header{Agent: dialect}
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
	sink, closeStore, err := openSink(ctx, o)
	if err != nil {
		return explainDBError(o.dsn(), err)
	}
	defer closeStore()
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
		dialect := o.agent
		if dialect == "" {
			dialect = src.c.Agent()
		}
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
		res, err := replayOne(ctx, src.c, turnConfig{
			dialect: dialect, prompt: recordedPrompt(src.c), cwd: "/", policy: o.permission,
			term: term, sink: sink.record, timeout: o.timeout, grace: o.grace, log: log, subagents: subagents,
		})
		flushLog()
		if err := finishTurn(e, o, term, res, err); err != nil {
			return err
		}
	}
	return nil
}

// replayOne plays c's agent side against the live client stack.
func replayOne(ctx context.Context, c *capture.Capture, cfg turnConfig) (turnResult, error) {
	clientToAgentR, clientToAgentW := io.Pipe()
	agentToClientR, agentToClientW := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := replay.NewAgent(c).Serve(ctx, clientToAgentR, agentToClientW)
		agentToClientW.CloseWithError(io.EOF)
		served <- err
	}()
	// Aborting the scripted agent ends it and both pipes, so nothing stays
	// blocked on them.
	cfg.abort = func() {
		cancel()
		clientToAgentR.CloseWithError(io.ErrClosedPipe)
		agentToClientW.CloseWithError(io.ErrClosedPipe)
	}
	res, err := runTurn(ctx, cfg, clientToAgentW, agentToClientR)
	clientToAgentW.Close()
	cancel()
	if serr := <-served; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
		err = fmt.Errorf("%w: replay: %v", errTurn, serr)
	}
	return res, err
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

// declaring words a declaration for the replay warning.
func declaring(declared bool) string {
	if declared {
		return "declaring"
	}
	return "without"
}

// recordedPrompt is the text of the capture's first session/prompt, so a
// replay sends what was sent; "replay" when the capture has none.
func recordedPrompt(c *capture.Capture) string {
	for params := range clientParams(c, "session/prompt") {
		var p struct {
			Prompt []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"prompt"`
		}
		if json.Unmarshal(params, &p) != nil {
			continue
		}
		var parts []string
		for _, b := range p.Prompt {
			if b.Type == "text" && b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return "replay"
}

// finishTurn prints the turn's outcome: the cards (or the JSON lines) and
// the stop reason.
func finishTurn(e env, o outputFlags, term *view.Terminal, res turnResult, err error) error {
	term.Flush()
	if o.json {
		if werr := term.WriteJSON(e.stdout, res.dialect); werr != nil && err == nil {
			err = werr
		}
		return err
	}
	term.Summary()
	if err == nil {
		fmt.Fprintf(e.stdout, "\nturn ended: %s (agent dialect %s, session %s)\n",
			safetext.Text(string(res.stopReason)), safetext.Text(res.dialect), safetext.Text(res.sessionID))
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

// agentProcess is a running agent with its stdio, under the process guard.
type agentProcess struct {
	proc   *procguard.Process
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

// startAgent starts command under the process guard (its own process group,
// descendants tracked), with stdio piped and stderr passed through.
//
// A relative command with a directory part (./agent, bin/agent) is resolved
// as a shell would, from the directory acpscope was started in, not from
// dir (the session's --cwd, where the agent runs); a bare name is looked up
// in $PATH.
func startAgent(command []string, dir string, stderr io.Writer) (*agentProcess, error) {
	name := command[0]
	if strings.ContainsRune(name, filepath.Separator) && !filepath.IsAbs(name) {
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, err
		}
		name = abs
	}
	cmd := exec.Command(name, command[1:]...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Not cmd.StdoutPipe: the guard's Wait closes that as soon as the
	// process exits, and the output still in the pipe would be lost. The
	// read end of our own pipe ends at the agent's last byte.
	stdout, agentOut, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	cmd.Stdout = agentOut
	proc, err := procguard.Start(cmd, procguard.Options{TermGrace: 3 * time.Second})
	agentOut.Close() // the agent holds its own copy
	if err != nil {
		stdout.Close()
		return nil, err
	}
	return &agentProcess{proc: proc, stdin: stdin, stdout: stdout}, nil
}

// kill ends the agent and every descendant at once (SIGKILL to the whole
// tree, through the process guard) and closes its stdio, so that a write
// blocked on an agent that stopped reading ends.
func (a *agentProcess) kill() {
	a.proc.Kill()
	a.stdin.Close()
	a.stdout.Close()
}

// stop ends the agent: stdin is closed first (an ACP agent exits at end of
// input); after a grace period the guard terminates the process and every
// descendant (SIGTERM, then SIGKILL).
func (a *agentProcess) stop() {
	a.stdin.Close()
	select {
	case <-a.proc.Exited():
	case <-time.After(2 * time.Second):
	}
	a.proc.Terminate()
}

// validDialect reports whether name is a registered adapter dialect.
func validDialect(name string) bool {
	return slices.Contains(adapter.Registered(), name)
}
