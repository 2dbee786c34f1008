package persistence

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// Incremental health gives the full scan's counts under random inserts,
// updates and deletes of messages and rows inside the window, while the
// clock moves (so the stored part is built, then folded forward), on both
// engines and both messages tables (derived column, parsed metadata).
func TestIncrementalHealthMatchesFullScan(t *testing.T) {
	layouts(t, func(t *testing.T, e *env) {
		if e.hostShape {
			e.hostTables()
		}
		full := e.store()
		k := time.Now().UTC().Truncate(time.Microsecond)
		e.exec(`UPDATE kandev_meta SET value = ? WHERE key = ?`, keyText(k), KeyCaptureSince)
		var mu sync.Mutex
		clock := k.Add(3 * time.Hour)
		inc := e.store(WithIncrementalHealth(time.Hour))
		inc.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
		sessions := []string{"S1", "S2", "S3"}
		for _, id := range sessions {
			e.session(id, "T")
		}
		seed := rand.Uint64()
		rng := rand.New(rand.NewPCG(seed, 7))
		type item struct {
			id string
			at time.Time
		}
		var msgs, rows []item
		recent := func(list []item) (int, bool) {
			mu.Lock()
			floor := clock.Add(-30 * time.Minute)
			mu.Unlock()
			var idx []int
			for i, it := range list {
				if !it.at.Before(floor) {
					idx = append(idx, i)
				}
			}
			if len(idx) == 0 {
				return 0, false
			}
			return idx[rng.IntN(len(idx))], true
		}
		meta := func() any {
			tc := fmt.Sprintf("tc%d", rng.IntN(8))
			switch rng.IntN(6) {
			case 0:
				return `{"kind":"text"}`
			case 1:
				return nil
			}
			return subagentMeta(tc, "", nil)
		}
		n := 0
		for round := range 14 {
			mu.Lock()
			clock = clock.Add(time.Duration(rng.IntN(50)) * time.Minute)
			now := clock
			mu.Unlock()
			for range 10 {
				at := now.Add(-time.Duration(rng.IntN(30*60)) * time.Second)
				n++
				switch op := rng.IntN(10); {
				case op < 4:
					id := fmt.Sprintf("m%d", n)
					task := any("T")
					if rng.IntN(8) == 0 {
						task = ""
					}
					e.message(message{ID: id, Session: sessions[rng.IntN(3)], Task: task, Metadata: meta(), Created: at})
					msgs = append(msgs, item{id, at})
				case op < 6:
					if i, ok := recent(msgs); ok {
						e.exec(`UPDATE task_session_messages SET metadata = ? WHERE id = ?`, meta(), msgs[i].id)
					}
				case op == 6:
					if i, ok := recent(msgs); ok {
						e.exec(`DELETE FROM task_session_messages WHERE id = ?`, msgs[i].id)
						msgs = append(msgs[:i], msgs[i+1:]...)
					}
				case op < 9:
					f := Frame{TaskSessionID: sessions[rng.IntN(3)], TaskID: "T", ToolCallID: fmt.Sprintf("tc%d", rng.IntN(8)),
						ExecutionID: fmt.Sprintf("E%d", rng.IntN(2)), ObservedAt: at}
					if err := full.Upsert(e.ctx, f); err != nil {
						t.Fatal(err)
					}
					// A merge keeps the first observed_at: the row is as old as that.
					var id string
					var observed nullTime
					if err := e.raw.QueryRowContext(e.ctx, e.eng().rebind(`SELECT id, observed_at FROM task_session_subagents WHERE task_session_id = ? AND agent_execution_id = ? AND tool_call_id = ?`),
						f.TaskSessionID, f.ExecutionID, f.ToolCallID).Scan(&id, &observed); err != nil {
						t.Fatal(err)
					}
					rows = slices.DeleteFunc(rows, func(it item) bool { return it.id == id })
					rows = append(rows, item{id, observed.Time})
				default:
					if i, ok := recent(rows); ok {
						e.exec(`DELETE FROM task_session_subagents WHERE id = ?`, rows[i].id)
						rows = append(rows[:i], rows[i+1:]...)
					}
				}
			}
			want, err := full.Health(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := inc.Health(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.Shortfall != want.Shortfall || got.Excess != want.Excess || got.Collisions != want.Collisions ||
				fmt.Sprint(deref(got.MaxObserved)) != fmt.Sprint(deref(want.MaxObserved)) || !got.Compared {
				t.Fatalf("seed %d round %d: incremental %+v, full scan %+v", seed, round, got, want)
			}
		}
		var boundary string
		if err := e.raw.QueryRowContext(e.ctx, `SELECT boundary FROM `+healthStateTable).Scan(&boundary); err != nil {
			t.Fatal(err)
		}
		if b, _ := parseKey(boundary); !b.After(k.Add(3 * time.Hour)) {
			t.Fatalf("the stored part was never folded forward (boundary %s)", boundary)
		}
	})
}
