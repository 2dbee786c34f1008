package persistence

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

// fuzzStore is a migrated SQLite store in a temp dir with session S.
func fuzzStore(f *testing.F) *Store {
	s, err := Open(context.Background(), filepath.Join(f.TempDir(), "fuzz.db")+"?_synchronous=OFF",
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	if err := s.EnsureSession(context.Background(), "S", "T"); err != nil {
		f.Fatal(err)
	}
	return s
}

// FuzzBackfillMetadata feeds agent-originated message metadata (the JSON
// the backfill derives rows from) through the backfill and the health
// check: neither may fail, any row derived must obey the field rules, and
// health counts the same from the derived pair column as from the parsed
// metadata.
func FuzzBackfillMetadata(f *testing.F) {
	for _, seed := range []string{
		subagentMeta("tc1", "completed", map[string]any{"total_tokens": 5, "tool_use_count": 0, "is_async": true}),
		`{"tool_call_id":"tc","normalized":{"kind":"subagent_task","subagent_task":{"total_tokens":1e20,"duration_ms":-1,"tool_use_count":1.5,"model":""}}}`,
		`{"tool_call_id":"tc","status":"complete","normalized":{"kind":"subagent_task","subagent_task":{"total_tokens":true,"is_async":"1","agent_id":{"x":1}}}}`,
		`{"tool_call_id":"{x","normalized":{"kind":"subagent_task","subagent_task":{"model":"[m"}}}`,
		`{`, `null`, `[1]`, ``, `{"tool_call_id":7}`, "{\"a\":\"\\u0000\"}",
	} {
		f.Add(seed)
	}
	s := fuzzStore(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, metadata string) {
		for _, q := range []string{`DELETE FROM task_session_subagents`, `DELETE FROM task_session_messages`, `DELETE FROM kandev_meta`} {
			if _, err := s.writer.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.writer.Exec(`INSERT INTO task_session_messages (id, task_session_id, task_id, metadata, created_at, updated_at)
VALUES ('m', 'S', 'T', ?, ?, ?)`, metadata, sqliteText(t0), sqliteText(t0.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.backfill(ctx); err != nil {
			t.Fatalf("backfill failed on %q: %v", metadata, err)
		}
		rows, err := s.ListBySession(ctx, "S")
		if err != nil || len(rows) > 1 {
			t.Fatalf("%d rows, %v", len(rows), err)
		}
		for _, r := range rows {
			checkRow(t, r)
			if r.Source != SourceBackfill || r.AgentExecutionID != UnknownExecution || !r.ObservedAt.Equal(t0) {
				t.Fatalf("row %s", mustJSON(r))
			}
		}
		if _, err := s.Health(ctx); err != nil {
			t.Fatalf("health failed on %q: %v", metadata, err)
		}
		// The derived pair column and the parsed metadata count alike.
		since := t0.Add(-time.Second)
		args := rangeArgs(s.eng, since, time.Time{})
		var counts [2][3]int64
		for i, pairColumn := range []bool{true, false} {
			var max nullTime
			if err := s.reader.QueryRow(healthCountsSQL(s.eng, pairColumn), args...).
				Scan(&counts[i][0], &counts[i][1], &counts[i][2], &max); err != nil {
				t.Fatalf("counts (pair column %v) on %q: %v", pairColumn, metadata, err)
			}
		}
		if counts[0] != counts[1] {
			t.Fatalf("derived column counts %v, parsed metadata %v, on %q", counts[0], counts[1], metadata)
		}
	})
}

// checkRow asserts the rules every stored row obeys.
func checkRow(t *testing.T, r SubagentContext) {
	t.Helper()
	for _, p := range []*string{r.TurnID, r.ParentToolCallID, r.SubagentType, r.Description, r.AgentID, r.ChildSessionID, r.Model, r.AgentStatus, r.ToolStatus} {
		if p != nil && *p == "" {
			t.Fatalf("empty string stored instead of NULL: %s", mustJSON(r))
		}
	}
	if (r.TotalTokens != nil && *r.TotalTokens <= 0) || (r.DurationMs != nil && *r.DurationMs <= 0) || (r.ToolUseCount != nil && *r.ToolUseCount < 0) {
		t.Fatalf("non-measurement stored: %s", mustJSON(r))
	}
	if (r.SettledAt != nil) != (r.ToolStatus != nil && IsTerminalToolStatus(*r.ToolStatus)) {
		t.Fatalf("settled_at and tool_status disagree: %s", mustJSON(r))
	}
	if r.ToolCallID == "" || r.AgentExecutionID == "" {
		t.Fatalf("missing identity: %s", mustJSON(r))
	}
}

// FuzzRecordFrame feeds agent-originated field values through Record: it
// never panics or fails its caller, the counters reconcile, and the row
// obeys the field rules.
func FuzzRecordFrame(f *testing.F) {
	f.Add("tc1", "E", "completed", "m", "async_launched", int64(5), int64(-1), 0, true, true)
	f.Add("tc2", "", "", "", "", int64(0), int64(0), -3, false, false)
	f.Add("", "E", "Completed", "\x00", "zzz", int64(-9), int64(1<<40), 1, true, false)
	s := fuzzStore(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, tc, exec, toolStatus, model, status string, tokens, duration int64, count int, hasCount, async bool) {
		fr := &Frame{TaskSessionID: "S", TaskID: "T", ToolCallID: tc, ExecutionID: exec, ToolStatus: toolStatus,
			Model: model, Status: status, TotalTokens: tokens, DurationMs: duration, IsAsync: async, ObservedAt: t0}
		if hasCount {
			fr.ToolUseCount = &count
		}
		if _, err := s.writer.Exec(`DELETE FROM task_session_subagents`); err != nil {
			t.Fatal(err)
		}
		before := s.Counters()
		s.Record(ctx, fr)
		after := s.Counters()
		d := func(a, b int64) int64 { return a - b }
		if d(after.Attempted, before.Attempted) != 1 ||
			d(after.SkippedNoIdentity, before.SkippedNoIdentity)+d(after.Persisted, before.Persisted)+d(after.Failed, before.Failed) != 1 {
			t.Fatalf("counters %+v → %+v", before, after)
		}
		if after.Failed != 0 {
			t.Fatalf("write failed for %+v", fr)
		}
		rows, err := s.ListBySession(ctx, "S")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			checkRow(t, r)
			if r.ToolCallID != tc || r.AgentExecutionID == "" { // ids are exact (encodeID)
				t.Fatalf("identity %q/%q stored as %q/%q", tc, exec, r.ToolCallID, r.AgentExecutionID)
			}
		}
	})
}
