package persistence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// PlannedStatement is one statement a migration pass would run.
type PlannedStatement struct {
	// Step is the migration step (one of the Step* names).
	Step string
	// SQL is the statement's text; values a statement binds (key values,
	// instants) show as placeholders.
	SQL string
}

// MigrationPlan is what one migration pass would do to the database as it
// is now: the statements in order, and the steps that would refuse (with
// the reason), which run nothing.
type MigrationPlan struct {
	Statements []PlannedStatement
	Refusals   []StepResult
}

// Empty reports whether the pass would run nothing and refuse nothing.
func (p MigrationPlan) Empty() bool { return len(p.Statements) == 0 && len(p.Refusals) == 0 }

// String prints the plan as SQL text: each statement ended by ";" under a
// comment naming its step, then each refusal as a comment.
func (p MigrationPlan) String() string {
	var b strings.Builder
	step := ""
	for _, st := range p.Statements {
		if st.Step != step {
			fmt.Fprintf(&b, "-- %s\n", st.Step)
			step = st.Step
		}
		b.WriteString(strings.TrimSpace(st.SQL))
		b.WriteString(";\n")
	}
	for _, r := range p.Refusals {
		fmt.Fprintf(&b, "-- %s refuses: %v\n", r.Name, r.Err)
	}
	return b.String()
}

// Plan returns the statements a Migrate pass would run now, without
// running any: it only reads the catalog and the activation keys (so it
// works on a store from OpenReadOnly). Migrate runs the same per-step
// plans, so on a database nobody else changes in between, Migrate then
// executes exactly these statements (TestPlanMatchesMigrate).
func (s *Store) Plan(ctx context.Context) (MigrationPlan, error) {
	var p MigrationPlan
	q := s.reader
	add := func(step string, stmts ...string) {
		for _, st := range stmts {
			p.Statements = append(p.Statements, PlannedStatement{Step: step, SQL: st})
		}
	}
	ddl, err := s.planMeta(ctx, q)
	if err != nil {
		return p, err
	}
	add(StepMeta, ddl...)
	if pg, ok := s.eng.(postgresEngine); ok {
		if ddl, err = pg.missingFunctions(ctx, q); err != nil {
			return p, err
		}
		add(StepJSONGuard, ddl...)
	}
	if s.hostTables {
		if ddl, err = s.planHostTables(ctx, q); err != nil {
			return p, err
		}
		add(StepHostTables, ddl...)
	}
	sh, err := s.eng.probe(ctx, q)
	if err != nil {
		return p, err
	}
	if ferr := sh.foreign(); ferr != nil {
		// No step touches the table; every pass reports it.
		p.Refusals = append(p.Refusals, StepResult{Name: StepExecutionIdentity, Err: ferr})
		return p, nil
	}
	if ddl, err = s.planSchema(ctx, q); err != nil {
		return p, err
	}
	add(StepSchema, ddl...)
	// What the later steps see: a table the schema step creates has the
	// final shape; otherwise the probed one, changed step by step.
	amended := !sh.exists || sh.amended()
	if sh.exists && s.eng.kind() == Postgres {
		if w := widenSQL(sh); w != "" {
			add(StepWidenMetrics, w)
			for _, c := range []string{"total_tokens", "tool_use_count", "duration_ms"} {
				if info, ok := sh.columns[c]; ok {
					info.dataType = "bigint"
					sh.columns[c] = info
				}
			}
		}
		if z := zoneSQL(sh); z != "" {
			add(StepTimestamptz, lockTimeoutSQL, z)
		}
	}
	if sh.exists && sh.preAmendment() {
		stmts, err := s.eng.amendStatements(ctx, q, sh)
		if err != nil {
			p.Refusals = append(p.Refusals, StepResult{Name: StepExecutionIdentity, Err: err})
		} else {
			add(StepExecutionIdentity, append(stmts, s.eng.rebind(putKeySQL))...)
			amended = true
		}
	}
	keys, err := s.planKeys(ctx, q)
	if err != nil {
		return p, err
	}
	_, hasExec := keys[KeyExecutionSince]
	if amended && !hasExec && !(sh.exists && sh.preAmendment()) {
		add(StepExecutionSince, s.eng.rebind(putKeySQL))
	}
	_, c := keys[KeyCaptureSince]
	_, b := keys[KeyBackfillThrough]
	if amended && !(c && b) {
		add(StepBackfill, s.backfillStatements()...)
	}
	if s.texts && amended {
		ddl, refusal, err := s.planTexts(ctx, q)
		if err != nil {
			return p, err
		}
		if refusal != nil {
			p.Refusals = append(p.Refusals, StepResult{Name: StepTexts, Err: refusal})
		}
		add(StepTexts, ddl...)
	}
	if s.factsOn && amended {
		ddl, refusal, err := s.planFacts(ctx, q)
		if err != nil {
			return p, err
		}
		if refusal != nil {
			p.Refusals = append(p.Refusals, StepResult{Name: StepFacts, Err: refusal})
		}
		add(StepFacts, ddl...)
	}
	if s.gapsOn {
		ddl, refusal, err := s.planGaps(ctx, q)
		if err != nil {
			return p, err
		}
		if refusal != nil {
			p.Refusals = append(p.Refusals, StepResult{Name: StepObservationGaps, Err: refusal})
		}
		add(StepObservationGaps, ddl...)
	}
	if amended {
		ddl, refusal, err := s.planMergedCards(ctx, q)
		if err != nil {
			return p, err
		}
		if refusal != nil {
			p.Refusals = append(p.Refusals, StepResult{Name: StepMergedCards, Err: refusal})
		}
		add(StepMergedCards, ddl...)
	}
	if s.traceFacts.on {
		ddl, refusal, err := s.planTraceFacts(ctx, q)
		if err != nil {
			return p, err
		}
		if refusal != nil {
			p.Refusals = append(p.Refusals, StepResult{Name: StepTraceFacts, Err: refusal})
		}
		add(StepTraceFacts, ddl...)
	}
	return p, nil
}

