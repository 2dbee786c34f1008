package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/internal/jaegertest"
)

// acpscopeEnv runs the acpscope binary with extra environment and
// returns its exit code, output and run time.
func acpscopeEnv(t *testing.T, env []string, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	cmd := exec.Command(acpscopeBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String(), took
}

// spanTree is a trace's spans of one service: by span id, with the
// parent of each and its name.
type spanTree map[string]jaegertest.Span

func treeOf(tr jaegertest.Trace, service string) spanTree {
	out := spanTree{}
	for _, s := range tr.Of(service) {
		out[s.SpanID] = s
	}
	return out
}

// shape is the tree as "parent name > name" lines, sorted: ids aside.
func (st spanTree) shape() []string {
	var out []string
	for _, s := range st {
		parent := "(root)"
		if p, ok := st[s.Parent()]; ok {
			parent = p.OperationName
		} else if s.Parent() != "" {
			parent = "(remote " + s.Parent() + ")"
		}
		out = append(out, parent+" > "+s.OperationName)
	}
	slices.Sort(out)
	return out
}

// links is span id → parent id.
func (st spanTree) links() map[string]string {
	out := map[string]string{}
	for id, s := range st {
		out[id] = s.Parent()
	}
	return out
}

func tag(t *testing.T, s jaegertest.Span, key, want string) {
	t.Helper()
	if got, _ := s.Tag(key); got != want {
		t.Errorf("span %s %q: %s = %q, want %q", s.SpanID, s.OperationName, key, got, want)
	}
}

// checkTracedTree checks the spans of the fake agent's traced mode (two
// turns, a subagent each with a child tool call asking for permission,
// the second subagent failing) as one service sent them, with salt the
// editor's span id ("" for root turns).
func checkTracedTree(t *testing.T, st spanTree, session, agent string, salt func(n int) string) {
	t.Helper()
	want := []string{
		"execute_tool Subtask 1 > invoke_agent reviewer",
		"execute_tool Subtask 2 > invoke_agent tester",
		"invoke_agent " + agent + " > execute_tool Subtask 1",
		"invoke_agent " + agent + " > execute_tool Subtask 2",
		"invoke_agent reviewer > execute_tool Read file1.go",
		"invoke_agent tester > execute_tool Read file2.go",
	}
	for n := 1; n <= 2; n++ {
		if salt(n) == "" {
			want = append(want, "(root) > invoke_agent "+agent)
		} else {
			want = append(want, "(remote "+salt(n)+") > invoke_agent "+agent)
		}
	}
	slices.Sort(want)
	if got := st.shape(); !slices.Equal(got, want) {
		t.Fatalf("tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range st {
		switch {
		case strings.HasPrefix(s.OperationName, "invoke_agent "+agent):
			tag(t, s, "gen_ai.operation.name", "invoke_agent")
			tag(t, s, "gen_ai.conversation.id", session)
			tag(t, s, "gen_ai.agent.name", agent)
			tag(t, s, "acp.stop_reason", "end_turn")
			tag(t, s, "span.kind", "client")
			n, _ := s.Tag("acpscope.turn.index")
			tag(t, s, "gen_ai.usage.input_tokens", map[string]string{"1": "100", "2": "200"}[n])
			tag(t, s, "gen_ai.usage.output_tokens", map[string]string{"1": "10", "2": "20"}[n])
		case strings.HasPrefix(s.OperationName, "execute_tool Subtask"):
			tag(t, s, "gen_ai.operation.name", "execute_tool")
			n := strings.TrimPrefix(s.OperationName, "execute_tool Subtask ")
			tag(t, s, "gen_ai.tool.call.id", "toolu_S"+n)
			tag(t, s, "acp.tool_call.kind", "think")
		case strings.HasPrefix(s.OperationName, "invoke_agent "):
			tag(t, s, "gen_ai.operation.name", "invoke_agent")
			if s.OperationName == "invoke_agent reviewer" {
				tag(t, s, "gen_ai.agent.id", "agent1")
				tag(t, s, "gen_ai.request.model", "claude-opus-4-8")
				tag(t, s, "gen_ai.agent.description", "Subtask 1")
				if _, failed := s.Tag("error"); failed {
					t.Errorf("the completed subagent is marked failed")
				}
			} else {
				tag(t, s, "gen_ai.agent.description", "Subtask 2")
				tag(t, s, "otel.status_code", "ERROR")
			}
		case strings.HasPrefix(s.OperationName, "execute_tool Read"):
			tag(t, s, "acp.tool_call.kind", "read")
			tag(t, s, "acp.tool_call.status", "complete")
			var events []string
			for _, l := range s.Logs {
				for _, f := range l.Fields {
					if f.Key == "event" {
						events = append(events, fmt.Sprint(f.Value))
					}
				}
			}
			if !slices.Equal(events, []string{"acp.permission.request", "acp.permission.answer"}) {
				t.Errorf("%s: events %v, want the permission's request and answer", s.OperationName, events)
			}
		}
		for _, kv := range s.Tags {
			if strings.Contains(fmt.Sprint(kv.Value), "secret") {
				t.Errorf("%s: %s holds content without --otlp-content", s.OperationName, kv.Key)
			}
		}
	}
}

// A two-turn session through acpscope run reaches Jaeger as the tree
// turn → tool call → subagent → child tool call, the agent gets each
// turn's traceparent, a replay of its capture gives the same spans, and
// an export of the stored session (run's store, the replay's, on SQLite
// and PostgreSQL) the same tree with the replay's ids for every span, a
// second export no more spans.
func TestJaegerRunReplayExport(t *testing.T) {
	j := jaegertest.Start(t)
	dir := t.TempDir()
	const session = "jaeger-run"
	tid := traces.TraceIDOf(session).String()
	state, capture := filepath.Join(dir, "traceparents"), filepath.Join(dir, "run.jsonl")
	code, _, errOut, _ := acpscopeEnv(t, []string{"OTEL_SERVICE_NAME=acpscope-run"}, "run", "--db", filepath.Join(dir, "run.db"), "--plain", "--permission", "allow",
		"--prompt", "secret one", "--prompt", "secret two", "--record", capture, "--otlp", j.OTLP, "--", fakeAgent, "-mode", "traced", "-state", state, "-sid", session)
	if code != exitOK || !strings.Contains(errOut, "traces: 8 span(s) exported, 0 dropped") {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	sent, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	wantSent := fmt.Sprintf("00-%s-%s-01\n00-%s-%s-01\n", tid, traces.TurnSpanID(session, 1), tid, traces.TurnSpanID(session, 2))
	if string(sent) != wantSent {
		t.Errorf("the agent got the traceparents\n%s, want each turn's\n%s", sent, wantSent)
	}
	agent := "@agentclientprotocol/claude-agent-acp"
	run := treeOf(j.Await(t, tid, "acpscope-run", 8), "acpscope-run")
	checkTracedTree(t, run, session, agent, func(int) string { return "" })

	replayDB := filepath.Join(dir, "replay.db")
	code, _, errOut, _ = acpscopeEnv(t, []string{"OTEL_SERVICE_NAME=acpscope-replay"}, "replay", "--db", replayDB, "--otlp", j.OTLP, capture)
	if code != exitOK || !strings.Contains(errOut, "traces: 8 span(s) exported, 0 dropped") {
		t.Fatalf("replay: exit %d: %s", code, errOut)
	}
	replay := treeOf(j.Await(t, tid, "acpscope-replay", 8), "acpscope-replay")
	checkTracedTree(t, replay, session, agent, func(int) string { return "" })
	if a, b := run.links(), replay.links(); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("replay's span ids and parents differ from run's:\nrun    %v\nreplay %v", a, b)
	}

	// An export of the stored session gives the whole tree again, every
	// span with the replay's id and parent, from the store the run wrote,
	// the replay's, and the replay's on PostgreSQL (each its own service:
	// their times are their stores').
	export := func(t *testing.T, service, db string) spanTree {
		t.Helper()
		code, out, errOut, _ := acpscopeEnv(t, []string{"OTEL_SERVICE_NAME=" + service}, "export", "--db", db, "--session", session, "--otlp", j.OTLP)
		if code != exitOK || !strings.Contains(out, "exported session jaeger-run: 8 span(s)") {
			t.Fatalf("export of %s: exit %d: %s%s", db, code, out, errOut)
		}
		return treeOf(j.Await(t, tid, service, 8), service)
	}
	checkExport := func(t *testing.T, exported spanTree) {
		t.Helper()
		checkTracedTree(t, exported, session, agent, func(int) string { return "" })
		if a, b := exported.links(), replay.links(); fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("export's span ids and parents differ from the replay's:\nexport %v\nreplay %v", a, b)
		}
		for id, s := range exported {
			if r := replay[id]; r.OperationName != s.OperationName {
				t.Errorf("exported %s is %q, the replay's %q", id, s.OperationName, r.OperationName)
			}
			if s.StartTime <= 0 || s.Duration < 0 {
				t.Errorf("exported %s: start %d duration %d", s.OperationName, s.StartTime, s.Duration)
			}
		}
	}
	first := export(t, "acpscope-export", replayDB)
	checkExport(t, first)
	checkExport(t, export(t, "acpscope-export-run", filepath.Join(dir, "run.db")))
	t.Run("postgres", func(t *testing.T) {
		pg := postgresDSN(t)
		code, _, errOut, _ := acpscopeEnv(t, []string{"OTEL_SDK_DISABLED=true"}, "replay", "--db", pg, capture)
		if code != exitOK {
			t.Fatalf("replay into PostgreSQL: exit %d: %s", code, errOut)
		}
		checkExport(t, export(t, "acpscope-export-pg", pg))
	})
	// A second export sends the same spans: the trace holds them once.
	code, _, errOut, _ = acpscopeEnv(t, []string{"OTEL_SERVICE_NAME=acpscope-export"}, "export", "--db", replayDB, "--session", session, "--otlp", j.OTLP)
	if code != exitOK {
		t.Fatalf("second export: exit %d: %s", code, errOut)
	}
	// The collector acknowledged the spans before export ended (its
	// report counts them exported); Jaeger stores what it acknowledged.
	tr := j.Await(t, tid, "acpscope-export", 8)
	if raw, second := len(tr.Of("acpscope-export")), treeOf(tr, "acpscope-export"); raw != 8 || fmt.Sprint(second.links()) != fmt.Sprint(first.links()) {
		t.Errorf("after a second export the trace holds %d exported spans (%d ids), want the same 8", raw, len(second))
	}
	for _, service := range []string{"acpscope-run", "acpscope-replay"} {
		if n := len(tr.Of(service)); n != 8 {
			t.Errorf("%s: %d spans in the trace, want 8", service, n)
		}
	}
}

// acpscope run drives the agent through the tap, both exporting: the
// tap's spans are the same tree, each turn parented on run's turn span
// (the traceparent run put into the prompt, which the tap passed on
// unchanged), the agent still gets run's traceparent, and an export of
// the tap's store gives the tap's spans again.
func TestJaegerTap(t *testing.T) {
	j := jaegertest.Start(t)
	dir := t.TempDir()
	const session = "jaeger-tap"
	tid := traces.TraceIDOf(session).String()
	state, tapDB := filepath.Join(dir, "traceparents"), filepath.Join(dir, "tap.db")
	code, _, errOut, _ := acpscopeEnv(t, []string{"OTEL_SERVICE_NAME=acpscope-run", "OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLP}, "run", "--no-db", "--plain", "--permission", "allow",
		"--prompt", "one", "--prompt", "two", "--", "env", "OTEL_SERVICE_NAME=acpscope-tap",
		acpscopeBin, "tap", "--db", tapDB, "--log", filepath.Join(dir, "tap.log"), "--", fakeAgent, "-mode", "traced", "-state", state, "-sid", session)
	if code != exitOK {
		t.Fatalf("run through the tap: exit %d: %s", code, errOut)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "tap.log"))
	if !strings.Contains(string(log), "traces: 8 span(s) exported, 0 dropped") {
		t.Errorf("the tap's closing report lacks its export:\n%s", log)
	}
	sent, _ := os.ReadFile(state)
	wantSent := fmt.Sprintf("00-%s-%s-01\n00-%s-%s-01\n", tid, traces.TurnSpanID(session, 1), tid, traces.TurnSpanID(session, 2))
	if string(sent) != wantSent {
		t.Errorf("through the tap the agent got\n%s, want run's traceparents unchanged\n%s", sent, wantSent)
	}
	j.Await(t, tid, "acpscope-tap", 8)
	tr := j.Await(t, tid, "acpscope-run", 8)
	agent := "@agentclientprotocol/claude-agent-acp"
	checkTracedTree(t, treeOf(tr, "acpscope-run"), session, agent, func(int) string { return "" })
	tapped := treeOf(tr, "acpscope-tap")
	salted := func(n int) string { return traces.TurnSpanID(session, n).String() }
	checkTracedTree(t, tapped, session, agent, salted)

	// The tap's store exports the tap's tree with the tap's ids: its turns
	// under run's, as the editor's traceparent put them.
	code, out, errOut, _ := acpscopeEnv(t, []string{"OTEL_SERVICE_NAME=acpscope-tap-export"}, "export", "--db", tapDB, "--session", session, "--otlp", j.OTLP)
	if code != exitOK || !strings.Contains(out, "exported session jaeger-tap: 8 span(s)") {
		t.Fatalf("export of the tap's store: exit %d: %s%s", code, out, errOut)
	}
	exported := treeOf(j.Await(t, tid, "acpscope-tap-export", 8), "acpscope-tap-export")
	checkTracedTree(t, exported, session, agent, salted)
	if a, b := exported.links(), tapped.links(); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the export of the tap's store differs from the tap's spans:\nexport %v\ntap    %v", a, b)
	}
}

