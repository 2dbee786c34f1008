package persistence

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// hasTextsTable reports whether the database has the texts table.
func (e *env) hasTextsTable() bool {
	e.t.Helper()
	has, err := e.eng().hasRelation(e.ctx, e.raw, textsTable)
	if err != nil {
		e.t.Fatal(err)
	}
	return has
}

// texts reads one card's texts of session S, execution E.
func texts(t *testing.T, s *Store, tc string) SubagentTexts {
	t.Helper()
	got, err := s.SubagentTexts(t.Context(), "S", "E", tc)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func wantText(t *testing.T, what string, got *string, want string) {
	t.Helper()
	if want == "" && got != nil || want != "" && (got == nil || *got != want) {
		t.Fatalf("%s = %v, want %q", what, deref(got), want)
	}
}

// A fresh database with the option: the step creates the table, a frame's
// texts land beside its row, and a second pass runs no DDL.
func TestTextsFreshAndIdempotent(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		var mu sync.Mutex
		var ran []string
		s := e.open(hooks{executed: func(q string) { mu.Lock(); ran = append(ran, q); mu.Unlock() }}, WithSubagentText())
		if !e.hasTextsTable() {
			t.Fatal("no texts table after the first pass")
		}
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt, f.ResultText = "find the bug", "found it" }))
		if c := s.Counters(); c.Persisted != 1 || c.Failed != 0 {
			t.Fatalf("counters %+v", c)
		}
		got := texts(t, s, "tc1")
		wantText(t, "prompt", got.Prompt, "find the bug")
		wantText(t, "result", got.ResultText, "found it")
		if got.PromptBytes != 12 || got.ResultBytes != 8 || got.PromptTruncated() || got.ResultTruncated() {
			t.Fatalf("lengths %+v", got)
		}
		mu.Lock()
		ran = nil
		mu.Unlock()
		rep := s.Migrate(e.ctx)
		if st, ok := rep.Step(StepTexts); !ok || st.Err != nil || !st.Skipped {
			t.Fatalf("second pass: %+v", st)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, q := range ran {
			if strings.Contains(q, textsTable) {
				t.Fatalf("the second pass ran %s", q)
			}
		}
	})
}

// Texts merge as the other text fields: a later non-empty value replaces,
// an empty one never erases; a frame without texts leaves them alone.
func TestTextsMerge(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store(WithSubagentText())
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "first prompt" }))
		got := texts(t, s, "tc1")
		wantText(t, "prompt", got.Prompt, "first prompt")
		wantText(t, "result", got.ResultText, "")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ResultText, f.ToolStatus = "the answer", "completed" }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Description = "no texts" }))
		got = texts(t, s, "tc1")
		wantText(t, "prompt", got.Prompt, "first prompt")
		wantText(t, "result", got.ResultText, "the answer")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "second prompt" }))
		got = texts(t, s, "tc1")
		wantText(t, "prompt", got.Prompt, "second prompt")
		wantText(t, "result", got.ResultText, "the answer")
		if got.PromptBytes != int64(len("second prompt")) || got.ResultBytes != int64(len("the answer")) {
			t.Fatalf("lengths %+v", got)
		}
		if r := one(t, s, "S"); r.Description == nil || *r.Description != "no texts" || r.SettledAt == nil {
			t.Fatalf("the row did not merge: %+v", r)
		}
		// Another card, and one with no texts, read as nothing stored.
		if got := texts(t, s, "tc-none"); got.Prompt != nil || got.ResultText != nil {
			t.Fatalf("an unknown card has texts: %+v", got)
		}
		// A frame without an execution id keys its texts to the sentinel.
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.ExecutionID, f.ResultText = "", "unknown's" }))
		got, err := s.SubagentTexts(e.ctx, "S", UnknownExecution, "tc2")
		if err != nil {
			t.Fatal(err)
		}
		wantText(t, "result", got.ResultText, "unknown's")
		if c := s.Counters(); c.Failed != 0 {
			t.Fatalf("counters %+v", c)
		}
	})
}

