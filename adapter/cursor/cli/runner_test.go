package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func out(line string) string { return "out " + line }

// batch writes lines in one write, so timing-sensitive tests have no gap
// between them on a loaded machine.
func batch(lines ...string) string { return "batch " + strings.Join(lines, "\x1e") }

// docs/cursor-cli.md#scenario-11.
func TestRunSuccessWithUsageDropsEcho(t *testing.T) {
	f := newFixture(t, out(lineInit), out(lineEcho), out(lineThinking), out(lineThinkDone),
		out(lineReadStart), out(lineReadDone), out(lineAssistant), out(lineResultOK))
	res := f.run(SessionState{}, "what does main.go do?")
	if !res.Success() || res.Class != ClassSuccess || res.IsError {
		t.Fatalf("not success: %+v", res)
	}
	if res.FinalText != "main.go prints a greeting." {
		t.Fatalf("final = %q", res.FinalText)
	}
	if res.Usage == nil || res.Usage.InputTokens == nil || *res.Usage.InputTokens != 14948 || *res.Usage.CacheWriteTokens != 0 {
		t.Fatalf("usage = %+v", res.Usage)
	}
	if res.SessionID != sid || !slices.Equal(f.ids, []string{sid}) {
		t.Fatalf("session id %q, recorded %v", res.SessionID, f.ids)
	}
	want := []EventKind{EventSessionStarted, EventThinkingDelta, EventThinkingCompleted, EventToolStarted, EventToolCompleted, EventAssistantText}
	if !slices.Equal(f.kinds(), want) {
		t.Fatalf("events = %v, want %v", f.kinds(), want)
	}
	for _, e := range f.events {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), "ECHOED-ENVELOPE") {
			t.Fatalf("prompt echo projected: %s", b)
		}
	}
	tool := f.events[4].Tool
	if tool.Status != ToolSucceeded || tool.Name != "read" || tool.Path != "main.go" {
		t.Fatalf("tool = %+v", tool)
	}
}

// docs/cursor-cli.md#scenario-10 (argv transport): the prompt reaches the CLI as the last
// argument, and the recorded argv shows only a placeholder.
func TestRunArgvTransportRedactsPrompt(t *testing.T) {
	f := newFixture(t, "record", out(lineInit), out(lineResultOK))
	res := f.run(SessionState{}, "secret user words")
	if !res.Success() {
		t.Fatalf("not success: %+v", res)
	}
	rec := readRecord(t, f.record)
	last := lastOf(rec.Args)
	if !strings.HasPrefix(last, envelopeHeader) || !strings.HasSuffix(last, "secret user words") {
		t.Fatalf("prompt argument = %q", last)
	}
	if rec.Stdin != "" {
		t.Fatalf("stdin under argv transport = %q", rec.Stdin)
	}
	if rec.Env["NO_COLOR"] != "1" {
		t.Fatalf("NO_COLOR not set: %v", rec.Env)
	}
	joined := strings.Join(res.Argv, " ")
	if strings.Contains(joined, "secret") || !strings.Contains(joined, "<prompt: ") || res.Argv[0] != "cursor-agent" {
		t.Fatalf("redacted argv = %v", res.Argv)
	}
	if strings.Contains(joined, "/") {
		t.Fatalf("argv leaks a path: %v", res.Argv)
	}
}

// docs/cursor-cli.md#scenario-10 (stdin transport): the fake reads the envelope, then EOF.
func TestRunStdinTransport(t *testing.T) {
	f := newFixture(t, "record", out(lineInit), out(lineResultOK))
	f.runner.Transport = TransportStdin
	res := f.run(SessionState{}, "stdin words")
	if !res.Success() {
		t.Fatalf("not success: %+v", res)
	}
	rec := readRecord(t, f.record)
	if !strings.HasPrefix(rec.Stdin, envelopeHeader) || !strings.HasSuffix(rec.Stdin, "stdin words") {
		t.Fatalf("stdin = %q", rec.Stdin)
	}
	for _, a := range rec.Args {
		if strings.Contains(a, "stdin words") {
			t.Fatalf("prompt on argv under stdin transport: %v", rec.Args)
		}
	}
}

