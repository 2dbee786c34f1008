package persistence

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// randomFrame is a frame of one of a few cards of session S with every
// field drawn at random, "not reported" included, so the merge rule meets
// each of its cases.
func randomFrame(rng *rand.Rand, cards int) *Frame {
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	f := &Frame{
		TaskSessionID: "S", TaskID: "T", ExecutionID: pick("E", "", "E2"),
		ToolCallID:       fmt.Sprintf("tc%d", rng.IntN(cards)),
		TurnID:           pick("", "U1", "U2"),
		ParentToolCallID: pick("", "", "p1", "p2"),
		ToolStatus:       pick("", "pending", "in_progress", "complete", "failed", "cancelled", "Completed"),
		Description:      pick("", "d1", "d2"),
		SubagentType:     pick("", "t1"),
		Status:           pick("", "running", "completed", "zzz"),
		AgentID:          pick("", "a1", "a2"),
		Model:            pick("", "m1", "m2"),
		ChildSessionID:   pick("", "c1"),
		DurationMs:       int64(rng.IntN(3) - 1),
		TotalTokens:      int64(rng.IntN(4)) * 100,
		IsAsync:          rng.IntN(4) == 0,
		Prompt:           pick("", "", "prompt one", "prompt two"),
		ResultText:       pick("", "", "result"),
		ObservedAt:       t0.Add(time.Duration(rng.IntN(5000)) * time.Millisecond),
	}
	if rng.IntN(3) > 0 {
		n := rng.IntN(4) - 1
		f.ToolUseCount = &n
	}
	if rng.IntN(2) == 0 {
		earlier := [][]string{nil, {"first"}, {"first", "second"}}[rng.IntN(3)]
		f.Facts = &CardFacts{ErrorMessage: pick("", "", "api error"), EarlierResults: earlier, ParentSessionID: pick("", "P")}
	}
	return f
}

// storedState is everything a store holds of session S's cards, ids
// aside (a row's id is random).
func storedState(t *testing.T, e *env) []string {
	cols := slices.DeleteFunc(slices.Clone(finalColumns), func(c string) bool { return c == "id" })
	rows := e.dump(cols)
	for _, v := range e.queryAll(`SELECT c.agent_execution_id, c.tool_call_id, x.prompt, x.prompt_bytes, x.result_text, x.result_bytes
FROM task_session_subagents c JOIN ` + textsTable + ` x ON x.subagent_id = c.id`) {
		rows = append(rows, fmt.Sprintf("texts %s", valuesText(v)))
	}
	for _, v := range e.queryAll(`SELECT c.agent_execution_id, c.tool_call_id, x.error_message, x.earlier_results, x.parent_session_id
FROM task_session_subagents c JOIN ` + factsTable + ` x ON x.subagent_id = c.id`) {
		rows = append(rows, fmt.Sprintf("facts %s", valuesText(v)))
	}
	slices.Sort(rows)
	return rows
}

func valuesText(vals []any) string {
	var b strings.Builder
	for _, v := range vals {
		if p, ok := v.([]byte); ok {
			v = string(p)
		}
		fmt.Fprintf(&b, "%v|", v)
	}
	return b.String()
}

// The property behind the writer: merging queued frames (mergeRows) and
// upserting the result leaves exactly what upserting every frame in turn
// leaves, from any stored state, on both engines.
func TestWriterMergeMatchesUpsert(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		other := newEnv(t, e.kind)
		perFrame := e.store(WithSubagentText(), WithCardFacts())
		queuedStore := other.store(WithSubagentText(), WithCardFacts())
		for _, x := range []*env{e, other} {
			x.session("S", "T")
			x.turn("U1", "S")
		}
		rng := rand.New(rand.NewPCG(7, uint64(len(e.kind))))
		w := NewWriter(queuedStore, WriterOptions{MaxBatch: 3})
		defer w.Close(context.Background())
		for round := range 40 {
			var frames []*Frame
			for range 1 + rng.IntN(30) {
				frames = append(frames, randomFrame(rng, 4))
			}
			for _, f := range frames {
				perFrame.Record(e.ctx, f)
				w.Record(f)
			}
			if err := w.Flush(e.ctx); err != nil {
				t.Fatal(err)
			}
			want, got := storedState(t, e), storedState(t, other)
			if !slices.Equal(want, got) {
				t.Fatalf("round %d: queued writes differ from per-frame upserts:\nper frame:\n%s\nqueued:\n%s",
					round, strings.Join(want, "\n"), strings.Join(got, "\n"))
			}
		}
		if st := w.Accounting().Stats; st.StoredFrames != st.Frames || st.Batches >= st.Frames {
			t.Fatalf("stats %+v: every frame stored, in fewer batches than frames", st)
		}
	})
}