// A text longer than MaxSubagentText is cut on a character boundary and
// keeps its full length; NUL and invalid UTF-8 are stored as U+FFFD.
func TestTextsCap(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store(WithSubagentText())
		e.session("S", "T")
		// "é" (2 bytes) straddles the cap.
		long := strings.Repeat("a", MaxSubagentText-1) + "é" + strings.Repeat("b", 100)
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt, f.ResultText = long, "bad\x00\xffbyte" }))
		got := texts(t, s, "tc1")
		if got.Prompt == nil || *got.Prompt != long[:MaxSubagentText-1] || !utf8.ValidString(*got.Prompt) {
			t.Fatalf("prompt cut wrongly: %d bytes", len(deref(got.Prompt).(string)))
		}
		if got.PromptBytes != int64(len(long)) || !got.PromptTruncated() {
			t.Fatalf("prompt length %d, truncated %v", got.PromptBytes, got.PromptTruncated())
		}
		wantText(t, "result", got.ResultText, "bad\uFFFD\uFFFDbyte")
		if got.ResultTruncated() || got.ResultBytes != int64(len("bad\uFFFD\uFFFDbyte")) {
			t.Fatalf("result %+v", got)
		}
	})
}

// A text its producer already cut (Frame.PromptBytes, ResultBytes: the
// adapters' caps) is stored with its full length, so it reads as
// truncated; a later whole text replaces both.
func TestTextsCutBeforeTheStore(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store(WithSubagentText())
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) {
			f.Prompt, f.PromptBytes, f.ResultText, f.ResultBytes = "cut prompt", 5000, "cut answer", 3
		}))
		got := texts(t, s, "tc1")
		if got.PromptBytes != 5000 || !got.PromptTruncated() {
			t.Fatalf("prompt %+v", got)
		}
		// A reported length below the text's own is no cut.
		if got.ResultBytes != int64(len("cut answer")) || got.ResultTruncated() {
			t.Fatalf("result %+v", got)
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "whole" }))
		if got := texts(t, s, "tc1"); got.PromptBytes != 5 || got.PromptTruncated() {
			t.Fatalf("after a whole prompt %+v", got)
		}
	})
}

// Without the option the table is neither created nor written, even when
// another store made it; reads say the database keeps no texts.
func TestTextsWithoutOption(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		e.session("S", "T")
		if e.hasTextsTable() {
			t.Fatal("a store without the option created the texts table")
		}
		if _, ok := s.Migrate(e.ctx).Step(StepTexts); ok {
			t.Fatal("the texts step ran without the option")
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "p" }))
		if c := s.Counters(); c.Persisted != 1 || c.Failed != 0 {
			t.Fatalf("counters %+v", c)
		}
		if _, err := s.SubagentTexts(e.ctx, "S", "E", "tc1"); !errors.Is(err, ErrNoTextStore) {
			t.Fatalf("read without the table: %v", err)
		}
		if plan, err := s.Plan(e.ctx); err != nil || strings.Contains(plan.String(), textsTable) {
			t.Fatalf("plan %v:\n%s", err, plan)
		}
		// Another store made the table: this one still writes nothing to it.
		e.open(hooks{}, WithSubagentText())
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "p2" }))
		if n := e.count(`SELECT COUNT(*) FROM ` + textsTable); n != 0 {
			t.Fatalf("a store without the option wrote %d texts rows", n)
		}
		// But it reads what is there.
		if got, err := s.SubagentTexts(e.ctx, "S", "E", "tc1"); err != nil || got.Prompt != nil {
			t.Fatalf("read: %+v, %v", got, err)
		}
	})
}

// A table of that name the layer did not create is refused, by Migrate and
// by the plan, and never touched; the cards are still written, without
// texts, and reads say the database keeps none.
func TestTextsForeignTable(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.hostTables()
		e.session("S", "T")
		e.exec(`CREATE TABLE ` + textsTable + ` (subagent_id TEXT PRIMARY KEY, prompt TEXT, note TEXT)`)
		e.exec(`INSERT INTO ` + textsTable + ` VALUES ('x', 'host prompt', 'host note')`)
		before := e.hostTable(textsTable)
		s := e.open(hooks{}, WithSubagentText())
		st, _ := s.Migrate(e.ctx).Step(StepTexts)
		if st.Err == nil || !strings.Contains(st.Err.Error(), "did not create") || !strings.Contains(st.Err.Error(), "result_text") {
			t.Fatalf("want a refusal naming the table, got %+v", st)
		}
		if !strings.Contains(e.logs.String(), StepTexts) {
			t.Fatalf("no WARN names the step:\n%s", e.logs)
		}
		plan, err := s.Plan(e.ctx)
		if err != nil || len(plan.Refusals) != 1 || plan.Refusals[0].Name != StepTexts || strings.Contains(plan.String(), "CREATE TABLE") {
			t.Fatalf("plan %v:\n%s", err, plan)
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt, f.ResultText = "p", "r" }))
		if c := s.Counters(); c.Persisted != 1 || c.Failed != 0 {
			t.Fatalf("counters %+v", c)
		}
		one(t, s, "S")
		if got := e.hostTable(textsTable); strings.Join(got, "\n") != strings.Join(before, "\n") {
			t.Fatalf("the host's table changed: %v", got)
		}
		if _, err := s.SubagentTexts(e.ctx, "S", "E", "tc1"); !errors.Is(err, ErrNoTextStore) || !strings.Contains(err.Error(), "did not create") {
			t.Fatalf("read: %v", err)
		}
	})
}

