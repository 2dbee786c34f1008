package persistence

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// facts reads one card's facts of session S, execution E.
func facts(t *testing.T, s *Store, tc string) CardFacts {
	t.Helper()
	got, err := s.SubagentFacts(t.Context(), "S", "E", tc)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A card's facts land in the layer's own table on both engines; a frame
// without a fact never erases it, and earlier answers are only ever added.
func TestCardFactsMergeAndNeverErase(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithCardFacts())
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) {
			f.ToolStatus = "error"
			f.Facts = &CardFacts{ErrorMessage: "API error: 400", EarlierResults: []string{"first"}, ParentSessionID: "P"}
		}))
		s.Record(e.ctx, frame("tc1"))                                            // no facts
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Facts = &CardFacts{} })) // zero facts
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Facts = &CardFacts{EarlierResults: []string{"first", "second"}} }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Facts = &CardFacts{EarlierResults: []string{"x"}} })) // a replay's shorter list
		if c := s.Counters(); c.Failed != 0 || c.Persisted != 5 {
			t.Fatalf("counters %+v", c)
		}
		got := facts(t, s, "tc1")
		if got.ErrorMessage != "API error: 400" || got.ParentSessionID != "P" || !slices.Equal(got.EarlierResults, []string{"first", "second"}) {
			t.Fatalf("facts %+v", got)
		}
		if none := facts(t, s, "tc-absent"); !none.IsZero() {
			t.Fatalf("facts of a card never stored: %+v", none)
		}
	})
}

// Without WithCardFacts the facts table is neither created nor written.
func TestCardFactsNeedTheOption(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{})
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Facts = &CardFacts{ErrorMessage: "x"} }))
		has, err := e.eng().hasRelation(e.ctx, e.raw, factsTable)
		if err != nil || has {
			t.Fatalf("facts table without the option: %v %v", has, err)
		}
		if _, err := s.SubagentFacts(e.ctx, "S", "E", "tc1"); err == nil {
			t.Fatal("SubagentFacts without the table: no error")
		}
	})
}

// unknown is stored as its own tool status: verbatim, never settling the
// row (never a finished or failed card), and a later terminal status still
// settles it, on both engines.
func TestUnknownToolStatusIsStoredAsItself(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus = "in_progress" }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus = "unknown" }))
		rows, err := s.ListBySession(e.ctx, "S")
		if err != nil || len(rows) != 1 {
			t.Fatalf("rows %v %v", rows, err)
		}
		if r := rows[0]; r.ToolStatus == nil || *r.ToolStatus != "unknown" || r.SettledAt != nil {
			t.Fatalf("unknown row: status %v settled %v", deref(r.ToolStatus), r.SettledAt)
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus = "complete" }))
		rows, _ = s.ListBySession(e.ctx, "S")
		if r := rows[0]; *r.ToolStatus != "complete" || r.SettledAt == nil {
			t.Fatalf("after complete: %v settled %v", deref(r.ToolStatus), r.SettledAt)
		}
	})
}

// The dry-run plan lists the facts step, and a table of that name the
// layer did not create is refused.
func TestCardFactsPlanAndForeignTable(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.exec(`CREATE TABLE ` + factsTable + ` (subagent_id TEXT, notes TEXT)`)
		s := e.open(hooks{}, WithCardFacts())
		rep := s.Migrate(e.ctx)
		found := false
		for _, st := range rep.Steps {
			if st.Name == StepFacts {
				found = st.Err != nil
			}
		}
		if !found {
			t.Fatalf("a foreign facts table was not refused: %+v", rep)
		}
	})
}

// A failure's reason is agent text: it is stored cut at MaxSubagentText
// like a text (at a character boundary), never whole however long.
func TestCardFactsErrorMessageIsCapped(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithCardFacts())
		e.session("S", "T")
		long := "é" + strings.Repeat("x", MaxSubagentText)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus = "error"; f.Facts = &CardFacts{ErrorMessage: long} }))
		got := facts(t, s, "tc1").ErrorMessage
		if len(got) > MaxSubagentText || !strings.HasPrefix(long, got) || !utf8.ValidString(got) {
			t.Fatalf("stored reason: %d bytes, a prefix %v", len(got), strings.HasPrefix(long, got))
		}
	})
}