// A collector that is not there (a closed port) or never answers (a
// listener that accepts and stays silent) changes neither the run's exit
// code nor its cards; the closing report counts the spans dropped. The
// run times are logged beside a run without export (speed targets live
// in benchmarks; the shutdown's bound is traces.ShutdownWait).
func TestJaegerCollectorDown(t *testing.T) {
	closed := freeLoopbackPort(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	args := func(extra ...string) []string {
		return append(append([]string{"run", "--no-db", "--json", "--permission", "allow", "--prompt", "one", "--prompt", "two"}, extra...),
			"--", fakeAgent, "-mode", "traced", "-sid", "jaeger-down")
	}
	code, wantOut, errOut, base := acpscopeEnv(t, nil, args()...)
	if code != exitOK {
		t.Fatalf("run without export: exit %d: %s", code, errOut)
	}
	for name, url := range map[string]string{"closed port": fmt.Sprintf("http://127.0.0.1:%d", closed), "silent collector": "http://" + silent.Addr().String()} {
		code, out, errOut, took := acpscopeEnv(t, nil, args("--otlp", url)...)
		if code != exitOK || out != wantOut {
			t.Errorf("%s: exit %d, cards changed: %v: %s", name, code, out != wantOut, errOut)
		}
		if !strings.Contains(errOut, "traces: 0 span(s) exported, 8 dropped") {
			t.Errorf("%s: the closing report does not count the dropped spans:\n%s", name, errOut)
		}
		t.Logf("%s: run took %v, %v without export", name, took.Round(time.Millisecond), base.Round(time.Millisecond))
	}
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
