package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/web"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// storedRows lists the stored rows of a session, by tool call id (the
// last execution's where several have one).
func storedRows(t *testing.T, db, session string) map[string]persistence.SubagentContext {
	t.Helper()
	out := map[string]persistence.SubagentContext{}
	for k, e := range readStoredState(t, db, session) {
		if r, ok := out[k[1]]; !ok || r.ObservedAt.Before(e.Row.ObservedAt) {
			out[k[1]] = e.Row
		}
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

// Process 1 runs two turns; process 2 --resumes the session through
// session/load (the agent replays both turns as history) and runs a third.
// Each process is its own agent execution: the first run's rows stay
// byte for byte what they were, the second run writes rows of its own
// (its replay included), and sessions, subagents and the web view show
// every subagent once, complete, in the turn that launched it.
func TestTwoTurnsThenAResumedThird(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { twoTurnsThenAResumedThird(t, filepath.Join(t.TempDir(), "scope.db")) })
	t.Run("postgres", func(t *testing.T) { twoTurnsThenAResumedThird(t, postgresDSN(t)) })
}

// storedState is every stored row of a session with its texts and facts,
// by (execution, tool call).
type storedState map[[2]string]struct {
	Row   persistence.SubagentContext
	Texts persistence.SubagentTexts
	Facts persistence.CardFacts
}

func readStoredState(t *testing.T, db, session string) storedState {
	t.Helper()
	ctx := context.Background()
	s, err := persistence.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.ListBySession(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	out := storedState{}
	for _, r := range rows {
		k := [2]string{r.AgentExecutionID, r.ToolCallID}
		e := out[k]
		e.Row = r
		if e.Texts, err = s.SubagentTexts(ctx, session, r.AgentExecutionID, r.ToolCallID); err != nil {
			t.Fatal(err)
		}
		if e.Facts, err = s.SubagentFacts(ctx, session, r.AgentExecutionID, r.ToolCallID); err != nil {
			t.Fatal(err)
		}
		out[k] = e
	}
	return out
}

// getJSON decodes the JSON body of a GET of u into v.
func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", u, res.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v: %s", u, err, b)
	}
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
	before := readStoredState(t, db, "fake-session")
	rows := storedRows(t, db, "fake-session")
	if len(before) != 2 || len(rows) != 2 || *rows["toolu_T1"].TurnID == *rows["toolu_T2"].TurnID {
		t.Fatalf("want two rows, one per turn, each with its own turn id: %+v", before)
	}
	first := rows["toolu_T1"].AgentExecutionID

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

	// The store: the first execution's rows, texts and facts unchanged;
	// the second execution's own rows for the replayed T1, T2 and its T3.
	after := readStoredState(t, db, "fake-session")
	for k, b := range before {
		if a, ok := after[k]; !ok || !reflect.DeepEqual(a, b) {
			t.Errorf("%v changed on resume:\nbefore %+v\nafter  %+v", k, b, a)
		}
	}
	var second string
	for k := range after {
		if k[0] != first {
			second = k[0]
		}
	}
	if second == "" || len(after) != 5 {
		t.Fatalf("want 2 rows of the first execution and 3 of the second, got %d: %v", len(after), slices.Collect(maps.Keys(after)))
	}
	for _, call := range []string{"toolu_T1", "toolu_T2", "toolu_T3"} {
		if _, ok := after[[2]string{second, call}]; !ok {
			t.Errorf("no row of the second execution for %s", call)
		}
	}
	turn := func(exec, call string) string { return *after[[2]string{exec, call}].Row.TurnID }
	if turn(second, "toolu_T3") == turn(first, "toolu_T2") || turn(second, "toolu_T3") == turn(first, "toolu_T1") {
		t.Errorf("the resumed turn has an earlier turn's id")
	}

	// sessions: three cards in three turns, each once.
	code, out, errOut = acpscope(t, "", "sessions", "--db", db, "--json")
	if code != exitOK {
		t.Fatalf("sessions: exit %d: %s", code, errOut)
	}
	var r web.SessionRow
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.ID != "fake-session" || r.Cards != 3 || r.Turns != 3 || r.Open != 0 || r.Status != persistence.SessionComplete || r.Agent != "claude" {
		t.Fatalf("sessions: %+v; want 3 complete cards in 3 turns", r)
	}

	// subagents: one line per tool call, complete.
	code, out, errOut = acpscope(t, "", "subagents", "--db", db, "--session", "fake-session")
	if code != exitOK {
		t.Fatalf("subagents: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("subagents: want a header and 3 cards:\n%s", out)
	}
	for i, call := range []string{"toolu_T1", "toolu_T2", "toolu_T3"} {
		if f := strings.Fields(lines[i+1]); len(f) < 2 || f[1] != call || !slices.Contains(f, "complete") {
			t.Errorf("subagents line %d: %q, want %s complete", i+1, lines[i+1], call)
		}
	}

	// The web view: each card once, complete, in its own turn, with the
	// first run's time; /api/card serves its texts.
	u := startWeb(t, "--db", db, "--addr", "127.0.0.1:0")
	var page struct {
		View web.SessionView `json:"view"`
	}
	getJSON(t, u+"api/session?id=fake-session", &page)
	v := page.View
	if v.Session.Cards != 3 || v.Total != 3 || len(v.Cards) != 3 || v.TurnCount != 3 {
		t.Fatalf("web view: %d cards (total %d) in %d turns, want 3 in 3: %+v", len(v.Cards), v.Total, v.TurnCount, v)
	}
	for i, c := range v.Cards {
		call := fmt.Sprintf("toolu_T%d", i+1)
		if c.ToolCallID != call || c.Status != "complete" || c.Turn != i+1 {
			t.Errorf("web card %d: %s %s turn %d, want %s complete turn %d", i, c.ToolCallID, c.Status, c.Turn, call, i+1)
		}
		if i < 2 && !c.Observed.Equal(after[[2]string{first, call}].Row.ObservedAt) {
			t.Errorf("web card %s observed %v, want the first run's %v", call, c.Observed, after[[2]string{first, call}].Row.ObservedAt)
		}
		var texts web.CardTexts
		getJSON(t, u+"api/card?"+url.Values{"session": {"fake-session"}, "execution": {c.Execution}, "call": {call}}.Encode(), &texts)
		if want := fmt.Sprintf("turn %d", i+1); texts.Prompt == nil || *texts.Prompt != want {
			t.Errorf("/api/card %s: prompt %v, want %q", call, texts.Prompt, want)
		}
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

// --reload between two turns reopens the session on the same connection:
// the agent replays turn 1 as history, which neither shows nor stores the
// card a second time nor moves it back; each card keeps the turn that
// launched it, the run is one execution, and its capture replays to the
// live cards.
func TestReloadBetweenTurnsOnTheSameConnection(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { reloadBetweenTurns(t, filepath.Join(t.TempDir(), "scope.db")) })
	t.Run("postgres", func(t *testing.T) { reloadBetweenTurns(t, postgresDSN(t)) })
}

func reloadBetweenTurns(t *testing.T, db string) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "reload.jsonl")
	code, out, errOut := acpscope(t, "", "run", "--json", "--db", db, "--cwd", dir, "--record", rec,
		"--prompt", "first task", "--reload", "--prompt", "second task",
		"--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state"))
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if got := cardIDs(t, out); !slices.Equal(got, []string{"toolu_T1", "toolu_T2"}) {
		t.Fatalf("cards: %v, want toolu_T1 and toolu_T2 once each", got)
	}
	c, err := capture.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, e := range c.Entries {
		var m struct {
			Method string `json:"method"`
		}
		if e.From == capture.FromClient && json.Unmarshal(e.Msg, &m) == nil && m.Method != "" {
			methods = append(methods, m.Method)
		}
	}
	if want := []string{"initialize", "session/new", "session/prompt", "session/load", "session/prompt"}; !slices.Equal(methods, want) {
		t.Fatalf("client requests %v, want %v", methods, want)
	}
	state := readStoredState(t, db, "fake-session")
	rows := storedRows(t, db, "fake-session")
	if len(state) != 2 || len(rows) != 2 {
		t.Fatalf("want two rows, one per card, in one execution: %+v", state)
	}
	t1, t2 := rows["toolu_T1"], rows["toolu_T2"]
	if t1.ToolStatus == nil || *t1.ToolStatus != "complete" || t2.ToolStatus == nil || *t2.ToolStatus != "complete" || t1.AgentExecutionID != t2.AgentExecutionID ||
		t1.TurnID == nil || t2.TurnID == nil || *t1.TurnID == *t2.TurnID {
		t.Fatalf("rows: T1 %+v\nT2 %+v", t1, t2)
	}
	replaysToTheLiveCards(t, rec, out)
}

