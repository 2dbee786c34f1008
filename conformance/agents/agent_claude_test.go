package agents

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/conformance/agents/modelserver"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// Claude Code through its ACP adapter, both published packages: the Zed
// package at 0.23.1 (legacy _meta.claudeCode tool calls only) and the
// agentclientprotocol package at 0.101.0 (also ACP subagent sessions with
// --subagents; launches children in the background by default).
func init() {
	register(claudeAgent("claude-0.23.1", "@zed-industries/claude-agent-acp", []Scenario{
		claudeScenario("one", nil, nil, "", childA),
		claudeScenario("parallel", nil, nil, "", childA, childB),
		claudePermission("allow", nil),
		claudePermission("reject", nil),
		claudeCancel(nil),
	}))
	fg, bg := ptr(false), ptr(true)
	sessions := []string{"--subagents"}
	register(claudeAgent("claude-0.101.0", "@agentclientprotocol/claude-agent-acp", []Scenario{
		claudeScenario("one", fg, nil, "", childA),
		claudeScenario("parallel", fg, nil, "", childA, childB),
		claudeScenario("background", bg, nil, "", childA),
		claudeScenario("sessions", fg, sessions, "", childA),
		claudeScenario("sessions-parallel", fg, sessions, "", childA, childB),
		claudeScenario("sessions-background", bg, sessions, "", childA),
		claudePermission("allow", fg),
		claudePermission("reject", fg),
		claudeCancel(fg),
		claudeChildAPIError(),
		claudeNested(),
		claudeTaskStop(),
		claudeSendMessage(),
		claudeClear(),
		claudeClearWhileRunning(nil),
		claudeClearWhileRunning(sessions),
		claudeSendMessageNextTurn(),
		claudeLoadNewProcess(),
		claudeReload(bg, nil),
		claudeReload(bg, sessions),
		claudeResumeNewProcess(),
		// As a JetBrains AIR client (acpscope run --as): native subagent
		// sessions with backgroundSubagents, and without native sessions.
		claudeAIR(claudeScenario("air-one", fg, air, "", childA)),
		claudeAIR(claudeScenario("air-parallel", fg, air, "", childA, childB)),
		claudeAIR(claudeScenario("air-background", bg, air, "", childA)),
		claudeAIRNonNative(),
		claudeAIRPastTurn(),
	}))
}

// air is the AIR client's declaration (acpscope run --as jetbrains-air).
var air = []string{"--as", "jetbrains-air"}

// claudeAIR: AIR's subagent_spawned names a child and its task, not its
// agent type, so the cards have none.
func claudeAIR(sc Scenario) Scenario {
	for i := range sc.Want {
		sc.Want[i].Type = ""
	}
	return sc
}

// claudeAIRPastTurn: with backgroundSubagents the prompt is answered at
// the parent's result while its background child still runs: the child's
// model call is answered only after the parent's last one was (and a
// moment later), so the child finishes after its turn's answer; its card
// still ends complete with its answer (acpscope run waits for it).
func claudeAIRPastTurn() Scenario {
	sc := claudeAIR(claudeScenario("air-past-turn", ptr(true), air, "", childA))
	inner := sc.Script
	var once sync.Once
	parentDone := make(chan struct{})
	sc.Script = func(req *modelserver.Request) modelserver.Reply {
		rep := inner(req)
		switch {
		case len(req.Tools) > 0 && strings.Contains(req.FirstUserText(), childA.Marker):
			<-parentDone
			time.Sleep(3 * time.Second) // the parent's answer goes out meanwhile
		case rep.Text == Final:
			once.Do(func() { close(parentDone) })
		}
		return rep
	}
	return sc
}

// claudeAIRNonNative: an AIR client without native subagent sessions gets
// the legacy tool calls, marked _meta.jetbrains.air.subagent.
func claudeAIRNonNative() Scenario {
	sc := claudeScenario("air-nonnative", ptr(false), []string{"--as", "jetbrains-air-nonnative"}, "", childA)
	sc.Want[0].AgentID = false
	return sc
}

