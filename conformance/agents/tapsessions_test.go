package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// twoSessions scripts two parents on one agent process: the parent whose
// prompt names alpha launches alpha (its model call held until the turn
// is cancelled), the one naming bravo launches bravo, whose answer waits
// for release; both in the foreground. running is told once each child's
// call arrived.
func twoSessions(release <-chan struct{}, running chan<- string) modelserver.Script {
	var once sync.Map
	launch := claudeLaunch(ptr(false))
	return func(req *modelserver.Request) modelserver.Reply {
		if len(req.Tools) == 0 {
			return modelserver.Reply{Text: "Scripted title"}
		}
		first := req.FirstUserText()
		for _, c := range []Child{childA, childB} {
			if strings.Contains(first, c.Prompt()) {
				if _, seen := once.LoadOrStore(c.Marker, true); !seen {
					running <- c.Marker
				}
				if c.Marker == childA.Marker {
					return modelserver.Reply{Hold: true}
				}
				select {
				case <-release:
				case <-time.After(turnTimeout):
				}
				return modelserver.Reply{Text: c.Answer()}
			}
		}
		for _, c := range []Child{childA, childB} {
			if strings.Contains(first, "session "+c.Marker) {
				if len(req.ToolResults()) == 0 {
					return modelserver.Reply{ToolCalls: []modelserver.ToolCall{launch(req, c)}}
				}
				return modelserver.Reply{Text: Final}
			}
		}
		return modelserver.Reply{Text: "Scripted reply"}
	}
}

