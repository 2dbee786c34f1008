package persistence

import (
	"context"
	"time"
)

// ActivationState is what the three activation keys say about an
// installation. It is chosen from the keys, never from row presence.
type ActivationState string

const (
	// StateFullyActivated: capture_since and execution_since present.
	StateFullyActivated ActivationState = "fully_activated"
	// StateAmendmentIncomplete: capture_since only. The installation
	// captures subagent contexts but the execution-aware amendment has not
	// applied, so agent_execution_id is not an execution identity.
	StateAmendmentIncomplete ActivationState = "amendment_incomplete"
	// StateBackfillIncomplete: execution_since only. The backfill has not
	// succeeded and no coverage boundary exists.
	StateBackfillIncomplete ActivationState = "backfill_incomplete"
	// StateNotActivated: neither key; the feature never activated.
	StateNotActivated ActivationState = "not_activated"
)

// HealthReport is one evaluation of the writer's health, taken inside a
// single read transaction.
//
// Consumer contract: activity before CaptureSince has unknown
// fan-out, not zero, and a missing row there proves nothing;
// NoPreCaptureCoverage means the backfill found nothing to cover; rows with
// source 'backfill' hold only what survived in message metadata, so
// comparisons with live rows must disclose the source split.
type HealthReport struct {
	State ActivationState
	// CaptureSince, BackfillThrough and ExecutionSince are the parsed keys
	// (nil when absent, the sentinel, or unparseable).
	CaptureSince    *time.Time
	BackfillThrough *time.Time
	ExecutionSince  *time.Time
	// NoPreCaptureCoverage is true when backfill_through holds the ""
	// sentinel.
	NoPreCaptureCoverage bool
	// ExecutionIDsReliable is false unless the execution-aware shape is in
	// place (execution_since present).
	ExecutionIDsReliable bool
	// Problem describes an unparseable or inconsistent key; "" if none.
	Problem string
	// UnconfirmedWriters are the Writers (WriterOptions.Journal) that
	// have not confirmed every card stored, by name: one still running,
	// one that ended without confirming (a crash, a full disk: "running
	// since …"), or one that recorded what it lost ("lost N of M …").
	// Such a store is never Healthy: it lost writes, or cannot know.
	UnconfirmedWriters map[string]string
	// Incremental is true when the counts came from the stored part of
	// incremental health and what is newer (WithIncrementalHealth), false
	// when Health read everything.
	Incremental bool

	// Compared is true when the anti-joins ran (capture_since present and
	// valid). The counts below are meaningful only then.
	Compared bool
	// Shortfall counts expected (session, tool_call_id) pairs from messages
	// since CaptureSince that have no row: the alarm direction.
	Shortfall int64
	// Excess counts row pairs since CaptureSince with no message, for
	// attribution only; it never nets against Shortfall.
	Excess int64
	// Collisions counts rows since CaptureSince beyond one per pair
	// (several executions sharing a tool-call id).
	Collisions int64
	// MaxObserved is MAX(observed_at) of rows since CaptureSince; nil
	// ("none") is the strongest divergence signal, never healthy.
	MaxObserved *time.Time
}

// Healthy reports whether the comparison ran and found no shortfall.
func (h HealthReport) Healthy() bool {
	return h.Compared && h.Problem == "" && h.Shortfall == 0 && len(h.UnconfirmedWriters) == 0
}

// healthCountsSQL computes, in one statement and one read of each table,
// both directed anti-joins, the collisions and MAX(observed_at).
// msg holds the (session, tool_call_id) pairs of subagent messages
// since the bound instant; the rows are those observed since the same
// instant. Grouping the union by pair marks, for each pair, whether it has
// an identified message (M), any message (M′) and how many rows (R); then
//
//	shortfall  = |M − R|   pairs with an identified message and no row
//	excess     = |R − M′|  pairs with a row and no message at all
//	collisions = rows beyond one per pair
//
// Each count is its own direction: an excess never offsets a shortfall.
// This equals two COUNT(*) FROM (… EXCEPT …) statements, at one read of
// each table instead of two. recorded canonicalises each row's
// observed_at once (fenced), for both the bound and MAX; the table has no
// observed_at index for a prefilter to serve.
//
// msg comes from one of two sources with the same result. With
// pairColumn, the messages table carries messagePairColumn and msg reads
// it (from idx_task_session_messages_subagent alone, no metadata parsed).
// Otherwise each message since the instant is parsed: the validity guard,
// then the two parts of messagePairExpr, in fenced layers so each runs
// once per message. A subagent message whose tool_call_id is not a
// non-empty string is in M′ with a NULL tool call, which no row pair (its
// tool_call_id is NOT NULL) can equal, so it changes no count and the
// column path, whose index holds only non-NULL values, may leave it out.
func healthCountsSQL(e engine, pairColumn bool) string {
	return healthPairsCTE(e, pairColumn, false) + `, flags AS (
	SELECT MAX(in_m) AS in_m, MAX(in_m2) AS in_m2, SUM(n_r) AS n_r, MAX(observed) AS observed
	FROM pairs
	GROUP BY task_session_id, tool_call_id
)
SELECT CAST(COALESCE(SUM(CASE WHEN in_m = 1 AND n_r = 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS shortfall,
       CAST(COALESCE(SUM(CASE WHEN n_r > 0 AND in_m2 = 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS excess,
       CAST(COALESCE(SUM(CASE WHEN n_r > 1 THEN n_r - 1 ELSE 0 END), 0) AS BIGINT) AS collisions,
       MAX(observed) AS max_observed
FROM flags`
}