// planKeys reads the activation keys, or none when kandev_meta is absent.
func (s *Store) planKeys(ctx context.Context, q queryer) (map[string]string, error) {
	has, err := s.eng.hasRelation(ctx, q, "kandev_meta")
	if err != nil || !has {
		return map[string]string{}, err
	}
	return readKeys(ctx, q, s.eng)
}

// backfillStatements is the backfill's statements in order, as text.
func (s *Store) backfillStatements() []string {
	out := append([]string(nil), s.eng.tune()...)
	if s.eng.writableCTEs() {
		out = append(out, backfillMarkInsertSQL(s.eng))
	} else {
		out = append(out, backfillMaxSQL(s.eng), backfillInsertSQL(s.eng))
	}
	return append(out, s.eng.rebind(putKeySQL), s.eng.rebind(putKeySQL))
}

// planMeta is the meta step: kandev_meta when absent.
func (s *Store) planMeta(ctx context.Context, q queryer) ([]string, error) {
	has, err := s.eng.hasRelation(ctx, q, "kandev_meta")
	if err != nil || has {
		return nil, err
	}
	return []string{metaDDL}, nil
}

// planHostTables is the standalone host-tables step: each host table when
// absent, then the messages index that fits the table (one it creates has
// the derived pair column), when absent.
func (s *Store) planHostTables(ctx context.Context, q queryer) ([]string, error) {
	ddl := hostTablesDDL(s.eng)
	var out []string
	messagesNew := false
	for i, name := range []string{"task_sessions", "task_session_turns", "task_session_messages"} {
		has, err := s.eng.hasRelation(ctx, q, name)
		if err != nil {
			return nil, err
		}
		if !has {
			out = append(out, ddl[i])
			messagesNew = name == "task_session_messages"
		}
	}
	pair := messagesNew
	if !messagesNew {
		var err error
		if pair, err = s.eng.hasColumn(ctx, q, "task_session_messages", messagePairColumn); err != nil {
			return nil, err
		}
	}
	idx := messagesIndexDDL(pair)
	has, err := s.eng.hasRelation(ctx, q, indexName(idx))
	if err != nil {
		return nil, err
	}
	if !has {
		out = append(out, idx)
	}
	return out, nil
}

// planSchema is the schema step: the table in its final shape when absent
// and each of the layer's indexes when absent; a table of that name the
// layer did not create is refused.
func (s *Store) planSchema(ctx context.Context, q queryer) ([]string, error) {
	sh, err := s.eng.probe(ctx, q)
	if err != nil {
		return nil, err
	}
	if err := sh.foreign(); err != nil {
		return nil, err
	}
	var out []string
	if !sh.exists {
		out = append(out, subagentsTableDDL(s.eng, "task_session_subagents"))
	}
	for i, d := range healthStateDDL(s.eng) {
		has, err := s.eng.hasRelation(ctx, q, []string{healthPairsTable, healthStateTable}[i])
		if err != nil {
			return nil, err
		}
		if !has {
			out = append(out, d)
		}
	}
	for _, d := range indexDDLFor(s.eng) {
		has := false
		if sh.exists {
			if has, err = s.eng.hasRelation(ctx, q, indexName(d)); err != nil {
				return nil, err
			}
		}
		if !has {
			out = append(out, d)
		}
	}
	return out, nil
}

// indexName is the name in a "CREATE INDEX IF NOT EXISTS <name> ON …".
func indexName(ddl string) string {
	f := strings.Fields(ddl)
	if len(f) < 6 {
		return ""
	}
	return f[5]
}

// PlanMigration opens the database named by dsn without migrating or
// writing (as OpenReadOnly, but a schema that is behind is the point) and
// returns the plan of the pass Open would run. A SQLite file that does not
// exist plans the creation of every table.
func PlanMigration(ctx context.Context, dsn string, opts ...Option) (MigrationPlan, error) {
	s, err := open(ctx, dsn, true, opts)
	if errors.Is(err, ErrNeedsMigration) {
		// No file yet: plan against an empty database.
		s, err = open(ctx, ":memory:", false, opts)
	}
	if err != nil {
		return MigrationPlan{}, err
	}
	defer s.Close()
	return s.Plan(ctx)
}

var _ catalogReader = (*sql.DB)(nil)