// mergeRows in Go, on rows alone: merging is associative, so the writer
// may merge a failed batch's entry with a newer one in either grouping.
func TestMergeRowsAssociative(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		a, b, c := normalise(randomFrame(rng, 1), time.Now), normalise(randomFrame(rng, 1), time.Now), normalise(randomFrame(rng, 1), time.Now)
		l, r := mergeRows(mergeRows(a, b), c), mergeRows(a, mergeRows(b, c))
		if fmt.Sprintf("%+v", derefRow(l)) != fmt.Sprintf("%+v", derefRow(r)) {
			t.Fatalf("not associative:\n%+v\n%+v", derefRow(l), derefRow(r))
		}
	}
}

// derefRow shows a row's pointed-to values, for comparison.
func derefRow(r row) []any {
	return []any{r.id, r.turnID != nil && *r.turnID != "", deref(r.turnID), deref(r.parentToolCallID), deref(r.subagentType),
		deref(r.description), deref(r.agentID), deref(r.childSessionID), deref(r.model), deref(r.agentStatus),
		deref(r.toolStatus), r.isAsync, deref(r.totalTokens), deref(r.toolUseCount), deref(r.durationMs),
		r.observedAt, deref(r.settledAt), r.updatedAt, deref(r.prompt), deref(r.promptBytes), deref(r.result), deref(r.resultBytes),
		deref(r.errorMessage), deref(r.earlierResults), deref(r.parentSessionID)}
}

// A batch the database refuses as a whole is written card by card: the
// card it refuses is given up, counted and named, and the others stored.
func TestWriterRefusedCardDoesNotHoldOthers(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		w := NewWriter(s, WriterOptions{})
		w.Record(frame("tc1"))
		w.Record(&Frame{TaskSessionID: "no-such-session", TaskID: "T", ToolCallID: "tc2"}) // foreign key
		w.Record(frame("tc3"))
		acc := w.Close(e.ctx)
		if acc.Cards != 3 || acc.Stored != 2 || acc.Cause == nil || !strings.Contains(acc.Cause.Error(), "refused") {
			t.Fatalf("accounting %+v", acc)
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != 2 {
			t.Fatalf("%d rows, want 2", n)
		}
		if c := s.Counters(); c.Attempted != 3 || c.Persisted != 2 || c.Failed != 1 {
			t.Fatalf("counters %+v", c)
		}
	})
}

// EnsureSessions writes a card's session in the card's batch, and the
// journal key lives from the first batch to a Close that stored all.
func TestWriterSessionsAndJournal(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store()
		w := NewWriter(s, WriterOptions{EnsureSessions: true, Journal: "run1"})
		w.Record(&Frame{TaskSessionID: "S1", TaskID: "S1", ToolCallID: "tc1", ToolStatus: "pending"})
		if err := w.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		if v, ok := e.journals()["run1"]; !ok || !strings.HasPrefix(v, "running since") {
			t.Fatalf("journal while running: %q %v", v, ok)
		}
		w.Record(&Frame{TaskSessionID: "S1", TaskID: "S1", ToolCallID: "tc1", ToolStatus: "complete"})
		if acc := w.Close(e.ctx); acc.NotStored() != 0 || acc.Cards != 1 {
			t.Fatalf("accounting %+v", acc)
		}
		if _, ok := e.journals()["run1"]; ok {
			t.Fatal("journal key left after every card was stored")
		}
		if r := one(t, s, "S1"); deref(r.ToolStatus) != "complete" {
			t.Fatalf("row %+v", r)
		}
	})
}

