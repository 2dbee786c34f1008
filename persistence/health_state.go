package persistence

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Incremental health (opt-in, WithIncrementalHealth). Health's cost is
// reading every message and row since capture_since; on a host's messages
// table that means parsing every message's metadata on every run. With a
// window W, the store keeps, in two tables of its own, the per-pair counts
// of everything older than a boundary B (at most about 2W before now) and
// the three totals they give; Health then reads only what is newer than B
// and combines it with the stored pairs it touches. Nothing of the host's
// tables is altered.
//
// What it sees: every insert, update and delete of a message created, or a
// row observed, at or after B is read on every run, so counts over that
// part are exact. What it cannot see: a change to a message created, or a
// row observed, before B after B was passed (a late insert with an old
// created_at, an edit of an old message's metadata, a delete of an old
// session). The host's tables have no monotonic key the store could trust
// (SQLite reuses the largest rowid after a delete; a PostgreSQL table has
// none), and finding edited rows would need an index on updated_at the
// host does not carry, so the boundary is a time: a change older than the
// window is assumed settled. Such changes are taken in when the stored
// part is rebuilt, which happens when capture_since changes and at the
// first Health after the stored part is a day old (RebuildHealth forces
// it). TestIncrementalHealthMatchesFullScan compares the two under random
// inserts, updates and deletes inside the window.

const (
	healthPairsTable = "subagent_context_health_pairs"
	healthStateTable = "subagent_context_health_state"
	// healthRebuildAge is how old the stored part may get before a rebuild.
	healthRebuildAge = 24 * time.Hour
)

// healthStateDDL creates the two tables incremental health keeps. On
// PostgreSQL they are UNLOGGED: a cache the store rebuilds, so it skips the
// WAL; a crash empties both together, and the next Health rebuilds.
func healthStateDDL(e engine) []string {
	return []string{
		`CREATE ` + e.cacheTable() + `TABLE IF NOT EXISTS ` + healthPairsTable + ` (
	task_session_id TEXT NOT NULL,
	tool_call_id    TEXT NOT NULL,
	m1              BIGINT NOT NULL,
	m2              BIGINT NOT NULL,
	n_r             BIGINT NOT NULL,
	PRIMARY KEY (task_session_id, tool_call_id)
)`,
		`CREATE ` + e.cacheTable() + `TABLE IF NOT EXISTS ` + healthStateTable + ` (
	id            INTEGER PRIMARY KEY CHECK (id = 1),
	capture_since TEXT NOT NULL,
	boundary      TEXT NOT NULL,
	built_at      TEXT NOT NULL,
	shortfall     BIGINT NOT NULL,
	excess        BIGINT NOT NULL,
	collisions    BIGINT NOT NULL,
	max_observed  ` + e.timeType() + `
)`,
	}
}

// WithIncrementalHealth makes Health incremental with window w (see
// health_state.go): the store keeps per-pair counts of what is older than
// about w to 2w and reads only what is newer. Changes older than the
// window are taken in at the next rebuild (daily, or RebuildHealth).
// 0 (the default) reads everything on every run.
func WithIncrementalHealth(w time.Duration) Option { return func(s *Store) { s.healthWindow = w } }

// healthState is the stored part.
type healthState struct {
	boundary                       time.Time
	built                          time.Time
	shortfall, excess, collisions  int64
	maxObserved                    nullTime
	capture, boundaryRaw, builtRaw string
}

// contribution sums, for pair counts (m1, m2, n) minus (o1, o2, on), the
// change of each total: shortfall, excess, collisions.
func contribution(m1, m2, n string) (short, excess, coll string) {
	return "CASE WHEN " + m1 + " > 0 AND " + n + " = 0 THEN 1 ELSE 0 END",
		"CASE WHEN " + n + " > 0 AND " + m2 + " = 0 THEN 1 ELSE 0 END",
		"CASE WHEN " + n + " > 1 THEN " + n + " - 1 ELSE 0 END"
}

// healthDeltaCTE groups the pairs of a range (healthPairsCTE) and joins
// the stored counts of each.
func healthDeltaCTE(e engine, pairColumn, upper bool) string {
	return healthPairsCTE(e, pairColumn, upper) + `, d AS (
	SELECT task_session_id, tool_call_id, SUM(in_m) AS m1, SUM(in_m2) AS m2, SUM(n_r) AS n_r, MAX(observed) AS observed
	FROM pairs
	WHERE tool_call_id IS NOT NULL
	GROUP BY task_session_id, tool_call_id
), j AS (
	SELECT d.m1 AS m1, d.m2 AS m2, d.n_r AS n_r, d.observed AS observed,
	       COALESCE(p.m1, 0) AS o1, COALESCE(p.m2, 0) AS o2, COALESCE(p.n_r, 0) AS onr
	FROM d LEFT JOIN ` + healthPairsTable + ` p
	  ON p.task_session_id = d.task_session_id AND p.tool_call_id = d.tool_call_id
)`
}

