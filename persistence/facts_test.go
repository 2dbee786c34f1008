package persistence

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
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
			if !reflect.DeepEqual(byCall[call], w) {
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

// An empty earlier answer is an answer: stored as "", never a failed
// write, on both engines.
func TestCardFactsEmptyEarlierAnswer(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithCardFacts())
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Facts = &CardFacts{EarlierResults: []string{"", "second"}} }))
		if c := s.Counters(); c.Failed != 0 || c.Persisted != 1 {
			t.Fatalf("counters %+v", c)
		}
		if got := facts(t, s, "tc1"); !slices.Equal(got.EarlierResults, []string{"", "second"}) {
			t.Fatalf("facts %+v", got)
		}
	})
}

// The tool calls referencing a card's child session are a fact: ids
// stored exactly (encoded), each once, the first MaxReferences; a shorter
// list never erases a longer one; both reads return them, on both engines.
func TestCardFactsReferences(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithCardFacts())
		e.session("S", "T")
		refs := func(list ...string) func(*Frame) {
			return func(f *Frame) { f.Facts = &CardFacts{ReferencedBy: list} }
		}
		s.Record(e.ctx, frame("lost", refs("t_stop")))
		s.Record(e.ctx, frame("lost", refs("t_stop", "t\x00msg", "t_stop", "")))
		s.Record(e.ctx, frame("lost", refs("x")))
		if got := facts(t, s, "lost").ReferencedBy; !slices.Equal(got, []string{"t_stop", "t\x00msg"}) {
			t.Fatalf("references %q", got)
		}
		many := make([]string, MaxReferences+5)
		for i := range many {
			many[i] = fmt.Sprintf("call-%03d", i)
		}
		s.Record(e.ctx, frame("busy", refs(many...)))
		if got := facts(t, s, "busy").ReferencedBy; !slices.Equal(got, many[:MaxReferences]) {
			t.Fatalf("%d references, want the first %d", len(got), MaxReferences)
		}
		list, err := s.ListCardFacts(e.ctx, "S")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range list {
			if f.ToolCallID == "lost" && !slices.Equal(f.ReferencedBy, []string{"t_stop", "t\x00msg"}) {
				t.Fatalf("ListCardFacts references %q", f.ReferencedBy)
			}
		}
		if c := s.Counters(); c.Failed != 0 {
			t.Fatalf("counters %+v", c)
		}
	})
}

// firstFactsDDL is the facts table as its first version created it,
// without referenced_by.
const firstFactsDDL = `CREATE TABLE ` + factsTable + ` (
	subagent_id       TEXT NOT NULL PRIMARY KEY REFERENCES task_session_subagents(id) ON DELETE CASCADE,
	error_message     TEXT,
	earlier_results   TEXT,
	parent_session_id TEXT
)`

// A facts table of the first shape gains referenced_by: the plan says so
// and is what runs, its facts are kept, a second pass runs no DDL, a
// failure leaves the first shape (and stores no facts) until a retry; a
// read-only store reads the first shape's facts without references, on
// both engines.
func TestCardFactsFirstShapeGainsReferences(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		base := e.store()
		e.session("S", "T")
		base.Record(e.ctx, frame("tc1"))
		e.exec(firstFactsDDL)
		e.exec(`INSERT INTO ` + factsTable + ` (subagent_id, error_message) SELECT id, 'API error: 400' FROM task_session_subagents`)

		ro, err := OpenReadOnly(e.ctx, e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if got, err := ro.SubagentFacts(e.ctx, "S", "E", "tc1"); err != nil || got.ErrorMessage != "API error: 400" || got.ReferencedBy != nil {
			t.Fatalf("first shape read: %+v %v", got, err)
		}
		if got, err := ro.ListCardFacts(e.ctx, "S"); err != nil || len(got) != 1 || got[0].ErrorMessage != "API error: 400" {
			t.Fatalf("first shape listed: %+v %v", got, err)
		}

		fail := hooks{fail: func(point string) error {
			if point == "facts.create" {
				return errors.New("injected")
			}
			return nil
		}}
		failing := e.open(fail, WithCardFacts())
		if st, _ := failing.Migrate(e.ctx).Step(StepFacts); st.Err == nil {
			t.Fatalf("the failpoint did not fail the step: %+v", st)
		}
		if has, _ := e.eng().hasColumn(e.ctx, e.raw, factsTable, referencesColumn); has {
			t.Fatal("the failed step added the column")
		}
		failing.Record(e.ctx, frame("tc1", func(f *Frame) { f.Facts = &CardFacts{ReferencedBy: []string{"lost"}} }))
		if c := failing.Counters(); c.Failed != 0 || c.Persisted != 1 {
			t.Fatalf("a store whose facts step failed: counters %+v", c)
		}

		var mu sync.Mutex
		var executed []string
		// A store that has not migrated yet: its plan is what its pass runs.
		s, err := open(e.ctx, e.dsn, false, []Option{withHooks(hooks{executed: func(q string) {
			mu.Lock()
			executed = append(executed, q)
			mu.Unlock()
		}}), WithCardFacts()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		plan, err := s.Plan(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep := s.Migrate(e.ctx); !rep.OK() {
			t.Fatalf("migrate: %+v", rep)
		}
		var planned []string
		for _, st := range plan.Statements {
			planned = append(planned, st.SQL)
		}
		mu.Lock()
		if !slices.Equal(planned, executed) || !slices.Contains(executed, addReferencesDDL) {
			t.Fatalf("plan %q, ran %q", planned, executed)
		}
		executed = nil
		mu.Unlock()
		if rep := s.Migrate(e.ctx); !rep.OK() {
			t.Fatalf("second migrate: %+v", rep)
		}
		mu.Lock()
		for _, q := range executed {
			if strings.Contains(q, factsTable) {
				t.Fatalf("a converged store ran %q", q)
			}
		}
		mu.Unlock()
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Facts = &CardFacts{ReferencedBy: []string{"t_stop"}} }))
		if got := facts(t, s, "tc1"); got.ErrorMessage != "API error: 400" || !slices.Equal(got.ReferencedBy, []string{"t_stop"}) {
			t.Fatalf("after the step: %+v", got)
		}
	})
}

// A session whose only unsettled card is one the agent stopped tracking
// (tool status unknown) is neither open nor finished: its summary counts
// the card as Unknown, not Open, and its status is SessionUnknown. An open
// card beside it still makes the session open.
func TestSessionOfAnUnknownCardIsUnknown(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ToolStatus = "complete" }))
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.ToolStatus = "unknown" }))
		sum, ok, err := s.Session(e.ctx, "S")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if sum.Cards != 2 || sum.Open != 0 || sum.Unknown != 1 || sum.Status != SessionUnknown {
			t.Fatalf("summary %+v, want 2 cards, 0 open, 1 unknown, status %s", sum, SessionUnknown)
		}
		list, err := s.ListSessions(e.ctx, SessionFilter{})
		if err != nil || len(list) != 1 || list[0].Status != SessionUnknown {
			t.Fatalf("listed %+v %v, want status %s", list, err, SessionUnknown)
		}
		s.Record(e.ctx, frame("tc3", func(f *Frame) { f.ToolStatus = "in_progress" }))
		if sum, _, _ = s.Session(e.ctx, "S"); sum.Open != 1 || sum.Unknown != 1 || sum.Status != SessionOpen {
			t.Fatalf("with an open card: %+v, want status %s", sum, SessionOpen)
		}
	})
}