// ListCardFacts reads the facts of several sessions' cards in one query,
// keyed by each row's key (ids decoded), the reason cut at MaxFactSummary
// characters, earlier answers only flagged; a card without facts and a
// session not asked for are absent, on both engines.
func TestListCardFacts(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithCardFacts())
		for _, id := range []string{"S", "C\x00hild", "other"} {
			if err := s.EnsureSession(e.ctx, id, "T"); err != nil {
				t.Fatal(err)
			}
		}
		long := strings.Repeat("é", MaxFactSummary+1)
		s.Record(e.ctx, frame("failed", func(f *Frame) { f.ToolStatus = "error"; f.Facts = &CardFacts{ErrorMessage: "API error: 400"} }))
		s.Record(e.ctx, frame("long", func(f *Frame) { f.ToolStatus = "error"; f.Facts = &CardFacts{ErrorMessage: long} }))
		s.Record(e.ctx, frame("again", func(f *Frame) { f.Facts = &CardFacts{EarlierResults: []string{"first"}} }))
		s.Record(e.ctx, frame("plain"))
		s.Record(e.ctx, frame("nested", func(f *Frame) {
			f.TaskSessionID, f.ExecutionID = "C\x00hild", "E\x00x"
			f.Facts = &CardFacts{ParentSessionID: "S"}
		}))
		s.Record(e.ctx, frame("elsewhere", func(f *Frame) { f.TaskSessionID = "other"; f.Facts = &CardFacts{ErrorMessage: "x"} }))
		got, err := s.ListCardFacts(e.ctx, "S", "C\x00hild")
		if err != nil {
			t.Fatal(err)
		}
		byCall := map[string]CardFactsSummary{}
		for _, f := range got {
			byCall[f.ToolCallID] = f
		}
		want := map[string]CardFactsSummary{
			"failed": {SessionID: "S", ExecutionID: "E", ToolCallID: "failed", ErrorMessage: "API error: 400"},
			"long":   {SessionID: "S", ExecutionID: "E", ToolCallID: "long", ErrorMessage: long[:2*MaxFactSummary], ErrorTruncated: true},
			"again":  {SessionID: "S", ExecutionID: "E", ToolCallID: "again", HasEarlierResults: true},
			"nested": {SessionID: "C\x00hild", ExecutionID: "E\x00x", ToolCallID: "nested", ParentSessionID: "S"},
		}
		if len(got) != len(want) {
			t.Fatalf("%d summaries: %+v", len(got), got)
		}
		for call, w := range want {
			if byCall[call] != w {
				t.Errorf("%s: got %+v, want %+v", call, byCall[call], w)
			}
		}
		if none, err := s.ListCardFacts(e.ctx); err != nil || none != nil {
			t.Fatalf("no sessions: %v %v", none, err)
		}
		plain := e.open(hooks{})
		if _, err := plain.ListCardFacts(e.ctx, "S"); err != nil {
			t.Fatalf("the table exists (made by the other store): %v", err)
		}
	})
}

// A database without the facts table says so: ErrNoFactStore.
func TestListCardFactsWithoutTheTable(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{})
		if _, err := s.ListCardFacts(e.ctx, "S"); !errors.Is(err, ErrNoFactStore) {
			t.Fatalf("got %v, want ErrNoFactStore", err)
		}
	})
}

// Upsert writes a frame as Record does, its facts included (returning the
// error instead of counting it), on both engines.
func TestUpsertWritesFacts(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithCardFacts())
		e.session("S", "T")
		if err := s.Upsert(e.ctx, *frame("tc1", func(f *Frame) {
			f.ToolStatus = "error"
			f.Facts = &CardFacts{ErrorMessage: "API error: 400", EarlierResults: []string{"first"}}
		})); err != nil {
			t.Fatal(err)
		}
		if got := facts(t, s, "tc1"); got.ErrorMessage != "API error: 400" || !slices.Equal(got.EarlierResults, []string{"first"}) {
			t.Fatalf("facts after Upsert: %+v", got)
		}
	})
}
