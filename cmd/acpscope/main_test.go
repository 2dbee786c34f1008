package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/kdlbs/acp-go-sdk/internal/goldentest"
	"github.com/kdlbs/acp-go-sdk/internal/pgtest"
)

// fakeAgent is the path of the fake ACP agent program built for the tests.
var fakeAgent string

// acpscopeBin is acpscope itself, built for the tests that send it real
// signals.
var acpscopeBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "acpscope-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeAgent = filepath.Join(dir, "fakeagent")
	acpscopeBin = filepath.Join(dir, "acpscope")
	for bin, pkg := range map[string]string{fakeAgent: "./internal/fakeagent", acpscopeBin: "."} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", pkg+":", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run dispatches a command line in-process, with signals ending nothing
// but ctx, and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runEnv(ctx, args, env{stdin: stdin, stdout: stdout, stderr: stderr})
}

// acpscope runs the command in-process and returns its exit code and output.
func acpscope(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// golden compares got with testdata/<name> (rewritten under -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldentest.Compare(t, filepath.Join("testdata", name), []byte(got))
}

// The demo replays deterministically, live log included: the client handles
// an agent request only after the updates sent before it
// (acp.WithOrderedRequests), so the whole output is a golden file.
func TestReplayDemoGolden(t *testing.T) {
	code, out, errOut := acpscope(t, "", "replay", "--no-db")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "demo.golden", out)
}

// cardLine mirrors the documented --json keys.
type cardLine struct {
	SessionID        *string         `json:"session_id"`
	ToolCallID       *string         `json:"tool_call_id"`
	ParentToolCallID *string         `json:"parent_tool_call_id"`
	Agent            *string         `json:"agent"`
	ToolStatus       *string         `json:"tool_status"`
	Normalized       json.RawMessage `json:"normalized"`
}

func parseCards(t *testing.T, out string) []cardLine {
	t.Helper()
	var cards []cardLine
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		var c cardLine
		if err := dec.Decode(&c); err != nil {
			t.Fatalf("line %d is not a card: %v\n%s", i+1, err, line)
		}
		if c.SessionID == nil || c.ToolCallID == nil || c.ParentToolCallID == nil || c.Agent == nil || c.ToolStatus == nil || len(c.Normalized) == 0 {
			t.Fatalf("line %d lacks a documented key: %s", i+1, line)
		}
		cards = append(cards, c)
	}
	return cards
}

func TestReplayDemoJSON(t *testing.T) {
	code, out, errOut := acpscope(t, "", "replay", "--json", "--no-db")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cards := parseCards(t, out)
	agents := map[string]int{}
	for _, c := range cards {
		agents[*c.Agent]++
	}
	if agents["cursor"] != 2 || agents["claude"] != 2 || len(cards) != 4 {
		t.Fatalf("cards per agent = %v, want 2 cursor and 2 claude", agents)
	}
	golden(t, "demo.jsonl.golden", out)
}

func TestReplayPersistsAndLists(t *testing.T) {
	db := filepath.Join(t.TempDir(), "scope.db")
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", db); code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	code, out, errOut := acpscope(t, "", "subagents", "--session", "cur-7f3a", "--db", db)
	if code != exitOK {
		t.Fatalf("subagents exit %d: %s", code, errOut)
	}
	for _, want := range []string{"tool_2494c23d-js", "tool_5c61e0aa-go", "composer-2.5-fast", "Summarize src JS files"} {
		if !strings.Contains(out, want) {
			t.Fatalf("listing lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := acpscope(t, "", "subagents", "--session", "nope", "--db", db); code != exitOK || !strings.Contains(out, "no subagent contexts") {
		t.Fatalf("empty listing: exit %d\n%s", code, out)
	}
	code, out, errOut = acpscope(t, "", "health", "--db", db)
	if !strings.Contains(out, "activation:") || !strings.Contains(out, "status:") {
		t.Fatalf("health exit %d: %s%s", code, out, errOut)
	}
}

func TestReplayReportsBrokenCaptureLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.jsonl")
	data := "{\"capture\":{\"version\":1,\"agent\":\"claude\"}}\n{\"from\":\"agent\",\"msg\":{}}\n{\"from\":\"agent\",\"msg\":{\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := acpscope(t, "", "replay", "--no-db", path)
	if code != exitUsage || !strings.Contains(errOut, "line 3") {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming line 3", code, errOut)
	}
	if code, _, errOut := acpscope(t, "", "replay", "--no-db", filepath.Join(t.TempDir(), "missing.jsonl")); code != exitUsage {
		t.Fatalf("missing capture: exit %d: %s", code, errOut)
	}
}

func TestRunRecordsAndReplaysTheSameCards(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "run.jsonl")
	code, out, errOut := acpscope(t, "", "run", "--json", "--no-db", "--permission", "allow", "--prompt", "fan out", "--cwd", dir, "--record", rec, "--", fakeAgent)
	if code != exitOK {
		t.Fatalf("run exit %d: %s", code, errOut)
	}
	cards := parseCards(t, out)
	if len(cards) != 2 || *cards[0].Agent != "claude" {
		t.Fatalf("cards = %s", out)
	}
	if !strings.Contains(out, "permission answer: allow") {
		t.Fatalf("permission policy not applied: %s", out)
	}
	replaysToTheLiveCards(t, rec, out)
}