// lastOf is the last element of s, or the zero value when s is empty (so
// that an assertion on it fails instead of panicking).
func lastOf[T any](s []T) T {
	var zero T
	if len(s) == 0 {
		return zero
	}
	return s[len(s)-1]
}

func readRecord(t *testing.T, path string) fakeRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("fake record: %v", err)
	}
	var rec fakeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// docs/cursor-cli.md#scenario-12.
func TestRunPlanModeInteractionPairDropped(t *testing.T) {
	req := `{"type":"interaction_query","subtype":"request","query_type":"plan","prompt":"SECRET-QUERY https://example.invalid/x","session_id":"` + sid + `"}`
	resp := `{"type":"interaction_query","subtype":"response","answer":"SECRET-ANSWER","session_id":"` + sid + `"}`
	f := newFixture(t, out(lineInit), out(req), out(resp), out(lineAssistant), out(lineResultOK))
	res := f.run(SessionState{PermissionMode: ModePlan}, "plan it")
	if !res.Success() {
		t.Fatalf("not success: %+v", res)
	}
	b, _ := json.Marshal(struct {
		E []Event
		R Result
	}{f.events, res})
	if strings.Contains(string(b), "SECRET") {
		t.Fatalf("interaction payload leaked: %s", b)
	}
}

// docs/cursor-cli.md#scenario-13.
func TestRunShellRejectedIsDeclinedTurnSucceeds(t *testing.T) {
	f := newFixture(t, out(lineInit), out(lineShellStart), out(lineShellRej), out(lineResultOK))
	res := f.run(SessionState{}, "run tests")
	if !res.Success() {
		t.Fatalf("not success: %+v", res)
	}
	last := lastOf(f.events)
	if last.Kind != EventToolCompleted || last.Tool.Status != ToolDeclined || last.Tool.Outcome != "rejected" {
		t.Fatalf("last event = %+v", last)
	}
}

// docs/cursor-cli.md#scenario-14.
func TestRunNeedsConfirmationFailsClosed(t *testing.T) {
	confirm := `{"type":"tool_call","subtype":"completed","call_id":"call-2","tool_call":{"shellToolCall":{"result":{"needsConfirmation":{"command":"rm -rf /"}}}},"session_id":"` + sid + `"}`
	f := newFixture(t, out(lineInit), out(lineShellStart), out(confirm), "hang")
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassApprovalRequired)
	if !res.KilledByRunner {
		t.Fatalf("group not killed: %+v", res)
	}
}

// docs/cursor-cli.md#scenario-15.
func TestRunUnknownEventTypeIsSchemaErrorKeepsSessionID(t *testing.T) {
	f := newFixture(t, out(lineInit), out(`{"type":"brand_new_event","session_id":"`+sid+`"}`), "hang")
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassSchemaError)
	if res.SessionID != sid || len(f.ids) != 1 {
		t.Fatalf("session id not kept: %q %v", res.SessionID, f.ids)
	}
	if !strings.Contains(res.Detail, "brand_new_event") {
		t.Fatalf("detail = %q", res.Detail)
	}
	st := SessionState{}
	st.Commit(TurnPlan{InstructionHash: "h"}, res)
	if st.CursorSessionID != sid || st.InstructionHash != "" {
		t.Fatalf("commit after failure = %+v", st)
	}
}

// docs/cursor-cli.md#scenario-16 (runner side): unknown fields and a grepToolCall are accepted;
// tolerated unknown subtypes are counted.
func TestRunAcceptsUnknownFieldsAndGenericTools(t *testing.T) {
	grepStart := `{"type":"tool_call","subtype":"started","call_id":"g1","new_field":{"x":1},"tool_call":{"grepToolCall":{"args":{"pattern":"main"}}},"session_id":"` + sid + `"}`
	grepDone := `{"type":"tool_call","subtype":"completed","call_id":"g1","tool_call":{"grepToolCall":{"result":{"success":{"matches":3}}}},"session_id":"` + sid + `"}`
	note := `{"type":"system","subtype":"some_future_note","session_id":"` + sid + `"}`
	f := newFixture(t, out(lineInit), out(grepStart), out(grepDone), out(note), out(lineResultOK))
	res := f.run(SessionState{}, "x")
	if !res.Success() || res.IgnoredEvents != 1 {
		t.Fatalf("res = %+v", res)
	}
	if f.events[2].Tool.Name != "grep" {
		t.Fatalf("tool = %+v", f.events[2].Tool)
	}
}

