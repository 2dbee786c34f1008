package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A --resume id that is empty or not valid UTF-8 is refused before any
// agent starts (exit 2): JSON would carry U+FFFD in place of the bad bytes,
// so the agent would reopen another session than the one asked for and
// every update it sent would be for a session the client never opened
// (dropped: 0 cards, exit 0); an empty id quietly opened a new session.
func TestResumeRefusesAnEmptyOrInvalidID(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	for _, id := range []string{"", "sess-\xff\xfe", "\xc3"} {
		code, out, errOut := acpscope(t, "", "run", "--plain", "--no-db", "--cwd", dir, "--resume", id, "--prompt", "x",
			"--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state"), "-ready", started)
		if code != exitUsage || !strings.Contains(errOut, "--resume") {
			t.Errorf("--resume %q: exit %d, want %d naming --resume: %s\n%s", id, code, exitUsage, errOut, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
			t.Fatalf("--resume %q: the agent ran a turn", id)
		}
	}
}

// Standard input that is /dev/null (a character device, but no terminal)
// is an empty standard input, not an interactive terminal: without
// --prompt the run is refused for want of a prompt (exit 2), and a
// --resume only reopens the session.
func TestDevNullIsNotATerminal(t *testing.T) {
	dir := t.TempDir()
	runWith := func(args ...string) (int, string) {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		cmd := exec.Command(acpscopeBin, args...)
		var out bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = null, &out, &out
		err = cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
	agent := []string{"--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state")}
	code, out := runWith(append([]string{"run", "--no-db", "--cwd", dir}, agent...)...)
	if code != exitUsage || strings.Contains(out, promptMark) || !strings.Contains(out, "no prompt") {
		t.Fatalf("run < /dev/null: exit %d, want %d and no prompt line:\n%s", code, exitUsage, out)
	}
	code, out = runWith(append([]string{"run", "--no-db", "--plain", "--cwd", dir, "--resume", "fake-session"}, agent...)...)
	if code != exitOK || strings.Contains(out, promptMark) || !strings.Contains(out, "── end of history ──") {
		t.Fatalf("run --resume < /dev/null: exit %d, want %d, the history and no prompt line:\n%s", code, exitOK, out)
	}
}

// A --resume whose session/load the agent refuses (it does not know the
// session, say) is the session's failure to open, as a refused session/new
// is: exit 1, with the agent's reason. Exit 2 stays for a --resume the
// agent cannot serve at all (it offers neither method).
func TestResumeTheAgentRefusesExitsOne(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := acpscope(t, "", "run", "--plain", "--no-db", "--cwd", dir, "--resume", "gone", "--prompt", "x",
		"--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state"), "-load-error", "no session gone")
	if code != exitTurn || !strings.Contains(errOut, "session/load") || !strings.Contains(errOut, "no session gone") {
		t.Fatalf("exit %d, want %d naming session/load and the agent's reason: %s", code, exitTurn, errOut)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{string(readme), usageText()} {
		doc = strings.Join(strings.Fields(doc), " ")
		if !strings.Contains(doc, "session/load` or `session/resume` the agent refused") && !strings.Contains(doc, "a reopen the agent refused") {
			t.Errorf("the exit-code list does not say that a refused reopen exits 1:\n%.300s", doc)
		}
	}
}

// usageText is acpscope's usage message.
func usageText() string {
	var b bytes.Buffer
	usage(&b)
	return b.String()
}

// With several turns, the plain view marks each turn's end with its own
// stop reason, in place (before the next turn's output), in a run and in
// the replay of its recording alike.
func TestEachTurnEndIsMarked(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "two.jsonl")
	code, out, errOut := acpscope(t, "", "run", "--plain", "--no-db", "--cwd", dir, "--record", record, "--prompt", "first task", "--prompt", "second task",
		"--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state"))
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	check := func(what, out string) {
		t.Helper()
		one, two := strings.Index(out, "turn 1 ended: end_turn"), strings.Index(out, "turn 2 ended: end_turn")
		second := strings.Index(out, "— second task [")
		if one < 0 || two < 0 || second < 0 || !(one < second && second < two) {
			t.Errorf("%s: want turn 1's end before the second turn's card and turn 2's after it:\n%s", what, out)
		}
	}
	check("run", out)
	code, out, errOut = acpscope(t, "", "replay", "--plain", "--no-db", record)
	if code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	check("replay", out)
}