// replaysToTheLiveCards checks that `acpscope replay --json` of the
// capture rec prints exactly live, the --json cards of the run that
// recorded it.
func replaysToTheLiveCards(t *testing.T, rec, live string) {
	t.Helper()
	code, replayed, errOut := acpscope(t, "", "replay", "--json", "--no-db", rec)
	if code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	if replayed != live {
		t.Fatalf("replay of the recording differs from the run:\n--- run\n%s\n--- replay\n%s", live, replayed)
	}
}

func TestRunPlainShowsCards(t *testing.T) {
	code, out, errOut := acpscope(t, "go", "run", "--no-db", "--plain", "--cwd", t.TempDir(), "--", fakeAgent)
	if code != exitOK {
		t.Fatalf("run exit %d: %s", code, errOut)
	}
	for _, want := range []string{"general-purpose — Investigate flaky test [complete]", "permission answer: reject", "background", "turn ended: end_turn"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunAgentFailuresExitOne(t *testing.T) {
	for mode, want := range map[string]string{
		// The agent's JSON-RPC error is shown as its detail, code and
		// message, not as wire JSON.
		"error": "session/prompt: the model is unavailable (JSON-RPC -32603 Internal error)",
		"exit":  "session/prompt",
	} {
		t.Run(mode, func(t *testing.T) {
			code, _, errOut := acpscope(t, "", "run", "--no-db", "--plain", "--prompt", "x", "--cwd", t.TempDir(), "--", fakeAgent, "-mode", mode)
			if code != exitTurn || !strings.Contains(errOut, want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
			}
		})
	}
	code, _, errOut := acpscope(t, "", "run", "--no-db", "--prompt", "x", "--", filepath.Join(t.TempDir(), "no-such-agent"))
	if code != exitTurn {
		t.Fatalf("missing agent program: exit %d, want 1: %s", code, errOut)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	cases := [][]string{
		{},
		{"frobnicate"},
		{"run", "--prompt", "x"},
		{"run", "--permission", "maybe", "--", "true"},
		{"replay", "--agent", "martian"},
		{"replay", "a.jsonl", "b.jsonl"},
		{"subagents"},
		{"cursor"},
		{"run", "--", "true"}, // no prompt on empty stdin
	}
	for _, args := range cases {
		if code, _, _ := acpscope(t, "", args...); code != exitUsage {
			t.Errorf("acpscope %v: exit %d, want 2", args, code)
		}
	}
	if code, out, _ := acpscope(t, "", "help"); code != exitOK || !strings.Contains(out, "Usage:") {
		t.Errorf("help: exit %d", code)
	}
}

func TestCursorDoctorNeverShowsPaths(t *testing.T) {
	t.Setenv("CURSOR_BIN", "")
	t.Setenv("PATH", t.TempDir())
	code, out, errOut := acpscope(t, "", "cursor", "doctor")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "cursor available:  no") || strings.Contains(out, "/") {
		t.Fatalf("doctor output:\n%s", out)
	}
}

func TestReplaySubagentSessionForm(t *testing.T) {
	capture := filepath.Join("testdata", "subagent_session.jsonl")
	code, out, errOut := acpscope(t, "", "replay", "--json", "--no-db", "--subagents", capture)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cards := parseCards(t, out)
	if len(cards) != 1 || !strings.Contains(string(cards[0].Normalized), `"child_session_id":"child1"`) {
		t.Fatalf("cards = %s", out)
	}
}

// Replay declares what the capture's initialize declared: the capture
// above was recorded with clientCapabilities.subagents, so it replays to
// its card without the flag. --subagents=false overrides it (and the
// subagent-session frames are then not read), with a warning that the
// replay differs from the recording.
func TestReplayFollowsRecordedClientCapabilities(t *testing.T) {
	capture := filepath.Join("testdata", "subagent_session.jsonl")
	code, out, errOut := acpscope(t, "", "replay", "--json", "--no-db", capture)
	if code != exitOK || !strings.Contains(out, `"child_session_id":"child1"`) || errOut != "" {
		t.Fatalf("without the flag: exit %d, out %s, stderr %q", code, out, errOut)
	}
	code, out, errOut = acpscope(t, "", "replay", "--json", "--no-db", "--subagents=false", capture)
	if code != exitOK || strings.Contains(out, "child1") {
		t.Fatalf("--subagents=false: exit %d, out %s %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "warning") || !strings.Contains(errOut, "clientCapabilities.subagents") {
		t.Fatalf("no warning that the replay differs from the recording: %q", errOut)
	}
}

// postgresDSN returns a DSN on a fresh schema of the test server, or skips
// (fails under CI=true) when none is reachable.
func postgresDSN(t testing.TB) string {
	t.Helper()
	return pgtest.SchemaDSN(t, "acpscope_test")
}

func TestReplayPersistsToPostgres(t *testing.T) {
	dsn := postgresDSN(t)
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", dsn); code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	code, out, errOut := acpscope(t, "", "subagents", "--session", "cl-91b0", "--db", dsn)
	if code != exitOK || !strings.Contains(out, "toolu_A") || !strings.Contains(out, "docs-auditor") {
		t.Fatalf("subagents exit %d: %s%s", code, out, errOut)
	}
}
