package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// storedRows lists the stored cards of a session, by tool call id.
func storedRows(t *testing.T, db, session string) map[string]persistence.SubagentContext {
	t.Helper()
	s, err := persistence.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.ListBySession(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]persistence.SubagentContext{}
	for _, r := range rows {
		out[r.ToolCallID] = r
	}
	return out
}

// cardIDs are the tool call ids of --json cards, in order.
func cardIDs(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	for _, c := range parseCards(t, out) {
		ids = append(ids, *c.ToolCallID)
	}
	return ids
}

// Two --prompt turns go to one session, each a turn of its own; a second
// acpscope process reopens the session with --resume (session/load) and
// runs a third turn. The history the agent replays leaves the first run's
// rows as they were, and `acpscope sessions` counts each subagent once.
func TestTwoTurnsThenAResumedThird(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { twoTurnsThenAResumedThird(t, filepath.Join(t.TempDir(), "scope.db")) })
	t.Run("postgres", func(t *testing.T) { twoTurnsThenAResumedThird(t, postgresDSN(t)) })
}

func twoTurnsThenAResumedThird(t *testing.T, db string) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	agent := []string{"--", fakeAgent, "-mode", "turns", "-state", state}
	code, out, errOut := acpscope(t, "", append([]string{"run", "--json", "--db", db, "--cwd", dir, "--prompt", "first task", "--prompt", "second task"}, agent...)...)
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if got := cardIDs(t, out); !slices.Equal(got, []string{"toolu_T1", "toolu_T2"}) {
		t.Fatalf("cards of the two turns: %v", got)
	}
	before := storedRows(t, db, "fake-session")
	if len(before) != 2 || *before["toolu_T1"].TurnID == *before["toolu_T2"].TurnID {
		t.Fatalf("want two rows, one per turn, each with its own turn id: %+v", before)
	}

	code, out, errOut = acpscope(t, "", append([]string{"run", "--plain", "--db", db, "--cwd", dir, "--resume", "fake-session", "--prompt", "third task"}, agent...)...)
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	history := strings.Index(out, "── history of session fake-session (session/load) ──")
	end := strings.Index(out, "── end of history ──")
	third := strings.Index(out, "third task")
	if history < 0 || end < history || third < end || !strings.Contains(out[history:end], "first task") {
		t.Fatalf("the view does not mark the replayed history:\n%s", out)
	}
	after := storedRows(t, db, "fake-session")
	if len(after) != 3 {
		t.Fatalf("want the two stored cards and the third turn's, got %d rows", len(after))
	}
	for id, r := range before {
		a := after[id]
		if a.ID != r.ID || *a.TurnID != *r.TurnID || a.AgentExecutionID != r.AgentExecutionID ||
			!a.ObservedAt.Equal(r.ObservedAt) || *a.ToolStatus != *r.ToolStatus || *a.Description != *r.Description {
			t.Errorf("%s changed on resume:\nbefore %+v\nafter  %+v", id, r, a)
		}
	}
	if *after["toolu_T3"].TurnID == *after["toolu_T2"].TurnID {
		t.Errorf("the resumed turn has the second turn's id")
	}

	code, out, errOut = acpscope(t, "", "sessions", "--db", db, "--json")
	if code != exitOK {
		t.Fatalf("sessions: exit %d: %s", code, errOut)
	}
	var r web.SessionRow
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.ID != "fake-session" || r.Cards != 3 || r.Turns != 3 {
		t.Fatalf("sessions: %+v; want 3 cards in 3 turns", r)
	}
}