// --resume-with picks how --resume and --reload reopen a session, and a
// method the agent does not offer, or an unknown one, is a usage error.
func TestResumeWithChoosesTheMethod(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(state, []byte("earlier task\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(reopen string, flags ...string) (int, string, string) {
		args := append([]string{"run", "--plain", "--no-db", "--cwd", dir, "--resume", "fake-session"}, flags...)
		return acpscope(t, "", append(args, "--", fakeAgent, "-mode", "turns", "-state", state, "-reopen", reopen)...)
	}
	for with, shown := range map[string]string{"auto": "(session/load) ──", "load": "(session/load) ──", "resume": "(session/resume) ──"} {
		code, out, errOut := run("both", "--resume-with", with)
		if code != exitOK || !strings.Contains(out, shown) || !strings.Contains(out, "earlier task") {
			t.Errorf("--resume-with %s: exit %d, want %q in the output: %s\n%s", with, code, shown, errOut, out)
		}
	}
	if code, _, errOut := run("resume", "--resume-with", "load"); code != exitUsage || !strings.Contains(errOut, "session/load") {
		t.Errorf("--resume-with load on an agent without it: exit %d, want %d naming session/load: %s", code, exitUsage, errOut)
	}
	if code, _, errOut := run("both", "--resume-with", "fork"); code != exitUsage || !strings.Contains(errOut, "--resume-with") {
		t.Errorf("--resume-with fork: exit %d, want %d: %s", code, exitUsage, errOut)
	}
	// --reload on an agent that cannot reopen: the first turn runs, then
	// the run ends with exit code 2 naming what the agent lacks.
	code, out, errOut := acpscope(t, "", "run", "--plain", "--no-db", "--cwd", dir, "--prompt", "one", "--reload", "--prompt", "two",
		"--", fakeAgent, "-mode", "turns", "-state", filepath.Join(dir, "state2"), "-reopen", "none")
	if code != exitUsage || !strings.Contains(errOut, "session/load") || strings.Contains(out, "toolu_T2") || !strings.Contains(out, "one") {
		t.Errorf("--reload without load or resume: exit %d, want %d: %s\n%s", code, exitUsage, errOut, out)
	}
}

// --queue sends a prompt right after the --prompt before it, without
// waiting for its answer, to an agent that queues prompts (the fake with
// -hold 2 answers nothing until two prompts arrived): every turn is
// answered, in order; the queued prompt is on the wire before the first
// answer; the two turns are one span (one turn id in the store), the
// next --prompt its own; and the capture replays to the live cards, the
// queued prompt queued again.
func TestQueuedPromptIsSentWhileTheTurnBeforeItIsOpen(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { queuedPrompt(t, filepath.Join(t.TempDir(), "scope.db")) })
	t.Run("postgres", func(t *testing.T) { queuedPrompt(t, postgresDSN(t)) })
}

