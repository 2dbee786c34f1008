package storesink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kdlbs/acp-go-sdk/adapter"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/sink"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/traces"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// keptSpans keeps its spans through Shutdown (the in-memory exporter
// forgets them there, and Exporter.Close shuts it down).
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }

var _ sdktrace.SpanExporter = keptSpans{}

func newExporter(t *testing.T) (*traces.Exporter, keptSpans) {
	t.Helper()
	mem := keptSpans{tracetest.NewInMemoryExporter()}
	x, err := traces.New(context.Background(), traces.Options{Exporter: mem, Getenv: func(string) string { return "" }}, "test")
	if err != nil || x == nil {
		t.Fatalf("traces.New: %v %v", x, err)
	}
	return x, mem
}

// spanKeys are the attributes the comparison holds equal: what says which
// span it is and what the issue asks an export to carry.
var spanKeys = []string{
	"gen_ai.operation.name", "gen_ai.conversation.id", "gen_ai.tool.call.id", "gen_ai.tool.name",
	"acp.tool_call.title", "acp.tool_call.kind", "acp.tool_call.status",
	"gen_ai.agent.name", "gen_ai.agent.version", "acpscope.dialect", "acpscope.turn.index",
	"acp.stop_reason", "gen_ai.response.finish_reasons", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
	"gen_ai.usage.cache_read.input_tokens", "acpscope.usage.total_tokens", "acpscope.open",
	"gen_ai.agent.description", "gen_ai.agent.id", "gen_ai.request.model", "acpscope.subagent.status", "acp.child_session.id",
	"acp.child_session.state", "acp.child_session.stop_reason",
}

// spanSet describes each span by id: its parent, name, status, the
// spanKeys attributes it has and its events.
func spanSet(spans tracetest.SpanStubs) map[string]string {
	out := map[string]string{}
	for _, s := range spans {
		var b strings.Builder
		fmt.Fprintf(&b, "%s under %s: %q status %v %q", s.SpanContext.SpanID(), s.Parent.SpanID(), s.Name, s.Status.Code, s.Status.Description)
		for _, kv := range s.Attributes {
			if slices.Contains(spanKeys, string(kv.Key)) {
				fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
			}
		}
		for _, ev := range s.Events {
			fmt.Fprintf(&b, " event %s", ev.Name)
			for _, kv := range ev.Attributes {
				fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
			}
		}
		out[s.SpanContext.SpanID().String()] = b.String()
	}
	return out
}