// A full queue sheds after MaxBlock instead of holding the caller, and
// what was shed is counted as not stored, with the cause.
func TestWriterShedsWhenFull(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		release := make(chan struct{})
		s := liveEnv(t, e)
		s.hooks.batch = func(ctx context.Context) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}
		w := NewWriter(s, WriterOptions{MaxPending: 2, MaxBlock: 50 * time.Millisecond})
		start := time.Now()
		for i := range 10 {
			w.Record(frame(fmt.Sprint("tc", i)))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Record held the caller %v", d)
		}
		close(release)
		acc := w.Close(e.ctx)
		if acc.Cards != 10 || acc.NotStored() == 0 || acc.Cause == nil || !strings.Contains(acc.Cause.Error(), "fell behind") {
			t.Fatalf("accounting %+v", acc)
		}
		if got := e.count(`SELECT COUNT(*) FROM task_session_subagents`); got != acc.Stored {
			t.Fatalf("%d rows, accounting says %d stored", got, acc.Stored)
		}
	})
}

// journals returns the writer journal keys present.
func (e *env) journals() map[string]string {
	e.t.Helper()
	return e.readMeta(readWriterJournals)
}

// A SQLite database that fills mid-run (a size-limited file: PRAGMA
// max_page_count on the writer's one connection) loses cards: the writer
// counts and names them, and Health then never says healthy, because the
// writer's journal is not confirmed.
func TestWriterFullDiskIsNotHealthy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, SQLite)
	e.store(WithSubagentText()).Close() // migrated, then the host's handles
	path := strings.TrimPrefix(e.dsn, "sqlite://")
	writer, err := sql.Open("sqlite3", sqliteDSN(path, "immediate"))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	writer.SetMaxOpenConns(1)
	var pages int
	if err := writer.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+30)); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDB(e.ctx, SQLite, writer, writer, WithSubagentText(), WithLogger(slog.New(slog.NewTextHandler(e.logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	e.session("S", "T")
	w := NewWriter(s, WriterOptions{Journal: "full-disk-run"})
	w.Record(frame("first"))
	if err := w.Flush(e.ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 4000 {
		w.Record(frame(fmt.Sprint("tc", i), func(f *Frame) { f.Prompt = strings.Repeat("p", 512) }))
	}
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
	defer cancel()
	acc := w.Close(ctx)
	if acc.Cards != 4001 || acc.NotStored() == 0 || acc.Stored == 0 || acc.Cause == nil || !strings.Contains(acc.Cause.Error(), "full") {
		t.Fatalf("accounting %+v", acc)
	}
	if n := e.count(`SELECT COUNT(*) FROM task_session_subagents`); n != acc.Stored {
		t.Fatalf("%d rows, accounting says %d stored", n, acc.Stored)
	}
	ro, err := OpenReadOnly(e.ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	h, err := ro.Health(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Healthy() || h.UnconfirmedWriters["full-disk-run"] == "" {
		t.Fatalf("a store that lost writes reads healthy: %+v", h)
	}
}

// Several processes opening one new PostgreSQL schema at once (4 writers
// starting together) each migrate without a failed step: the passes take
// turns under an advisory lock instead of racing on CREATE TABLE.
func TestConcurrentFirstMigrationsOnPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Postgres)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := Open(e.ctx, e.dsn, WithSubagentText(), WithLogger(slog.New(slog.NewTextHandler(e.logs, nil))))
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			if rep := s.Migrate(e.ctx); !rep.OK() {
				errs <- fmt.Errorf("%+v", rep)
				return
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(e.logs.String(), "migration failed") {
		t.Fatalf("a pass failed:\n%s", e.logs)
	}
}