func queuedPrompt(t *testing.T, db string) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "queue.jsonl")
	code, out, errOut := acpscope(t, "", "run", "--json", "--db", db, "--cwd", dir, "--record", rec,
		"--prompt", "first task", "--queue", "second task", "--prompt", "third task",
		"--", fakeAgent, "-mode", "turns", "-hold", "2", "-state", filepath.Join(dir, "state"))
	if code != exitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if got := cardIDs(t, out); !slices.Equal(got, []string{"toolu_T1", "toolu_T2", "toolu_T3"}) {
		t.Fatalf("cards: %v, want one per turn in order", got)
	}
	c, err := capture.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, step := range c.PromptSteps() {
		order = append(order, step.String())
	}
	want := []string{"sent first task", "sent second task", "answered first task", "answered second task", "sent third task", "answered third task"}
	if !slices.Equal(order, want) {
		t.Fatalf("wire order %q, want %q", order, want)
	}
	rows := storedRows(t, db, "fake-session")
	t1, t2, t3 := rows["toolu_T1"], rows["toolu_T2"], rows["toolu_T3"]
	if len(rows) != 3 || t1.TurnID == nil || t2.TurnID == nil || t3.TurnID == nil || *t1.TurnID != *t2.TurnID || *t3.TurnID == *t1.TurnID {
		t.Fatalf("want T1 and T2 in one turn span, T3 in its own: %+v", rows)
	}
	for id, r := range rows {
		if r.ToolStatus == nil || *r.ToolStatus != "complete" {
			t.Errorf("%s: %+v, want complete", id, r)
		}
	}
	replaysToTheLiveCards(t, rec, out)
}

