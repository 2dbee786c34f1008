package traces

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kdlbs/acp-go-sdk/adapter"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) tick()          { c.t = c.t.Add(time.Second) }

// keptExporter keeps its spans through Shutdown (tracetest's in-memory
// exporter forgets them there, and Close shuts the exporter down).
type keptExporter struct{ *tracetest.InMemoryExporter }

func (keptExporter) Shutdown(context.Context) error { return nil }

func newMem() keptExporter { return keptExporter{tracetest.NewInMemoryExporter()} }

func newTestExporter(t *testing.T, content bool) (*Exporter, keptExporter, *fakeClock) {
	t.Helper()
	mem := newMem()
	x, err := New(context.Background(), Options{Exporter: mem, CaptureContent: content, Getenv: func(string) string { return "" }}, "test")
	if err != nil || x == nil {
		t.Fatalf("New: %v, %v", x, err)
	}
	clk := &fakeClock{t: time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)}
	x.SetClock(clk.now)
	return x, mem, clk
}

func task(desc, typ string) *adapter.Payload {
	return &adapter.Payload{Kind: adapter.PayloadKindSubagentTask, SubagentTask: &adapter.SubagentTask{Description: desc, SubagentType: typ, Prompt: "secret prompt", ResultText: "secret answer"}}
}

// feedTwoTurns plays a two-turn session with a subagent per turn (the
// second fails), each with a child tool call that asks for permission.
func feedTwoTurns(x *Exporter, clk *fakeClock) {
	x.Initialized("@agentclientprotocol/claude-agent-acp", "0.101.0")
	for n := 1; n <= 2; n++ {
		s, r := fmt.Sprintf("toolu_S%d", n), fmt.Sprintf("toolu_R%d", n)
		x.TurnStarted("sess", "claude", "", "secret turn prompt")
		clk.tick()
		x.Event("claude", adapter.Event{Kind: adapter.EventToolCall, SessionID: "sess", ToolCallID: s, Title: "Subtask", ToolKind: "think", Status: adapter.ToolStatusInProgress, Payload: task("Subtask", "reviewer")})
		clk.tick()
		x.Event("claude", adapter.Event{Kind: adapter.EventToolCall, SessionID: "sess", ToolCallID: r, ParentToolCallID: s, Title: "Read a.go", ToolKind: "read", Status: adapter.ToolStatusInProgress})
		x.PermissionAsked("sess", r, "Read a.go", []string{"Allow (allow_once)", "Reject (reject_once)"})
		clk.tick()
		x.PermissionAnswered("sess", r, "Read a.go", "Allow (allow_once)")
		x.Event("claude", adapter.Event{Kind: adapter.EventToolUpdate, SessionID: "sess", ToolCallID: r, ParentToolCallID: s, Status: adapter.ToolStatusComplete})
		clk.tick()
		p := task("Subtask", "reviewer")
		p.SubagentTask.AgentID, p.SubagentTask.Model = fmt.Sprintf("agent%d", n), "claude-opus-4-8"
		status := adapter.ToolStatusComplete
		if n == 2 {
			status = adapter.ToolStatusError
			p.SubagentTask.ErrorMessage = "the tester crashed"
		}
		x.Event("claude", adapter.Event{Kind: adapter.EventToolUpdate, SessionID: "sess", ToolCallID: s, Status: status, Payload: p})
		clk.tick()
		x.TurnEnded("sess", "end_turn", &Usage{InputTokens: 100, OutputTokens: 10, TotalTokens: 110}, nil, false)
	}
}

func attr(s tracetest.SpanStub, key string) (string, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String(), true
		}
	}
	return "", false
}