// healthDeltaSQL is the change of the three totals, and the newest
// observation, that the range adds to the stored pairs.
func healthDeltaSQL(e engine, pairColumn, upper bool) string {
	ns, ne, nc := contribution("(o1 + m1)", "(o2 + m2)", "(onr + n_r)")
	os, oe, oc := contribution("o1", "o2", "onr")
	sum := func(a, b string) string { return "CAST(COALESCE(SUM((" + a + ") - (" + b + ")), 0) AS BIGINT)" }
	return healthDeltaCTE(e, pairColumn, upper) + `
SELECT ` + sum(ns, os) + `, ` + sum(ne, oe) + `, ` + sum(nc, oc) + `, MAX(observed) FROM j`
}

// healthFoldSQL adds the range's pair counts to the stored pairs (into an
// empty table, a plain insert).
func healthFoldSQL(e engine, pairColumn, empty bool) string {
	q := healthPairsCTE(e, pairColumn, true) + `
INSERT INTO ` + healthPairsTable + ` (task_session_id, tool_call_id, m1, m2, n_r)
SELECT task_session_id, tool_call_id, SUM(in_m), SUM(in_m2), SUM(n_r)
FROM pairs
WHERE tool_call_id IS NOT NULL
GROUP BY task_session_id, tool_call_id`
	if empty {
		return q
	}
	return q + `
ON CONFLICT (task_session_id, tool_call_id) DO UPDATE SET
	m1 = ` + healthPairsTable + `.m1 + excluded.m1,
	m2 = ` + healthPairsTable + `.m2 + excluded.m2,
	n_r = ` + healthPairsTable + `.n_r + excluded.n_r`
}

// rangeArgs are the arguments of healthPairsCTE for [lo, hi) (hi zero:
// no upper bound).
func rangeArgs(e engine, lo, hi time.Time) []any {
	var args []any
	for range 2 {
		args = append(args, e.atOrAfterArgs(lo)...)
		if !hi.IsZero() {
			args = append(args, e.canonArg(hi))
		}
	}
	return args
}