// docs/cursor-cli.md#scenario-17 (runner side): a malformed result is a schema error.
func TestRunMalformedResultIsSchemaError(t *testing.T) {
	bad := `{"type":"result","subtype":"success","is_error":"false","result":"x","session_id":"` + sid + `"}`
	f := newFixture(t, out(lineInit), out(bad), "hang")
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassSchemaError)
}

// docs/cursor-cli.md#scenario-18.
func TestRunLogicalErrorEmptiesFinalText(t *testing.T) {
	f := newFixture(t, out(lineInit), out(lineAssistant), out(lineResultErr), "exit 1")
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassLogicalError)
	if f.events[1].Kind != EventAssistantText {
		t.Fatalf("streamed text should stay in the timeline: %v", f.kinds())
	}
}

// docs/cursor-cli.md#scenario-19.
func TestRunInvalidSessionIDNotStored(t *testing.T) {
	for name, id := range map[string]string{
		"too long":   strings.Repeat("a", 300),
		"flag-like":  "-rf",
		"whitespace": "a b",
	} {
		t.Run(name, func(t *testing.T) {
			init := `{"type":"system","subtype":"init","session_id":"` + id + `","model":"Auto"}`
			f := newFixture(t, out(init), "hang")
			res := f.run(SessionState{}, "x")
			assertFailure(t, res, ClassInvalidSessionID)
			if res.SessionID != "" || len(f.ids) != 0 {
				t.Fatalf("invalid id stored: %q %v", res.SessionID, f.ids)
			}
		})
	}
}

// docs/cursor-cli.md#scenario-20: init then exit 1 / exit 0 without result; the id is stored,
// the hash is not, and the retry resumes and re-injects the prelude.
func TestRunNoResultKeepsIDRetryResumes(t *testing.T) {
	for _, tc := range []struct {
		exit string
		want Class
	}{{"exit 1", ClassExitNonzero}, {"exit 0", ClassNoResult}} {
		t.Run(tc.exit, func(t *testing.T) {
			f := newFixture(t, "record", out(lineInit), tc.exit)
			st := SessionState{}
			plan := st.PlanTurn(Instructions{SystemPrompt: "sys"}, "hello")
			res, err := f.runner.Run(testCtx(t), Turn{Plan: plan, Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			assertFailure(t, res, tc.want)
			st.Commit(plan, res)
			if st.CursorSessionID != sid || st.InstructionHash != "" {
				t.Fatalf("state after failure = %+v", st)
			}
			retry := st.PlanTurn(Instructions{SystemPrompt: "sys"}, "hello")
			if retry.ResumeID != sid || !retry.InjectedStable || !strings.Contains(retry.Envelope, sectionPrelude) {
				t.Fatalf("retry plan = %+v", retry)
			}
			f.setScript("record", out(lineInit), out(lineResultOK))
			res, err = f.runner.Run(testCtx(t), Turn{Plan: retry, Dir: t.TempDir()})
			if err != nil || !res.Success() {
				t.Fatalf("retry: %+v %v", res, err)
			}
			rec := readRecord(t, f.record)
			if i := slices.Index(rec.Args, "--resume"); i < 0 || rec.Args[i+1] != sid {
				t.Fatalf("retry argv = %v", rec.Args)
			}
			st.Commit(retry, res)
			if st.InstructionHash == "" {
				t.Fatalf("hash not committed after success")
			}
			again := st.PlanTurn(Instructions{SystemPrompt: "sys"}, "next")
			if again.InjectedStable || strings.Contains(again.Envelope, "sys\n") {
				t.Fatalf("stable parts repeated on ordinary resume: %q", again.Envelope)
			}
		})
	}
}

// docs/cursor-cli.md#scenario-21.
func TestRunSilentFakeIsNoInit(t *testing.T) {
	f := newFixture(t, "hang")
	f.runner.Timeouts.Startup = 300 * time.Millisecond
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassNoInit)
}

// docs/cursor-cli.md#scenario-21 variant: exit before init.
func TestRunExitBeforeInitIsNoInit(t *testing.T) {
	f := newFixture(t, "err boom", "exit 2")
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassNoInit)
	if res.ExitCode != 2 || !strings.Contains(res.StderrTail, "boom") {
		t.Fatalf("res = %+v", res)
	}
}