// claudeChildAPIError: the child's model call is answered HTTP 400 (a 500
// is retried with backoff), so the child stops at once with an API error;
// with --subagents its card ends error and carries the agent's reason.
func claudeChildAPIError() Scenario {
	sc := claudeScenario("sessions-child-api-error", ptr(false), []string{"--subagents"}, "", childA)
	inner := sc.Script
	sc.Script = func(req *modelserver.Request) modelserver.Reply {
		if len(req.Tools) > 0 && strings.Contains(req.FirstUserText(), childA.Marker) {
			return modelserver.Reply{Status: 400, Text: "scripted: the child's request is refused"}
		}
		return inner(req)
	}
	sc.Want[0].Result, sc.Want[0].Status = "", "error"
	sc.Check = func(t *testing.T, r *Run) {
		for _, c := range r.Cards {
			if c.Normalized.Task != nil && c.ToolStatus == "error" && c.Normalized.Task.ErrorMessage == "" {
				t.Errorf("card %s failed without its reason", c.ToolCallID)
			}
		}
	}
	return sc
}

// claudeNested: the child launches a grandchild of its own (Claude allows
// nesting); with --subagents the grandchild is a child session of the
// child, and its card names its parent card (the child's) in --json.
func claudeNested() Scenario {
	grand := Child{Marker: "charlie", Description: "Inspect charlie"}
	launch := claudeLaunch(ptr(false))
	parent := Fanout(launch, childA)
	sc := Scenario{Name: "sessions-nested", Prompt: UserPrompt, Flags: []string{"--subagents"},
		Script: func(req *modelserver.Request) modelserver.Reply {
			first := req.FirstUserText()
			switch {
			case len(req.Tools) == 0:
				return modelserver.Reply{Text: "Scripted title"}
			case strings.Contains(first, grand.Marker):
				return grand.Reply(req)
			case strings.Contains(first, childA.Marker) && len(req.ToolResults()) == 0 && (req.HasTool("Agent") || req.HasTool("Task")):
				return modelserver.Reply{ToolCalls: []modelserver.ToolCall{launch(req, grand)}}
			case strings.Contains(first, childA.Marker):
				return childA.Reply(req)
			}
			return parent(req)
		},
		Want: []WantCard{{Description: childA.Description, Type: "general-purpose", AgentID: true},
			{Description: grand.Description, Type: "general-purpose", Result: grand.Answer(), AgentID: true}},
	}
	sc.Check = func(t *testing.T, r *Run) {
		byID := map[string]Card{}
		for _, c := range r.Cards {
			byID[c.ToolCallID] = c
		}
		for _, c := range r.Cards {
			if c.Normalized.Task == nil || c.Normalized.Task.Description != grand.Description {
				continue
			}
			if c.ParentToolCallID == "" || c.ParentSessionID == "" || byID[c.ParentToolCallID].SessionID != c.ParentSessionID {
				t.Errorf("the grandchild's card names no parent card: parent %q in %q", c.ParentToolCallID, c.ParentSessionID)
			}
		}
	}
	return sc
}

// claudeCancel interrupts the turn while the child's model call runs.
func claudeCancel(background *bool) Scenario {
	sc := claudeScenario("cancel", background, nil, "", hanging(childA))
	sc.Interrupt = true
	sc.Want[0].Result, sc.Want[0].Status = "", "cancelled|error"
	return sc
}

func claudeAgent(name, pkg string, scenarios []Scenario) Agent {
	return Agent{
		Name: name,
		Setup: func(t *testing.T, env *Env) {
			env.Set("ANTHROPIC_BASE_URL", env.Server.URL)
			env.Set("ANTHROPIC_API_KEY", "sk-ant-conformance")
			// The bundled CLI refuses skipped permissions as root otherwise.
			env.Set("IS_SANDBOX", "1")
			env.Set("DISABLE_AUTOUPDATER", "1")
			env.Set("DISABLE_TELEMETRY", "1")
			env.Set("DISABLE_ERROR_REPORTING", "1")
			env.Set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
			// 0.101.0's default mode "auto" asks a classifier model first.
			env.WriteFile(t, ".claude/settings.json", `{"permissions":{"defaultMode":"default"}}`)
		},
		Command: func(env *Env) []string {
			return []string{"node", env.NodeBin(pkg + "/dist/index.js")}
		},
		Scenarios: scenarios,
	}
}

