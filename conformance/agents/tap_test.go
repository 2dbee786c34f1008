package agents

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kdlbs/acp-go-sdk/persistence"
)

// tapCases are the agent × scenario pairs TestTap runs with `acpscope tap`
// between acpscope run (the client) and the agent. Adding an agent of the
// registry, or another of its scenarios, is one line.
var tapCases = []struct{ agent, scenario string }{
	{"claude-0.101.0", "parallel"},
	{"claude-0.101.0", "permission-allow"},
	{"codex-acp-0.16.0", "parallel"},
	{"codex-acp-2.6.0", "v1-parallel"},
	{"codex-acp-2.6.0", "v2-sessions-parallel"},
	{"qwen-0.24.4", "one"},
	// An AIR-declaring editor stand-in (acpscope run --as jetbrains-air).
	{"claude-0.101.0", "air-past-turn"},
	{"codex-acp-2.6.0", "v2-air-parallel"},
	{cursorFake.Name, "fanout"},
}

// cursorFake is a Cursor-style agent: package cursorfake playing the
// bundled Cursor demo capture, with its cursor/task requests, to a live
// client. It is not in the registry (TestAgents covers published agents
// only); TestTap finds it by name.
var cursorFake = Agent{
	Name:  "cursor-fake",
	Setup: func(*testing.T, *Env) {},
	Command: func(*Env) []string {
		capture, _ := filepath.Abs(filepath.Join("..", "..", "cmd", "acpscope", "demo", "cursor.jsonl"))
		return []string{cursorFakeBin, capture}
	},
	Scenarios: []Scenario{{
		Name: "fanout", Prompt: UserPrompt,
		Want: []WantCard{
			{Description: "Summarize src JS files", Async: ptr(true), AgentID: true},
			{Description: "Summarize Go packages", Async: ptr(false), AgentID: true},
		},
	}},
}

var (
	cursorFakeOnce  sync.Once
	cursorFakeBin   string
	cursorFakeError error
)

// buildCursorFake builds package cursorfake once.
func buildCursorFake(t *testing.T) {
	cursorFakeOnce.Do(func() {
		cursorFakeBin, cursorFakeError = goBuild("github.com/kdlbs/acp-go-sdk/conformance/agents/cursorfake", "cursorfake")
	})
	if cursorFakeError != nil {
		t.Fatal(cursorFakeError)
	}
}

// wireScript records both directions of a command's standard input and
// output byte for byte: wire.sh IN OUT command…
const wireScript = "#!/bin/sh\nin=$1; out=$2; shift 2\ntee \"$in\" | \"$@\" | tee \"$out\"\n"

// TestTap runs each tap case: acpscope run drives the agent through
// acpscope tap, with the bytes recorded on both sides of the tap. The
// client must receive exactly what the agent sent and the agent exactly
// what the client sent; the tap's capture must replay to run's cards; the
// tap must store the rows run stores; and the cards must be the
// scenario's. Then an editor stand-in runs two sessions on one agent
// process through the tap (runTapSessions). Select with -run 'TestTap/<agent>/<scenario>'
// (make agents-tap runs them all).
func TestTap(t *testing.T) {
	if os.Getenv("ACP_AGENTS") != "1" {
		t.Skip("set ACP_AGENTS=1 (make agents-tap) to run the published agents through the tap")
	}
	modules, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	agents := append(slices.Clone(registry), cursorFake)
	for _, c := range tapCases {
		t.Run(c.agent+"/"+c.scenario, func(t *testing.T) {
			i := slices.IndexFunc(agents, func(a Agent) bool { return a.Name == c.agent })
			if i < 0 {
				t.Fatalf("no agent %q in the registry", c.agent)
			}
			a := agents[i]
			j := slices.IndexFunc(a.Scenarios, func(sc Scenario) bool { return sc.Name == c.scenario })
			if j < 0 {
				t.Fatalf("agent %s has no scenario %q", c.agent, c.scenario)
			}
			if a.Name == cursorFake.Name {
				buildCursorFake(t)
			}
			runTapScenario(t, modules, a, a.Scenarios[j])
		})
	}
	// An editor's several sessions on one agent process (runTapSessions).
	t.Run("claude-0.101.0/two-sessions-cancel", func(t *testing.T) {
		i := slices.IndexFunc(agents, func(a Agent) bool { return a.Name == "claude-0.101.0" })
		if i < 0 {
			t.Fatal("no agent claude-0.101.0 in the registry")
		}
		runTapSessions(t, modules, agents[i])
	})
}