// runTapSessions is the multi-session tap case: an editor stand-in on the
// TypeScript SDK (editor.mjs, declaring the subagent-session form) opens
// two sessions on one claude-agent-acp process (it serves several per
// process) through acpscope tap and prompts both; once both children run,
// the editor cancels alpha's turn, and only after its cancelled answer
// does bravo's child answer. The bytes both sides of the tap must be
// identical; the tap must store bravo's child complete (a cancelled turn
// of one session never ends another's) and alpha's cancelled, each prompt
// as one turn. (Claude keeps a prompt open while its children run, so on
// this agent the old connection-wide ending settled the same; the
// scripted tests in cmd/acpscope pin the orders it got wrong.)
func runTapSessions(t *testing.T, modules string, a Agent) {
	bin := acpscopeBin(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the editor stand-in needs node: %v", err)
	}
	editor, err := filepath.Abs("editor.mjs")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	release, running := make(chan struct{}), make(chan string, 2)
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	sc := Scenario{Name: "two-sessions-cancel", Script: twoSessions(release, running)}
	env := newEnv(t, dir, modules, a, sc)
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(at("wire.sh"), []byte(wireScript), 0o755); err != nil {
		t.Fatal(err)
	}
	// editor → wire.sh (client side) → acpscope tap → wire.sh (agent side) → agent
	args := []string{editor, at("wire.sh"), at("client.in"), at("client.out"),
		bin, "tap", "--db", at("tap.db"), "--log", at("tap.log"), "--", at("wire.sh"), at("agent.in"), at("agent.out")}
	args = append(args, a.Command(env)...)
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = env.Work
	cmd.Env = append(env.environ(),
		"EDITOR_CWD="+env.Work,
		"EDITOR_PROMPT_A=In session "+childA.Marker+": "+UserPrompt,
		"EDITOR_PROMPT_B=In session "+childB.Marker+": "+UserPrompt)
	steer, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() || os.Getenv("ACP_AGENTS_DEBUG") == "1" {
			log, _ := os.ReadFile(at("tap.log"))
			t.Logf("stderr (tail):\n%s", tail(stderr.String(), 4000))
			t.Logf("tap log (tail):\n%s", tail(string(log), 4000))
			t.Logf("model calls:\n%s", env.Server.Summary())
		}
	}()
	// The editor's reports, one JSON object a line.
	type report struct {
		Sessions   *struct{ A, B string }
		Answer     string
		StopReason string
		Exit       *int
		Signal     *string
	}
	reports := make(chan report, 8)
	go func() {
		defer close(reports)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var r report
			if err := json.Unmarshal(sc.Bytes(), &r); err == nil {
				reports <- r
			}
		}
	}()
	next := func(what string) report {
		t.Helper()
		select {
		case r, ok := <-reports:
			if !ok {
				t.Fatalf("the editor stand-in ended before %s", what)
			}
			return r
		case <-ctx.Done():
			t.Fatalf("no %s from the editor stand-in", what)
		}
		return report{}
	}
	r := next("its sessions")
	if r.Sessions == nil {
		t.Fatalf("the editor's first report is %+v, want its sessions", r)
	}
	sa, sb := r.Sessions.A, r.Sessions.B
	for range 2 { // both children run
		select {
		case <-running:
		case <-time.After(turnTimeout):
			t.Fatal("the children did not both start")
		}
	}
	if _, err := io.WriteString(steer, "cancel\n"); err != nil {
		t.Fatal(err)
	}
	if r := next("alpha's answer"); r.Answer != "a" || r.StopReason != "cancelled" {
		t.Fatalf("the editor reported %+v, want session alpha's prompt cancelled", r)
	}
	releaseOnce.Do(func() { close(release) }) // bravo answers, after alpha's turn ended cancelled
	if r := next("bravo's answer"); r.Answer != "b" || r.StopReason != "end_turn" {
		t.Fatalf("the editor reported %+v, want session bravo's prompt end_turn", r)
	}
	if r := next("the tap's end"); r.Exit == nil || *r.Exit != 0 {
		t.Errorf("the tap (behind wire.sh) ended %+v, want exit 0", r)
	}
	steer.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the editor stand-in: %v", err)
	}

	// Every byte, both ways.
	for _, pair := range [][2]string{{"client.in", "agent.in"}, {"agent.out", "client.out"}} {
		sent, _ := os.ReadFile(at(pair[0]))
		got, _ := os.ReadFile(at(pair[1]))
		if !bytes.Equal(sent, got) || len(sent) == 0 {
			t.Errorf("%s (%d bytes) and %s (%d bytes) differ: the tap changed the wire", pair[0], len(sent), pair[1], len(got))
		} else {
			t.Logf("%s = %s: %d bytes, %d lines, identical", pair[0], pair[1], len(sent), bytes.Count(sent, []byte("\n")))
		}
	}

	rows := storedRows(t, at("tap.db"), []Card{{SessionID: sa}, {SessionID: sb}})
	// The cards by description: with the subagent-session form the child
	// session's card, and the Agent tool call's.
	status := map[string][]string{}
	turn := map[string]map[string]bool{}
	for _, list := range rows {
		for _, r := range list {
			d := deref(r.Description)
			status[d] = append(status[d], r.ToolCallID+"="+deref(r.ToolStatus))
			if turn[d] == nil {
				turn[d] = map[string]bool{}
			}
			turn[d][deref(r.TurnID)] = true
		}
	}
	for _, c := range []struct {
		child Child
		want  string
	}{{childB, "complete"}, {childA, "cancelled"}} {
		list := status[c.child.Description]
		if len(list) == 0 {
			t.Errorf("no card of %s stored (cards %v)", c.child.Description, status)
		}
		for _, s := range list {
			if !strings.HasSuffix(s, "="+c.want) && !(c.want == "cancelled" && strings.HasSuffix(s, "=error")) {
				t.Errorf("%s stored %s, want %s (cards %v)", c.child.Description, s, c.want, status)
			}
		}
		if len(turn[c.child.Description]) != 1 {
			t.Errorf("%s's prompt stored as %d turns", c.child.Description, len(turn[c.child.Description]))
		}
	}
	log, _ := os.ReadFile(at("tap.log"))
	if !strings.Contains(string(log), "not observed: 0 dropped (observer busy), 0 too long, 0 not JSON-RPC, 0 left") {
		t.Errorf("the tap did not observe every line:\n%s", tail(string(log), 2000))
	}
}