// docs/cursor-cli.md#scenario-22.
func TestRunNonJSONLineIsSchemaErrorBlankSkipped(t *testing.T) {
	f := newFixture(t, out(lineInit), "out ", "out    ", "out Error: something \x01 broke", "hang")
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassSchemaError)
	if !strings.Contains(res.Detail, "something") || strings.Contains(res.Detail, "\x01") {
		t.Fatalf("detail = %q", res.Detail)
	}
}

// docs/cursor-cli.md#scenario-23.
func TestRunOversizedLine(t *testing.T) {
	f := newFixture(t, out(lineInit), "bigline 20971520", "hang")
	f.runner.Limits.MaxLineBytes = 1 << 20
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassLineTooLong)
}

// docs/cursor-cli.md#scenario-24.
func TestRunTruncatedFinalFragmentIsNotAnEvent(t *testing.T) {
	f := newFixture(t, out(lineInit), `raw {"type":"result","subtype":"succ`, "exit 137")
	res := f.run(SessionState{}, "x")
	if res.Success() {
		t.Fatalf("fragment treated as result: %+v", res)
	}
	assertFailure(t, res, ClassExitNonzero)
}

// docs/cursor-cli.md#scenario-25.
func TestRunRawStderrTailAttached(t *testing.T) {
	f := newFixture(t, "err \x1b[31mT: plan limit reached\x1b[0m", "exit 1")
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassNoInit)
	if !strings.Contains(res.StderrTail, "T: plan limit reached") || strings.Contains(res.StderrTail, "\x1b") {
		t.Fatalf("stderr tail = %q", res.StderrTail)
	}
	if res.Hint == "" {
		t.Fatalf("no hint for plan limit")
	}
}

// docs/cursor-cli.md#scenario-26.
func TestRunStderrFloodDoesNotBlock(t *testing.T) {
	f := newFixture(t, out(lineInit), "stderrflood 52428800", out(lineResultOK))
	f.runner.Timeouts.Idle = 30 * time.Second // the flood takes a while under -race
	f.runner.Timeouts.IdleWarning = 20 * time.Second
	res := f.run(SessionState{}, "x")
	if !res.Success() {
		t.Fatalf("not success: %+v", res)
	}
	if res.StderrBytes != 50<<20 || len(res.StderrTail) > DefaultLimits.StderrTailBytes {
		t.Fatalf("stderr bytes %d, tail %d", res.StderrBytes, len(res.StderrTail))
	}
}

// docs/cursor-cli.md#scenario-27.
func TestRunIdleWarningThenTimeout(t *testing.T) {
	f := newFixture(t, out(lineInit), "hang")
	f.shortIdle()
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassIdleTimeout)
	n := 0
	for _, e := range f.events {
		if e.Kind == EventIdleWarning {
			n++
		}
	}
	if n != 1 || res.IdleWarnings != 1 {
		t.Fatalf("idle warnings: events %d, result %d", n, res.IdleWarnings)
	}
}

// docs/cursor-cli.md#scenario-27 variant: idle with an unanswered interaction request.
func TestRunIdleWithOpenInteractionIsApprovalRequired(t *testing.T) {
	req := `{"type":"interaction_query","subtype":"request","session_id":"` + sid + `"}`
	f := newFixture(t, batch(lineInit, req), "hang")
	f.shortIdle()
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassApprovalRequired)
}