func runTapScenario(t *testing.T, modules string, a Agent, sc Scenario) {
	if sc.Interrupt {
		t.Fatalf("scenario %s interrupts acpscope run: the tap cases take whole turns", sc.Name)
	}
	bin := acpscopeBin(t)
	dir := t.TempDir()
	env := newEnv(t, dir, modules, a, sc)
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(at("wire.sh"), []byte(wireScript), 0o755); err != nil {
		t.Fatal(err)
	}
	var dialect []string
	if a.Dialect != "" {
		dialect = []string{"--agent", a.Dialect}
	}
	args := []string{"run", "--record", at("run.jsonl"), "--json", "--db", at("run.db"), "--cwd", env.Work,
		"--prompt", sc.Prompt, "--timeout", turnTimeout.String()}
	args = append(append(args, dialect...), sc.Flags...)
	args = append(args, "--", at("wire.sh"), at("client.in"), at("client.out"),
		bin, "tap", "--db", at("tap.db"), "--record", at("tap.jsonl"), "--log", at("tap.log"))
	args = append(append(args, dialect...), "--", at("wire.sh"), at("agent.in"), at("agent.out"))
	args = append(args, a.Command(env)...)

	cmd, stdout, stderr := acpscopeCommand(t, bin, env, args)
	runErr := cmd.Run()
	defer func() {
		if t.Failed() || os.Getenv("ACP_AGENTS_DEBUG") == "1" {
			log, _ := os.ReadFile(at("tap.log"))
			t.Logf("stderr (tail):\n%s", tail(stderr.String(), 4000))
			t.Logf("tap log (tail):\n%s", tail(string(log), 4000))
			t.Logf("cards:\n%s", stdout.Bytes())
		}
	}()
	if runErr != nil {
		t.Fatalf("acpscope run through the tap: %v", runErr)
	}

	// Every byte, both ways.
	for _, pair := range [][2]string{{"client.in", "agent.in"}, {"agent.out", "client.out"}} {
		sent, err := os.ReadFile(at(pair[0]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(at(pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sent, got) || len(sent) == 0 {
			t.Errorf("%s (%d bytes) and %s (%d bytes) differ: the tap changed the wire", pair[0], len(sent), pair[1], len(got))
		} else {
			t.Logf("%s = %s: %d bytes, %d lines, identical", pair[0], pair[1], len(sent), bytes.Count(sent, []byte("\n")))
		}
	}
	// The tap's capture shows run's cards.
	if replayed := replayCards(t, bin, at("tap.jsonl"), sc.Flags); !bytes.Equal(replayed, stdout.Bytes()) {
		t.Errorf("the tap's capture replays to other cards than run showed:\n--- run\n%s--- tap's capture\n%s", stdout.Bytes(), replayed)
	}
	// The tap stores what run stores.
	cards := parseCards(t, stdout.Bytes())
	if want, got := rowsText(storedRows(t, at("run.db"), cards)), rowsText(storedRows(t, at("tap.db"), cards)); want != got {
		t.Errorf("the tap stored other rows than run:\n--- run\n%s--- tap\n%s", want, got)
	}
	log, err := os.ReadFile(at("tap.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "not observed: 0 dropped (observer busy), 0 too long, 0 not JSON-RPC, 0 left") {
		t.Errorf("the tap did not observe every line:\n%s", tail(string(log), 2000))
	}
	if problems := checkCards(cards, sc.Want); len(problems) > 0 {
		if sc.Gap != "" {
			t.Skipf("known gap (%s):\n%s", sc.Gap, strings.Join(problems, "\n"))
		}
		t.Errorf("cards:\n%s", strings.Join(problems, "\n"))
	}
}

// rowsText renders stored rows for comparison between two stores: every
// stored field but the times and the execution id, which differ between
// two processes.
func rowsText(rows map[string][]persistence.SubagentContext) string {
	sessions := make([]string, 0, len(rows))
	for s := range rows {
		sessions = append(sessions, s)
	}
	slices.Sort(sessions)
	var b strings.Builder
	for _, s := range sessions {
		for _, r := range rows[s] {
			fmt.Fprintf(&b, "%s %s parent=%s type=%s desc=%q tool=%s agent=%s id=%s model=%s child=%s async=%v tokens=%v tools=%v ms=%v\n",
				r.TaskSessionID, r.ToolCallID, deref(r.ParentToolCallID), deref(r.SubagentType), deref(r.Description),
				deref(r.ToolStatus), deref(r.AgentStatus), deref(r.AgentID), deref(r.Model), deref(r.ChildSessionID),
				r.IsAsync, num(r.TotalTokens), num(r.ToolUseCount), num(r.DurationMs))
		}
	}
	return b.String()
}

// num renders an optional stored number ("-" when absent).
func num(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}
