package persistence

import (
	"errors"
	"testing"
)

// A session whose observation lost lines is marked incomplete on both
// engines: the mark keeps the largest count reported, shows in
// ListSessions and Session, and leaves other sessions complete.
func TestObservationGapMarksTheSession(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{}, WithObservationGaps())
		e.session("S", "T")
		e.session("Other", "T")
		s.Record(e.ctx, frame("tc1"))
		for _, n := range []int64{3, 7, 5} {
			if err := s.MarkObservationIncomplete(e.ctx, "S", n); err != nil {
				t.Fatal(err)
			}
		}
		got, ok, err := s.Session(e.ctx, "S")
		if err != nil || !ok {
			t.Fatalf("Session: %v %v", ok, err)
		}
		if !got.ObservationIncomplete || got.Unobserved != 7 {
			t.Errorf("session S: incomplete %v, unobserved %d, want true and 7", got.ObservationIncomplete, got.Unobserved)
		}
		list, err := s.ListSessions(e.ctx, SessionFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range list {
			if want := m.ID == "S"; m.ObservationIncomplete != want {
				t.Errorf("session %s listed incomplete %v, want %v", m.ID, m.ObservationIncomplete, want)
			}
		}
		// A reader sees the mark too.
		r := e.store()
		if got, _, _ := r.Session(e.ctx, "S"); got.Unobserved != 7 {
			t.Errorf("a second store reads unobserved %d, want 7", got.Unobserved)
		}
	})
}

// Without WithObservationGaps the table is neither created nor written,
// and summaries read as complete.
func TestObservationGapsNeedTheOption(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.open(hooks{})
		e.session("S", "T")
		if err := s.MarkObservationIncomplete(e.ctx, "S", 1); !errors.Is(err, ErrNoGapStore) {
			t.Errorf("mark without the option: %v, want ErrNoGapStore", err)
		}
		has, err := e.eng().hasRelation(e.ctx, e.raw, gapsTable)
		if err != nil || has {
			t.Fatalf("gaps table without the option: %v %v", has, err)
		}
		if got, _, err := s.Session(e.ctx, "S"); err != nil || got.ObservationIncomplete {
			t.Errorf("session without a gaps table: %+v %v", got, err)
		}
	})
}

// A table of the gaps table's name that the layer did not create is never
// touched: the step fails, and nothing is written to it.
func TestObservationGapsRefuseAForeignTable(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.open(hooks{}) // the host's schema first
		e.exec(`CREATE TABLE ` + gapsTable + ` (note TEXT)`)
		s := e.open(hooks{}, WithObservationGaps())
		if st, ok := s.Migrate(e.ctx).Step(StepObservationGaps); !ok || st.Err == nil {
			t.Fatalf("step over a foreign table: %+v", st)
		}
		if err := s.MarkObservationIncomplete(e.ctx, "S", 1); !errors.Is(err, ErrNoGapStore) {
			t.Errorf("mark into a foreign table: %v", err)
		}
		if n := e.count(`SELECT COUNT(*) FROM ` + gapsTable); n != 0 {
			t.Errorf("%d rows in the foreign table", n)
		}
	})
}

// The plan (migrate --dry-run) names the gaps step's statement, which the
// pass then runs; a converged store plans nothing, and a foreign table is
// a refusal.
func TestObservationGapsPlan(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		e.open(hooks{}) // the host's schema first
		g, err := open(e.ctx, e.dsn, false, []Option{WithObservationGaps()})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		plan, err := g.Plan(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Statements) != 1 || plan.Statements[0].Step != StepObservationGaps || plan.Statements[0].SQL != gapsDDL {
			t.Fatalf("plan before the step:\n%s", plan)
		}
		if rep := g.Migrate(e.ctx); !rep.OK() {
			t.Fatalf("%+v", rep)
		}
		if plan, err := g.Plan(e.ctx); err != nil || !plan.Empty() {
			t.Fatalf("converged plan %v:\n%s", err, plan)
		}

		e2 := newEnv(t, e.kind)
		e2.open(hooks{})
		e2.exec(`CREATE TABLE ` + gapsTable + ` (note TEXT)`)
		f, err := open(e.ctx, e2.dsn, false, []Option{WithObservationGaps()})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		plan, err = f.Plan(e.ctx)
		if err != nil || len(plan.Refusals) != 1 || plan.Refusals[0].Name != StepObservationGaps || len(plan.Statements) != 0 {
			t.Fatalf("plan over a foreign table %v:\n%s", err, plan)
		}
	})
}