// docs/cursor-cli.md#scenario-28: an open shell call whose timeout exceeds the idle limit
// extends it; the result follows and the turn succeeds.
func TestRunOpenShellCallExtendsIdle(t *testing.T) {
	start := `{"type":"tool_call","subtype":"started","call_id":"sh","tool_call":{"shellToolCall":{"args":{"command":"sleep 1","timeout":10000}}},"session_id":"` + sid + `"}`
	done := `{"type":"tool_call","subtype":"completed","call_id":"sh","tool_call":{"shellToolCall":{"result":{"success":{"exitCode":0,"stdout":"","stderr":""}}}},"session_id":"` + sid + `"}`
	f := newFixture(t, batch(lineInit, start), "sleep 1200", batch(done, lineResultOK))
	f.shortIdle()
	res := f.run(SessionState{}, "x")
	if !res.Success() {
		t.Fatalf("not success: %+v", res)
	}
}

// docs/cursor-cli.md#scenario-28 counterpart: a background shell call does not extend idle.
func TestRunBackgroundShellDoesNotExtendIdle(t *testing.T) {
	start := `{"type":"tool_call","subtype":"started","call_id":"sh","tool_call":{"shellToolCall":{"args":{"command":"server","timeout":60000,"isBackground":true}}},"session_id":"` + sid + `"}`
	f := newFixture(t, out(lineInit), out(start), "hang")
	f.shortIdle()
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassIdleTimeout)
}

// docs/cursor-cli.md#scenario-29.
func TestRunEndlessRetriesHitWallClock(t *testing.T) {
	f := newFixture(t, out(lineInit), "retry-forever 50")
	f.runner.Timeouts.WallClock = 800 * time.Millisecond
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassWallClockTimeout)
}

// docs/cursor-cli.md#scenario-30.
func TestRunLingerAfterResultIgnoringTERMStaysSuccess(t *testing.T) {
	f := newFixture(t, "ignore-term", out(lineInit), out(lineResultOK), "hang")
	res := f.run(SessionState{}, "x")
	if !res.Success() || !res.KilledByRunner || res.FinalText == "" {
		t.Fatalf("res = %+v", res)
	}
}