// readHealthState returns the stored part when it was built for the
// capture_since value capture.
func (s *Store) readHealthState(ctx context.Context, q catalogReader, capture string, lock bool) (healthState, bool, error) {
	var st healthState
	has, err := s.eng.hasRelation(ctx, q, healthStateTable)
	if err != nil || !has {
		return st, false, err
	}
	query := `SELECT capture_since, boundary, built_at, shortfall, excess, collisions, max_observed FROM ` + healthStateTable + ` WHERE id = 1`
	if lock {
		query += s.eng.lockRow()
	}
	err = q.QueryRowContext(ctx, query).Scan(&st.capture, &st.boundaryRaw, &st.builtRaw, &st.shortfall, &st.excess, &st.collisions, &st.maxObserved)
	if errors.Is(err, sql.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	b, okB := parseKey(st.boundaryRaw)
	built, okT := parseKey(st.builtRaw)
	if st.capture != capture || !okB || !okT {
		return st, false, nil
	}
	st.boundary, st.built = b, built
	return st, true, nil
}

// incrementalHealth fills h's counts from the stored part and what is
// newer than its boundary, inside the health transaction.
func (s *Store) incrementalHealth(ctx context.Context, tx *sql.Tx, h *HealthReport, st healthState, pairColumn bool) error {
	var short, excess, coll int64
	var newest nullTime
	if err := s.guarded(ctx, tx, func(e engine) error {
		return tx.QueryRowContext(ctx, e.rebind(healthDeltaSQL(e, pairColumn, false)), rangeArgs(e, st.boundary, time.Time{})...).
			Scan(&short, &excess, &coll, &newest)
	}); err != nil {
		return err
	}
	h.Shortfall, h.Excess, h.Collisions = st.shortfall+short, st.excess+excess, st.collisions+coll
	h.MaxObserved = laterOf(st.maxObserved, newest).ptr()
	return nil
}

func laterOf(a, b nullTime) nullTime {
	if !a.Valid || (b.Valid && b.Time.After(a.Time)) {
		return b
	}
	return a
}

// RebuildHealth rebuilds the stored part of incremental health now, taking
// in changes older than the window. It does nothing without
// WithIncrementalHealth or before capture_since exists.
func (s *Store) RebuildHealth(ctx context.Context) error { return s.refreshHealth(ctx, true) }

// refreshHealth builds the stored part when it is missing, was built for
// another capture_since or is a day old (or when rebuild is set), and
// otherwise folds what has aged past the window into it.
func (s *Store) refreshHealth(ctx context.Context, rebuild bool) error {
	if s.healthWindow <= 0 || s.readOnly {
		return nil
	}
	if has, err := s.eng.hasRelation(ctx, s.writer, healthStateTable); err != nil || !has {
		return err
	}
	tx, err := s.writer.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE, one refresher at a time
	if err != nil {
		return err
	}
	defer tx.Rollback()
	keys, err := readKeys(ctx, tx, s.eng)
	if err != nil {
		return err
	}
	capture := keys[KeyCaptureSince]
	since, ok := parseKey(capture)
	if !ok {
		return nil
	}
	st, ok, err := s.readHealthState(ctx, tx, capture, true)
	if err != nil {
		return err
	}
	now := s.now()
	target := now.Add(-s.healthWindow)
	if target.Before(since) {
		target = since
	}
	for _, q := range s.eng.tune() {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	pairColumn, err := s.eng.hasColumn(ctx, tx, "task_session_messages", messagePairColumn)
	if err != nil {
		return err
	}
	fold := func(lo, hi time.Time, empty bool) error {
		return s.guarded(ctx, tx, func(e engine) error {
			_, err := tx.ExecContext(ctx, e.rebind(healthFoldSQL(e, pairColumn, empty)), rangeArgs(e, lo, hi)...)
			return err
		})
	}
	switch {
	case !ok || rebuild || now.Sub(st.built) > healthRebuildAge:
		for _, q := range []string{s.eng.emptyTable(healthPairsTable), s.eng.emptyTable(healthStateTable)} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		if err := fold(since, target, true); err != nil {
			return err
		}
		ns, ne, nc := contribution("m1", "m2", "n_r")
		st = healthState{capture: capture, boundary: target, built: now}
		if err := tx.QueryRowContext(ctx, `SELECT CAST(COALESCE(SUM(`+ns+`), 0) AS BIGINT), CAST(COALESCE(SUM(`+ne+`), 0) AS BIGINT), `+
			`CAST(COALESCE(SUM(`+nc+`), 0) AS BIGINT) FROM `+healthPairsTable).Scan(&st.shortfall, &st.excess, &st.collisions); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, s.eng.rebind(`SELECT MAX(observed) FROM (SELECT `+s.eng.canon("observed_at")+` AS observed FROM task_session_subagents`+
			s.eng.fence()+`) r WHERE observed >= ? AND observed < ?`), s.eng.canonArg(since), s.eng.canonArg(target)).Scan(&st.maxObserved); err != nil {
			return err
		}
	case target.Sub(st.boundary) > s.healthWindow:
		// Fold [boundary, target): first the change of the totals (it
		// reads the stored pairs as they were), then the counts.
		var short, excess, coll int64
		var newest nullTime
		if err := s.guarded(ctx, tx, func(e engine) error {
			return tx.QueryRowContext(ctx, e.rebind(healthDeltaSQL(e, pairColumn, true)), rangeArgs(e, st.boundary, target)...).
				Scan(&short, &excess, &coll, &newest)
		}); err != nil {
			return err
		}
		if err := fold(st.boundary, target, false); err != nil {
			return err
		}
		st.shortfall, st.excess, st.collisions = st.shortfall+short, st.excess+excess, st.collisions+coll
		st.maxObserved = laterOf(st.maxObserved, newest)
		st.boundary = target
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+healthStateTable); err != nil {
			return err
		}
	default:
		return nil
	}
	var maxObserved any
	if st.maxObserved.Valid {
		maxObserved = s.eng.bindTime(st.maxObserved.Time)
	}
	if _, err := tx.ExecContext(ctx, s.eng.rebind(`INSERT INTO `+healthStateTable+
		` (id, capture_since, boundary, built_at, shortfall, excess, collisions, max_observed) VALUES (1, ?, ?, ?, ?, ?, ?, ?)`),
		capture, keyText(st.boundary), keyText(st.built), st.shortfall, st.excess, st.collisions, maxObserved); err != nil {
		return err
	}
	return tx.Commit()
}