// claudeLaunch is the parent's Task (0.23.1) or Agent (0.101.0) call;
// background, when set, is sent as run_in_background (0.101.0 runs a child
// in the background when it is absent).
func claudeLaunch(background *bool) func(req *modelserver.Request, c Child) modelserver.ToolCall {
	return func(req *modelserver.Request, c Child) modelserver.ToolCall {
		name := "Task"
		if req.HasTool("Agent") {
			name = "Agent"
		}
		in := map[string]any{"description": c.Description, "prompt": c.Prompt(), "subagent_type": "general-purpose"}
		if background != nil {
			in["run_in_background"] = *background
		}
		return modelserver.ToolCall{ID: "toolu_launch_" + c.Marker, Name: name, Input: modelserver.Input(in)}
	}
}

// claudeScenario launches children with the given background choice; with
// --subagents the cards also carry the agent id. A legacy background
// child's card is async and ends at the launch, without the answer; with
// subagent sessions the child's own session carries the answer.
func claudeScenario(name string, background *bool, flags []string, gap string, children ...Child) Scenario {
	sc := Scenario{Name: name, Prompt: UserPrompt, Flags: flags, Gap: gap, Script: Fanout(claudeLaunch(background), children...)}
	for _, c := range children {
		w := WantCard{Description: c.Description, Type: "general-purpose", Result: c.Answer(), AgentID: len(flags) > 0}
		// Only the legacy tool call says whether the child runs in the
		// background: with subagent sessions nothing on the wire does.
		if background != nil && len(flags) == 0 {
			w.Async = background
			if *background {
				w.Result = ""
			}
		}
		sc.Want = append(sc.Want, w)
	}
	return sc
}

// claudePermission: the child runs a Bash command, which asks permission in
// the "default" mode; acpscope answers by policy. The child is launched in
// the foreground so that its card carries its answer.
func claudePermission(policy string, background *bool) Scenario {
	c := withTool(childA, modelserver.ToolCall{ID: "toolu_child_bash", Name: "Bash",
		Input: modelserver.Input(map[string]any{"command": "echo conformance > note.txt", "description": "Write a note"})})
	sc := claudeScenario("permission-"+policy, background, nil, "", c)
	sc.Flags = []string{"--permission", policy}
	sc.Check = askedPermission
	return sc
}

// receiptAgentID is the agentId in a background launch's receipt.
var receiptAgentID = regexp.MustCompile(`agentId: ([A-Za-z0-9]+)`)

// claudeTaskStop: the parent launches a child in the background whose
// model call is held open, then stops it: TaskStop is a deferred tool, so
// it first loads it with ToolSearch, then calls TaskStop with the agent id
// from the launch receipt. With --subagents the card ends cancelled.
func claudeTaskStop() Scenario {
	c := hanging(childA)
	return Scenario{Name: "sessions-taskstop", Prompt: UserPrompt, Flags: []string{"--subagents"},
		Script: controlScript(claudeLaunch(ptr(true)), c, c.Reply, "TaskStop", func(agentID string) map[string]any {
			return map[string]any{"task_id": agentID}
		}),
		Want: []WantCard{{Description: c.Description, Type: "general-purpose", Status: "cancelled", AgentID: true}},
	}
}

// followUp is the message sent to a finished child, and its answer.
const (
	followUp       = "Follow-up: reply with the single word ANSWER-ALPHA-AGAIN."
	followUpAnswer = "ANSWER-ALPHA-AGAIN"
)

// claudeSendMessage: a foreground child answers; the parent then loads
// SendMessage (ToolSearch) and sends the finished child a follow-up, which
// it answers too. With --subagents the card keeps both answers: the
// follow-up's as the result, the first in earlier_results.
func claudeSendMessage() Scenario {
	c := childA
	return Scenario{Name: "sessions-sendmessage", Prompt: UserPrompt, Flags: []string{"--subagents"},
		Script: controlScript(claudeLaunch(ptr(false)), c, followUpChild(c), "SendMessage", sendFollowUp),
		Want:   []WantCard{{Description: c.Description, Type: "general-purpose", Result: followUpAnswer, AgentID: true}},
		Check: func(t *testing.T, r *Run) {
			for _, card := range r.Cards {
				if task := card.Normalized.Task; task != nil && !slices.Contains(task.EarlierResults, c.Answer()) {
					t.Errorf("card %s lost the first answer: earlier_results %q", card.ToolCallID, task.EarlierResults)
				}
			}
		},
	}
}

