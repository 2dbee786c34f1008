package persistence

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// mergedAndCollapsed reads every card twice: as the merged cards table
// keeps it and as the collapse computes it from the rows (cardsSQL), both
// in one order; and the rows counted per card both ways.
func mergedAndCollapsed(t *testing.T, e *env, s *Store) (merged, collapsed []SubagentContext, mergedCounts, rowCounts map[string]int64) {
	t.Helper()
	eng := e.eng()
	order := ` ORDER BY ` + eng.binary("task_session_id") + `, ` + eng.binary("tool_call_id")
	var err error
	merged, err = s.query(e.ctx, eng.rebind(`SELECT `+cardReadColumns+` FROM `+cardsTable+` WHERE task_session_id <> ?`+order), "")
	if err != nil {
		t.Fatal(err)
	}
	collapsed, err = s.query(e.ctx, eng.rebind(`SELECT * FROM (`+cardsSQL(eng, "task_session_id <> ?")+`) c`+order), "")
	if err != nil {
		t.Fatal(err)
	}
	counts := func(q string) map[string]int64 {
		rows, err := e.raw.QueryContext(e.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var session, call string
			var n int64
			if err := rows.Scan(&session, &call, &n); err != nil {
				t.Fatal(err)
			}
			out[session+"/"+call] = n
		}
		return out
	}
	mergedCounts = counts(`SELECT task_session_id, tool_call_id, row_count FROM ` + cardsTable)
	rowCounts = counts(`SELECT task_session_id, tool_call_id, COUNT(*) FROM task_session_subagents GROUP BY task_session_id, tool_call_id`)
	return merged, collapsed, mergedCounts, rowCounts
}

// checkMergedIsCollapse fails unless the merged cards equal the collapse
// of the rows, card for card and column for column, with the rows counted.
func checkMergedIsCollapse(t *testing.T, e *env, s *Store, when string) {
	t.Helper()
	merged, collapsed, mergedCounts, rowCounts := mergedAndCollapsed(t, e, s)
	if !reflect.DeepEqual(merged, collapsed) {
		t.Fatalf("%s: the merged cards are not the collapse of the rows:\nmerged:\n%s\ncollapse:\n%s", when, mustJSON(merged), mustJSON(collapsed))
	}
	if !reflect.DeepEqual(mergedCounts, rowCounts) {
		t.Fatalf("%s: rows counted by the cards %v, in the table %v", when, mergedCounts, rowCounts)
	}
}

// randomCardWrite is one write of a random sequence over a few sessions,
// tool calls and executions (so cards gather rows of several executions):
// mostly the layer's own upserts with random facts, statuses, turns and
// observation times (ties included), and sometimes a host's statement the
// upsert never makes (a fact lowered or unset, an observation moved, a
// turn or a settlement rewritten, is_async turned off, a row deleted).
func randomCardWrite(t *testing.T, e *env, s *Store, r *rand.Rand, base time.Time) {
	t.Helper()
	for _, id := range []string{"sa", "sb"} {
		if err := s.EnsureSession(e.ctx, id, "task"); err != nil {
			t.Fatal(err)
		}
	}
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	session, call, exec := pick("sa", "sb"), pick("c1", "c2", "c3"), pick("e1", "e2", "e3", "e4")
	if r.IntN(8) == 0 {
		q := pick(
			`UPDATE task_session_subagents SET description = 'a' WHERE tool_call_id = ?`,
			`UPDATE task_session_subagents SET total_tokens = NULL WHERE tool_call_id = ?`,
			`UPDATE task_session_subagents SET observed_at = updated_at WHERE tool_call_id = ?`,
			`UPDATE task_session_subagents SET turn_id = 'tz' WHERE tool_call_id = ?`,
			`UPDATE task_session_subagents SET settled_at = NULL WHERE tool_call_id = ?`,
			`UPDATE task_session_subagents SET is_async = 0 WHERE tool_call_id = ?`,
			`UPDATE task_session_subagents SET tool_call_id = 'c9' WHERE tool_call_id = ?`,
			`DELETE FROM task_session_subagents WHERE tool_call_id = ?`,
		)
		e.exec(q+` AND task_session_id = ? AND agent_execution_id = ?`, encodeID(call), encodeID(session), encodeID(exec))
		return
	}
	f := Frame{TaskSessionID: session, TaskID: "task", ToolCallID: call, ExecutionID: exec,
		ObservedAt: base.Add(time.Duration(r.IntN(6)) * time.Second)}
	if r.IntN(2) == 0 {
		f.TurnID = pick("t1", "t2", "t3")
	}
	if r.IntN(3) > 0 {
		f.ToolStatus = pick("pending", "in_progress", "completed", "failed", "cancelled", "unknown")
	}
	if r.IntN(2) == 0 {
		f.Description = pick("d1", "d2", "d3")
	}
	if r.IntN(2) == 0 {
		f.SubagentType = pick("general", "explore")
	}
	if r.IntN(3) == 0 {
		f.ChildSessionID = pick("k1", "k2")
	}
	if r.IntN(2) == 0 {
		f.TotalTokens = int64(r.IntN(5) + 1)
	}
	f.IsAsync = r.IntN(4) == 0
	if err := s.Upsert(e.ctx, f); err != nil {
		t.Fatal(err)
	}
}

