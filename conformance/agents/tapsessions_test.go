package agents

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
)

// editorClient is the editor stand-in's side of the connection: it
// allows every permission and has no files or terminals.
type editorClient struct{}

func (editorClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errors.New("no files")
}

func (editorClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errors.New("no files")
}

func (editorClient) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	for _, o := range p.Options {
		if o.Kind == acp.PermissionOptionKindAllowOnce || o.Kind == acp.PermissionOptionKindAllowAlways {
			return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

func (editorClient) SessionUpdate(context.Context, acp.SessionNotification) error { return nil }

func (editorClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errors.New("no terminals")
}

func (editorClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errors.New("no terminals")
}

func (editorClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errors.New("no terminals")
}

func (editorClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errors.New("no terminals")
}

func (editorClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errors.New("no terminals")
}

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

// runTapSessions is the multi-session tap case: an editor stand-in (the
// Go SDK's client, declaring the subagent-session form) opens two
// sessions on one claude-agent-acp process (it serves several per
// process) through acpscope tap and prompts both; once both children run,
// the editor cancels alpha's turn, and only after its cancelled answer
// does bravo's child answer. The tap must store bravo's child complete (a
// cancelled turn of one session never ends another's) and alpha's
// cancelled, each prompt as one turn. (Claude keeps a prompt open while
// its children run, so on this agent the old connection-wide ending
// settled the same; the scripted tests in cmd/acpscope pin the orders it
// got wrong.)
func runTapSessions(t *testing.T, modules string, a Agent) {
	bin := acpscopeBin(t)
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
	args := append([]string{"tap", "--db", at("tap.db"), "--log", at("tap.log"), "--", at("wire.sh"), at("agent.in"), at("agent.out")}, a.Command(env)...)
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = env.Work, env.environ()
	toTap, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	fromTap, err := cmd.StdoutPipe()
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
	conn := acp.NewClientSideConnection(editorClient{}, toTap, fromTap)
	if _, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}},
		ClientInfo:         &acp.Implementation{Name: "editor-stand-in", Version: "1"}}); err != nil {
		t.Fatal(err)
	}
	open := func() acp.SessionId {
		s, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: env.Work, McpServers: []acp.McpServer{}})
		if err != nil {
			t.Fatal(err)
		}
		return s.SessionId
	}
	sa, sb := open(), open()
	type answer struct {
		resp acp.PromptResponse
		err  error
	}
	prompt := func(s acp.SessionId, marker string) <-chan answer {
		done := make(chan answer, 1)
		go func() {
			r, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: s,
				Prompt: []acp.ContentBlock{acp.TextBlock("In session " + marker + ": " + UserPrompt)}})
			done <- answer{r, err}
		}()
		return done
	}
	doneA, doneB := prompt(sa, childA.Marker), prompt(sb, childB.Marker)
	for range 2 { // both children run
		select {
		case <-running:
		case <-time.After(turnTimeout):
			t.Fatal("the children did not both start")
		}
	}
	if err := conn.Cancel(ctx, acp.CancelNotification{SessionId: sa}); err != nil {
		t.Fatal(err)
	}
	if ans := <-doneA; ans.err != nil || ans.resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("session alpha's prompt: %v %v, want cancelled", ans.resp.StopReason, ans.err)
	}
	releaseOnce.Do(func() { close(release) }) // bravo answers, after alpha's turn ended cancelled
	if ans := <-doneB; ans.err != nil || ans.resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("session bravo's prompt: %v %v, want end_turn", ans.resp.StopReason, ans.err)
	}
	toTap.Close() // the editor quits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("acpscope tap: %v", err)
	}

	rows := storedRows(t, at("tap.db"), []Card{{SessionID: string(sa)}, {SessionID: string(sb)}})
	got := map[string]string{}
	turns := map[string]string{}
	for _, list := range rows {
		for _, r := range list {
			got[r.ToolCallID] = deref(r.ToolStatus)
			turns[r.ToolCallID] = deref(r.TurnID)
		}
	}
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
	sent, _ := os.ReadFile(at("agent.out"))
	if len(sent) == 0 {
		t.Error("the agent sent nothing through the tap")
	}
	log, _ := os.ReadFile(at("tap.log"))
	if !strings.Contains(string(log), "not observed: 0 dropped (observer busy), 0 too long, 0 not JSON-RPC, 0 left") {
		t.Errorf("the tap did not observe every line:\n%s", tail(string(log), 2000))
	}
}