// followUpChild answers c's model calls: followUpAnswer to the follow-up,
// else c's own answer.
func followUpChild(c Child) modelserver.Script {
	return func(req *modelserver.Request) modelserver.Reply {
		if strings.Contains(lastUserText(req), "Follow-up") {
			return modelserver.Reply{Text: followUpAnswer}
		}
		return c.Reply(req)
	}
}

// sendFollowUp is SendMessage's input sending the follow-up to agentID.
func sendFollowUp(agentID string) map[string]any {
	return map[string]any{"to": agentID, "message": followUp}
}

// controlScript scripts a turn that drives a launched child with one of
// Claude's deferred agent-control tools: the parent launches c; once a
// tool result names the child's agent id it loads the tool (ToolSearch
// select:TaskStop,SendMessage), then calls it with input(agentID), then
// answers Final. The child's calls are answered by child.
func controlScript(launch func(*modelserver.Request, Child) modelserver.ToolCall, c Child, child modelserver.Script,
	tool string, input func(agentID string) map[string]any) modelserver.Script {
	return func(req *modelserver.Request) modelserver.Reply {
		if len(req.Tools) == 0 {
			return modelserver.Reply{Text: "Scripted title"}
		}
		if strings.Contains(req.FirstUserText(), c.Marker) {
			return child(req)
		}
		var agentID string
		searched, used := false, false
		for _, res := range req.ToolResults() {
			if m := receiptAgentID.FindStringSubmatch(res.Text); m != nil {
				agentID = m[1]
			}
			searched = searched || res.CallID == "toolu_search"
			used = used || res.CallID == "toolu_control"
		}
		switch {
		case len(req.ToolResults()) == 0:
			return modelserver.Reply{ToolCalls: []modelserver.ToolCall{launch(req, c)}}
		case agentID != "" && !searched:
			return modelserver.Reply{ToolCalls: []modelserver.ToolCall{{ID: "toolu_search", Name: "ToolSearch",
				Input: modelserver.Input(map[string]any{"query": "select:TaskStop,SendMessage"})}}}
		case agentID != "" && !used && req.HasTool(tool):
			return modelserver.Reply{ToolCalls: []modelserver.ToolCall{{ID: "toolu_control", Name: tool, Input: modelserver.Input(input(agentID))}}}
		}
		return modelserver.Reply{Text: Final}
	}
}

// lastUserText is the text of the conversation's last user message that
// has text (tool results have none).
func lastUserText(req *modelserver.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "user" && m.Text != "" {
			return m.Text
		}
	}
	return ""
}

// The multi-turn scenarios of Claude 0.101.0. acpscope sends each --prompt
// once the turn before it was answered, and a --queue while the turn
// before it is open (the agent advertises promptQueueing).

// clearPrompt resets Claude's conversation; nextPrompt is a second turn's
// prompt that needs no tool.
const (
	clearPrompt = "/clear"
	nextPrompt  = "Thanks. Reply with the single word DONE."
)

// claudeClear: turn 1 launches a background child, turn 2 is /clear. The
// agent holds turn 1's answer until its background child finished, so the
// child has answered before /clear is sent (claudeClearWhileRunning queues
// /clear while it runs). The card stays the child's: complete with its
// answer, still async.
func claudeClear() Scenario {
	sc := claudeScenario("sessions-clear", ptr(true), []string{"--subagents"}, "", childA)
	sc.Turns = []string{clearPrompt}
	return sc
}