// feedSession is a session with three turns, as run and the tap tell the
// export and the store: the first with plain tool calls only (so an
// export that numbered turns by their subagents would drift), the second
// with a Claude subagent (its tool calls in the same session under it,
// one asking permission), the third with an ACP child session launched
// by a tool call (its tool calls in the child session); every turn has a
// stop reason and usage, the agent its agentInfo.
func feedSession(obs traces.TurnObservers, rec func(sink.Event), begin func(string)) {
	at := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	ev := func(e adapter.Event) {
		at = at.Add(time.Second)
		rec(sink.Event{Dialect: "claude", At: at, Event: e})
	}
	turn := func(n int, body func()) {
		begin("sess")
		obs.TurnStarted("sess", "claude", "", "prompt")
		body()
		cached := 3
		obs.TurnEnded("sess", "end_turn", &traces.Usage{InputTokens: 100 * n, OutputTokens: 10 * n, TotalTokens: 110 * n, CachedReadTokens: &cached}, nil, false)
	}
	obs.Initialized("@agentclientprotocol/claude-agent-acp", "0.101.0")
	turn(1, func() {
		ev(adapter.Event{Kind: adapter.EventToolCall, SessionID: "sess", ToolCallID: "plain1", Title: "Read go.mod", ToolKind: "read", Status: adapter.ToolStatusInProgress})
		ev(adapter.Event{Kind: adapter.EventToolUpdate, SessionID: "sess", ToolCallID: "plain1", Status: adapter.ToolStatusComplete})
		obs.PermissionAsked("sess", "nowhere", "Touch", []string{"Allow (allow_once)"})
		obs.PermissionAnswered("sess", "nowhere", "Touch", "Allow (allow_once)")
		ev(adapter.Event{Kind: adapter.EventToolCall, SessionID: "sess", ToolCallID: "plain2", Title: "rm -rf /", ToolKind: "execute", Status: adapter.ToolStatusError})
	})
	turn(2, func() {
		p := &adapter.Payload{Kind: adapter.PayloadKindSubagentTask, SubagentTask: &adapter.SubagentTask{Description: "Review", SubagentType: "reviewer"}}
		ev(adapter.Event{Kind: adapter.EventToolCall, SessionID: "sess", ToolCallID: "toolu_S", Title: "Task", ToolKind: "think", Status: adapter.ToolStatusInProgress, Payload: p})
		ev(adapter.Event{Kind: adapter.EventToolCall, SessionID: "sess", ToolCallID: "toolu_R", ParentToolCallID: "toolu_S", Title: "Read a.go", ToolKind: "read", Status: adapter.ToolStatusInProgress})
		obs.PermissionAsked("sess", "toolu_R", "Read a.go", []string{"Allow (allow_once)", "Reject (reject_once)"})
		obs.PermissionAnswered("sess", "toolu_R", "Read a.go", "Allow (allow_once)")
		ev(adapter.Event{Kind: adapter.EventToolUpdate, SessionID: "sess", ToolCallID: "toolu_R", ParentToolCallID: "toolu_S", Status: adapter.ToolStatusComplete})
		done := &adapter.Payload{Kind: adapter.PayloadKindSubagentTask, SubagentTask: &adapter.SubagentTask{Description: "Review", SubagentType: "reviewer", AgentID: "a1", Model: "claude-opus-4-8", Status: "completed"}}
		ev(adapter.Event{Kind: adapter.EventToolUpdate, SessionID: "sess", ToolCallID: "toolu_S", Status: adapter.ToolStatusComplete, Payload: done})
	})
	turn(3, func() {
		ev(adapter.Event{Kind: adapter.EventToolCall, SessionID: "sess", ToolCallID: "launch", Title: "Agent", ToolKind: "other", Status: adapter.ToolStatusComplete,
			SessionRefs: []adapter.SessionRef{{SessionID: "child", Known: true}}})
		child := &adapter.Payload{Kind: adapter.PayloadKindSubagentTask, SubagentTask: &adapter.SubagentTask{SubagentType: "explorer", Description: "Explore", ChildSessionID: "child"}}
		ev(adapter.Event{Kind: adapter.EventToolCall, SessionID: "sess", ToolCallID: "child", Status: adapter.ToolStatusInProgress, Payload: child,
			Child: &adapter.ChildSession{SessionID: "child", ParentSessionID: "sess", Live: true}})
		ev(adapter.Event{Kind: adapter.EventToolCall, SessionID: "child", ParentSessionID: "sess", ToolCallID: "grep", Title: "grep TODO", ToolKind: "search", Status: adapter.ToolStatusInProgress})
		ev(adapter.Event{Kind: adapter.EventToolUpdate, SessionID: "child", ParentSessionID: "sess", ToolCallID: "grep", Status: adapter.ToolStatusComplete})
		ev(adapter.Event{Kind: adapter.EventToolUpdate, SessionID: "sess", ToolCallID: "child", Status: adapter.ToolStatusComplete, Payload: child,
			Child: &adapter.ChildSession{SessionID: "child", ParentSessionID: "sess", State: "idle", StopReason: "end_turn"}})
	})
}

// The export of a stored session gives the span set of the live export
// of the same session — every span, with the same ids, parents, names,
// statuses, key attributes and permission events — on both engines; a
// store written without trace facts (an older acpscope) still exports
// what its cards hold.
func TestExportOfStoredSessionEqualsLive(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := e.dsn(t)
			st, err := persistence.Open(ctx, dsn, persistence.WithSubagentText(), persistence.WithCardFacts(), persistence.WithTraceFacts())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if rep := st.Migrate(ctx); !rep.OK() {
				t.Fatalf("migrate: %+v", rep)
			}
			live, liveMem := newExporter(t)
			s := New(st)
			feedSession(traces.TurnObservers{live, s}, func(e sink.Event) { live.Record(e); s.Record(e) }, s.BeginTurn)
			live.Close()
			if acc := s.Close(); acc.NotStored() != 0 || acc.Stats.TraceFactsNotStored != 0 {
				t.Fatalf("store: %+v", acc)
			}

			want := spanSet(liveMem.GetSpans())
			if len(want) != 11 {
				t.Fatalf("live export: %d spans, want 11 (3 turns, 6 tool calls, 2 subagents)", len(want))
			}
			x, mem := newExporter(t)
			n, err := x.ExportStored(ctx, st, "sess", func(string) string { return "claude" })
			if err != nil {
				t.Fatal(err)
			}
			x.Close()
			got := spanSet(mem.GetSpans())
			if n != len(got) {
				t.Errorf("ExportStored says %d spans, sent %d", n, len(got))
			}
			for id, w := range want {
				if got[id] != w {
					t.Errorf("span %s\n live:   %s\n export: %s", id, w, got[id])
				}
			}
			for id, g := range got {
				if _, ok := want[id]; !ok {
					t.Errorf("exported span not live: %s", g)
				}
			}
		})
	}
}

