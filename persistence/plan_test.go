package persistence

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

// The plan is exactly what the next pass executes, statement for
// statement: on an empty database, on a pre-amendment table with history
// (with the texts step of WithSubagentText after the amendment), and on a
// converged database (where both are empty).
func TestPlanMatchesMigrate(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		var mu sync.Mutex
		var executed []string
		record := hooks{executed: func(q string) { mu.Lock(); executed = append(executed, q); mu.Unlock() }}
		check := func(name string, s *Store, wantEmpty bool) {
			t.Helper()
			plan, err := s.Plan(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Empty() != wantEmpty {
				t.Fatalf("%s: plan empty=%v:\n%s", name, plan.Empty(), plan)
			}
			mu.Lock()
			executed = nil
			mu.Unlock()
			if rep := s.Migrate(e.ctx); !rep.OK() {
				t.Fatalf("%s: %+v", name, rep)
			}
			var planned []string
			for _, st := range plan.Statements {
				planned = append(planned, st.SQL)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(planned, executed) {
				t.Fatalf("%s: the plan is not what ran:\nplan:\n%s\nran:\n%s", name, strings.Join(planned, ";\n"), strings.Join(executed, ";\n"))
			}
		}
		// Empty database: a store that has not migrated yet.
		s, err := open(e.ctx, e.dsn, false, []Option{withHooks(record)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		check("empty", s, false)
		check("converged", s, true)

		// A pre-amendment table with history, in a fresh database.
		e2 := newEnv(t, e.kind)
		e2.hostTables()
		e2.session("S", "T")
		e2.preAmendmentTable(map[Engine]string{SQLite: "INTEGER", Postgres: "INTEGER"}[e.kind])
		e2.seedPreRows(2)
		e2.message(message{ID: "m1", Session: "S", Task: "T", Metadata: subagentMeta("tc-hist", "completed", nil), Created: t0})
		s2, err := open(e.ctx, e2.dsn, false, []Option{withHooks(record), WithSubagentText()})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		check("pre-amendment", s2, false)
		if !e2.hasTextsTable() {
			t.Fatal("the texts step did not run after the amendment")
		}
		check("converged after amendment", s2, true)
	})
}

// PlanMigration reads only: on a missing SQLite file it plans the creation
// and creates nothing.
func TestPlanMigrationWritesNothing(t *testing.T) {
	e := newEnv(t, SQLite)
	plan, err := PlanMigration(e.ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "CREATE TABLE IF NOT EXISTS task_session_subagents") {
		t.Fatalf("plan:\n%s", plan)
	}
	if n := e.count(`SELECT COUNT(*) FROM sqlite_master`); n != 0 {
		t.Fatalf("the plan created %d objects", n)
	}
}