// healthPairsCTE is the WITH clause every health statement shares: msg,
// the subagent messages created at or after a bound (and, with upper,
// before a second one); recorded, the rows with their canonical
// observed_at in the same range (through idx_subagents_observed_at); and
// pairs, one flag row per message and per row. Its arguments, in order:
// e.atOrAfterArgs(lower), [e.canonArg(upper)], e.atOrAfterArgs(lower),
// [e.canonArg(upper)] (rangeArgs).
func healthPairsCTE(e engine, pairColumn, upper bool) string {
	before := func(col string) string {
		if !upper {
			return ""
		}
		return " AND " + e.canon(col) + " < ?"
	}
	msg := `msg AS (
	SELECT task_session_id, task_id, ` + messagePairColumn + ` AS tcid
	FROM task_session_messages
	WHERE ` + messagePairColumn + ` IS NOT NULL AND ` + e.atOrAfter("created_at") + before("created_at") + `
)`
	if !pairColumn {
		msg = `src AS (
	SELECT m.task_session_id, m.task_id, ` + e.metadataObject("m.metadata") + ` AS md
	FROM task_session_messages m
	WHERE ` + e.atOrAfter("m.created_at") + before("m.created_at") + e.fence() + `
), a AS (
	SELECT task_session_id, task_id, md, ` + e.jsonRaw("md", "tool_call_id") + ` AS r_tool_call_id
	FROM src
	WHERE ` + subagentKind(e, "md") + e.fence() + `
), msg AS (
	SELECT task_session_id, task_id, ` + pairToolCall(e, "r_tool_call_id", "md") + ` AS tcid
	FROM a
)`
	}
	return `WITH ` + msg + `, recorded AS (
	SELECT task_session_id, tool_call_id, ` + e.canon("observed_at") + ` AS observed
	FROM task_session_subagents
	WHERE ` + e.atOrAfter("observed_at") + before("observed_at") + e.fence() + `
), pairs AS (
	SELECT task_session_id, tcid AS tool_call_id,
	       CASE WHEN task_session_id <> '' AND task_id <> '' AND tcid IS NOT NULL THEN 1 ELSE 0 END AS in_m,
	       1 AS in_m2, 0 AS n_r, NULL AS observed
	FROM msg
	UNION ALL
	SELECT task_session_id, tool_call_id, 0, 0, 1, observed
	FROM recorded
)`
}

// Health reads the activation keys and, when capture_since is present,
// runs both directed anti-joins and MAX(observed_at) (one statement), all
// inside one read transaction (REPEATABLE READ on PostgreSQL; a WAL
// snapshot on SQLite). Instants are bound as timestamps, so the result
// does not depend on the session TimeZone.
func (s *Store) Health(ctx context.Context) (HealthReport, error) {
	var h HealthReport
	if err := s.refreshHealth(ctx, false); err != nil {
		// The full comparison below still answers.
		s.log.Warn("incremental health state not refreshed", "error", err)
	}
	tx, err := s.reader.BeginTx(ctx, s.eng.snapshot())
	if err != nil {
		return h, err
	}
	defer tx.Rollback()
	keys, err := readKeys(ctx, tx, s.eng)
	if err != nil {
		return h, err
	}
	if h.UnconfirmedWriters, err = readWriterJournals(ctx, tx, s.eng); err != nil {
		return h, err
	}
	if len(h.UnconfirmedWriters) == 0 {
		h.UnconfirmedWriters = nil
	}
	capture, hasCapture := keys[KeyCaptureSince]
	through, hasThrough := keys[KeyBackfillThrough]
	exec, hasExec := keys[KeyExecutionSince]
	switch {
	case hasCapture && hasExec:
		h.State = StateFullyActivated
	case hasCapture:
		h.State = StateAmendmentIncomplete
	case hasExec:
		h.State = StateBackfillIncomplete
	default:
		h.State = StateNotActivated
	}
	h.ExecutionIDsReliable = hasExec
	if t, ok := parseKey(exec); ok {
		h.ExecutionSince = &t
	}
	if hasThrough {
		if through == "" {
			h.NoPreCaptureCoverage = true
		} else if t, ok := parseKey(through); ok {
			h.BackfillThrough = &t
		} else {
			h.Problem = "backfill_through is not a timestamp"
		}
	}
	if !hasCapture {
		return h, tx.Commit() // the key's absence is the signal
	}
	since, ok := parseKey(capture)
	if !ok {
		h.Problem = "capture_since is not a timestamp"
		return h, tx.Commit()
	}
	h.CaptureSince = &since
	if !hasThrough {
		h.Problem = "capture_since without backfill_through (inconsistent)"
	}
	args := rangeArgs(s.eng, since, time.Time{})
	for _, q := range s.eng.tune() {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return h, err
		}
	}
	if s.hooks.betweenHealthQueries != nil {
		s.hooks.betweenHealthQueries() // after the key read fixed the snapshot
	}
	pairColumn, err := s.eng.hasColumn(ctx, tx, "task_session_messages", messagePairColumn)
	if err != nil {
		return h, err
	}
	if s.healthWindow > 0 {
		if st, ok, err := s.readHealthState(ctx, tx, capture, false); err != nil {
			return h, err
		} else if ok {
			if err := s.incrementalHealth(ctx, tx, &h, st, pairColumn); err != nil {
				return h, err
			}
			h.Compared, h.Incremental = true, true
			return h, tx.Commit()
		}
	}
	var maxObserved nullTime
	if err := s.guarded(ctx, tx, func(e engine) error {
		return tx.QueryRowContext(ctx, e.rebind(healthCountsSQL(e, pairColumn)), args...).
			Scan(&h.Shortfall, &h.Excess, &h.Collisions, &maxObserved)
	}); err != nil {
		return h, err
	}
	h.MaxObserved = maxObserved.ptr()
	h.Compared = true
	return h, tx.Commit()
}