// A store an older acpscope wrote (cards, no trace facts), migrated since
// (the tables exist, without rows for the session), exports what its
// cards hold as before: its subagents with the live ids, under turns
// numbered by their first card.
func TestExportOfOlderStore(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := e.dsn(t)
			old, err := persistence.Open(ctx, dsn, persistence.WithSubagentText(), persistence.WithCardFacts())
			if err != nil {
				t.Fatal(err)
			}
			if rep := old.Migrate(ctx); !rep.OK() {
				t.Fatalf("migrate: %+v", rep)
			}
			s := New(old)
			feedSession(traces.TurnObservers{s}, s.Record, s.BeginTurn)
			s.Close()
			old.Close()
			st, err := persistence.Open(ctx, dsn, persistence.WithSubagentText(), persistence.WithCardFacts(), persistence.WithTraceFacts())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if rep := st.Migrate(ctx); !rep.OK() {
				t.Fatalf("migrate: %+v", rep)
			}
			x, mem := newExporter(t)
			n, err := x.ExportStored(ctx, st, "sess", func(string) string { return "claude" })
			if err != nil {
				t.Fatal(err)
			}
			x.Close()
			got := map[string]string{}
			for _, sp := range mem.GetSpans() {
				got[sp.SpanContext.SpanID().String()] = sp.Name
			}
			// Two turns (numbered 1 and 2 by their cards), the Claude
			// subagent's tool call and invoke_agent, the child's invoke_agent.
			if n != 5 || len(got) != 5 {
				t.Fatalf("%d spans (%d sent), want 5: %v", n, len(got), got)
			}
			for _, id := range []string{traces.ToolSpanID("sess", "toolu_S").String(), traces.AgentSpanID("sess", "toolu_S").String(),
				traces.AgentSpanID("sess", "child").String(), traces.TurnSpanID("sess", 1).String(), traces.TurnSpanID("sess", 2).String()} {
				if _, ok := got[id]; !ok {
					t.Errorf("span %s missing: %v", id, got)
				}
			}
		})
	}
}

// A burst of events that tell the store nothing new of a tool call (a
// subagent's progress updates) queues its fact once; a change and the
// settlement queue it again.
func TestRepeatedToolCallFactsAreQueuedOnce(t *testing.T) {
	ctx := context.Background()
	st, err := persistence.Open(ctx, engines[0].dsn(t), persistence.WithTraceFacts())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if rep := st.Migrate(ctx); !rep.OK() {
		t.Fatalf("migrate: %+v", rep)
	}
	s := New(st)
	progress := adapter.Event{Kind: adapter.EventToolUpdate, SessionID: "sess", ToolCallID: "tc", Title: "Task", Status: adapter.ToolStatusInProgress}
	for range 100 {
		s.Record(sink.Event{Event: progress})
	}
	progress.Title = "Task (renamed)"
	s.Record(sink.Event{Event: progress})
	progress.Status = adapter.ToolStatusComplete
	s.Record(sink.Event{Event: progress})
	s.Record(sink.Event{Event: progress})
	if acc := s.Close(); acc.Stats.TraceFacts != 3 || acc.Stats.StoredTraceFacts != 3 {
		t.Errorf("trace facts queued %d, stored %d; want 3", acc.Stats.TraceFacts, acc.Stats.StoredTraceFacts)
	}
	tf, err := st.ListTraceFacts(ctx, "sess")
	if err != nil || len(tf.ToolCalls) != 1 || tf.ToolCalls[0].Title != "Task (renamed)" || tf.ToolCalls[0].SettledAt == nil {
		t.Errorf("stored %+v %v", tf.ToolCalls, err)
	}
}