// The live spans form the tree turn → tool call → subagent → child tool
// call, with the GenAI attributes, derived ids and the events' times.
func TestLiveSpansTree(t *testing.T) {
	x, mem, clk := newTestExporter(t, false)
	feedTwoTurns(x, clk)
	if r := x.Close(); r.Dropped != 0 || r.Exported != 8 {
		t.Fatalf("report %+v, want 8 exported, none dropped", r)
	}
	spans := mem.GetSpans()
	if len(spans) != 8 {
		t.Fatalf("%d spans, want 8 (2 turns, 2 × subagent tool call, subagent, child tool call)", len(spans))
	}
	tid := TraceIDOf("sess")
	for _, s := range spans {
		if s.SpanContext.TraceID() != tid {
			t.Errorf("%s: trace %s, want the session's %s", s.Name, s.SpanContext.TraceID(), tid)
		}
		if s.EndTime.Before(s.StartTime) || s.StartTime.Year() != 2026 {
			t.Errorf("%s: times %v–%v are not the events'", s.Name, s.StartTime, s.EndTime)
		}
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.String(), "secret") {
				t.Errorf("%s: content %s=%s without the opt-in", s.Name, a.Key, a.Value.String())
			}
		}
	}
	for n := 1; n <= 2; n++ {
		turnID := TurnSpanID("sess", n)
		toolS, agentS := ToolSpanID("sess", fmt.Sprintf("toolu_S%d", n)), AgentSpanID("sess", fmt.Sprintf("toolu_S%d", n))
		toolR := ToolSpanID("sess", fmt.Sprintf("toolu_R%d", n))
		got := map[trace.SpanID]tracetest.SpanStub{}
		for _, s := range spans {
			got[s.SpanContext.SpanID()] = s
		}
		turn, ok := got[turnID]
		if !ok {
			t.Fatalf("turn %d: no span %s", n, turnID)
		}
		for key, want := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "sess",
			"gen_ai.agent.name": "@agentclientprotocol/claude-agent-acp", "acp.stop_reason": "end_turn", "gen_ai.usage.input_tokens": "100",
			"gen_ai.usage.output_tokens": "10", "acpscope.turn.index": fmt.Sprint(n)} {
			if v, _ := attr(turn, key); v != want {
				t.Errorf("turn %d: %s=%q, want %q", n, key, v, want)
			}
		}
		if turn.Parent.IsValid() || turn.SpanKind != trace.SpanKindClient {
			t.Errorf("turn %d: parent %v kind %v, want a client root", n, turn.Parent, turn.SpanKind)
		}
		for _, c := range []struct {
			id, parent trace.SpanID
			name       string
		}{{toolS, turnID, "execute_tool Subtask"}, {agentS, toolS, "invoke_agent reviewer"}, {toolR, agentS, "execute_tool Read a.go"}} {
			s, ok := got[c.id]
			if !ok {
				t.Fatalf("turn %d: no span %s (%s)", n, c.id, c.name)
			}
			if s.Name != c.name || s.Parent.SpanID() != c.parent {
				t.Errorf("turn %d: span %s %q under %s, want %q under %s", n, c.id, s.Name, s.Parent.SpanID(), c.name, c.parent)
			}
		}
		agent := got[agentS]
		if v, _ := attr(agent, "gen_ai.agent.id"); v != fmt.Sprintf("agent%d", n) {
			t.Errorf("turn %d: subagent gen_ai.agent.id %q", n, v)
		}
		if v, _ := attr(agent, "gen_ai.request.model"); v != "claude-opus-4-8" {
			t.Errorf("turn %d: subagent model %q", n, v)
		}
		if v, _ := attr(agent, "gen_ai.agent.description"); v != "Subtask" {
			t.Errorf("turn %d: subagent description %q", n, v)
		}
		wantCode := codes.Unset
		if n == 2 {
			wantCode = codes.Error
		}
		if agent.Status.Code != wantCode || got[toolS].Status.Code != wantCode {
			t.Errorf("turn %d: status %v/%v, want %v", n, got[toolS].Status, agent.Status, wantCode)
		}
		if n == 2 && agent.Status.Description != "the tester crashed" {
			t.Errorf("failed subagent's reason %q", agent.Status.Description)
		}
		read := got[toolR]
		if v, _ := attr(read, "gen_ai.tool.call.id"); v != fmt.Sprintf("toolu_R%d", n) {
			t.Errorf("child tool call id %q", v)
		}
		if v, _ := attr(read, "acp.tool_call.kind"); v != "read" {
			t.Errorf("child tool kind %q", v)
		}
		var names []string
		for _, ev := range read.Events {
			names = append(names, ev.Name)
		}
		if !slices.Equal(names, []string{"acp.permission.request", "acp.permission.answer"}) {
			t.Errorf("permission events %v", names)
		}
	}
}

// The same session fed twice gives the same ids, and content is recorded
// only under the opt-in.
func TestLiveIDsAreDerived(t *testing.T) {
	ids := func(content bool) ([]string, tracetest.SpanStubs) {
		x, mem, clk := newTestExporter(t, content)
		feedTwoTurns(x, clk)
		x.Close()
		var out []string
		for _, s := range mem.GetSpans() {
			out = append(out, s.SpanContext.TraceID().String()+"/"+s.SpanContext.SpanID().String()+"/"+s.Parent.SpanID().String())
		}
		slices.Sort(out)
		return out, mem.GetSpans()
	}
	a, _ := ids(false)
	b, spans := ids(true)
	if !slices.Equal(a, b) {
		t.Fatalf("ids differ between two feeds:\n%v\n%v", a, b)
	}
	found := false
	for _, s := range spans {
		if v, ok := attr(s, "gen_ai.input.messages"); ok && strings.Contains(v, "secret") {
			found = true
		}
	}
	if !found {
		t.Error("the content opt-in recorded no gen_ai.input.messages")
	}
}