// docs/cursor-cli.md#scenario-31: the fake exits after result leaving setsid grandchildren
// holding stdout (one ignoring SIGTERM, one orphaned by a double fork).
func TestRunDetachedGrandchildrenHoldingStdout(t *testing.T) {
	f := newFixture(t, out(lineInit), "spawn-detached ignore-term", "spawn-doublefork", "spawn-child", out(lineResultOK), "exit 0")
	f.slowSpawns()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.runner.Run(ctx, f.turn(SessionState{}, "x"))
	if err != nil || !res.Success() {
		t.Fatalf("res = %+v err %v", res, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("Run hung until the guard context expired")
	}
}

// docs/cursor-cli.md#scenario-32.
func TestRunStopMidTurnIgnoringTERM(t *testing.T) {
	f := newFixture(t, "ignore-term", out(lineInit), out(lineAssistant), "hang")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tu := f.turn(SessionState{}, "x")
	tu.OnEvent = func(e Event) {
		if e.Kind == EventAssistantText {
			cancel()
		}
	}
	res, err := f.runner.Run(ctx, tu)
	if err != nil {
		t.Fatal(err)
	}
	assertFailure(t, res, ClassStopped)
	if res.SessionID != sid || !res.KilledByRunner || res.ExitCode != 128+9 {
		t.Fatalf("res = %+v", res)
	}
}

// docs/cursor-cli.md#scenario-40.
func TestRunAggregateCapOneNotice(t *testing.T) {
	big := strings.Repeat("y", 40<<10)
	var script []string
	script = append(script, out(lineInit))
	for i := 0; i < 20; i++ {
		id := "c" + string(rune('a'+i))
		script = append(script,
			out(`{"type":"tool_call","subtype":"started","call_id":"`+id+`","tool_call":{"readToolCall":{"args":{"path":"f"}}}}`),
			out(`{"type":"tool_call","subtype":"completed","call_id":"`+id+`","tool_call":{"readToolCall":{"result":{"success":{"content":"`+big+`","totalLines":7}}}}}`))
	}
	script = append(script, out(lineResultOK))
	f := newFixture(t, script...)
	f.runner.Limits.MaxAggregateBytes = 256 << 10
	res := f.run(SessionState{}, "x")
	if !res.Success() || !res.Truncated {
		kinds := f.kinds()
		t.Logf("events: %d, the last: %v", len(kinds), kinds[max(len(kinds)-3, 0):])
		t.Fatalf("res = %+v", res)
	}
	notices, total := 0, 0
	for _, e := range f.events {
		if e.Kind == EventTruncated {
			notices++
		}
		if e.Tool != nil {
			total += len(e.Tool.Args) + len(e.Tool.Output)
		}
	}
	if notices != 1 || total > 256<<10 {
		t.Fatalf("notices %d, payload bytes %d", notices, total)
	}
}

// docs/cursor-cli.md#scenario-41.
func TestRunParallelCallsMatchByCallID(t *testing.T) {
	s1 := `{"type":"tool_call","subtype":"started","call_id":"p1","model_call_id":"m","tool_call":{"readToolCall":{"args":{"path":"a.go"}}}}`
	s2 := `{"type":"tool_call","subtype":"started","call_id":"p2","model_call_id":"m","tool_call":{"globToolCall":{"args":{"globPattern":"*.go"}}}}`
	d2 := `{"type":"tool_call","subtype":"completed","call_id":"p2","model_call_id":"m","tool_call":{"globToolCall":{"result":{"success":{"files":["a.go"],"totalFiles":1}}}}}`
	d1 := `{"type":"tool_call","subtype":"completed","call_id":"p1","model_call_id":"m","tool_call":{"readToolCall":{"result":{"error":{"errorMessage":"boom"}}}}}`
	f := newFixture(t, out(lineInit), out(s1), out(s2), out(d2), out(d1), out(lineResultOK))
	res := f.run(SessionState{}, "x")
	if !res.Success() {
		t.Fatalf("res = %+v", res)
	}
	got := map[string]ToolStatus{}
	for _, e := range f.events {
		if e.Kind == EventToolCompleted {
			got[e.Tool.CallID+"/"+e.Tool.Name] = e.Tool.Status
		}
	}
	if got["p1/read"] != ToolFailed || got["p2/glob"] != ToolSucceeded {
		t.Fatalf("completions = %v", got)
	}
}

// docs/cursor-cli.md#scenario-31 variant: with periodic snapshots off, the orphans of a double
// fork are still found at teardown (environment token, pipe holders).
func TestRunDetachedGrandchildrenFoundWithoutSnapshots(t *testing.T) {
	f := newFixture(t, out(lineInit), "spawn-doublefork", "spawn-detached ignore-term", out(lineResultOK), "exit 0")
	f.slowSpawns()
	f.runner.Guard.ScanInterval = -1
	res := f.run(SessionState{}, "x")
	if !res.Success() {
		t.Fatalf("res = %+v", res)
	}
}

// docs/cursor-cli.md#scenario-6: the admitted absolute path is spawned even when PATH changes.
func TestRunSpawnsAdmittedPathDespitePATHChange(t *testing.T) {
	f := newFixture(t, "record", out(lineInit), out(lineResultOK))
	other := t.TempDir()
	fakeBin(t, other, "cursor-agent", fakeScriptEnv+"=exit 9")
	t.Setenv("PATH", other)
	res := f.run(SessionState{}, "x")
	if !res.Success() {
		t.Fatalf("res = %+v", res)
	}
}

// docs/cursor-cli.md#scenario-35: a vanished executable is spawn_failed
// and the probe verdict is dropped; an over-long argv prompt is refused
// before spawning.
func TestRunSpawnFailures(t *testing.T) {
	f := newFixtureOwnBin(t, out(lineInit), out(lineResultOK))
	if err := os.Remove(f.runner.Executable.Path()); err != nil {
		t.Fatal(err)
	}
	res := f.run(SessionState{}, "x")
	assertFailure(t, res, ClassSpawnFailed)
	if strings.Contains(res.Detail, filepath.Dir(f.runner.Executable.Path())) {
		t.Fatalf("detail leaks a path: %q", res.Detail)
	}
	_, err := f.runner.Run(testCtx(t), f.turn(SessionState{}, strings.Repeat("x", 200<<10)))
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("oversized argv prompt: err = %v", err)
	}
}