// claudeClearWhileRunning: turn 1 launches a background child whose
// model call is held until turn 3 asks the model; /clear is queued behind
// turn 1 (--queue, the agent's promptQueueing), so it reaches the agent
// while the child runs, and turn 3 waits 2 s after the child was answered
// before it ends, for the child's late frames. 0.101.0 answers turn 1 at
// once, reports the child idle without a stop reason at the reset
// (subagent sessions), then forgets it: its answer never reaches the
// wire. With --subagents the card is unknown (not running, no outcome
// claimed), not live, with no result, in the view and the store; in the
// legacy form nothing is sent at the reset, and the card stays the
// background launch it was (complete, async, no result).
func claudeClearWhileRunning(flags []string) Scenario {
	name := "clear-running"
	if len(flags) > 0 {
		name = "sessions-clear-running"
	}
	sc := claudeScenario(name, ptr(true), flags, "", childA)
	sc.Turns = []string{Queued(clearPrompt), nextPrompt}
	inner := sc.Script
	asked, answered := make(chan struct{}), make(chan struct{})
	var askedOnce, answeredOnce sync.Once
	sc.Script = func(req *modelserver.Request) modelserver.Reply {
		switch {
		case len(req.Tools) > 0 && strings.Contains(req.FirstUserText(), childA.Marker):
			select {
			case <-asked:
			case <-time.After(turnTimeout):
			}
			defer answeredOnce.Do(func() { close(answered) })
		case saidByUser(req, nextPrompt):
			askedOnce.Do(func() { close(asked) })
			select {
			case <-answered:
			case <-time.After(turnTimeout):
			}
			time.Sleep(2 * time.Second)
			return modelserver.Reply{Text: Final}
		}
		return inner(req)
	}
	if len(flags) > 0 {
		sc.Want[0].Status, sc.Want[0].Result = "unknown", ""
	}
	sc.Check = func(t *testing.T, r *Run) {
		if !sentBeforeAnswer(t, r.Capture, clearPrompt, UserPrompt) {
			t.Errorf("%s: /clear was not sent while turn 1 was open", r.Capture)
		}
		for _, c := range r.Cards {
			if task := c.Normalized.Task; task != nil && (task.Live || task.ResultText != "") {
				t.Errorf("card %s: live %v result %q after the reset forgot its child", c.ToolCallID, task.Live, task.ResultText)
			}
		}
	}
	return sc
}

// sentBeforeAnswer reports whether the capture at path has the client's
// prompt text sent before the agent answered the prompt earlier.
func sentBeforeAnswer(t *testing.T, path, text, earlier string) bool {
	t.Helper()
	c, err := capture.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	steps := c.PromptSteps()
	sent := slices.Index(steps, capture.PromptStep{Text: text})
	answered := slices.Index(steps, capture.PromptStep{Answer: true, Text: earlier})
	return sent >= 0 && answered > sent
}

// saidByUser reports whether a user message of the conversation holds s.
func saidByUser(req *modelserver.Request, s string) bool {
	for _, m := range req.Messages {
		if m.Role == "user" && strings.Contains(m.Text, s) {
			return true
		}
	}
	return false
}

// sendPrompt is the second turn's prompt of claudeSendMessageNextTurn.
const sendPrompt = "Now send the finished subagent the follow-up."

// claudeSendMessageNextTurn: turn 1 runs a foreground child to its answer;
// turn 2 sends the finished child a follow-up (ToolSearch, then
// SendMessage with the agent id of turn 1's receipt), which it answers.
// The card keeps both answers: the follow-up's as the result, the first in
// earlier_results.
func claudeSendMessageNextTurn() Scenario {
	c, child, launch := childA, followUpChild(childA), claudeLaunch(ptr(false))
	first := Fanout(launch, c)
	second := controlScript(launch, c, child, "SendMessage", sendFollowUp)
	sc := claudeSendMessage()
	sc.Name, sc.Turns = "sessions-sendmessage-turns", []string{sendPrompt}
	sc.Script = func(req *modelserver.Request) modelserver.Reply {
		if saidByUser(req, sendPrompt) {
			return second(req)
		}
		if len(req.Tools) > 0 && strings.Contains(req.FirstUserText(), c.Marker) {
			return child(req)
		}
		return first(req)
	}
	return sc
}

// sansUpdatedAt is row without its updated_at: the store touches it when
// a load replays a row without changing anything else.
func sansUpdatedAt(row persistence.SubagentContext) persistence.SubagentContext {
	row.UpdatedAt = time.Time{}
	return row
}