// The plan shows the step on a fresh database and on one made without the
// option, and is what the pass runs; a converged database plans nothing.
func TestTextsPlan(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		plan, err := PlanMigration(e.ctx, e.dsn, WithSubagentText())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan.String(), "-- "+StepTexts+"\nCREATE TABLE IF NOT EXISTS "+textsTable) {
			t.Fatalf("fresh plan:\n%s", plan)
		}
		e.store() // without the option
		if e.hasTextsTable() {
			t.Fatal("created without the option")
		}
		plan, err = PlanMigration(e.ctx, e.dsn, WithSubagentText())
		if err != nil || len(plan.Statements) != 1 || plan.Statements[0].Step != StepTexts {
			t.Fatalf("plan after a store without the option %v:\n%s", err, plan)
		}
		s := e.open(hooks{}, WithSubagentText())
		if !e.hasTextsTable() {
			t.Fatal("the pass did not create the table")
		}
		if plan, err := s.Plan(e.ctx); err != nil || !plan.Empty() {
			t.Fatalf("converged plan %v:\n%s", err, plan)
		}
	})
}

// Texts go with their card: deleting the session deletes them.
func TestTextsCascade(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store(WithSubagentText())
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "p" }))
		if n := e.count(`SELECT COUNT(*) FROM ` + textsTable); n != 1 {
			t.Fatalf("%d texts rows", n)
		}
		e.exec(`DELETE FROM task_sessions WHERE id = 'S'`)
		if n := e.count(`SELECT COUNT(*) FROM ` + textsTable); n != 0 {
			t.Fatalf("%d texts rows after the session's delete", n)
		}
	})
}

// A read-only store reads the texts.
func TestTextsReadOnly(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store(WithSubagentText())
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ResultText = "r" }))
		ro, err := OpenReadOnly(e.ctx, e.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		got := texts(t, ro, "tc1")
		wantText(t, "result", got.ResultText, "r")
	})
}

// capText keeps a prefix of the storable text, at most limit bytes, valid
// UTF-8 and never shorter than limit-3 bytes when it cuts, and reports the
// storable text's full length.
func FuzzCapText(f *testing.F) {
	for _, seed := range []string{"", "abc", "é", "\x00\xff", strings.Repeat("€", 9), "a\U0001F600b"} {
		f.Add(seed, uint8(4))
	}
	f.Fuzz(func(t *testing.T, s string, limit uint8) {
		got, n := capText(s, int(limit))
		if s == "" {
			if got != nil || n != nil {
				t.Fatal("an empty text is stored")
			}
			return
		}
		clean := cleanText(s)
		if *n != int64(len(clean)) || !strings.HasPrefix(clean, *got) || !utf8.ValidString(*got) {
			t.Fatalf("capText(%q, %d) = %q, %d", s, limit, *got, *n)
		}
		if len(clean) <= int(limit) && *got != clean || len(*got) > int(limit) && len(clean) > int(limit) ||
			len(clean) > int(limit) && len(*got) < int(limit)-3 {
			t.Fatalf("capText(%q, %d) = %q", s, limit, *got)
		}
	})
}