// The merged cards are the collapse (cards.go's rule) of the rows after
// any sequence of writes, on both engines: random upserts of one card by
// several executions, and host statements the merge cannot follow (those
// rebuild the card from its rows), checked after every write.
func TestMergedCardsAreTheCollapse(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		for seed := range uint64(6) {
			t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
				s := e.store()
				e.exec(`DELETE FROM task_session_subagents`)
				r := rand.New(rand.NewPCG(seed, 36))
				base := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
				for i := range 150 {
					randomCardWrite(t, e, s, r, base)
					checkMergedIsCollapse(t, e, s, fmt.Sprintf("after write %d", i))
				}
			})
		}
	})
}

// A store written without the merged cards (by an older acpscope, or a
// host's table) gets them from its rows when the step runs, and they are
// kept from then on; until then every read collapses the rows.
func TestMergedCardsBackfill(t *testing.T) {
	layouts(t, func(t *testing.T, e *env) {
		if e.hostShape {
			e.hostTables()
		}
		e.store()
		// As an older build left it: no table, no triggers.
		for _, q := range cardsTriggerDDL(e.eng())[:len(cardsTriggers(e.eng()))] {
			e.exec(q)
		}
		e.exec(`DROP TABLE ` + cardsTable)
		old, err := open(e.ctx, e.dsn, false, nil) // never migrated: reads collapse the rows
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { old.Close() })
		r := rand.New(rand.NewPCG(1, 2))
		base := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
		for range 80 {
			randomCardWrite(t, e, old, r, base)
		}
		before, err := old.ListCards(e.ctx, "sa")
		if len(before) == 0 {
			t.Fatal("no cards of session sa")
		}
		if err != nil {
			t.Fatal(err)
		}
		plan, err := old.Plan(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		planned := 0
		for _, st := range plan.Statements {
			if st.Step == StepMergedCards {
				planned++
			}
		}
		if planned == 0 {
			t.Fatalf("the dry run plans no %s statement: %+v", StepMergedCards, plan)
		}
		rep := old.Migrate(e.ctx)
		if res, ok := rep.Step(StepMergedCards); !ok || res.Err != nil || res.Skipped {
			t.Fatalf("the step did not fill the cards: %+v", rep)
		}
		checkMergedIsCollapse(t, e, old, "after the step")
		after, err := old.ListCards(e.ctx, "sa")
		if err != nil || !reflect.DeepEqual(after, before) {
			t.Fatalf("the cards read before and after the step differ (%v):\n%s\n%s", err, mustJSON(before), mustJSON(after))
		}
		if res, _ := old.Migrate(e.ctx).Step(StepMergedCards); !res.Skipped || res.Err != nil {
			t.Fatalf("a second pass is not a no-op: %+v", res)
		}
		for range 40 {
			randomCardWrite(t, e, old, r, base)
		}
		checkMergedIsCollapse(t, e, old, "after writes past the step")
	})
}

// A table named like the merged cards that the layer did not make is
// refused: nothing runs on it, and reads collapse the rows.
func TestMergedCardsRefuseAForeignTable(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.store()
		for _, q := range cardsTriggerDDL(e.eng())[:len(cardsTriggers(e.eng()))] {
			e.exec(q)
		}
		e.exec(`DROP TABLE ` + cardsTable)
		e.exec(`CREATE TABLE ` + cardsTable + ` (task_session_id TEXT, note TEXT)`)
		s2, err := open(e.ctx, e.dsn, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		if err := s2.EnsureSession(e.ctx, "sa", "t"); err != nil {
			t.Fatal(err)
		}
		res, _ := s2.Migrate(e.ctx).Step(StepMergedCards)
		if res.Err == nil || !strings.Contains(res.Err.Error(), "did not create it") {
			t.Fatalf("a foreign table is not refused: %+v", res)
		}
		if err := s2.Upsert(e.ctx, Frame{TaskSessionID: "sa", TaskID: "t", ToolCallID: "c1", ExecutionID: "e1"}); err != nil {
			t.Fatal(err)
		}
		cards, err := s2.ListCards(e.ctx, "sa")
		if err != nil || len(cards) != 1 {
			t.Fatalf("cards %v, %v", cards, err)
		}
	})
}