// docs/cursor-cli.md#scenario-9: --resume only for a valid id; a flag-like model is refused
// before spawning.
func TestCommandResumeAndModelValidation(t *testing.T) {
	f := newFixture(t)
	r := f.runner
	first, _, err := r.Command(Turn{Plan: SessionState{}.PlanTurn(Instructions{}, "hi")})
	if err != nil || slices.Contains(first, "--resume") {
		t.Fatalf("first turn argv %v err %v", first, err)
	}
	resumed, _, err := r.Command(Turn{Plan: SessionState{CursorSessionID: sid}.PlanTurn(Instructions{}, "hi")})
	if err != nil || !slices.Contains(resumed, "--resume") || resumed[slices.Index(resumed, "--resume")+1] != sid {
		t.Fatalf("resumed argv %v err %v", resumed, err)
	}
	empty, _, _ := r.Command(Turn{Plan: SessionState{CursorSessionID: ""}.PlanTurn(Instructions{}, "hi")})
	if slices.Contains(empty, "--resume") {
		t.Fatalf("empty id resumed: %v", empty)
	}
	bad := SessionState{}.PlanTurn(Instructions{}, "hi")
	bad.ResumeID = "-x"
	if _, _, err := r.Command(Turn{Plan: bad}); !errors.Is(err, ErrRefused) {
		t.Fatalf("invalid resume id accepted: %v", err)
	}
	if _, _, err := r.Command(Turn{Plan: SessionState{}.PlanTurn(Instructions{}, "hi"), Model: "--force"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("model --force accepted: %v", err)
	}
	args, _, err := r.Command(Turn{Plan: SessionState{}.PlanTurn(Instructions{}, "hi"), Model: "claude-opus-4-8[context=1m,effort=high,fast=false]"})
	if err != nil || !slices.Contains(args, "claude-opus-4-8[context=1m,effort=high,fast=false]") {
		t.Fatalf("parameterised model: %v %v", args, err)
	}
	if _, err := r.Run(testCtx(t), Turn{Plan: SessionState{}.PlanTurn(Instructions{}, "hi"), Model: "--force"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("Run with model --force: %v", err)
	}
}

// docs/cursor-cli.md#scenario-7: each mode's flags in argv.
func TestCommandPermissionFlags(t *testing.T) {
	f := newFixture(t)
	for mode, want := range map[PermissionMode][]string{
		ModeDefault:    {"--trust"},
		ModeFullAccess: {"--trust", "--force"},
		ModePlan:       {"--trust", "--mode", "plan"},
		"auto_review":  {"--trust"},
		"bogus":        {"--trust"},
	} {
		args, _, err := f.runner.Command(Turn{Plan: SessionState{PermissionMode: mode}.PlanTurn(Instructions{}, "hi")})
		if err != nil {
			t.Fatal(err)
		}
		flags := args[3 : len(args)-1]
		if !slices.Equal(flags, want) {
			t.Errorf("mode %q: flags %v, want %v", mode, flags, want)
		}
		if slices.Contains(args, "--auto-review") || slices.Contains(args, "--sandbox") {
			t.Errorf("mode %q emits a forbidden flag: %v", mode, args)
		}
	}
}

// docs/cursor-cli.md#scenario-37: a fork's failing first turn and successful retry: neither
// resumes the parent's id, memory is injected both times and committed only
// after success.
func TestForkNeverInheritsProviderID(t *testing.T) {
	f := newFixture(t, "record", out(`{"type":"system","subtype":"init","session_id":"fork-1"}`), "exit 1")
	parent := SessionState{CursorSessionID: sid, PermissionMode: ModeFullAccess, InstructionHash: "parent-hash"}
	fork := parent.Fork("remember: the tests are flaky on Mondays")
	if fork.CursorSessionID != "" || fork.PermissionMode != ModeFullAccess {
		t.Fatalf("fork = %+v", fork)
	}
	plan := fork.PlanTurn(Instructions{}, "continue")
	if plan.ResumeID != "" || !plan.InjectedMemory {
		t.Fatalf("fork plan = %+v", plan)
	}
	res, _ := f.runner.Run(testCtx(t), Turn{Plan: plan, Dir: t.TempDir()})
	assertFailure(t, res, ClassExitNonzero)
	if rec := readRecord(t, f.record); slices.Contains(rec.Args, sid) {
		t.Fatalf("fork passed the parent's id: %v", rec.Args)
	}
	fork.Commit(plan, res)
	if fork.ForkMemoryConsumed || fork.CursorSessionID != "fork-1" {
		t.Fatalf("fork after failure = %+v", fork)
	}
	retry := fork.PlanTurn(Instructions{}, "continue")
	if !retry.InjectedMemory || retry.ResumeID != "fork-1" {
		t.Fatalf("retry plan = %+v", retry)
	}
	f.setScript("record", out(`{"type":"system","subtype":"init","session_id":"fork-1"}`), out(lineResultOK))
	res, _ = f.runner.Run(testCtx(t), Turn{Plan: retry, Dir: t.TempDir()})
	if !res.Success() {
		t.Fatalf("retry = %+v", res)
	}
	if rec := readRecord(t, f.record); slices.Contains(rec.Args, sid) || !strings.Contains(lastOf(rec.Args), "flaky on Mondays") {
		t.Fatalf("retry argv = %v", rec.Args)
	}
	fork.Commit(retry, res)
	if !fork.ForkMemoryConsumed || fork.ForkMemory != "" {
		t.Fatalf("memory not consumed after success: %+v", fork)
	}
	if strings.Contains(fork.PlanTurn(Instructions{}, "next").Envelope, "Mondays") {
		t.Fatalf("memory injected twice")
	}
	if parent.CursorSessionID != sid || parent.InstructionHash != "parent-hash" {
		t.Fatalf("parent changed: %+v", parent)
	}
}

// docs/cursor-cli.md#scenario-38: a standalone job shares nothing with its parent.
func TestStandaloneJobIsolated(t *testing.T) {
	f := newFixture(t, out(`{"type":"system","subtype":"init","session_id":"job-1"}`), out(lineResultOK))
	parent := SessionState{CursorSessionID: "claude-parent", InstructionHash: "h", ForkMemory: "m"}
	before := parent
	job := Standalone(ModeDefault)
	plan := job.PlanTurn(Instructions{}, "nightly digest")
	if plan.ResumeID != "" || plan.InjectedMemory {
		t.Fatalf("standalone plan = %+v", plan)
	}
	res, _ := f.runner.Run(testCtx(t), Turn{Plan: plan, Dir: t.TempDir()})
	job.Commit(plan, res)
	if !res.Success() || job.CursorSessionID != "job-1" || parent != before {
		t.Fatalf("job %+v parent %+v", job, parent)
	}
}

// Two turns at once: tearing one down (stop) never touches the other's
// processes, though both run the same executable.
func TestRunConcurrentTurnsIsolated(t *testing.T) {
	f := newFixture(t, out(lineInit), "sleep 600", out(lineResultOK))
	g := newFixture(t, "ignore-term", out(lineInit), "spawn-detached", "hang")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res Result
		err error
	}
	slow := make(chan outcome, 1)
	go func() {
		res, err := f.runner.Run(testCtx(t), Turn{Plan: SessionState{}.PlanTurn(Instructions{}, "a"), Dir: t.TempDir()})
		slow <- outcome{res, err}
	}()
	tu := Turn{Plan: SessionState{}.PlanTurn(Instructions{}, "b"), Dir: t.TempDir(),
		OnEvent: func(e Event) {
			if e.Kind == EventSessionStarted {
				cancel()
			}
		}}
	res, err := g.runner.Run(ctx, tu)
	if err != nil {
		t.Fatal(err)
	}
	assertFailure(t, res, ClassStopped)
	o := <-slow
	if o.err != nil || !o.res.Success() {
		t.Fatalf("the other turn was disturbed: %+v %v", o.res, o.err)
	}
}
