package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// Agent is one published agent the harness runs. Each agent's file
// registers it from an init function with register.
type Agent struct {
	// Name is the agent's directory under testdata/ ("claude-0.101.0").
	Name string
	// Dialect is passed as --agent when set; empty lets acpscope detect it
	// from the initialize answer, as a user's run would.
	Dialect string
	// Setup writes the agent's configuration into env.Home and sets its
	// environment variables (env.Set). It runs after the model server
	// started, so env.Server.URL is known.
	Setup func(t *testing.T, env *Env)
	// Command is the agent's command line (first element an absolute path
	// or a name on env's PATH).
	Command func(env *Env) []string
	// Scenarios are the scenarios this agent supports.
	Scenarios []Scenario
}

// Scenario is one scripted turn.
type Scenario struct {
	// Name is the capture's base name under testdata/<agent>/.
	Name string
	// Prompt is the user's prompt.
	Prompt string
	// Turns are further prompts sent after Prompt, one turn each, on the
	// same session in the same acpscope process (repeated --prompt); a
	// Reload among them reopens the session there on the same connection
	// (--reload).
	Turns []string
	// Resume, when set, are the prompts of a second acpscope process that
	// reopens the first one's session (--resume: session/load when the
	// agent offers it) against the same agent home and database. Its
	// capture is saved as <scenario>.resumed.jsonl with its own cards.
	Resume []string
	// Flags are extra acpscope flags shared by run and replay
	// ("--subagents", "--permission", "allow").
	Flags []string
	// RunFlags are extra flags of every acpscope run of the scenario, and
	// ResumeFlags of the second process (Resume) only, neither given to
	// replay ("--resume-with", "resume").
	RunFlags, ResumeFlags []string
	// Setup, when set, runs after the agent's Setup (scenario-specific
	// configuration or environment).
	Setup func(t *testing.T, env *Env)
	// Script answers the agent's model calls.
	Script modelserver.Script
	// Want are the cards the turn must end with, in card order.
	Want []WantCard
	// Interrupt sends SIGINT to acpscope (a user's Ctrl-C) the first time
	// the Script holds a call (Reply.Hold), cancelling the turn while that
	// call runs; acpscope may then exit 1 (turn failed) or 3 (cancelled).
	Interrupt bool
	// Gap, when set, names a known adapter gap (an open issue): a failed
	// card expectation is then logged and the test skipped instead of
	// failed. Captures are still recorded and replay must still match.
	Gap string
	// Check, when set, runs extra checks on the finished run (before the
	// Want cards, so it runs under a Gap too).
	Check func(t *testing.T, r *Run)
	// ResumeWant are the cards the second process (Resume) must end with;
	// ResumeCheck, when set, runs extra checks on it (r.First is the first
	// process's run).
	ResumeWant  []WantCard
	ResumeCheck func(t *testing.T, r *Run)
}

// Reload, as a step of Scenario.Turns or Resume, is no prompt: acpscope
// reopens the session there on the same connection (--reload).
const Reload = "\x00reload"

// queuedMark starts a step of Scenario.Turns or Resume made by Queued.
const queuedMark = "\x00queue:"

// Queued, as a step of Scenario.Turns or Resume, is the prompt sent right
// after the prompt before it, without waiting for its answer (--queue).
func Queued(prompt string) string { return queuedMark + prompt }

// WantCard is what one card must show; empty fields are not checked.
type WantCard struct {
	Description string
	Type        string
	// Result must occur in result_text.
	Result string
	// Status is the final tool_status (default "complete"); alternatives
	// are separated by "|" ("cancelled|error": an agent may report a
	// cancelled child as failed).
	Status string
	// Async, when non-nil, is the wanted is_async.
	Async *bool
	// AgentID requires a non-empty agent_id.
	AgentID bool
}

// Env is one run's throwaway environment.
type Env struct {
	// Home is the throwaway HOME; Work the session's working directory;
	// Bin a directory first on PATH for stubs.
	Home, Work, Bin string
	// Server is the scripted model server of this run.
	Server *modelserver.Server
	// Modules is the absolute path of conformance/agents/node_modules.
	Modules string

	vars map[string]string
}

// Set sets an environment variable of the agent's process.
func (e *Env) Set(k, v string) { e.vars[k] = v }

