package traces

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/kdlbs/acp-go-sdk/internal/pgtest"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// storeTwoTurns writes the subagent cards of feedTwoTurns as acpscope's
// store sink does (one turn id per turn, the clock's times).
func storeTwoTurns(t *testing.T, dsn string) *persistence.Store {
	t.Helper()
	ctx := context.Background()
	st, err := persistence.Open(ctx, dsn, persistence.WithCardFacts(), persistence.WithSubagentText())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if rep := st.Migrate(ctx); !rep.OK() {
		t.Fatalf("migrate: %+v", rep)
	}
	if err := st.EnsureSession(ctx, "sess", "sess"); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	for n := 1; n <= 2; n++ {
		at := base.Add(time.Duration(n*10) * time.Second)
		f := persistence.Frame{TaskSessionID: "sess", TaskID: "sess", ToolCallID: fmt.Sprintf("toolu_S%d", n), ExecutionID: "acpscope-claude-run1",
			TurnID: fmt.Sprintf("turn-%d", 3-n), Description: "Subtask", SubagentType: "reviewer", ToolStatus: "in_progress", ObservedAt: at}
		if err := st.Upsert(ctx, f); err != nil {
			t.Fatal(err)
		}
		f.ToolStatus, f.AgentID, f.Model, f.ObservedAt = "complete", fmt.Sprintf("agent%d", n), "claude-opus-4-8", at.Add(3*time.Second)
		if n == 2 {
			f.ToolStatus, f.Facts = "error", &persistence.CardFacts{ErrorMessage: "the tester crashed"}
		}
		if err := st.Upsert(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// An export of the stored session gives the spans of its turns and
// subagents the ids the live feed gave them, in the store's times, and a
// second export the same spans again.
func testExportMatchesLive(t *testing.T, dsn string) {
	st := storeTwoTurns(t, dsn)
	x, live, clk := newTestExporter(t, false)
	feedTwoTurns(x, clk)
	x.Close()
	liveIDs := map[string]string{}
	for _, s := range live.GetSpans() {
		liveIDs[s.SpanContext.SpanID().String()] = s.Parent.SpanID().String()
	}
	exported := func() map[string]string {
		ex, mem, _ := newTestExporter(t, false)
		n, err := ex.ExportStored(context.Background(), st, "sess", func(string) string { return "claude" })
		if err != nil {
			t.Fatal(err)
		}
		if r := ex.Close(); r.Exported != int64(n) || n != 6 {
			t.Fatalf("export: %d spans, report %+v, want 6 exported", n, r)
		}
		out := map[string]string{}
		for _, s := range mem.GetSpans() {
			out[s.SpanContext.SpanID().String()] = s.Parent.SpanID().String()
			if s.SpanContext.TraceID() != TraceIDOf("sess") {
				t.Errorf("%s: trace %s", s.Name, s.SpanContext.TraceID())
			}
			if s.StartTime.Before(time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)) || s.EndTime.Before(s.StartTime) {
				t.Errorf("%s: times %v–%v are not the store's", s.Name, s.StartTime, s.EndTime)
			}
			if s.Name == "invoke_agent reviewer" && s.SpanContext.SpanID() == AgentSpanID("sess", "toolu_S2") && s.Status.Description != "the tester crashed" {
				t.Errorf("failed subagent exported with status %v", s.Status)
			}
		}
		return out
	}
	first := exported()
	for id, parent := range first {
		if liveParent, ok := liveIDs[id]; !ok || liveParent != parent {
			t.Errorf("exported span %s under %s; live: %v under %s", id, parent, ok, liveParent)
		}
	}
	second := exported()
	a, b := slices.Sorted(mapsKeys(first)), slices.Sorted(mapsKeys(second))
	if !slices.Equal(a, b) {
		t.Errorf("a second export gave other spans:\n%v\n%v", a, b)
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestExportMatchesLiveSQLite(t *testing.T) {
	testExportMatchesLive(t, filepath.Join(t.TempDir(), "s.db"))
}

func TestExportMatchesLivePostgres(t *testing.T) {
	testExportMatchesLive(t, pgtest.SchemaDSN(t, "traces"))
}

// A card stored settled at its first observation (the store's times have
// one microsecond's resolution) still gives spans that end after they
// begin: Jaeger rewrites a span that does not (adding a warning on each
// ingestion), so a second export of it would no longer be the same span.
func TestExportInstantCardEndsAfterItBegins(t *testing.T) {
	ctx := context.Background()
	st, err := persistence.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if rep := st.Migrate(ctx); !rep.OK() {
		t.Fatalf("migrate: %+v", rep)
	}
	if err := st.EnsureSession(ctx, "sess", "sess"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	f := persistence.Frame{TaskSessionID: "sess", TaskID: "sess", ToolCallID: "toolu_S1", ExecutionID: "acpscope-claude-run1",
		TurnID: "turn-1", Description: "Subtask", SubagentType: "reviewer", ToolStatus: "error", ObservedAt: at}
	if err := st.Upsert(ctx, f); err != nil {
		t.Fatal(err)
	}
	x, mem, _ := newTestExporter(t, false)
	if _, err := x.ExportStored(ctx, st, "sess", func(string) string { return "claude" }); err != nil {
		t.Fatal(err)
	}
	x.Close()
	spans := mem.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want the turn, the tool call and the subagent", len(spans))
	}
	for _, s := range spans {
		if !s.EndTime.After(s.StartTime) {
			t.Errorf("%s: ends %v, not after its start %v", s.Name, s.EndTime, s.StartTime)
		}
	}
}