// An agent that offers session/resume but not session/load is reopened
// through session/resume; one that offers neither ends the run with exit
// code 2 and a message naming both.
func TestResumeFallsBackToSessionResumeElseExits2(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(state, []byte("earlier task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := acpscope(t, "", "run", "--plain", "--no-db", "--cwd", dir, "--resume", "fake-session",
		"--", fakeAgent, "-mode", "turns", "-state", state, "-reopen", "resume")
	if code != exitOK || !strings.Contains(out, "(session/resume) ──") || !strings.Contains(out, "earlier task") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	code, _, errOut = acpscope(t, "", "run", "--plain", "--no-db", "--cwd", dir, "--resume", "fake-session", "--prompt", "x",
		"--", fakeAgent, "-mode", "turns", "-state", state, "-reopen", "none")
	if code != exitUsage || !strings.Contains(errOut, "session/load") || !strings.Contains(errOut, "session/resume") {
		t.Fatalf("exit %d, want %d naming session/load and session/resume: %s", code, exitUsage, errOut)
	}
}

// A recorded multi-turn run replays every turn to the live run's cards,
// and the store dates them with the capture's own times.
func TestReplayPlaysEveryTurnAtTheRecordedTimes(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "turns.jsonl")
	code, live, errOut := acpscope(t, "", "run", "--json", "--no-db", "--cwd", dir, "--record", rec, "--prompt", "one", "--prompt", "two", "--prompt", "three",
		"--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state"))
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	c, err := capture.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	// Space the recorded times out: one second per message.
	var b strings.Builder
	for i, e := range c.Entries {
		ms := int64(i) * 1000
		e.T = &ms
		line, _ := json.Marshal(e)
		b.Write(append(line, '\n'))
	}
	spaced := filepath.Join(dir, "spaced.jsonl")
	if err := os.WriteFile(spaced, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "scope.db")
	code, replayed, errOut := acpscope(t, "", "replay", "--json", "--db", db, spaced)
	if code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	if replayed != live {
		t.Fatalf("replay differs from the live run:\nlive:\n%s\nreplay:\n%s", live, replayed)
	}
	rows := storedRows(t, db, "fake-session")
	first, last := rows["toolu_T1"].ObservedAt, rows["toolu_T3"].ObservedAt
	// Each turn is a prompt, three updates and an answer: seconds apart.
	if gap := last.Sub(first); gap < 8*time.Second || gap > 12*time.Second {
		t.Fatalf("stored times %v apart; want the capture's ~10s", gap)
	}
}

// A capture whose header records the generic fallback (made before its
// agent had a dialect) is detected again from its own initialize; one
// whose header marks an explicit --agent keeps it.
func TestReplayDetectsAGenericFallbackAgain(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "turns.jsonl")
	if code, _, errOut := acpscope(t, "", "run", "--json", "--no-db", "--cwd", dir, "--record", rec, "--prompt", "one",
		"--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state")); code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	body, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	for header, want := range map[string]string{
		`{"capture":{"version":1,"agent":"generic"}}`:                 "claude",
		`{"capture":{"version":1,"agent":"generic","explicit":true}}`: "generic",
	} {
		path := filepath.Join(dir, "h.jsonl")
		if err := os.WriteFile(path, append([]byte(header+"\n"), body...), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := acpscope(t, "", "replay", "--plain", "--no-db", path)
		if code != exitOK || !strings.Contains(out, "agent dialect "+want) {
			t.Errorf("%s: exit %d, want dialect %s: %s\n%s", header, code, want, errOut, out)
		}
	}
}

// With several --prompt turns, a failed turn does not stop the next one
// (the agent answered); each failure is named, and the exit code is the
// worst turn's.
func TestEveryTurnRunsAndTheWorstExitCodeWins(t *testing.T) {
	code, out, errOut := acpscope(t, "", "run", "--plain", "--no-db", "--cwd", t.TempDir(), "--prompt", "one", "--prompt", "two",
		"--", fakeAgent, "-mode", "error")
	if code != exitTurn || strings.Count(errOut, "the model is unavailable") != 3 ||
		!strings.Contains(errOut, "turn 1:") || !strings.Contains(errOut, "turn 2:") {
		t.Fatalf("exit %d, want %d with both turns' failures named:\n%s\n%s", code, exitTurn, errOut, out)
	}
}
