package cursor

import "github.com/kdlbs/acp-go-sdk/adapter"

// Stats counts what the Cursor dialect did with cursor/task traffic on one
// connection. Every counter only grows. The same numbers appear in the
// Tracker's Counters under the names in the field comments.
type Stats struct {
	// Requests counts cursor/task requests and notifications from a Cursor
	// agent ("cursor_task_requests").
	Requests uint64
	// Dropped counts requests with no usable toolCallId (missing, empty,
	// not a string, longer than MaxToolCallIDBytes, params not an object)
	// or that arrived while the connection had no current session; they
	// are still answered {} ("cursor_task_dropped").
	Dropped uint64
	// Truncated counts string fields cut to their cap ("cursor_task_truncated").
	Truncated uint64
	// Applied counts requests merged into a card that was still active
	// ("cursor_task_applied").
	Applied uint64
	// LateApplied counts requests merged into a card that had already
	// reached a terminal status this turn ("cursor_task_late_applied").
	LateApplied uint64
	// Unchanged counts requests that matched a card but changed nothing, so
	// no event was emitted ("cursor_task_unchanged").
	Unchanged uint64
	// NonSubagent counts requests naming a held tool call that is not a
	// subagent; it is left untouched and the metadata waits as pending
	// ("cursor_task_non_subagent").
	NonSubagent uint64
	// PendingStored counts requests stored as pending ("cursor_pending_stored").
	PendingStored uint64
	// PendingMerged counts duplicate requests that filled a pending entry
	// ("cursor_pending_merged").
	PendingMerged uint64
	// PendingMatched counts pending entries applied when their card became
	// a subagent ("cursor_pending_matched").
	PendingMatched uint64
	// PendingEvictedCount counts pending entries evicted by the count cap
	// ("cursor_pending_evicted_count").
	PendingEvictedCount uint64
	// PendingEvictedBytes counts pending entries evicted by the byte budget
	// ("cursor_pending_evicted_bytes").
	PendingEvictedBytes uint64
	// PendingEvictedAge counts pending entries evicted by the age cap
	// ("cursor_pending_evicted_age").
	PendingEvictedAge uint64
	// PendingEvictedSession counts pending entries dropped with their
	// session by the session cap ("cursor_pending_evicted_session").
	PendingEvictedSession uint64
	// PendingSwept counts pending entries dropped unmatched at the end of
	// their session's turn, or when a session was created, loaded, closed
	// or reset ("cursor_pending_swept").
	PendingSwept uint64
}

// statFields lists every Stats field with its Tracker counter name.
var statFields = [...]struct {
	name  string
	field func(*Stats) *uint64
}{
	{"cursor_task_requests", func(s *Stats) *uint64 { return &s.Requests }},
	{"cursor_task_dropped", func(s *Stats) *uint64 { return &s.Dropped }},
	{"cursor_task_truncated", func(s *Stats) *uint64 { return &s.Truncated }},
	{"cursor_task_applied", func(s *Stats) *uint64 { return &s.Applied }},
	{"cursor_task_late_applied", func(s *Stats) *uint64 { return &s.LateApplied }},
	{"cursor_task_unchanged", func(s *Stats) *uint64 { return &s.Unchanged }},
	{"cursor_task_non_subagent", func(s *Stats) *uint64 { return &s.NonSubagent }},
	{"cursor_pending_stored", func(s *Stats) *uint64 { return &s.PendingStored }},
	{"cursor_pending_merged", func(s *Stats) *uint64 { return &s.PendingMerged }},
	{"cursor_pending_matched", func(s *Stats) *uint64 { return &s.PendingMatched }},
	{"cursor_pending_evicted_count", func(s *Stats) *uint64 { return &s.PendingEvictedCount }},
	{"cursor_pending_evicted_bytes", func(s *Stats) *uint64 { return &s.PendingEvictedBytes }},
	{"cursor_pending_evicted_age", func(s *Stats) *uint64 { return &s.PendingEvictedAge }},
	{"cursor_pending_evicted_session", func(s *Stats) *uint64 { return &s.PendingEvictedSession }},
	{"cursor_pending_swept", func(s *Stats) *uint64 { return &s.PendingSwept }},
}

// flush adds what changed since the last flush to the Tracker's counters.
func (d *Dialect) flush(tx *adapter.Tx) {
	for _, f := range statFields {
		cur, done := f.field(&d.stats), f.field(&d.flushed)
		if *cur > *done {
			tx.Count(f.name, int64(*cur-*done))
			*done = *cur
		}
	}
}

// Stats returns the dialect's counters. Call it from inside Tracker.Do (or
// use StatsOf), since the Tracker's lock guards them.
func (d *Dialect) Stats() Stats { return d.stats }

// StatsOf returns the Cursor counters of the connection t follows; ok is
// false when t's dialect is not this package's Cursor dialect.
func StatsOf(t *adapter.Tracker) (s Stats, ok bool) {
	if t.Dialect() != adapter.DialectCursor {
		return Stats{}, false
	}
	t.Do(func(tx *adapter.Tx) {
		if d, isCursor := tx.Dialect().(*Dialect); isCursor {
			s, ok = d.stats, true
		}
	})
	return s, ok
}