// A child session (subagent-session form) nests under the tool call that
// referenced it, its tool calls under it; a child that stopped with an
// error is an ERROR span with its reason, an unknown state an attribute.
func TestChildSessionSpans(t *testing.T) {
	x, mem, clk := newTestExporter(t, false)
	const salt = "b7ad6b7169203331" // the editor's span: a tap under an exporting run never reuses the run's ids
	x.TurnStarted("p", "claude", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")
	clk.tick()
	x.Event("claude", adapter.Event{Kind: adapter.EventToolCall, SessionID: "p", ToolCallID: "launch", Title: "Agent", Status: adapter.ToolStatusComplete,
		SessionRefs: []adapter.SessionRef{{SessionID: "c1", Known: true}, {SessionID: "c2", Known: true}}})
	for _, c := range []struct{ id, state, stop, msg string }{{"c1", "idle", "error", "model overloaded"}, {"c2", "unknown", "", ""}} {
		x.Event("claude", adapter.Event{Kind: adapter.EventToolCall, SessionID: "p", ToolCallID: c.id, Status: adapter.ToolStatusError,
			Payload: &adapter.Payload{SubagentTask: &adapter.SubagentTask{SubagentType: "explorer", ChildSessionID: c.id}},
			Child:   &adapter.ChildSession{SessionID: c.id, ParentSessionID: "p", State: c.state, StopReason: c.stop, ErrorMessage: c.msg}})
		x.Event("claude", adapter.Event{Kind: adapter.EventToolCall, SessionID: c.id, ParentSessionID: "p", ToolCallID: "grep", Title: "grep", Status: adapter.ToolStatusComplete})
	}
	clk.tick()
	x.TurnEnded("p", "end_turn", nil, nil, false)
	x.Close()
	got := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range mem.GetSpans() {
		got[s.SpanContext.SpanID()] = s
		if s.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("%s: not in the editor's trace", s.Name)
		}
	}
	if turn := got[turnSpan(salt, "p", 1)]; turn.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("turn parent %s, want the editor's span", turn.Parent.SpanID())
	}
	for _, c := range []string{"c1", "c2"} {
		a, ok := got[agentSpan(salt, "p", c)]
		if !ok || a.Parent.SpanID() != toolSpan(salt, "p", "launch") {
			t.Fatalf("child %s: %v under %s, want under the launching tool call", c, ok, a.Parent.SpanID())
		}
		if _, ok := got[toolSpan(salt, "p", c)]; ok {
			t.Errorf("child %s has an execute_tool span of its own", c)
		}
		g := got[toolSpan(salt, c, "grep")]
		if g.Parent.SpanID() != agentSpan(salt, "p", c) {
			t.Errorf("child %s's tool call under %s, want its invoke_agent span", c, g.Parent.SpanID())
		}
	}
	if s := got[agentSpan(salt, "p", "c1")]; s.Status.Code != codes.Error || s.Status.Description != "model overloaded" {
		t.Errorf("failed child: status %v", s.Status)
	}
	if v, _ := attr(got[agentSpan(salt, "p", "c2")], "acp.child_session.state"); v != "unknown" {
		t.Errorf("unknown child: state attribute %q", v)
	}
}

// slowExporter blocks every export until its context ends.
type slowExporter struct {
	mu    sync.Mutex
	calls int
}

func (e *slowExporter) ExportSpans(ctx context.Context, _ []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	e.calls++
	e.mu.Unlock()
	<-ctx.Done()
	return ctx.Err()
}
func (e *slowExporter) Shutdown(context.Context) error { return nil }

// A collector that never answers: feeding never waits on it, the queue
// drops past its bound (counted), and Close returns within ShutdownWait
// with every span accounted for.
func TestStuckCollectorNeverBlocks(t *testing.T) {
	env := map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "4", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2", "OTEL_BSP_SCHEDULE_DELAY": "1"}
	slow := &slowExporter{}
	x, err := New(context.Background(), Options{Exporter: slow, Getenv: func(k string) string { return env[k] }}, "test")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		x.TurnStarted("s", "generic", "", "")
		x.Event("generic", adapter.Event{SessionID: "s", ToolCallID: fmt.Sprint(i), Status: adapter.ToolStatusComplete})
		x.TurnEnded("s", "end_turn", nil, nil, false)
	}
	r := x.Close()
	if r.Exported != 0 || r.Dropped != 400 {
		t.Fatalf("report %+v, want 0 exported and all 400 spans dropped", r)
	}
	if !strings.Contains(r.String(), "400 dropped") {
		t.Errorf("report line %q", r)
	}
}

