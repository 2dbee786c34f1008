package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A capture where the agent asks a permission right after session/new,
// before the client sends session/prompt (as Auggie does), replays the
// same way every time: the prompt is answered by the recorded turn, never
// by a fallback, whichever of the permission answer and session/prompt
// reaches the scripted agent first.
func TestReplayRequestBeforePromptIsDeterministic(t *testing.T) {
	capture := filepath.Join("testdata", "request_before_prompt.jsonl")
	for i := range 12 {
		code, out, errOut := acpscope(t, "", "replay", "--plain", "--no-db", capture)
		if code != exitOK {
			t.Fatalf("run %d: exit %d: %s", i, code, errOut)
		}
		if !strings.Contains(out, "Subagents (1)") || !strings.Contains(out, "turn ended: max_tokens") {
			t.Fatalf("run %d: the recorded turn was not played:\n%s", i, out)
		}
	}
}

// A real Claude 0.101.0 capture whose agent sends frames after its last
// answer (usage updates and a message) replays the same way every time:
// the client closes the agent's input and reads its output to the end, and
// the scripted agent sends its tail before its output ends, never into a
// closed pipe.
func TestReplayKeepsFramesAfterTheLastAnswer(t *testing.T) {
	capture := filepath.Join("testdata", "claude-0.101.0-tail.jsonl")
	for i := range 100 {
		code, out, errOut := acpscope(t, "", "replay", "--plain", "--no-db", capture)
		if code != exitOK || errOut != "" {
			t.Fatalf("run %d: exit %d: %s", i, code, errOut)
		}
		if !strings.Contains(out, "Tail after the last answer.") {
			t.Fatalf("run %d: the frames after the last answer were lost:\n%s", i, out)
		}
	}
}

// An AIR capture (claude-agent-acp's frames to a client declaring
// nativeSubagentSessions and backgroundSubagents): replay declares what
// the capture declared, the child is one card with its name, prompt and
// result, settled after its turn's answer (and after the next turn's),
// its request after the answer is its own, and no child text is shown as
// the parent agent's.
func TestReplayAIRChildPastItsTurn(t *testing.T) {
	capture := filepath.Join("testdata", "air_background.jsonl")
	code, out, errOut := acpscope(t, "", "replay", "--json", "--no-db", capture)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var child *cardLine
	for _, c := range parseCards(t, out) {
		if *c.ToolCallID == "a1" {
			child = &c
		}
	}
	if child == nil {
		t.Fatalf("no card for the AIR child: %s (stderr %s)", out, errOut)
	}
	for _, want := range []string{`"description":"Review the diff"`, `"prompt":"Review the diff for bugs"`, `"result_text":"CHILD: no bugs found\n"`, `"status":"completed"`, `"child_session_id":"a1"`} {
		if !strings.Contains(string(child.Normalized), want) {
			t.Errorf("card lacks %s: %s", want, child.Normalized)
		}
	}
	if *child.ToolStatus != "complete" {
		t.Errorf("tool status %q", *child.ToolStatus)
	}
	if strings.Contains(errOut, "ignored") {
		t.Errorf("updates ignored: %s", errOut)
	}
	code, out, errOut = acpscope(t, "", "replay", "--plain", "--no-db", capture)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "agent: ") && strings.Contains(line, "CHILD") {
			t.Errorf("a child's text shown as the parent's: %q", line)
		}
	}
	if !strings.Contains(out, "agent: PARENT: the review finished") {
		t.Errorf("the parent's text after its turns is not shown:\n%s", out)
	}
}

// Replay declares the capture's whole clientCapabilities; --as and
// --client-capabilities go over it, with a warning when they change it.
func TestReplayDeclaresTheRecordedCapabilities(t *testing.T) {
	capture := filepath.Join("testdata", "air_background.jsonl")
	code, _, errOut := acpscope(t, "", "replay", "--json", "--no-db", "--client-capabilities", `{"fs":{"readTextFile":true}}`, capture)
	if code != exitOK || strings.Contains(errOut, "warning") {
		t.Fatalf("a flag that changes nothing: exit %d, %q", code, errOut)
	}
	code, out, errOut := acpscope(t, "", "replay", "--json", "--no-db", "--client-capabilities", `{"_meta":null}`, capture)
	if code != exitOK || !strings.Contains(errOut, "warning") || strings.Contains(out, `"a1"`) {
		t.Fatalf("AIR removed: exit %d, out %s, stderr %q", code, out, errOut)
	}
}

// A turn cancelled while a child of an earlier turn runs in the background
// (AIR backgroundSubagents) ends what that turn left open, not the child:
// it belongs to its launch turn, runs on and settles by its own state.
func TestReplayCancelledTurnSparesAnEarlierBackgroundChild(t *testing.T) {
	capture := filepath.Join("testdata", "air_background_cancelled.jsonl")
	code, out, errOut := acpscope(t, "", "replay", "--plain", "--no-db", capture)
	if code != exitOK && code != exitCancelled {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "Review the diff [cancelled]") {
		t.Errorf("the running child was shown cancelled by a later turn's cancel:\n%s", out)
	}
	if !strings.Contains(out, "Review the diff [complete]") {
		t.Errorf("the child did not settle:\n%s", out)
	}
}

// The store keeps an AIR child that outlives its turn in the turn that
// launched it; a replay cut before the child settles ends, like any run,
// with what its connection left open unknown (the child never reported an
// outcome), so `sessions` shows the session unknown, not open for ever.
func TestStoreKeepsAnAIRChildInItsLaunchTurn(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "air_background.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Turn 2 launches a second child that settles within it.
	spawnB := `{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"subagent_spawned","subagentSessionId":"b1","name":"Quick check","task":"check","capabilities":{}}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"subagent_state_update","subagentSessionId":"b1","state":"completed"}}}}
`
	two := strings.Replace(string(data), `{"from":"agent","msg":{"jsonrpc":"2.0","id":3,"result"`, spawnB+`{"from":"agent","msg":{"jsonrpc":"2.0","id":3,"result"`, 1)
	full := filepath.Join(dir, "two.jsonl")
	if err := os.WriteFile(full, []byte(two), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "full.db")
	if code, _, errOut := acpscope(t, "", "replay", "--json", "--db", db, full); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := storedRows(t, db, "s1")
	a, b := rows["a1"], rows["b1"]
	if a.TurnID == nil || b.TurnID == nil || *a.TurnID == *b.TurnID || deref(a.ToolStatus) != "complete" {
		t.Errorf("a1 (settled during turn 2's window) is not kept in its launch turn: a1 %v %v, b1 %v", deref(a.TurnID), deref(a.ToolStatus), deref(b.TurnID))
	}

	// Cut before the child settles: the connection ends with the child
	// open, which ends unknown.
	cut := two[:strings.Index(two, `{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a1","update":{"sessionUpdate":"agent_message_chunk"`)]
	running := filepath.Join(dir, "running.jsonl")
	if err := os.WriteFile(running, []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(dir, "running.db")
	if code, _, errOut := acpscope(t, "", "replay", "--json", "--db", db, running); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	code, out, errOut := acpscope(t, "", "sessions", "--db", db, "--json")
	if code != exitOK || !strings.Contains(out, `"status":"unknown"`) || deref(storedRows(t, db, "s1")["a1"].ToolStatus) != "unknown" {
		t.Errorf("sessions after a cut before the child settled: exit %d %s %s", code, out, errOut)
	}
}