// The same agent never answers a client that waits for each answer
// before its next prompt: the premise of the test above. And --queue with
// no --prompt before it is a usage error.
func TestQueueNeedsAPromptBeforeIt(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := acpscope(t, "", "run", "--plain", "--no-db", "--cwd", dir, "--timeout", "1s", "--cancel-grace", "0s",
		"--prompt", "first task", "--prompt", "second task",
		"--", fakeAgent, "-mode", "turns", "-hold", "2", "-state", filepath.Join(dir, "state"))
	if code != exitCancelled {
		t.Fatalf("two --prompt turns against -hold 2: exit %d, want %d (the first turn times out): %s", code, exitCancelled, errOut)
	}
	tooMany := []string{"--prompt", "a"}
	for range 65 {
		tooMany = append(tooMany, "--queue", "x")
	}
	for _, args := range [][]string{{"--queue", "x"}, {"--prompt", "a", "--reload", "--queue", "x"}, {"--prompt", "a", "--queue", " "}, tooMany} {
		code, _, errOut := acpscope(t, "", append(append([]string{"run", "--no-db"}, args...), "--", fakeAgent)...)
		if code != exitUsage || !strings.Contains(errOut, "queue") && !strings.Contains(errOut, "empty") {
			t.Errorf("%q: exit %d, want %d: %s", args, code, exitUsage, errOut)
		}
	}
}

// A span whose first turn times out with an agent that never answers
// ends every turn of it: the agent is stopped after --cancel-grace, the
// queued turn is named cancelled too, and the run exits 3.
func TestTimedOutSpanEndsEveryQueuedTurn(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := acpscope(t, "", "run", "--plain", "--no-db", "--cwd", dir, "--timeout", "1s", "--cancel-grace", "0s",
		"--prompt", "first task", "--queue", "second task",
		"--", fakeAgent, "-mode", "turns", "-hold", "3", "-state", filepath.Join(dir, "state"))
	if code != exitCancelled || !strings.Contains(errOut, "turn 1:") || !strings.Contains(errOut, "turn 2: turn cancelled: the turn before it was stopped") {
		t.Fatalf("exit %d, want %d naming both turns: %s", code, exitCancelled, errOut)
	}
}

// run --as jetbrains-air declares AIR with backgroundSubagents; a child
// that outlives its turn is waited for before the agent's input is closed,
// so its permission request after the answer is answered and the child
// settles: one card, complete, with its result, and its text never the
// parent's.
func TestRunWaitsForAIRChildrenPastTheirTurn(t *testing.T) {
	code, out, errOut := acpscope(t, "", "run", "--json", "--no-db", "--as", "jetbrains-air", "--prompt", "go", "--", fakeAgent, "-mode", "air")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cards := parseCards(t, out)
	if len(cards) != 1 || *cards[0].ToolCallID != "air-child-1" || *cards[0].ToolStatus != "complete" ||
		!strings.Contains(string(cards[0].Normalized), `"result_text":"no bugs found"`) {
		t.Fatalf("cards: %s\nstderr: %s", out, errOut)
	}
	code, out, errOut = acpscope(t, "", "run", "--plain", "--no-db", "--as", "jetbrains-air", "--prompt", "go", "--", fakeAgent, "-mode", "air")
	if code != exitOK || strings.Contains(out, "agent: no bugs found") || !strings.Contains(out, "↳ Task — Background review: no bugs found") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
}

// --as and --client-capabilities are checked before the agent starts.
func TestRunClientCapabilitiesFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--as", "emacs"},
		{"--client-capabilities", "[1]"},
		{"--client-capabilities", "{"},
	} {
		all := append(append([]string{"run", "--no-db", "--prompt", "x"}, args...), "--", fakeAgent)
		if code, _, errOut := acpscope(t, "", all...); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut)
		}
	}
}

// A child still open when run ends (AIR backgroundSubagents: run waited
// for it until --timeout, then closed the agent's input and the agent
// exited) is stored unknown, as the tap stores it at its end: the agent is
// gone and never reported an outcome, so the session is not open for ever
// (before, the card stayed in_progress and `sessions` showed it open).
func TestRunEndsWhatTheConnectionLeftOpen(t *testing.T) {
	db := filepath.Join(t.TempDir(), "run.db")
	code, _, errOut := acpscope(t, "", "run", "--json", "--db", db, "--as", "jetbrains-air", "--timeout", "1s", "--prompt", "go", "--", fakeAgent, "-mode", "air-open")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	status, cards := sessionStatus(t, db)
	if cards["air-child-1"] != "unknown" || status != persistence.SessionUnknown {
		t.Errorf("session %s, cards %v; want the child unknown and the session unknown", status, cards)
	}
	code, out, errOut := acpscope(t, "", "sessions", "--db", db, "--json")
	if code != exitOK || !strings.Contains(out, `"status":"unknown"`) {
		t.Errorf("sessions: exit %d %s %s", code, out, errOut)
	}
}