// Without an endpoint nothing is exported (New returns nil, whose methods
// do nothing); OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none win.
func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		env      map[string]string
		want     bool
	}{
		{"", nil, false},
		{"http://127.0.0.1:4318", nil, true},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"http://127.0.0.1:4318", map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		o := Options{Endpoint: c.endpoint, Getenv: func(k string) string { return c.env[k] }}
		if got := o.Enabled(); got != c.want {
			t.Errorf("%q %v: Enabled %v, want %v", c.endpoint, c.env, got, c.want)
		}
	}
	x, err := New(context.Background(), Options{Getenv: func(string) string { return "" }}, "test")
	if x != nil || err != nil {
		t.Fatalf("New without an endpoint: %v, %v", x, err)
	}
	x.TurnStarted("s", "", "", "")
	x.Event("", adapter.Event{SessionID: "s", ToolCallID: "t"})
	if r := x.Close(); r != (Report{}) {
		t.Errorf("nil exporter reported %+v", r)
	}
	for base, want := range map[string]string{"http://127.0.0.1:4318": "http://127.0.0.1:4318/v1/traces", "http://h:1/": "http://h:1/v1/traces", "https://h/otlp/v1/traces": "https://h/otlp/v1/traces"} {
		if got, err := traceEndpoint(base); got != want || err != nil {
			t.Errorf("traceEndpoint(%q) = %q, %v, want %q", base, got, err, want)
		}
	}
	if _, err := traceEndpoint("127.0.0.1:4318"); err == nil {
		t.Error("an endpoint without a scheme was taken")
	}
	if _, err := New(context.Background(), Options{Endpoint: "http://127.0.0.1:1", Getenv: func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}[k]
	}}, "test"); err == nil || !errors.Is(err, err) || !strings.Contains(err.Error(), "http/protobuf") {
		t.Errorf("grpc protocol: %v", err)
	}
}

// OTEL_SEMCONV_STABILITY_OPT_IN is a list; gen_ai_latest_experimental in
// it is recorded on the scope.
func TestSemconvOptIn(t *testing.T) {
	for v, want := range map[string]bool{"": false, "http": false, "http, gen_ai_latest_experimental": true, OptInLatest: true} {
		o := Options{Getenv: func(string) string { return v }}
		if got := o.LatestExperimental(); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
	mem := newMem()
	x, _ := New(context.Background(), Options{Exporter: mem, Getenv: func(k string) string {
		if k == "OTEL_SEMCONV_STABILITY_OPT_IN" {
			return OptInLatest
		}
		return ""
	}}, "test")
	x.TurnStarted("s", "", "", "")
	x.TurnEnded("s", "end_turn", nil, nil, false)
	x.Close()
	s := mem.GetSpans()[0]
	if s.InstrumentationScope.SchemaURL != SchemaURL || !s.InstrumentationScope.Attributes.HasValue(attrOptIn) {
		t.Errorf("scope %+v", s.InstrumentationScope)
	}
	if v, _ := s.InstrumentationScope.Attributes.Value(attrOptIn); v != attribute.StringValue(OptInLatest) {
		t.Errorf("opt-in recorded %v", v)
	}
}

// A turn never answered (the session ended first) ends with the session,
// marked open; one answered is not.
func TestUnansweredTurnIsOpen(t *testing.T) {
	x, mem, clk := newTestExporter(t, false)
	x.TurnStarted("s", "generic", "", "")
	clk.tick()
	x.TurnEnded("s", "end_turn", nil, nil, false)
	x.TurnStarted("s", "generic", "", "")
	clk.tick()
	x.Close()
	open := map[int]bool{}
	for _, s := range mem.GetSpans() {
		n, _ := attr(s, "acpscope.turn.index")
		_, o := attr(s, "acpscope.open")
		open[map[string]int{"1": 1, "2": 2}[n]] = o
	}
	if open[1] || !open[2] {
		t.Errorf("open marks %v, want only turn 2", open)
	}
}

// A card in an earlier AIR generation's session, stored (the task's card
// names only the latest generation), goes under the task's one card.
func TestAIRGenerationParent(t *testing.T) {
	tr := newTree()
	card := &cardRecord{key: cardKey{"root", "a1"}, task: &adapter.SubagentTask{ChildSessionID: "a1:generation:3"}}
	nested := &cardRecord{key: cardKey{"a1:generation:2", "t2"}, parentSession: "root"}
	stray := &cardRecord{key: cardKey{"b:generation:2", "t3"}, parentSession: "root"}
	for _, c := range []*cardRecord{card, nested, stray} {
		tr.cards[c.key] = c
		tr.noteChild(c)
	}
	if got, want := tr.parentOf(nested).SpanID(), card.ownSpan(); got != want {
		t.Errorf("nested under %s, want the task's card %s", got, want)
	}
	if got := tr.parentOf(stray); got.IsValid() {
		t.Errorf("a task no card holds: under %s, want its turn (none)", got.SpanID())
	}
}