// A failed texts step leaves no table and logs it; cards are still
// written, without texts; the next pass creates the table and texts are
// stored from then on.
func TestTextsStepFailure(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		fail := hooks{fail: func(point string) error {
			if point == "texts.create" {
				return errors.New("injected")
			}
			return nil
		}}
		s := e.open(fail, WithSubagentText())
		e.session("S", "T")
		if e.hasTextsTable() || !strings.Contains(e.logs.String(), StepTexts) {
			t.Fatalf("the failed step left a table or no WARN:\n%s", e.logs)
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "lost" }))
		if c := s.Counters(); c.Persisted != 1 || c.Failed != 0 {
			t.Fatalf("counters %+v", c)
		}
		s.hooks = hooks{}
		if st, _ := s.Migrate(e.ctx).Step(StepTexts); st.Err != nil || st.Skipped || !e.hasTextsTable() {
			t.Fatalf("retry: %+v", st)
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.ResultText = "kept" }))
		got := texts(t, s, "tc1")
		wantText(t, "prompt", got.Prompt, "")
		wantText(t, "result", got.ResultText, "kept")
	})
}

// The same frames store the same texts on both engines: NUL, invalid
// UTF-8, characters of every width around the cap, merges.
func TestTextsCrossEngineParity(t *testing.T) {
	t.Parallel()
	inputs := []string{"", "plain", "nul\x00inside", "bad\xff\xfe", "é€😀",
		strings.Repeat("a", MaxSubagentText-2) + "😀tail", strings.Repeat("€", MaxSubagentText/3+1),
		strings.Repeat("b", MaxSubagentText)}
	var dumps [][]string
	for _, kind := range []Engine{SQLite, Postgres} {
		e := newEnv(t, kind)
		s := e.store(WithSubagentText())
		e.session("S", "T")
		var dump []string
		for i, p := range inputs {
			for j, r := range inputs {
				tc := fmt.Sprintf("tc%d", (i*len(inputs)+j)%11)
				s.Record(e.ctx, frame(tc, func(f *Frame) { f.Prompt, f.ResultText = p, r }))
			}
		}
		if c := s.Counters(); c.Failed != 0 {
			t.Fatalf("%s: counters %+v", kind, c)
		}
		for i := range 11 {
			got := texts(t, s, fmt.Sprintf("tc%d", i))
			dump = append(dump, fmt.Sprintf("%d %q %d %q %d", i, deref(got.Prompt), got.PromptBytes, deref(got.ResultText), got.ResultBytes))
		}
		dumps = append(dumps, dump)
	}
	if !slices.Equal(dumps[0], dumps[1]) {
		for i := range dumps[0] {
			if dumps[0][i] != dumps[1][i] {
				a, b := dumps[0][i], dumps[1][i]
				t.Fatalf("engines differ at card %d:\nsqlite   %.200s\npostgres %.200s", i, a, b)
			}
		}
	}
}

// A frame repeating the stored texts (adapters repeat the prompt on every
// update) leaves the texts row as it is: no rewrite of a large text per
// update.
func TestTextsRepeatRewritesNothing(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store(WithSubagentText())
		e.session("S", "T")
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt, f.ResultText = "p", "r" }))
		// Each update of the row is counted: a trigger on SQLite, the row
		// version (xmin) on PostgreSQL.
		version := func() string { return fmt.Sprint(e.count(`SELECT COUNT(*) FROM text_updates`)) }
		e.exec(`CREATE TABLE text_updates (n INTEGER)`)
		if e.kind == SQLite {
			e.exec(`CREATE TRIGGER text_updated AFTER UPDATE ON ` + textsTable + ` BEGIN INSERT INTO text_updates VALUES (1); END`)
		} else {
			version = func() string {
				var x string
				if err := e.raw.QueryRowContext(e.ctx, `SELECT xmin::text FROM `+textsTable).Scan(&x); err != nil {
					t.Fatal(err)
				}
				return x
			}
		}
		before := version()
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt, f.ResultText, f.Model = "p", "r", "m" }))
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "p" }))
		if got := version(); got != before {
			t.Fatalf("a repeated text rewrote the row (%s → %s)", before, got)
		}
		s.Record(e.ctx, frame("tc1", func(f *Frame) { f.Prompt = "p2" }))
		if got := version(); got == before {
			t.Fatal("a new text did not update the row")
		}
		if r := one(t, s, "S"); r.Model == nil || *r.Model != "m" {
			t.Fatalf("the card did not merge: %+v", r)
		}
		wantText(t, "prompt", texts(t, s, "tc1").Prompt, "p2")
	})
}