// claudeLoadNewProcess: one foreground child in a first acpscope process;
// a second process reopens the session (--resume: session/load) in a new
// agent process against the same agent home and database and runs one
// more turn. The replayed child is one complete card with its answer, and
// the first process's stored rows are unchanged.
func claudeLoadNewProcess() Scenario {
	sc := claudeScenario("sessions-load", ptr(false), []string{"--subagents"}, "", childA)
	sc.Resume = []string{nextPrompt}
	sc.ResumeWant = sc.Want
	sc.ResumeCheck = firstRunUnchanged
	return sc
}

// claudeResumeNewProcess: as claudeLoadNewProcess, but the second process
// reopens the session with session/resume (--resume-with resume), which
// replays no history: it shows no card of its own, and the store still
// lists the first process's child once, its rows unchanged.
func claudeResumeNewProcess() Scenario {
	sc := claudeScenario("sessions-resume", ptr(false), []string{"--subagents"}, "", childA)
	sc.Resume = []string{nextPrompt}
	sc.ResumeFlags = []string{"--resume-with", "resume"}
	sc.ResumeCheck = func(t *testing.T, r *Run) {
		if !capturedMethod(t, r.Capture, "session/resume") || capturedMethod(t, r.Capture, "session/load") {
			t.Errorf("%s: want the session reopened with session/resume only", r.Capture)
		}
		firstRunUnchanged(t, r)
	}
	return sc
}

// claudeReload: turn 1 launches a background child, then acpscope reopens
// the session on the same connection (--reload: session/load, which the
// agent answers by replaying the conversation) and runs a second turn.
// The replayed history never moves the card backwards nor unsets what it
// learned: the child stays complete with its answer, async, and not live.
func claudeReload(background *bool, flags []string) Scenario {
	name := "reload"
	if len(flags) > 0 {
		name = "sessions-reload"
	}
	sc := claudeScenario(name, background, flags, "", childA)
	sc.Turns = []string{Reload, nextPrompt}
	sc.Check = func(t *testing.T, r *Run) {
		if !capturedMethod(t, r.Capture, "session/load") {
			t.Errorf("%s: no session/load on the connection", r.Capture)
		}
		for _, c := range r.Cards {
			if c.Normalized.Task != nil && c.Normalized.Task.Live {
				t.Errorf("card %s is live after its child finished and the session was reloaded", c.ToolCallID)
			}
		}
	}
	return sc
}

// capturedMethod reports whether the client sent a request of method in
// the capture at path.
func capturedMethod(t *testing.T, path, method string) bool {
	t.Helper()
	c, err := capture.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Entries {
		var m struct {
			Method string `json:"method"`
		}
		if e.From == capture.FromClient && json.Unmarshal(e.Msg, &m) == nil && m.Method == method {
			return true
		}
	}
	return false
}

// firstRunUnchanged checks a second process's store: acpscope sessions
// lists the session once with the first process's cards, and each row the
// first process wrote is still there, unchanged.
func firstRunUnchanged(t *testing.T, r *Run) {
	db := filepath.Join(filepath.Dir(r.Capture), "acpscope.db")
	again := storedRows(t, db, r.First.Cards)
	out, err := exec.Command(acpscopeBin(t), "sessions", "--json", "--db", db).Output()
	if err != nil {
		t.Fatalf("acpscope sessions: %v", err)
	}
	type session struct {
		ID    string `json:"id"`
		Cards int    `json:"cards"`
	}
	var listed []session
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var l session
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("acpscope sessions line %q: %v", line, err)
		}
		listed = append(listed, l)
	}
	if len(listed) != 1 || listed[0].ID != r.SessionID || listed[0].Cards != len(r.First.Cards) {
		t.Errorf("acpscope sessions after the reopening: %s, want session %s once with %d cards", out, r.SessionID, len(r.First.Cards))
	}
	for session, rows := range r.First.Rows {
		for _, before := range rows {
			i := slices.IndexFunc(again[session], func(c persistence.SubagentContext) bool { return c.ID == before.ID })
			if i < 0 {
				t.Errorf("session %s: the first process's row %s is gone", session, before.ID)
			} else if after := again[session][i]; !reflect.DeepEqual(sansUpdatedAt(after), sansUpdatedAt(before)) {
				t.Errorf("session %s: the first process's row changed:\n before %+v\n after  %+v", session, before, after)
			}
		}
	}
}