// WriteFile writes a file below Home, creating its directories.
func (e *Env) WriteFile(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(e.Home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Stub puts an executable shell script named name first on PATH.
func (e *Env) Stub(t *testing.T, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Bin, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// NodeBin is the path of a package's executable under node_modules.
func (e *Env) NodeBin(rel string) string { return filepath.Join(e.Modules, rel) }

func (e *Env) environ() []string {
	vars := map[string]string{
		"HOME":            e.Home,
		"PATH":            e.Bin + ":" + filepath.Join(e.Modules, ".bin") + ":/usr/local/bin:/usr/bin:/bin",
		"XDG_CONFIG_HOME": filepath.Join(e.Home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(e.Home, ".local", "share"),
		"XDG_STATE_HOME":  filepath.Join(e.Home, ".local", "state"),
		"XDG_CACHE_HOME":  filepath.Join(e.Home, ".cache"),
		"TMPDIR":          filepath.Join(e.Home, "tmp"),
		"LANG":            "C.UTF-8",
		"TERM":            "dumb",
		"NO_COLOR":        "1",
		"CI":              "true",
	}
	for k, v := range e.vars {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// Run is a finished run of one agent in one scenario.
type Run struct {
	// Cards are the --json lines of the live run, parsed.
	Cards []Card
	// Raw is the live run's standard output (the --json lines).
	Raw []byte
	// Capture is the path of the recorded capture.
	Capture string
	// Rows are the stored subagent contexts, by session.
	Rows map[string][]persistence.SubagentContext
	// Server is the model server, with its request log.
	Server *modelserver.Server
	// Stderr is acpscope's (and the agent's) standard error.
	Stderr string
	// SessionID is the session the run opened (or reopened).
	SessionID string
	// First is, in the second process of a Resume scenario, the first
	// process's run; nil otherwise.
	First *Run
}

// Card is one --json line.
type Card struct {
	SessionID        string `json:"session_id"`
	ToolCallID       string `json:"tool_call_id"`
	ParentToolCallID string `json:"parent_tool_call_id"`
	ParentSessionID  string `json:"parent_session_id"`
	Agent            string `json:"agent"`
	ToolStatus       string `json:"tool_status"`
	Normalized       struct {
		Kind string `json:"kind"`
		Task *struct {
			Description    string   `json:"description"`
			Prompt         string   `json:"prompt"`
			SubagentType   string   `json:"subagent_type"`
			AgentID        string   `json:"agent_id"`
			ChildSessionID string   `json:"child_session_id"`
			ResultText     string   `json:"result_text"`
			ErrorMessage   string   `json:"error_message"`
			EarlierResults []string `json:"earlier_results"`
			IsAsync        bool     `json:"is_async"`
			Live           bool     `json:"live"`
		} `json:"subagent_task"`
	} `json:"normalized"`
}

var (
	registry   []Agent
	acpscope   string // the acpscope binary
	buildOnce  sync.Once
	buildError error
)

// register adds an agent to the harness.
func register(a Agent) { registry = append(registry, a) }

// acpscopeBin returns $ACPSCOPE_BIN, else an acpscope built once into a
// temporary directory.
func acpscopeBin(t *testing.T) string {
	buildOnce.Do(func() {
		if p := os.Getenv("ACPSCOPE_BIN"); p != "" {
			acpscope, buildError = filepath.Abs(p)
			return
		}
		acpscope, buildError = goBuild("github.com/kdlbs/acp-go-sdk/cmd/acpscope", "acpscope")
	})
	if buildError != nil {
		t.Fatal(buildError)
	}
	return acpscope
}

// goBuild builds the package pkg into a new temporary directory and
// returns the binary's path.
func goBuild(pkg, name string) (string, error) {
	dir, err := os.MkdirTemp("", "acp-agents")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// TestAgents runs every registered agent in every scenario.
// Select with -run 'TestAgents/<agent>/<scenario>'.
func TestAgents(t *testing.T) {
	if os.Getenv("ACP_AGENTS") != "1" {
		t.Skip("set ACP_AGENTS=1 (make agents) to run the published agents")
	}
	modules, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(modules); err != nil {
		t.Fatalf("no node_modules: run `npm ci` in conformance/agents (make agents does): %v", err)
	}
	slices.SortFunc(registry, func(a, b Agent) int { return strings.Compare(a.Name, b.Name) })
	var outcomes []*outcome
	for _, a := range registry {
		t.Run(a.Name, func(t *testing.T) {
			for _, sc := range a.Scenarios {
				t.Run(sc.Name, func(t *testing.T) {
					o := &outcome{agent: a.Name, scenario: sc.Name, cards: "-", rows: "-"}
					outcomes = append(outcomes, o)
					start := time.Now()
					defer func() {
						o.took = time.Since(start)
						switch {
						case t.Failed():
							o.result = "FAIL"
						case t.Skipped():
							o.result = "gap"
						default:
							o.result = "ok"
						}
					}()
					runScenario(t, modules, a, sc, o)
				})
			}
		})
	}
	printOutcomes(outcomes)
}

// outcome is one row of the closing table.
type outcome struct {
	agent, scenario, result string
	cards, rows             string
	took                    time.Duration
}

// printOutcomes prints the table of agent × scenario: the result ("gap" =
// a known adapter gap), the cards (type, tool status, and whether a
// result, an agent id and async were shown) and the stored rows.
func printOutcomes(outcomes []*outcome) {
	fmt.Println("\n| agent | scenario | result | cards (type status [result] [agent_id] [async]) | stored rows | time |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, o := range outcomes {
		fmt.Printf("| %s | %s | %s | %s | %s | %.1fs |\n", o.agent, o.scenario, o.result, o.cards, o.rows, o.took.Seconds())
	}
}

// describeCards renders cards for the closing table.
func describeCards(cards []Card) string {
	if len(cards) == 0 {
		return "none"
	}
	var parts []string
	for _, c := range cards {
		d := c.ToolStatus
		if task := c.Normalized.Task; task != nil {
			d = strings.TrimSpace(task.SubagentType + " " + c.ToolStatus)
			if task.ResultText != "" {
				d += " result"
			}
			if task.AgentID != "" {
				d += " agent_id"
			}
			if task.IsAsync {
				d += " async"
			}
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, "; ")
}

// acpscopeCommand is acpscope with args, run in env's working directory
// and environment, bounded by the turn timeout and a margin, its output
// collected.
func acpscopeCommand(t *testing.T, bin string, env *Env, args []string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer) {
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout+30*time.Second)
	t.Cleanup(cancel)
	cmd = exec.CommandContext(ctx, bin, args...)
	cmd.Dir = env.Work
	cmd.Env = env.environ()
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd, stdout, stderr
}

// turnTimeout bounds one agent turn (acpscope --timeout);
// $ACP_AGENTS_TURN_TIMEOUT overrides it.
var turnTimeout = envDuration("ACP_AGENTS_TURN_TIMEOUT", 240*time.Second)

// newEnv makes a run's throwaway environment under dir, starts the
// scenario's model server (closed when the test ends) and runs the agent's
// and the scenario's Setup.
func newEnv(t *testing.T, dir, modules string, a Agent, sc Scenario) *Env {
	t.Helper()
	env := &Env{
		Home: filepath.Join(dir, "home"), Work: filepath.Join(dir, "work"), Bin: filepath.Join(dir, "bin"),
		Modules: modules, vars: map[string]string{},
	}
	for _, d := range []string{env.Home, env.Work, env.Bin, filepath.Join(env.Home, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(env.Work, "README.md"), []byte("# scratch\n\nA workspace for the harness.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := modelserver.Start(sc.Script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	env.Server = srv
	a.Setup(t, env)
	if sc.Setup != nil {
		sc.Setup(t, env)
	}
	return env
}

func runScenario(t *testing.T, modules string, a Agent, sc Scenario, o *outcome) {
	dir := t.TempDir()
	env := newEnv(t, dir, modules, a, sc)
	db := filepath.Join(dir, "acpscope.db")
	first := runProcess(t, env, a, sc, processSpec{name: sc.Name, prompts: append([]string{sc.Prompt}, sc.Turns...),
		flags: sc.RunFlags, interrupt: sc.Interrupt, db: db, want: sc.Want, check: sc.Check})
	o.cards, o.rows = first.outcome()
	if first.gap != "" || len(sc.Resume) == 0 || t.Failed() {
		first.finish(t)
		return
	}
	second := runProcess(t, env, a, sc, processSpec{name: sc.Name + ".resumed", prompts: sc.Resume, resume: first.run.SessionID,
		flags: append(slices.Clone(sc.RunFlags), sc.ResumeFlags...), db: db, want: sc.ResumeWant, check: sc.ResumeCheck, first: first.run})
	cards, rows := second.outcome()
	o.cards += " → resumed: " + cards
	o.rows += " → " + rows
	first.finish(t)
	second.finish(t)
}

// processSpec is one acpscope process of a scenario.
type processSpec struct {
	// name is the capture's base name under testdata/<agent>/.
	name string
	// prompts are sent one turn each (a Reload reopens the session);
	// resume, when set, is the session the process reopens instead of
	// opening one; flags are the process's own extra flags.
	prompts []string
	resume  string
	flags   []string
	// interrupt sends SIGINT at the first held model call (Scenario.Interrupt).
	interrupt bool
	db        string
	want      []WantCard
	check     func(t *testing.T, r *Run)
	first     *Run
}

// processResult is a checked process: its run and the outcome of its card
// expectations (gap set when they failed under a Scenario.Gap).
type processResult struct {
	run      *Run
	problems []string
	gap      string
}

func (p processResult) outcome() (cards, rows string) {
	n := 0
	for _, rs := range p.run.Rows {
		n += len(rs)
	}
	return describeCards(p.run.Cards), fmt.Sprint(n)
}

// finish reports the card expectations: a skip under a known gap, else an
// error for each problem.
func (p processResult) finish(t *testing.T) {
	t.Helper()
	switch {
	case p.gap != "":
		t.Skipf("known gap (%s):\n%s", p.gap, strings.Join(p.problems, "\n"))
	case len(p.problems) > 0:
		t.Errorf("%s: cards:\n%s", p.run.Capture, strings.Join(p.problems, "\n"))
	}
}

// runProcess runs acpscope once in env with p's prompts, then checks that
// its capture replays to its cards, its stored rows, p.check and p.want.
func runProcess(t *testing.T, env *Env, a Agent, sc Scenario, p processSpec) processResult {
	bin := acpscopeBin(t)
	srv := env.Server
	capturePath := filepath.Join(filepath.Dir(env.Home), p.name+".jsonl")
	args := []string{"run", "--record", capturePath, "--json", "--db", p.db, "--cwd", env.Work, "--timeout", turnTimeout.String()}
	for _, prompt := range p.prompts {
		if prompt == Reload {
			args = append(args, "--reload")
		} else if queued, ok := strings.CutPrefix(prompt, queuedMark); ok {
			args = append(args, "--queue", queued)
		} else {
			args = append(args, "--prompt", prompt)
		}
	}
	if p.resume != "" {
		args = append(args, "--resume", p.resume)
	}
	if a.Dialect != "" {
		args = append(args, "--agent", a.Dialect)
	}
	args = append(args, sc.Flags...)
	args = append(args, p.flags...)
	args = append(args, "--")
	args = append(args, a.Command(env)...)
	cmd, stdout, stderr := acpscopeCommand(t, bin, env, args)
	started := make(chan *os.Process, 1)
	var interrupted atomic.Bool
	if p.interrupt {
		srv.SetOnHold(func() {
			if interrupted.CompareAndSwap(false, true) {
				p := <-started
				p.Signal(os.Interrupt)
			}
		})
	}
	runErr := cmd.Start()
	if runErr == nil {
		started <- cmd.Process
		runErr = cmd.Wait()
	}
	r := &Run{Raw: stdout.Bytes(), Capture: capturePath, Server: srv, Stderr: stderr.String(), First: p.first}
	defer func() {
		if t.Failed() || os.Getenv("ACP_AGENTS_DEBUG") == "1" {
			t.Logf("%s: model server log:\n%s", p.name, srv.Summary())
			t.Logf("%s: stderr (tail):\n%s", p.name, tail(r.Stderr, 4000))
			t.Logf("%s: cards:\n%s", p.name, r.Raw)
		}
	}()
	if keep := os.Getenv("ACP_AGENTS_KEEP"); keep != "" {
		// Keep the capture (failed runs included) for a look afterwards.
		if data, err := os.ReadFile(capturePath); err == nil {
			kept := filepath.Join(keep, a.Name+"-"+p.name+".jsonl")
			if os.MkdirAll(keep, 0o755) == nil && os.WriteFile(kept, data, 0o644) == nil {
				t.Logf("capture kept in %s", kept)
			}
		}
	}
	if p.interrupt {
		if !interrupted.Load() {
			t.Fatalf("the turn was never interrupted: no model call was held (acpscope: %v)", runErr)
		}
		if ee, ok := runErr.(*exec.ExitError); ok && (ee.ExitCode() == 1 || ee.ExitCode() == 3) {
			runErr = nil
		}
	}
	if runErr != nil {
		t.Fatalf("acpscope run (%s): %v", p.name, runErr)
	}
	r.Cards = parseCards(t, r.Raw)
	r.SessionID = openedSession(t, capturePath, p.resume)

	// The capture must replay to the live cards, every turn of it.
	replayed := replayCards(t, bin, capturePath, sc.Flags)
	if !bytes.Equal(replayed, r.Raw) {
		t.Errorf("%s: the capture replays to other cards than the live run:\n--- live\n%s--- replay\n%s", p.name, r.Raw, replayed)
	}
	if os.Getenv("ACP_AGENTS_UPDATE") == "1" {
		saveCapture(t, a.Name, p.name, sc.Flags, capturePath, replayed)
	}

	r.Rows = storedCards(t, p.db, r.Cards)
	checkRows(t, r)
	if p.check != nil {
		p.check(t, r)
	}
	res := processResult{run: r, problems: checkCards(r.Cards, p.want)}
	if len(res.problems) > 0 && sc.Gap != "" {
		res.gap = sc.Gap
	} else if len(res.problems) == 0 && sc.Gap != "" {
		t.Logf("known gap %q no longer reproduces: remove it from the scenario", sc.Gap)
	}
	return res
}

// openedSession is the session a run worked on: resume when it reopened
// one, else the sessionId of the first answer in its capture that has one
// (session/new's).
func openedSession(t *testing.T, capturePath, resume string) string {
	t.Helper()
	if resume != "" {
		return resume
	}
	c, err := capture.ReadFile(capturePath)
	if err != nil {
		t.Fatalf("reading the capture: %v", err)
	}
	for _, e := range c.Entries {
		m, err := capture.ParseMessage(e.Msg)
		if e.From != capture.FromAgent || err != nil || !m.IsResponse() || len(m.Result) == 0 {
			continue
		}
		var res struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(m.Result, &res) == nil && res.SessionID != "" {
			return res.SessionID
		}
	}
	return ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func parseCards(t *testing.T, raw []byte) []Card {
	t.Helper()
	var cards []Card
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var c Card
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("not a card line: %v\n%s", err, line)
		}
		cards = append(cards, c)
	}
	return cards
}

// replayCards replays a capture with `acpscope replay --json --no-db`.
func replayCards(t *testing.T, bin, capturePath string, flags []string) []byte {
	t.Helper()
	args := append([]string{"replay", "--json", "--no-db"}, flags...)
	args = append(args, capturePath)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("acpscope replay: %v\n%s", err, stderr.String())
	}
	return stdout.Bytes()
}

// saveCapture writes testdata/<agent>/<scenario>.jsonl (the capture),
// .cards.jsonl (its replayed cards) and .args (the replay flags, when any).
func saveCapture(t *testing.T, agent, name string, flags []string, capturePath string, cards []byte) {
	t.Helper()
	dir := filepath.Join("testdata", agent)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(capturePath)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, name)
	write := func(p string, b []byte) {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(base+".jsonl", data)
	write(base+".cards.jsonl", cards)
	if len(flags) > 0 {
		write(base+".args", []byte(strings.Join(flags, " ")+"\n"))
	} else {
		os.Remove(base + ".args")
	}
}

// storedRows reads the stored subagent contexts of every card's session.
func storedRows(t *testing.T, db string, cards []Card) map[string][]persistence.SubagentContext {
	t.Helper()
	return readSessions(t, db, cards, (*persistence.Store).ListBySession)
}

// storedCards is the cards the store shows of the sessions of cards, per
// session: one per tool call however many agent executions (acpscope
// processes) stored a row of it (persistence.Store.ListCards).
func storedCards(t *testing.T, db string, cards []Card) map[string][]persistence.SubagentContext {
	t.Helper()
	return readSessions(t, db, cards, (*persistence.Store).ListCards)
}

// readSessions lists, with list, each session the cards name.
func readSessions(t *testing.T, db string, cards []Card, list func(*persistence.Store, context.Context, string) ([]persistence.SubagentContext, error)) map[string][]persistence.SubagentContext {
	t.Helper()
	rows := map[string][]persistence.SubagentContext{}
	if len(cards) == 0 {
		return rows
	}
	ctx := context.Background()
	s, err := persistence.Open(ctx, db)
	if err != nil {
		t.Fatalf("opening the run's database: %v", err)
	}
	defer s.Close()
	for _, c := range cards {
		if _, done := rows[c.SessionID]; done {
			continue
		}
		listed, err := list(s, ctx, c.SessionID)
		if err != nil {
			t.Fatalf("listing session %s: %v", c.SessionID, err)
		}
		rows[c.SessionID] = listed
	}
	return rows
}

// checkRows requires one stored card per card (the rows of every agent
// execution collapsed, as acpscope shows them), agreeing with the card.
func checkRows(t *testing.T, r *Run) {
	t.Helper()
	perSession := map[string]int{}
	for _, c := range r.Cards {
		perSession[c.SessionID]++
		var row *persistence.SubagentContext
		for i := range r.Rows[c.SessionID] {
			if r.Rows[c.SessionID][i].ToolCallID == c.ToolCallID {
				row = &r.Rows[c.SessionID][i]
			}
		}
		if row == nil {
			t.Errorf("card %s/%s has no stored row", c.SessionID, c.ToolCallID)
			continue
		}
		if got := deref(row.ToolStatus); got != c.ToolStatus {
			t.Errorf("row %s: tool status %q, card %q", c.ToolCallID, got, c.ToolStatus)
		}
		if c.Normalized.Task != nil {
			if got := deref(row.Description); got != c.Normalized.Task.Description {
				t.Errorf("row %s: description %q, card %q", c.ToolCallID, got, c.Normalized.Task.Description)
			}
			if got := deref(row.AgentID); got != c.Normalized.Task.AgentID {
				t.Errorf("row %s: agent id %q, card %q", c.ToolCallID, got, c.Normalized.Task.AgentID)
			}
			if row.IsAsync != c.Normalized.Task.IsAsync {
				t.Errorf("row %s: async %v, card %v", c.ToolCallID, row.IsAsync, c.Normalized.Task.IsAsync)
			}
		}
	}
	for s, n := range perSession {
		if len(r.Rows[s]) != n {
			t.Errorf("session %s: %d stored rows for %d cards", s, len(r.Rows[s]), n)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// AgentRequests counts the requests the agent sent with the given method
// ("session/request_permission") in the run's capture.
func (r *Run) AgentRequests(t *testing.T, method string) int {
	t.Helper()
	return r.requests(t, capture.FromAgent, method)
}

// ClientRequests counts the requests acpscope sent with the given method
// ("session/prompt") in the run's capture.
func (r *Run) ClientRequests(t *testing.T, method string) int {
	t.Helper()
	return r.requests(t, capture.FromClient, method)
}

func (r *Run) requests(t *testing.T, from capture.Direction, method string) int {
	t.Helper()
	c, err := capture.ReadFile(r.Capture)
	if err != nil {
		t.Fatalf("reading the capture: %v", err)
	}
	n := 0
	for _, e := range c.Entries {
		if e.From != from {
			continue
		}
		if m, err := capture.ParseMessage(e.Msg); err == nil && m.IsRequest() && m.Method == method {
			n++
		}
	}
	return n
}

// askedPermission is the Check of the permission scenarios: the child's
// tool must really have asked the client.
func askedPermission(t *testing.T, r *Run) {
	t.Helper()
	if r.AgentRequests(t, "session/request_permission") == 0 {
		t.Error("no session/request_permission reached the client")
	}
}

// checkCards compares the cards with the wanted ones and lists what differs.
func checkCards(cards []Card, want []WantCard) []string {
	var problems []string
	if len(cards) != len(want) {
		problems = append(problems, fmt.Sprintf("%d cards, want %d", len(cards), len(want)))
	}
	for i, w := range want {
		if i >= len(cards) {
			break
		}
		c := cards[i]
		task := c.Normalized.Task
		if task == nil {
			problems = append(problems, fmt.Sprintf("card %d: no subagent_task", i))
			continue
		}
		status := w.Status
		if status == "" {
			status = "complete"
		}
		check := func(what, got, want string) {
			if got != want {
				problems = append(problems, fmt.Sprintf("card %d: %s %q, want %q", i, what, got, want))
			}
		}
		if !slices.Contains(strings.Split(status, "|"), c.ToolStatus) {
			problems = append(problems, fmt.Sprintf("card %d: tool_status %q, want %q", i, c.ToolStatus, status))
		}
		if w.Description != "" {
			check("description", task.Description, w.Description)
		}
		if w.Type != "" {
			check("subagent_type", task.SubagentType, w.Type)
		}
		if w.Result != "" && !strings.Contains(task.ResultText, w.Result) {
			problems = append(problems, fmt.Sprintf("card %d: result_text %q lacks %q", i, task.ResultText, w.Result))
		}
		if w.Async != nil && task.IsAsync != *w.Async {
			problems = append(problems, fmt.Sprintf("card %d: is_async %v, want %v", i, task.IsAsync, *w.Async))
		}
		if w.AgentID && task.AgentID == "" {
			problems = append(problems, fmt.Sprintf("card %d: no agent_id", i))
		}
	}
	return problems
}

// envDuration reads a duration from the environment, else def.
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}
