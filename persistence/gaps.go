package persistence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Observation gaps (opt-in, WithObservationGaps): the sessions whose
// observation is incomplete, because the observer that stored them (the
// acpscope tap) let lines of their connection go by unobserved (it fell
// behind, or a line was over its limit). One row per session in a table of
// the layer's own; no host table is touched. A session without a row was
// observed whole, as far as any writer knows.

// gapsTable is the table the gaps step creates and owns.
const gapsTable = "task_session_observation_gaps"

// StepObservationGaps creates task_session_observation_gaps; it runs only
// on a store opened with WithObservationGaps.
const StepObservationGaps = "task_session_subagents.observation_gaps"

// WithObservationGaps makes the store keep the sessions whose observation
// is incomplete (MarkObservationIncomplete) in its own table,
// task_session_observation_gaps, which the migration step
// StepObservationGaps creates. Without it the table is neither created nor
// written; reads show a mark wherever the table exists.
func WithObservationGaps() Option { return func(s *Store) { s.gapsOn = true } }

// ErrNoGapStore is returned (wrapped) by MarkObservationIncomplete when
// the store keeps no observation gaps (no option, or the step did not
// make the table).
var ErrNoGapStore = errors.New("persistence: this database keeps no observation gaps")

// gapsColumns are the gaps table's columns: a table of that name with all
// of them is the layer's.
var gapsColumns = []string{"task_session_id", "unobserved_lines"}

const gapsDDL = `CREATE TABLE IF NOT EXISTS ` + gapsTable + ` (
	task_session_id  TEXT NOT NULL PRIMARY KEY,
	unobserved_lines BIGINT NOT NULL
)`

// planGaps is the gaps step: the table when absent; a table of that name
// without the layer's columns is refused, and nothing runs.
func (s *Store) planGaps(ctx context.Context, q queryer) (ddl []string, refusal, err error) {
	exists, missing, err := s.probeOwnedTable(ctx, q, gapsTable, gapsColumns)
	switch {
	case err != nil:
		return nil, nil, err
	case exists && len(missing) > 0:
		return nil, fmt.Errorf("table %s exists but this layer did not create it (no column %s); "+
			"no DDL run on it and no observation gaps stored", gapsTable, strings.Join(missing, ", ")), nil
	case exists:
		return nil, nil, nil
	}
	return []string{gapsDDL}, nil, nil
}

// migrateGaps runs the gaps step of Migrate (planGaps).
func (s *Store) migrateGaps(ctx context.Context) (bool, string, error) {
	ddl, refusal, err := s.planGaps(ctx, s.writer)
	if err == nil {
		err = refusal
	}
	if err == nil && len(ddl) > 0 {
		err = s.failpoint("gaps.create")
	}
	if err == nil {
		err = s.execDDL(ctx, ddl...)
	}
	if err == nil {
		s.gapsReady.Store(true)
	}
	return len(ddl) == 0 && err == nil, "", err
}

// gapsMergeSQL marks a session, keeping the largest count reported.
const gapsMergeSQL = `INSERT INTO ` + gapsTable + ` (task_session_id, unobserved_lines) VALUES (?, ?)
ON CONFLICT (task_session_id) DO UPDATE SET unobserved_lines = CASE
	WHEN excluded.unobserved_lines > ` + gapsTable + `.unobserved_lines THEN excluded.unobserved_lines
	ELSE ` + gapsTable + `.unobserved_lines END`

// MarkObservationIncomplete marks the session's observation incomplete:
// unobserved lines of its connection (at least one) went by without being
// observed. The mark keeps the largest count any writer reported; it is
// never removed, since what was missed stays missed. It needs
// WithObservationGaps (else ErrNoGapStore).
func (s *Store) MarkObservationIncomplete(ctx context.Context, sessionID string, unobserved int64) error {
	if !s.gapsReady.Load() {
		return fmt.Errorf("%w (mark of session %s)", ErrNoGapStore, sessionID)
	}
	_, err := s.writer.ExecContext(ctx, s.eng.rebind(gapsMergeSQL), encodeID(sessionID), max(unobserved, 1))
	return err
}

// readGaps sets the gap of each session of out (index: encoded id →
// position) that has a mark. A database without the gaps table has none.
func (s *Store) readGaps(ctx context.Context, q queryer, ids []string, index map[string]int, out []SessionSummary) error {
	if !s.gapsFound.Load() {
		has, err := s.eng.hasRelation(ctx, q, gapsTable)
		if err != nil || !has {
			return err
		}
		s.gapsFound.Store(true)
	}
	return eachPair(ctx, q, s.eng, `SELECT task_session_id, CAST(unobserved_lines AS TEXT) FROM `+gapsTable+`
WHERE task_session_id IN (%s)`, ids, func(session, value string) {
		n, _ := strconv.ParseInt(value, 10, 64)
		m := &out[index[session]]
		m.Unobserved, m.ObservationIncomplete = n, true
	})
}
